import { UseSignal } from '@jupyterlab/ui-components';
import * as React from 'react';

import { formatTick, layoutPlot, valuesAt } from '../plot';
import type { MetricsModel } from './metricsModel';

/** The plot's width before the panel has been measured (and in tests, where nothing is laid out). */
/** Replica colours (`--px-replica-N` in style/base.css, the notebook's presentation/colors.py). */
const REPLICA_COLOURS = 10;
const DEFAULT_WIDTH = 640;
const HEIGHT = 300;
/** Room around the plotting box for the tick labels. */
const LEFT = 64;
const BOTTOM = 30;
const TOP = 10;
const RIGHT = 16;

/** The width of `ref`'s element, followed as the panel is resized. */
function useWidth(ref: React.RefObject<HTMLElement>): number {
  const [width, setWidth] = React.useState(DEFAULT_WIDTH);
  React.useEffect(() => {
    const node = ref.current;
    if (!node || typeof ResizeObserver === 'undefined') {
      return;
    }
    const observer = new ResizeObserver(() => {
      if (node.clientWidth > 0) {
        setWidth(node.clientWidth);
      }
    });
    observer.observe(node);
    return () => observer.disconnect();
  }, [ref]);
  return width;
}

/**
 * The metric picker and a log-scale toggle, the plot (one line per replica, broken where a value
 * is not finite) with axes, a grid and a read-out of every replica's value under the pointer,
 * filling the panel's width; and its legend.
 */
export function MetricsPlot(props: { model: MetricsModel }): JSX.Element {
  const { model } = props;
  const box = React.useRef<HTMLDivElement>(null);
  const outer = useWidth(box);
  const [log, setLog] = React.useState(false);
  const [hoverX, setHoverX] = React.useState<number | null>(null);
  const width = Math.max(120, outer - LEFT - RIGHT);
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
        const plot = layoutPlot(series, width, HEIGHT, { log });
        const hover =
          hoverX === null || !series.length
            ? null
            : valuesAt(series, plot, hoverX, width);
        const hoverPosition =
          hover === null
            ? 0
            : ((hover.step - plot.xRange[0]) /
                (plot.xRange[1] - plot.xRange[0])) *
              width;
        const move = (event: React.MouseEvent<SVGSVGElement>) => {
          const rect = event.currentTarget.getBoundingClientRect();
          const scale = rect.width ? (LEFT + width + RIGHT) / rect.width : 1;
          const x = (event.clientX - rect.left) * scale - LEFT;
          setHoverX(x >= 0 && x <= width ? x : null);
        };
        return (
          <div className="jp-px-metrics" ref={box}>
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
              <label className="jp-px-log-scale" title="Logarithmic y axis">
                <input
                  type="checkbox"
                  checked={log}
                  onChange={event => setLog(event.target.checked)}
                />{' '}
                log scale
              </label>
              {model.finished ? (
                <span className="jp-px-note">run finished</span>
              ) : (
                <span className="jp-px-note">live</span>
              )}
              {plot.hidden > 0 && (
                <span className="jp-px-note jp-px-log-hidden">
                  {plot.hidden} point{plot.hidden === 1 ? '' : 's'} ≤ 0 not
                  shown on a log scale
                </span>
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
                viewBox={`${-LEFT} ${-TOP} ${LEFT + width + RIGHT} ${HEIGHT + TOP + BOTTOM}`}
                width="100%"
                role="img"
                aria-label={`${metric} by step${log ? ' (log scale)' : ''}`}
                onMouseMove={move}
                onMouseLeave={() => setHoverX(null)}
              >
                {plot.yTicks.map(tick => (
                  <g key={`y${tick.value}`} className="jp-px-ytick">
                    <line
                      className="jp-px-grid-line"
                      x1={0}
                      x2={width}
                      y1={tick.position}
                      y2={tick.position}
                    />
                    <text
                      className="jp-px-tick"
                      x={-6}
                      y={tick.position + 4}
                      textAnchor="end"
                    >
                      {formatTick(tick.value)}
                    </text>
                  </g>
                ))}
                {plot.xTicks.map(tick => (
                  <g key={`x${tick.value}`} className="jp-px-xtick">
                    <line
                      className="jp-px-grid-line"
                      x1={tick.position}
                      x2={tick.position}
                      y1={0}
                      y2={HEIGHT}
                    />
                    <text
                      className="jp-px-tick"
                      x={tick.position}
                      y={HEIGHT + 16}
                      textAnchor="middle"
                    >
                      {formatTick(tick.value)}
                    </text>
                  </g>
                ))}
                <line
                  className="jp-px-axis"
                  x1={0}
                  y1={HEIGHT}
                  x2={width}
                  y2={HEIGHT}
                />
                <line className="jp-px-axis" x1={0} y1={0} x2={0} y2={HEIGHT} />
                <text
                  className="jp-px-tick jp-px-axis-title"
                  x={width}
                  y={HEIGHT + 28}
                  textAnchor="end"
                >
                  step
                </text>
                {plot.traces.map((trace, i) => (
                  <path
                    key={trace.label}
                    className={`jp-px-trace jp-px-trace-${i % REPLICA_COLOURS}`}
                    data-replica={trace.label}
                    d={trace.path}
                    fill="none"
                  />
                ))}
                {hover && (
                  <line
                    className="jp-px-hover-line"
                    x1={hoverPosition}
                    x2={hoverPosition}
                    y1={0}
                    y2={HEIGHT}
                  />
                )}
                <rect
                  className="jp-px-hover-area"
                  x={0}
                  y={0}
                  width={width}
                  height={HEIGHT}
                  fill="transparent"
                />
              </svg>
            )}
            {hover && (
              <div className="jp-px-hover" role="status">
                <span className="jp-px-hover-step">
                  step {formatTick(hover.step)}
                </span>
                {hover.values.map(({ label, value }, i) => (
                  <span key={label} className="jp-px-hover-value">
                    <span
                      className={`jp-px-swatch jp-px-trace-${i % REPLICA_COLOURS}`}
                    />{' '}
                    {label}: {value === null ? '–' : formatTick(value)}
                  </span>
                ))}
              </div>
            )}
            <ul className="jp-px-legend">
              {plot.traces.map((trace, i) => (
                <li key={trace.label}>
                  <span
                    className={`jp-px-swatch jp-px-trace-${i % REPLICA_COLOURS}`}
                  />{' '}
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
