/**
 * Pure geometry and ordering of the comparison panel: curves (already downsampled by the
 * server, at most a few hundred points each) -> one SVG path per run on shared axes; the table's
 * columns and its sort. No DOM here, so jest checks it directly.
 */
import type { IComparedMetric, IComparison, ICompareRow } from '../types';

export interface ICompareLine {
  runId: string;
  /** The run's position in the comparison: its colour (`jp-px-compare-line-<n % 10>`). */
  position: number;
  /** "M x,y L x,y ..." in the plot's box (y grows upwards). */
  path: string;
  best: boolean;
}

export interface IComparePlot {
  lines: ICompareLine[];
  xRange: [number, number];
  yRange: [number, number];
}

/**
 * Every run's curve of one metric scaled into `width` x `height`; the best run's line last, so
 * it is drawn over the others. Flat ranges are padded so a constant line is visible.
 */
export function layoutComparePlot(
  metric: IComparedMetric,
  runIds: string[],
  width: number,
  height: number
): IComparePlot {
  let xMin = Infinity;
  let xMax = -Infinity;
  let yMin = Infinity;
  let yMax = -Infinity;
  for (const curve of metric.curves) {
    for (let i = 0; i < curve.steps.length; i++) {
      const x = curve.steps[i];
      const y = curve.values[i];
      if (x < xMin) {
        xMin = x;
      }
      if (x > xMax) {
        xMax = x;
      }
      if (y < yMin) {
        yMin = y;
      }
      if (y > yMax) {
        yMax = y;
      }
    }
  }
  if (!Number.isFinite(xMin)) {
    return { lines: [], xRange: [0, 1], yRange: [0, 1] };
  }
  if (xMax === xMin) {
    xMax = xMin + 1;
  }
  if (yMax === yMin) {
    const pad = Math.abs(yMin) * 0.1 || 1;
    yMin -= pad;
    yMax += pad;
  }
  const kx = width / (xMax - xMin);
  const ky = height / (yMax - yMin);
  const position = new Map(runIds.map((runId, i) => [runId, i]));
  const lines: ICompareLine[] = metric.curves.map(curve => {
    const parts: string[] = new Array(curve.steps.length);
    for (let i = 0; i < curve.steps.length; i++) {
      const x = Math.round((curve.steps[i] - xMin) * kx * 10) / 10;
      const y = Math.round((height - (curve.values[i] - yMin) * ky) * 10) / 10;
      parts[i] = `${i === 0 ? 'M' : 'L'}${x},${y}`;
    }
    return {
      runId: curve.run_id,
      position: position.get(curve.run_id) ?? 0,
      path: parts.join(' '),
      best: curve.run_id === metric.best_run
    };
  });
  lines.sort((a, b) => Number(a.best) - Number(b.best));
  return { lines, xRange: [xMin, xMax], yRange: [yMin, yMax] };
}

/** A table column: what it shows and how a row's cell is read. */
export interface ICompareColumn {
  key: string;
  title: string;
  kind: 'run' | 'state' | 'final' | 'best' | 'param';
  metric?: string;
  param?: string;
}

/** Run, state, per metric final and best (with its direction), then the params that differ. */
export function compareColumns(comparison: IComparison): ICompareColumn[] {
  const columns: ICompareColumn[] = [
    { key: 'run', title: 'run', kind: 'run' },
    { key: 'state', title: 'state', kind: 'state' }
  ];
  for (const metric of comparison.metrics) {
    columns.push({
      key: `final:${metric.name}`,
      title: `${metric.name} final`,
      kind: 'final',
      metric: metric.name
    });
    columns.push({
      key: `best:${metric.name}`,
      title: `${metric.name} best (${metric.optimisation})`,
      kind: 'best',
      metric: metric.name
    });
  }
  for (const param of comparison.params) {
    columns.push({ key: `param:${param}`, title: param, kind: 'param', param });
  }
  return columns;
}

/** A row's value in a column (null when the run has none). */
export function cellValue(row: ICompareRow, column: ICompareColumn): any {
  switch (column.kind) {
    case 'run':
      return row.name ? `${row.name} (${row.run_id})` : row.run_id;
    case 'state':
      return row.state;
    case 'final':
      return row.final[column.metric!] ?? null;
    case 'best':
      return row.best[column.metric!] ?? null;
    default:
      return row.params[column.param!] ?? null;
  }
}

/**
 * Rows sorted by a column: numbers as numbers, anything else as text; runs without a value last
 * in either direction.
 */
export function sortRows(
  rows: ICompareRow[],
  column: ICompareColumn,
  ascending: boolean
): ICompareRow[] {
  const sign = ascending ? 1 : -1;
  return [...rows].sort((a, b) => {
    const x = cellValue(a, column);
    const y = cellValue(b, column);
    if (x === null || y === null) {
      return Number(x === null) - Number(y === null);
    }
    if (typeof x === 'number' && typeof y === 'number') {
      return sign * (x - y);
    }
    return sign * String(x).localeCompare(String(y));
  });
}

/** The default order: best first by the first metric's best value. */
export function defaultSort(
  comparison: IComparison
): { column: ICompareColumn; ascending: boolean } | null {
  const metric = comparison.metrics[0];
  if (!metric) {
    return null;
  }
  const column = compareColumns(comparison).find(
    c => c.key === `best:${metric.name}`
  )!;
  return { column, ascending: metric.optimisation === 'min' };
}

/** Compact number: 0.00123 -> "0.00123", 123456 -> "1.23e+5", null -> "–". */
export function formatValue(value: any): string {
  if (value === null || value === undefined) {
    return '–';
  }
  if (typeof value !== 'number') {
    return typeof value === 'string' ? value : JSON.stringify(value);
  }
  if (value === 0) {
    return '0';
  }
  const abs = Math.abs(value);
  if (abs >= 1e5 || abs < 1e-3) {
    return value.toExponential(3);
  }
  return String(Number(value.toPrecision(4)));
}
