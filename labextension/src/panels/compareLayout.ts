/**
 * The comparison panel's data, pure (jest checks it): each run's line of a metric (x as step,
 * wall or relative time; smoothed; the best run thick, the highlighted one on top), the table's
 * columns (one per param) and its sort. The params' view is the server's figures
 * (`comparison.figures`, built in Python: `jupyter_px/compare/figures.py`).
 */
import { ILine, smooth as smoothValues, XKind } from '../plotting/figures';
import type { IComparedMetric, IComparison, ICompareRow } from '../types';

/** A run's label in legends and the table: its name, and its id where the name is not unique. */
export function runLabels(comparison: IComparison): Map<string, string> {
  const counts = new Map<string, number>();
  for (const run of comparison.runs) {
    const name = run.name ?? run.run_id;
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return new Map(
    comparison.runs.map(run => {
      const name = run.name ?? run.run_id;
      return [
        run.run_id,
        (counts.get(name) ?? 0) > 1 && name !== run.run_id
          ? `${name} (${run.run_id.slice(name.length + 1) || run.run_id})`
          : name
      ];
    })
  );
}

/**
 * Each run's color slot among `n`, the same for a run in every comparison: a slot from its id
 * (a stable hash), so a run keeps its color from one comparison to the next; where two runs of
 * one comparison land on the same slot, the one whose id sorts later takes the next free one.
 */
export function runColorSlots(
  runIds: string[],
  n: number
): Map<string, number> {
  const slots = new Map<string, number>();
  const taken = new Set<number>();
  for (const runId of [...new Set(runIds)].sort()) {
    let h = 5381;
    for (let i = 0; i < runId.length; i++) {
      h = ((h * 33) ^ runId.charCodeAt(i)) >>> 0;
    }
    let slot = h % n;
    while (taken.has(slot) && taken.size < n) {
      slot = (slot + 1) % n;
    }
    taken.add(slot);
    slots.set(runId, slot);
  }
  return slots;
}

/**
 * Every run's line of one metric: its color its own in every comparison (`runColorSlots`); the best run's
 * line thick; with a highlighted run (the pointer on its row or line), the others faded. With
 * smoothing, the raw values stay behind as a faint line of the same color (as TensorBoard).
 */
export function compareLines(options: {
  comparison: IComparison;
  metric: IComparedMetric;
  colors: string[];
  xKind: XKind;
  smoothing: number;
  highlight: string | null;
}): ILine[] {
  const { comparison, metric, colors, xKind, smoothing, highlight } = options;
  const labels = runLabels(comparison);
  const position = runColorSlots(
    comparison.runs.map(run => run.run_id),
    colors.length
  );
  const lines: ILine[] = [];
  const curves = [...metric.curves].sort(
    (a, b) =>
      Number(a.run_id === metric.best_run || a.run_id === highlight) -
      Number(b.run_id === metric.best_run || b.run_id === highlight)
  );
  const faint = curves.length <= 20;
  for (const curve of curves) {
    const start = curve.times[0] ?? 0;
    const x =
      xKind === 'wall'
        ? curve.times.map(t => new Date(t * 1000).toISOString())
        : xKind === 'relative'
          ? curve.times.map(t => Math.round((t - start) * 1000) / 1000)
          : curve.steps;
    const color = colors[(position.get(curve.run_id) ?? 0) % colors.length];
    const best = curve.run_id === metric.best_run;
    const dimmed = highlight !== null && curve.run_id !== highlight;
    const name = labels.get(curve.run_id) ?? curve.run_id;
    if (smoothing > 0 && faint) {
      lines.push({
        name,
        id: curve.run_id,
        x,
        y: curve.values,
        color,
        width: 1,
        opacity: dimmed ? 0.08 : 0.25,
        faint: true
      });
    }
    lines.push({
      name: best ? `${name} ★` : name,
      id: curve.run_id,
      x,
      y: smoothing > 0 ? smoothValues(curve.values, smoothing) : curve.values,
      color,
      width: curve.run_id === highlight ? 4 : best ? 3 : 1.5,
      opacity: dimmed ? 0.2 : 1
    });
  }
  return lines;
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
      title: `${metric.name} ${metric.optimization}`,
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
      return row.name ?? row.run_id;
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
  return { column, ascending: metric.optimization === 'min' };
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
