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
  /** In data units (for a log scale too). */
  yRange: [number, number];
  /** Grid lines and labels: the value and its position in the box. */
  xTicks: ITick[];
  yTicks: ITick[];
  /** Points left out because a log scale cannot show them (zero or negative). */
  hidden: number;
  log: boolean;
}

export interface ITick {
  value: number;
  position: number;
}

/** x of each point: its step, else its position (log_metrics without a step). */
function xs(series: ISeries): number[] {
  return series.steps.map((step, i) => (step === null ? i : step));
}

function plotted(value: number | null): value is number {
  return value !== null && Number.isFinite(value);
}

/** About `count` round values covering [min, max] (1, 2 or 5 times a power of ten apart). */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!(max > min)) {
    return [min];
  }
  const raw = (max - min) / Math.max(1, count);
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const step =
    [1, 2, 5, 10].map(m => m * power).find(candidate => candidate >= raw) ??
    10 * power;
  const ticks: number[] = [];
  for (
    let value = Math.ceil(min / step) * step;
    value <= max + step * 1e-9;
    value += step
  ) {
    ticks.push(Number(value.toPrecision(12)));
  }
  return ticks;
}

/**
 * One line per labelled series, scaled into a `width` x `height` box (y grows upwards); a
 * non-finite value (null) is a gap in it. Ranges are padded when flat so a constant line is visible.
 */
export function layoutPlot(
  series: { label: string; series: ISeries }[],
  width: number,
  height: number,
  options: { log?: boolean } = {}
): IPlot {
  const log = options.log === true;
  // On a log scale, y is log10(value); a value <= 0 has none and is left out (counted).
  const ty = (value: number) => (log ? Math.log10(value) : value);
  const shown = (value: number | null): value is number =>
    plotted(value) && (!log || value > 0);
  let hidden = 0;
  let xMin = Infinity;
  let xMax = -Infinity;
  let yMin = Infinity;
  let yMax = -Infinity;
  for (const { series: s } of series) {
    const x = xs(s);
    s.values.forEach((raw, i) => {
      if (plotted(raw) && !shown(raw)) {
        hidden++;
      }
      if (!shown(raw)) {
        return;
      }
      const value = ty(raw);
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
      yRange: [0, 1],
      xTicks: [],
      yTicks: [],
      hidden,
      log
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
      if (!shown(value)) {
        gap = true;
        return;
      }
      const point = `${round(sx(x[i]))},${round(sy(ty(value)))}`;
      points.push(point);
      path.push(`${gap ? 'M' : 'L'}${point}`);
      gap = false;
      last = value;
    });
    return { label, points: points.join(' '), path: path.join(' '), last };
  });
  const yTicks = log
    ? logTicks(yMin, yMax)
    : niceTicks(yMin, yMax).map(value => value);
  return {
    traces,
    xRange: [xMin, xMax],
    yRange: log ? [10 ** yMin, 10 ** yMax] : [yMin, yMax],
    xTicks: niceTicks(xMin, xMax, Math.max(2, Math.round(width / 90))).map(
      value => ({ value, position: round(sx(value)) })
    ),
    yTicks: yTicks.map(value => ({
      value: log ? 10 ** value : value,
      position: round(sy(value))
    })),
    hidden,
    log
  };
}

/** Exponents for a log axis: whole powers of ten, thinned to about five. */
function logTicks(min: number, max: number): number[] {
  const first = Math.ceil(min);
  const last = Math.floor(max);
  if (last < first) {
    return niceTicks(min, max);
  }
  const every = Math.max(1, Math.ceil((last - first + 1) / 5));
  const out: number[] = [];
  for (let e = first; e <= last; e += every) {
    out.push(e);
  }
  return out;
}

/**
 * What the pointer is over: the step nearest to `x` (in the box, of `width`) and each series'
 * value there (null where it has none, or a non-finite one), for the hover read-out.
 */
export function valuesAt(
  series: { label: string; series: ISeries }[],
  plot: IPlot,
  x: number,
  width: number
): { step: number; values: { label: string; value: number | null }[] } {
  const [xMin, xMax] = plot.xRange;
  const target = xMin + (x / width) * (xMax - xMin);
  let step = xMin;
  let best = Infinity;
  for (const { series: s } of series) {
    for (const candidate of xs(s)) {
      const distance = Math.abs(candidate - target);
      if (distance < best) {
        best = distance;
        step = candidate;
      }
    }
  }
  const values = series.map(({ label, series: s }) => {
    const at = xs(s).lastIndexOf(step);
    const value = at >= 0 ? s.values[at] : null;
    return { label, value: plotted(value) ? value : null };
  });
  return { step, values };
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
