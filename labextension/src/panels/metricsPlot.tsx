import { UseSignal } from '@jupyterlab/ui-components';
import * as React from 'react';

import {
  ILine,
  IMark,
  lineFigure,
  suggestLog,
  XKind
} from '../plotting/figures';
import { PlotlyFigure, usePlotTheme } from '../plotting/plotlyFigure';
import { XKindPicker } from '../plotting/xKindPicker';
import type { IAttemptMark, ISeries } from '../types';
import { Ticking } from '../useNow';
import type { MetricsModel } from './metricsModel';

/** x of each point: its step (its position when logged without one), or its time. */
export function xOf(series: ISeries, kind: XKind): (number | string)[] {
  if (kind === 'wall') {
    return series.times.map(t => new Date(t * 1000).toISOString());
  }
  if (kind === 'relative') {
    const start = series.times[0] ?? 0;
    return series.times.map(t => Math.round((t - start) * 1000) / 1000);
  }
  return series.steps.map((step, i) => (step === null ? i : step));
}

/** One line per replica of `metric`, in the replicas' order, each in its palette color. */
export function replicaLines(
  data: { [replica: string]: { [metric: string]: ISeries } },
  metric: string,
  colors: string[],
  xKind: XKind
): ILine[] {
  return Object.keys(data)
    .sort()
    .filter(replica => data[replica][metric])
    .map((replica, i) => {
      const series = data[replica][metric];
      return {
        name: replica,
        id: replica,
        x: xOf(series, xKind),
        y: [...series.values], // a copy: the model appends to its arrays in place
        color: colors[i % colors.length]
      };
    });
}

/**
 * Where each attempt after the first began, in the plot's x: the checkpoint step it resumed from
 * (0: from the start), or the time it started (wall, or since the run's first point).
 */
export function attemptMarks(
  attempts: IAttemptMark[],
  xKind: XKind,
  model: Pick<MetricsModel, 'data'>
): IMark[] {
  const later = attempts.filter(attempt => attempt.attempt > 1);
  const firstTime = Math.min(
    ...Object.values(model.data).flatMap(metrics =>
      Object.values(metrics).map(series => series.times[0] ?? Infinity)
    )
  );
  return later.flatMap((attempt): IMark[] => {
    const label = `attempt ${attempt.attempt}`;
    if (xKind === 'step') {
      return [{ x: attempt.resumed_from ?? 0, label }];
    }
    if (attempt.started_at === null) {
      return [];
    }
    if (xKind === 'wall') {
      return [{ x: new Date(attempt.started_at * 1000).toISOString(), label }];
    }
    return Number.isFinite(firstTime)
      ? [
          {
            x: Math.round((attempt.started_at - firstTime) * 1000) / 1000,
            label
          }
        ]
      : [];
  });
}

/** How long a live run may log nothing before the view asks whether its code logs at all. */
export const QUIET_S = 60;

/**
 * What the plot's place says before a metric: a live run is waiting for its first (its code may
 * be importing, loading data, compiling), and only after `QUIET_S` of nothing does the view ask
 * whether the code logs; a finished run that logged none says how to log.
 */
export function noMetricsText(finished: boolean, waitedS: number): string {
  const how = 'jupyter_px.tracking.log_metrics(step=..., loss=...)';
  if (finished) {
    return `This run logged no metrics; the training code logs them with ${how}.`;
  }
  if (waitedS < QUIET_S) {
    return 'Waiting for the first metric…';
  }
  return `Waiting for the first metric: none in ${Math.floor(waitedS)} s. Does the training code call ${how}?`;
}

/**
 * A run's metrics: the metric picker, the x axis (step or time), a log scale (on by default where
 * the curves are positive and span two decades), and the plot (plotly.js, a line per replica,
 * broken where a value is not finite, every replica's value under the pointer), filling the
 * width it is given, the legend under it.
 */
export function MetricsPlot(props: {
  model: MetricsModel;
  /** The run's attempts, once one failed: where each later one began is marked. */
  attempts?: () => IAttemptMark[];
}): JSX.Element {
  const { model } = props;
  const theme = usePlotTheme();
  const [log, setLog] = React.useState<boolean | null>(null);
  const [xKind, setXKind] = React.useState<XKind>('step');
  return (
    <UseSignal signal={model.changed}>
      {() => {
        const names = model.metrics();
        const metric = model.metric;
        const lines = metric
          ? replicaLines(model.data, metric, theme.series, xKind)
          : [];
        const logScale = log ?? suggestLog(lines.flatMap(line => line.y));
        const hidden = logScale
          ? lines.reduce(
              (n, line) => n + line.y.filter(v => v !== null && v <= 0).length,
              0
            )
          : 0;
        return (
          <div className="jp-px-metrics">
            <div className="jp-px-toolbar jp-px-plot-toolbar">
              <label>
                Metric{' '}
                <select
                  className="jp-mod-styled jp-px-metric-select"
                  value={metric ?? ''}
                  onChange={event => model.select(event.target.value)}
                >
                  {metric === null && <option value="">—</option>}
                  {names.map(name => (
                    <option key={name} value={name}>
                      {name}
                    </option>
                  ))}
                </select>
              </label>
              <XKindPicker value={xKind} onChange={setXKind} />
              <label className="jp-px-log-scale" title="Logarithmic y axis">
                <input
                  type="checkbox"
                  checked={logScale}
                  onChange={event => setLog(event.target.checked)}
                />
                log scale
              </label>
              <span
                className={`jp-px-chip jp-px-plot-status${model.finished ? '' : ' jp-mod-live'}`}
              >
                {model.finished ? 'run finished' : 'live'}
              </span>
              {hidden > 0 && (
                <span className="jp-px-note jp-px-log-hidden">
                  {hidden} point{hidden === 1 ? '' : 's'} ≤ 0 not shown on a log
                  scale
                </span>
              )}
            </div>
            {model.error && <div className="jp-px-error">{model.error}</div>}
            {metric === null ? (
              <div className="jp-px-note jp-px-no-metrics">
                <Ticking
                  text={now =>
                    noMetricsText(model.finished, now - model.watchingSince)
                  }
                />
              </div>
            ) : (
              <PlotlyFigure
                className="jp-px-plot"
                label={`${metric} by ${xKind === 'step' ? 'step' : 'time'}${logScale ? ' (log scale)' : ''}`}
                figure={lineFigure({
                  lines,
                  theme,
                  yTitle: metric ?? '',
                  xKind,
                  log: logScale,
                  legend: lines.length > 1,
                  marks: attemptMarks(props.attempts?.() ?? [], xKind, model)
                })}
              />
            )}
          </div>
        );
      }}
    </UseSignal>
  );
}
