/** Pure geometry of the metrics plot: series -> SVG lines (with gaps) on shared axes. */
import type { ISeries } from './types';

export interface ITrace {
  label: string;
  /** Every plotted point, "x,y x,y ..." (finite values only). */
  points: string;
  /**
   * The line as an SVG path: a new segment ("M") after each gap, so a NaN or infinite value
   * (null on the wire) breaks the line instead of being bridged.
   */
  path: string;
  last: number | null;
}

export interface IPlot {
  traces: ITrace[];
  xRange: [number, number];
  yRange: [number, number];
}

/** x of each point: its step, else its position (log_metrics without a step). */
function xs(series: ISeries): number[] {
  return series.steps.map((step, i) => (step === null ? i : step));
}

function plotted(value: number | null): value is number {
  return value !== null && Number.isFinite(value);
}

/**
 * One line per labelled series, scaled into a `width` x `height` box (y grows upwards); a
 * non-finite value (null) is a gap in it. Ranges are padded when flat so a constant line is visible.
 */
export function layoutPlot(
  series: { label: string; series: ISeries }[],
  width: number,
  height: number
): IPlot {
  let xMin = Infinity;
  let xMax = -Infinity;
  let yMin = Infinity;
  let yMax = -Infinity;
  for (const { series: s } of series) {
    const x = xs(s);
    s.values.forEach((value, i) => {
      if (!plotted(value)) {
        return;
      }
      xMin = Math.min(xMin, x[i]);
      xMax = Math.max(xMax, x[i]);
      yMin = Math.min(yMin, value);
      yMax = Math.max(yMax, value);
    });
  }
  if (!Number.isFinite(xMin)) {
    return {
      traces: series.map(s => ({
        label: s.label,
        points: '',
        path: '',
        last: null
      })),
      xRange: [0, 1],
      yRange: [0, 1]
    };
  }
  if (xMax === xMin) {
    xMax = xMin + 1;
  }
  if (yMax === yMin) {
    const pad = Math.abs(yMin) * 0.1 || 1;
    yMin -= pad;
    yMax += pad;
  }
  const sx = (x: number) => ((x - xMin) / (xMax - xMin)) * width;
  const sy = (y: number) => height - ((y - yMin) / (yMax - yMin)) * height;
  const traces = series.map(({ label, series: s }) => {
    const x = xs(s);
    const points: string[] = [];
    const path: string[] = [];
    let last: number | null = null;
    let gap = true;
    s.values.forEach((value, i) => {
      if (!plotted(value)) {
        gap = true;
        return;
      }
      const point = `${round(sx(x[i]))},${round(sy(value))}`;
      points.push(point);
      path.push(`${gap ? 'M' : 'L'}${point}`);
      gap = false;
      last = value;
    });
    return { label, points: points.join(' '), path: path.join(' '), last };
  });
  return { traces, xRange: [xMin, xMax], yRange: [yMin, yMax] };
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

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

/** Compact number for axis labels: 0.00123 -> "0.00123", 123456 -> "1.23e+5". */
export function formatTick(value: number): string {
  if (value === 0) {
    return '0';
  }
  const abs = Math.abs(value);
  if (abs >= 1e5 || abs < 1e-3) {
    return value.toExponential(2);
  }
  return String(Number(value.toPrecision(3)));
}
