/** A run's metric series as panels hold them: pages of points merged as they arrive. */
import type { ISeries } from './types';

/**
 * Append newly received points to what a panel holds (the server sends only new points); the
 * positions in `nonfinite` are moved to where the points land.
 */
export function mergeSeries(into: ISeries | undefined, more: ISeries): ISeries {
  if (!into) {
    const copy: ISeries = {
      steps: [...more.steps],
      values: [...more.values],
      times: [...more.times]
    };
    if (more.nonfinite) {
      copy.nonfinite = { ...more.nonfinite };
    }
    return copy;
  }
  if (more.nonfinite) {
    const shift = into.values.length;
    const moved = { ...(into.nonfinite ?? {}) };
    for (const [position, name] of Object.entries(more.nonfinite)) {
      moved[String(Number(position) + shift)] = name;
    }
    into.nonfinite = moved;
  }
  into.steps.push(...more.steps);
  into.values.push(...more.values);
  into.times.push(...more.times);
  return into;
}
