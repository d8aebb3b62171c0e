import { ReactWidget } from '@jupyterlab/ui-components';
import * as React from 'react';

import * as api from '../api';
import { describe } from '../commands/describe';
import type { IComparison } from '../types';
import {
  cellValue,
  compareColumns,
  defaultSort,
  formatValue,
  layoutComparePlot,
  sortRows,
  type ICompareColumn
} from './compareLayout';

const WIDTH = 640;
const HEIGHT = 220;
/** Points per curve asked of the server (it downsamples with MinMaxLTTB): ~1 per pixel. */
export const COMPARE_POINTS = 500;

/**
 * Runs side by side: one plot per metric with a line per run (the best run's line thick, the
 * others faint), and a table of final and best values and the params that differ, sortable by
 * any column. The server sends curves already downsampled, so 200 runs are 200 short paths.
 *
 * The node says where it is for tests and the benchmark: `data-state` (loading, ready, error),
 * `data-fetch-ms` (the request) and `data-draw-ms` (from the answer to the first frame painted).
 */
export class CompareView extends ReactWidget {
  constructor(
    readonly runIds: string[],
    readonly points: number = COMPARE_POINTS
  ) {
    super();
    this.addClass('jp-px-compare');
    this.node.dataset.state = 'loading';
    void this.load();
  }

  get comparison(): IComparison | null {
    return this._comparison;
  }

  /** Ask the server again (e.g. after the runs logged more). */
  async load(): Promise<void> {
    const started = performance.now();
    this.node.dataset.state = 'loading';
    try {
      this._comparison = await api.compareRuns({
        runs: this.runIds,
        points: this.points
      });
      this._error = null;
    } catch (error) {
      this._error = describe(error);
    }
    this._answered = performance.now();
    this.node.dataset.fetchMs = (this._answered - started).toFixed(1);
    this.update();
  }

  /** Called by the content once the answer is on screen. */
  drawn(): void {
    // The frame after React's commit has been painted once the next task runs.
    requestAnimationFrame(() =>
      setTimeout(() => {
        this.node.dataset.drawMs = (performance.now() - this._answered).toFixed(
          1
        );
        this.node.dataset.state = this._error ? 'error' : 'ready';
      })
    );
  }

  async openTensorBoard(): Promise<void> {
    const answer = await api.startCompareTensorBoard({ runs: this.runIds });
    window.open(answer.url, '_blank');
  }

  render(): JSX.Element {
    return (
      <CompareContent
        comparison={this._comparison}
        error={this._error}
        onDrawn={() => this.drawn()}
        onTensorBoard={() => this.openTensorBoard()}
      />
    );
  }

  private _comparison: IComparison | null = null;
  private _error: string | null = null;
  private _answered = 0;
}

function CompareContent(props: {
  comparison: IComparison | null;
  error: string | null;
  onDrawn: () => void;
  onTensorBoard: () => Promise<void>;
}): JSX.Element {
  const { comparison, error, onDrawn } = props;
  const [sort, setSort] = React.useState<{
    column: ICompareColumn;
    ascending: boolean;
  } | null>(null);
  const [tensorBoard, setTensorBoard] = React.useState<string | null>(null);
  React.useEffect(() => {
    if (comparison || error) {
      onDrawn();
    }
  }, [comparison, error]);
  if (error) {
    return <div className="jp-px-error">{error}</div>;
  }
  if (!comparison) {
    return <div className="jp-px-note">Comparing runs…</div>;
  }
  const runIds = comparison.runs.map(run => run.run_id);
  const names = new Map(
    comparison.runs.map(run => [run.run_id, run.name ?? run.run_id])
  );
  const columns = compareColumns(comparison);
  const order = sort ?? defaultSort(comparison);
  const rows = order
    ? sortRows(comparison.rows, order.column, order.ascending)
    : comparison.rows;
  const bestOf = new Map(comparison.metrics.map(m => [m.name, m.best_run]));
  const openTensorBoard = () => {
    setTensorBoard('starting…');
    props.onTensorBoard().then(
      () => setTensorBoard(null),
      reason => setTensorBoard(describe(reason))
    );
  };
  return (
    <div className="jp-px-compare-body">
      <div className="jp-px-toolbar">
        <span className="jp-px-note">
          {comparison.runs.length} runs, {comparison.metrics.length} metrics (at
          most {comparison.points} points a curve)
        </span>
        <button
          className="jp-mod-styled jp-px-compare-tensorboard"
          onClick={openTensorBoard}
          title="One TensorBoard over these runs"
        >
          TensorBoard
        </button>
        {tensorBoard && <span className="jp-px-note">{tensorBoard}</span>}
      </div>
      {comparison.metrics.length === 0 && (
        <div className="jp-px-note">
          None of these runs logged metrics (jupyter_px.tracking.log_metrics).
        </div>
      )}
      <div className="jp-px-compare-plots">
        {comparison.metrics.map(metric => {
          const plot = layoutComparePlot(metric, runIds, WIDTH, HEIGHT);
          const best = metric.best_run ? names.get(metric.best_run) : null;
          return (
            <figure
              key={metric.name}
              className="jp-px-compare-metric"
              data-metric={metric.name}
            >
              <figcaption>
                <b>{metric.name}</b> ({metric.optimisation}){' '}
                {best && (
                  <span className="jp-px-compare-best-label">best: {best}</span>
                )}
              </figcaption>
              <svg
                className="jp-px-plot"
                viewBox={`-80 -10 ${WIDTH + 100} ${HEIGHT + 40}`}
                role="img"
                aria-label={`${metric.name} by step, one line per run`}
              >
                <line
                  className="jp-px-axis"
                  x1={0}
                  y1={HEIGHT}
                  x2={WIDTH}
                  y2={HEIGHT}
                />
                <line className="jp-px-axis" x1={0} y1={0} x2={0} y2={HEIGHT} />
                <text className="jp-px-tick" x={-6} y={6} textAnchor="end">
                  {formatValue(plot.yRange[1])}
                </text>
                <text className="jp-px-tick" x={-6} y={HEIGHT} textAnchor="end">
                  {formatValue(plot.yRange[0])}
                </text>
                <text className="jp-px-tick" x={0} y={HEIGHT + 18}>
                  {formatValue(plot.xRange[0])}
                </text>
                <text
                  className="jp-px-tick"
                  x={WIDTH}
                  y={HEIGHT + 18}
                  textAnchor="end"
                >
                  step {formatValue(plot.xRange[1])}
                </text>
                {plot.lines.map(line => (
                  <path
                    key={line.runId}
                    className={`jp-px-compare-line jp-px-compare-line-${line.position % 10}${line.best ? ' jp-px-compare-best' : ''}`}
                    data-run={line.runId}
                    d={line.path}
                    fill="none"
                  >
                    <title>{names.get(line.runId)}</title>
                  </path>
                ))}
              </svg>
            </figure>
          );
        })}
      </div>
      <table className="jp-px-compare-table">
        <thead>
          <tr>
            {columns.map(column => (
              <th
                key={column.key}
                data-column={column.key}
                onClick={() =>
                  setSort({
                    column,
                    ascending:
                      order?.column.key === column.key ? !order.ascending : true
                  })
                }
                title="Sort by this column"
              >
                {column.title}
                {order?.column.key === column.key
                  ? order.ascending
                    ? ' ▲'
                    : ' ▼'
                  : ''}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map(row => (
            <tr key={row.run_id} data-run={row.run_id}>
              {columns.map(column => {
                const isBest =
                  column.kind === 'best' &&
                  bestOf.get(column.metric!) === row.run_id;
                return (
                  <td
                    key={column.key}
                    className={isBest ? 'jp-px-compare-best-cell' : undefined}
                  >
                    {column.kind === 'run' && (
                      <span
                        className={`jp-px-swatch jp-px-compare-swatch-${runIds.indexOf(row.run_id) % 10}`}
                      />
                    )}{' '}
                    {formatValue(cellValue(row, column))}
                    {isBest && ' ★'}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
      {comparison.hidden_params > 0 && (
        <div className="jp-px-note">
          {comparison.hidden_params} params are the same in every run and are
          not shown.
        </div>
      )}
    </div>
  );
}
