import { UseSignal } from '@jupyterlab/ui-components';
import * as React from 'react';

import { formatTick, layoutPlot } from '../plot';
import type { MetricsModel } from './metricsModel';

const WIDTH = 640;
const HEIGHT = 300;

/** The metric picker, the plot (one line per replica, broken where a value is not finite) and its legend. */
export function MetricsPlot(props: { model: MetricsModel }): JSX.Element {
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
                  <path
                    key={trace.label}
                    className={`jp-px-trace jp-px-trace-${i % 8}`}
                    data-replica={trace.label}
                    d={trace.path}
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
