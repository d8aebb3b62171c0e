import { ReactWidget } from '@jupyterlab/ui-components';
import * as React from 'react';

import * as api from '../api';
import { describe } from '../commands/describe';
import { lineFigure, suggestLog, XKind } from '../plotting/figures';
import { PlotlyFigure, usePlotTheme } from '../plotting/plotlyFigure';
import { themeFigure } from '../plotting/themeFigure';
import { XKindPicker } from '../plotting/xKindPicker';
import type { IComparison, ICompareRequest } from '../types';
import {
  cellValue,
  compareColumns,
  compareLines,
  defaultSort,
  formatValue,
  runColorSlots,
  runLabels,
  sortRows,
  type ICompareColumn
} from './compareLayout';

/** Points per curve asked of the server (it downsamples with MinMaxLTTB): ~1 per pixel. */
export const COMPARE_POINTS = 500;

type BestRule = NonNullable<ICompareRequest['best']>;

/**
 * Runs side by side: one metric at a time (a picker), its plot filling the panel (a line per run,
 * the best run's thick, every run's value at the step under the pointer, x as step or time,
 * smoothing, log scale), "best" said and marked, a table of final and best values with a column
 * per param, the run under the pointer highlighted in both; and the params' view (parallel
 * coordinates, which params matter). The server sends curves already downsampled.
 *
 * The node says where it is for tests and the benchmark: `data-state` (loading, ready, error),
 * `data-fetch-ms` (the request) and `data-draw-ms` (from the answer to the first frame painted
 * after plotly drew the plot; plotly.js's first load included).
 */
export class CompareView extends ReactWidget {
  constructor(
    readonly runIds: string[],
    readonly points: number = COMPARE_POINTS,
    /** What a notebook's `jupyter_px.compare(...)` asked for: metrics, directions, all params. */
    readonly options: Pick<
      ICompareRequest,
      'metrics' | 'optimization' | 'all_params'
    > = {},
    /**
     * Opens one TensorBoard over these runs in a panel beside this one, as the sidebar's
     * TensorBoard does (a new browser tab after the server started is what a popup blocker stops).
     */
    private openTensorBoardPanel: ((runIds: string[]) => void) | null = null
  ) {
    super();
    this.addClass('jp-px-compare');
    this.node.dataset.state = 'loading';
    void this.load();
  }

  get comparison(): IComparison | null {
    return this._comparison;
  }

  /** Ask the server again (another rule for "best", or the runs logged more). */
  async load(best: BestRule = this._best): Promise<void> {
    const started = performance.now();
    this._best = best;
    this.node.dataset.state = 'loading';
    try {
      this._comparison = await api.compareRuns({
        ...this.options,
        runs: this.runIds,
        points: this.points,
        best
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
    if (this.openTensorBoardPanel) {
      this.openTensorBoardPanel(this.runIds); // embedded: its panel shows the start and the board
      return;
    }
    // no workspace to add a panel to: the server starts it, its page in a tab
    const answer = await api.startCompareTensorBoard({ runs: this.runIds });
    window.open(answer.url, '_blank');
  }

  render(): JSX.Element {
    return (
      <CompareContent
        comparison={this._comparison}
        error={this._error}
        best={this._best}
        onBest={rule => void this.load(rule)}
        onDrawn={() => this.drawn()}
        onTensorBoard={() => this.openTensorBoard()}
      />
    );
  }

  private _comparison: IComparison | null = null;
  private _error: string | null = null;
  private _answered = 0;
  private _best: BestRule = 'succeeded';
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function CompareContent(props: {
  comparison: IComparison | null;
  error: string | null;
  best: BestRule;
  onBest: (rule: BestRule) => void;
  onDrawn: () => void;
  onTensorBoard: () => Promise<void>;
}): JSX.Element {
  const { comparison, error, onDrawn } = props;
  const theme = usePlotTheme();
  const [sort, setSort] = React.useState<{
    column: ICompareColumn;
    ascending: boolean;
  } | null>(null);
  const [metricName, setMetric] = React.useState<string | null>(null);
  const [xKind, setXKind] = React.useState<XKind>('step');
  const [smoothing, setSmoothing] = React.useState(0);
  const [log, setLog] = React.useState<boolean | null>(null);
  const [highlight, setHighlight] = React.useState<string | null>(null);
  const [tab, setTab] = React.useState<'curves' | 'params'>('curves');
  const [tensorBoard, setTensorBoard] = React.useState<string | null>(null);
  // The answer is on screen when its plot is drawn (plotly draws after React's commit, once
  // loaded); without a plot (an error, no metrics), when React has committed.
  const plotted = React.useRef(false);
  React.useEffect(() => {
    plotted.current = false;
    if (error || (comparison && comparison.metrics.length === 0)) {
      onDrawn();
    }
  }, [comparison, error]);
  const firstDraw = () => {
    if (!plotted.current) {
      plotted.current = true;
      onDrawn();
    }
  };
  if (error) {
    return <div className="jp-px-error">{error}</div>;
  }
  if (!comparison) {
    return <div className="jp-px-note">Comparing runs…</div>;
  }
  const metric =
    comparison.metrics.find(m => m.name === metricName) ??
    comparison.metrics.find(m => m.name === comparison.objective) ??
    comparison.metrics[0];
  const labels = runLabels(comparison);
  const position = runColorSlots(
    comparison.runs.map(run => run.run_id),
    theme.series.length
  );
  const columns = compareColumns(comparison);
  const order = sort ?? defaultSort(comparison);
  const rows = order
    ? sortRows(comparison.rows, order.column, order.ascending)
    : comparison.rows;
  const bestOf = new Map(comparison.metrics.map(m => [m.name, m.best_run]));
  const lines = metric
    ? compareLines({
        comparison,
        metric,
        colors: theme.series,
        xKind,
        smoothing,
        highlight
      })
    : [];
  const logScale = log ?? suggestLog(lines.flatMap(line => line.y));
  const { parallel, importance } = comparison.figures;
  const openTensorBoard = () => {
    setTensorBoard('starting…');
    props.onTensorBoard().then(
      () => setTensorBoard(null),
      reason => setTensorBoard(describe(reason))
    );
  };
  return (
    <div className="jp-px-compare-body">
      <div className="jp-px-toolbar jp-px-compare-toolbar">
        <span className="jp-px-note jp-px-compare-summary">
          {plural(comparison.runs.length, 'run')},{' '}
          {plural(comparison.metrics.length, 'metric')} (at most{' '}
          {comparison.points} points a curve)
        </span>
        <div className="jp-px-tabs" role="tablist">
          {(['curves', 'params'] as const).map(name => (
            <button
              key={name}
              role="tab"
              aria-selected={tab === name}
              className={`jp-px-tab jp-px-compare-tab-${name}${tab === name ? ' jp-px-tab-current' : ''}`}
              onClick={() => setTab(name)}
            >
              {name === 'curves' ? 'Curves' : 'Params'}
            </button>
          ))}
        </div>
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
      {tab === 'curves' && metric && (
        <>
          <div className="jp-px-toolbar jp-px-plot-toolbar">
            <label>
              Metric{' '}
              <select
                className="jp-mod-styled jp-px-compare-metric-select"
                value={metric.name}
                onChange={event => setMetric(event.target.value)}
              >
                {comparison.metrics.map(m => (
                  <option key={m.name} value={m.name}>
                    {m.name}
                  </option>
                ))}
              </select>
            </label>
            <XKindPicker value={xKind} onChange={setXKind} />
            <label title="Exponential moving average, as TensorBoard's">
              Smoothing{' '}
              <input
                type="range"
                className="jp-px-smoothing"
                min={0}
                max={0.99}
                step={0.01}
                value={smoothing}
                onChange={event => setSmoothing(Number(event.target.value))}
              />
              <span className="jp-px-smoothing-value">
                {smoothing.toFixed(2)}
              </span>
            </label>
            <label className="jp-px-log-scale">
              <input
                type="checkbox"
                checked={logScale}
                onChange={event => setLog(event.target.checked)}
              />
              log scale
            </label>
            <label title="Which run is the best">
              Best{' '}
              <select
                className="jp-mod-styled jp-px-best-rule"
                value={props.best}
                onChange={event => props.onBest(event.target.value as BestRule)}
              >
                <option value="succeeded">among runs that succeeded</option>
                <option value="common_step">at the last common step</option>
                <option value="all">of all runs</option>
              </select>
            </label>
          </div>
          <div className="jp-px-compare-best-line">
            {metric.best_run ? (
              <>
                best {metric.name}:{' '}
                <b
                  className="jp-px-compare-best-name"
                  onMouseEnter={() => setHighlight(metric.best_run)}
                  onMouseLeave={() => setHighlight(null)}
                >
                  {labels.get(metric.best_run)} ★
                </b>{' '}
                <span className="jp-px-note">({metric.best_rule})</span>
              </>
            ) : (
              <span className="jp-px-note">
                no run has a finite {metric.name}
              </span>
            )}
          </div>
          <PlotlyFigure
            className="jp-px-compare-plot"
            label={`${metric.name} by ${xKind === 'step' ? 'step' : 'time'}, one line per run`}
            figure={lineFigure({
              lines,
              theme,
              yTitle: metric.name,
              xKind,
              log: logScale,
              height: 420,
              legend: lines.length > 1
            })}
            onHover={setHighlight}
            onDrawn={firstDraw}
          />
        </>
      )}
      {tab === 'params' && (
        <div className="jp-px-compare-params">
          {parallel ? (
            <PlotlyFigure
              className="jp-px-compare-parallel"
              label="parallel coordinates of the params and the first metric"
              figure={themeFigure(parallel, theme)}
            />
          ) : (
            <div className="jp-px-note">
              No param differs between these runs (or fewer than two have a
              value).
            </div>
          )}
          {importance && comparison.importance.length > 0 && (
            <>
              <div className="jp-px-note">
                Which params matter for {comparison.objective}: the share of its
                final values&apos; variance each param alone explains, across{' '}
                {plural(comparison.importance[0].runs, 'run')} (the sweep view
                reads it the same way; each on its own, so they need not add up
                to 1; the correlation says which way)
              </div>
              <PlotlyFigure
                className="jp-px-compare-importance"
                label="param importance"
                figure={themeFigure(importance, theme)}
              />
            </>
          )}
        </div>
      )}
      <div className="jp-px-compare-table-scroll">
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
                        order?.column.key === column.key
                          ? !order.ascending
                          : true
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
              <tr
                key={row.run_id}
                data-run={row.run_id}
                className={
                  highlight === row.run_id ? 'jp-mod-active' : undefined
                }
                onMouseEnter={() => setHighlight(row.run_id)}
                onMouseLeave={() => setHighlight(null)}
              >
                {columns.map(column => {
                  const isBest =
                    column.kind === 'best' &&
                    bestOf.get(column.metric!) === row.run_id;
                  return (
                    <td
                      key={column.key}
                      className={isBest ? 'jp-px-compare-best-cell' : undefined}
                      title={column.kind === 'run' ? row.run_id : undefined}
                    >
                      {column.kind === 'run' && (
                        <span
                          className="jp-px-swatch"
                          style={{
                            background:
                              theme.series[
                                (position.get(row.run_id) ?? 0) %
                                  theme.series.length
                              ]
                          }}
                        />
                      )}
                      {column.kind === 'run'
                        ? labels.get(row.run_id)
                        : formatValue(cellValue(row, column))}
                      {isBest && ' ★'}
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {comparison.hidden_params > 0 && (
        <div className="jp-px-note">
          {plural(comparison.hidden_params, 'param')} the same in every run{' '}
          {comparison.hidden_params === 1 ? 'is' : 'are'} not shown.
        </div>
      )}
    </div>
  );
}
