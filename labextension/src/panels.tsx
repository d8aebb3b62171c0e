import { MainAreaWidget } from '@jupyterlab/apputils';
import { IFrame, ReactWidget, UseSignal } from '@jupyterlab/ui-components';
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';
import { TabPanel, Widget } from '@lumino/widgets';
import * as React from 'react';

import * as api from './api';
import { pxIcon } from './icons';
import { formatTick, layoutPlot, mergeSeries } from './plot';
import { pollFrequency } from './polling';
import type { IRunDetail, ISeries } from './types';

/** A main-area panel about one run; the tracker restores it by `runId`. */
export class RunPanel<T extends Widget = Widget> extends MainAreaWidget<T> {
  constructor(
    readonly runId: string,
    readonly kind: string,
    content: T
  ) {
    super({ content });
    this.id = `jupyter-px-${kind}-${runId}`;
    this.title.label = `${kind === 'tensorboard' ? 'TensorBoard' : kind[0].toUpperCase() + kind.slice(1)}: ${runId}`;
    this.title.icon = pxIcon;
    this.title.closable = true;
    this.addClass(`jp-px-panel-${kind}`);
  }
}

/** Stop polling once a run has ended and everything has been read. */
const MAX_LOG_TEXT = 2 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Logs: a tab per replica, following live while the run runs.

class ReplicaLog extends Widget {
  constructor(
    private runId: string,
    readonly role: string,
    readonly index: number,
    interval: number
  ) {
    super();
    this.addClass('jp-px-log');
    this.title.label = `${role}-${index}`;
    this.node.dataset.replica = `${role}-${index}`;
    this._pre = document.createElement('pre');
    this.node.appendChild(this._pre);
    this.poll = new Poll({
      factory: () => this.fetch(),
      frequency: pollFrequency(interval),
      standby: () => (this.isVisible ? 'when-hidden' : true),
      name: `jupyter-px:log:${runId}:${role}-${index}`
    });
  }

  readonly poll: Poll;

  async fetch(): Promise<void> {
    for (let i = 0; i < 8; i++) {
      const chunk = await api.readLog(
        this.runId,
        this.role,
        this.index,
        this._offset
      );
      const atBottom =
        this.node.scrollTop + this.node.clientHeight >=
        this.node.scrollHeight - 4;
      if (chunk.text) {
        this._pre.textContent = (this._pre.textContent + chunk.text).slice(
          -MAX_LOG_TEXT
        );
        if (atBottom) {
          this.node.scrollTop = this.node.scrollHeight;
        }
      }
      const more = chunk.offset !== this._offset;
      this._offset = chunk.offset;
      if (!more) {
        if (chunk.finished) {
          this.node.dataset.complete = 'true';
          this.poll.stop();
        }
        return;
      }
    }
  }

  dispose(): void {
    this.poll.dispose();
    super.dispose();
  }

  private _pre: HTMLPreElement;
  private _offset = 0;
}

export class LogsView extends TabPanel {
  constructor(
    private runId: string,
    private interval: number
  ) {
    super();
    this.addClass('jp-px-logs');
    void this.load();
  }

  private async load(): Promise<void> {
    let run: IRunDetail;
    try {
      run = await api.getRun(this.runId);
    } catch (error) {
      const message = new Widget();
      message.node.textContent = (error as Error).message;
      message.title.label = 'error';
      this.addWidget(message);
      return;
    }
    for (const replica of run.replicas) {
      this.addWidget(
        new ReplicaLog(this.runId, replica.role, replica.index, this.interval)
      );
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Metrics: one trace per replica for the chosen metric, live.

export class MetricsModel {
  constructor(
    readonly runId: string,
    interval: number,
    isVisible: () => boolean
  ) {
    this.poll = new Poll({
      factory: () => this.fetch(),
      frequency: pollFrequency(interval),
      standby: () => (isVisible() ? 'when-hidden' : true),
      name: `jupyter-px:metrics:${runId}`
    });
  }

  readonly poll: Poll;
  data: { [replica: string]: { [metric: string]: ISeries } } = {};
  metric: string | null = null;
  error: string | null = null;
  finished = false;

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  metrics(): string[] {
    const names = new Set<string>();
    for (const metrics of Object.values(this.data)) {
      Object.keys(metrics).forEach(name => names.add(name));
    }
    return [...names].sort();
  }

  async fetch(): Promise<void> {
    try {
      const update = await api.readMetrics(this.runId, this._cursor);
      this.error = null;
      for (const [replica, metrics] of Object.entries(update.series)) {
        const held = (this.data[replica] = this.data[replica] || {});
        for (const [name, points] of Object.entries(metrics)) {
          held[name] = mergeSeries(held[name], points);
        }
      }
      this._cursor = update.cursor;
      this.finished = update.finished;
      if (!this.metric) {
        const names = this.metrics();
        this.metric = names.includes('loss') ? 'loss' : (names[0] ?? null);
      }
      this._changed.emit();
      if (update.finished && Object.keys(update.series).length === 0) {
        this.poll.stop();
      }
    } catch (error) {
      this.error = (error as Error).message;
      this._changed.emit();
      throw error;
    }
  }

  select(metric: string): void {
    this.metric = metric;
    this._changed.emit();
  }

  dispose(): void {
    this.poll.dispose();
  }

  private _cursor: number | null = null;
  private _changed = new Signal<this, void>(this);
}

const WIDTH = 640;
const HEIGHT = 300;

function MetricsPlot(props: { model: MetricsModel }): JSX.Element {
  const { model } = props;
  return (
    <UseSignal signal={model.changed}>
      {() => {
        const names = model.metrics();
        const metric = model.metric;
        const series = Object.entries(model.data)
          .filter(([, metrics]) => metric && metrics[metric])
          .map(([replica, metrics]) => ({
            label: replica,
            series: metrics[metric!]
          }));
        const plot = layoutPlot(series, WIDTH, HEIGHT);
        return (
          <div className="jp-px-metrics">
            <div className="jp-px-toolbar">
              <label>
                Metric{' '}
                <select
                  className="jp-mod-styled jp-px-metric-select"
                  value={metric ?? ''}
                  onChange={event => model.select(event.target.value)}
                >
                  {names.map(name => (
                    <option key={name} value={name}>
                      {name}
                    </option>
                  ))}
                </select>
              </label>
              {model.finished ? (
                <span className="jp-px-note">run finished</span>
              ) : (
                <span className="jp-px-note">live</span>
              )}
            </div>
            {model.error && <div className="jp-px-error">{model.error}</div>}
            {names.length === 0 ? (
              <div className="jp-px-note">
                No metrics yet: call jupyter_px.tracking.log_metrics(step=...,
                loss=...).
              </div>
            ) : (
              <svg
                className="jp-px-plot"
                viewBox={`-60 -10 ${WIDTH + 80} ${HEIGHT + 40}`}
                role="img"
                aria-label={`${metric} by step`}
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
                  {formatTick(plot.yRange[1])}
                </text>
                <text className="jp-px-tick" x={-6} y={HEIGHT} textAnchor="end">
                  {formatTick(plot.yRange[0])}
                </text>
                <text className="jp-px-tick" x={0} y={HEIGHT + 18}>
                  {formatTick(plot.xRange[0])}
                </text>
                <text
                  className="jp-px-tick"
                  x={WIDTH}
                  y={HEIGHT + 18}
                  textAnchor="end"
                >
                  step {formatTick(plot.xRange[1])}
                </text>
                {plot.traces.map((trace, i) => (
                  <polyline
                    key={trace.label}
                    className={`jp-px-trace jp-px-trace-${i % 8}`}
                    data-replica={trace.label}
                    points={trace.points}
                    fill="none"
                  />
                ))}
              </svg>
            )}
            <ul className="jp-px-legend">
              {plot.traces.map((trace, i) => (
                <li key={trace.label}>
                  <span className={`jp-px-swatch jp-px-trace-${i % 8}`} />{' '}
                  {trace.label}
                  {trace.last !== null && `: ${formatTick(trace.last)}`}
                </li>
              ))}
            </ul>
          </div>
        );
      }}
    </UseSignal>
  );
}

export class MetricsView extends ReactWidget {
  constructor(runId: string, interval: number) {
    super();
    this.addClass('jp-px-metrics-view');
    this.model = new MetricsModel(runId, interval, () => this.isVisible);
  }

  readonly model: MetricsModel;

  render(): JSX.Element {
    return <MetricsPlot model={this.model} />;
  }

  dispose(): void {
    this.model.dispose();
    super.dispose();
  }
}

// ---------------------------------------------------------------------------------------------
// TensorBoard: started (or reused) by the server, shown through its px/tensorboard/<port>/ route.

export class TensorBoardView extends Widget {
  constructor(private runId: string) {
    super();
    this.addClass('jp-px-tensorboard');
    this._status = document.createElement('div');
    this._status.className = 'jp-px-note';
    this._status.textContent = 'Starting TensorBoard…';
    this.node.appendChild(this._status);
    void this.start();
  }

  private async start(): Promise<void> {
    try {
      const answer = await api.startTensorBoard(this.runId);
      this._status.remove();
      const frame = new IFrame({
        sandbox: [
          'allow-scripts',
          'allow-same-origin',
          'allow-forms',
          'allow-popups',
          'allow-downloads'
        ]
      });
      frame.url = answer.url;
      frame.node.dataset.url = answer.url;
      this.node.appendChild(frame.node);
      this._frame = frame;
    } catch (error) {
      this._status.className = 'jp-px-error';
      this._status.textContent = (error as Error).message;
    }
  }

  dispose(): void {
    this._frame?.dispose();
    super.dispose();
  }

  private _status: HTMLDivElement;
  private _frame: IFrame | null = null;
}
