/**
 * A plotly.js figure in React: plotly.js is loaded the first time a plot is shown (its own chunk
 * of the extension, about 1.4 MB compressed, fetched once and cached by the browser), so opening
 * JupyterLab, the sidebar or a run without metrics costs nothing of it.
 *
 * The element says what it holds for tests and people reading the DOM: `data-state` (loading,
 * drawn, error) and `data-traces` (the lines drawn). Plots follow the theme: `usePlotTheme`
 * re-reads JupyterLab's CSS variables when the theme changes and the parent rebuilds its figure.
 *
 * A figure is drawn when what it shows changed, not each time its parent renders: views rebuild
 * their figures on every render (an age that ticks each second, a poll that read nothing new), and
 * `Plotly.react` redraws a figure whose arrays are new even where their values are the same. A
 * finished run's Metrics tab or a sweep's view, open in a notebook, kept the browser redrawing
 * every plot once a second.
 */
import * as React from 'react';

import { CONFIG, IFigure } from './figures';
import { IPlotTheme, plotTheme, themeChanged } from './theme';

type PlotlyModule = typeof import('plotly.js-dist-min');

let plotly: Promise<PlotlyModule> | null = null;

/** plotly.js, loaded once. */
export function loadPlotly(): Promise<PlotlyModule> {
  if (!plotly) {
    plotly = import(/* webpackChunkName: "plotly" */ 'plotly.js-dist-min').then(
      module => ((module as any).default ?? module) as PlotlyModule
    );
    plotly.catch(() => (plotly = null));
  }
  return plotly;
}

/** The theme's plot colors, updated when JupyterLab's theme changes. */
export function usePlotTheme(): IPlotTheme {
  const [theme, setTheme] = React.useState(plotTheme);
  React.useEffect(() => {
    const update = () => setTheme(plotTheme());
    const signal = themeChanged();
    signal.connect(update);
    return () => {
      signal.disconnect(update);
    };
  }, []);
  return theme;
}

/** What the pointer is over: the `meta` (run id, replica) of the line under it. */
export type HoverHandler = (id: string | null) => void;

export function PlotlyFigure(props: {
  figure: IFigure;
  className?: string;
  label: string;
  onHover?: HoverHandler;
  /** Called after each draw (the comparison times its first one). */
  onDrawn?: () => void;
}): JSX.Element {
  const { figure, onHover } = props;
  const drawn = React.useRef(props.onDrawn);
  drawn.current = props.onDrawn;
  const node = React.useRef<HTMLDivElement>(null);
  const [state, setState] = React.useState<'loading' | 'drawn' | 'error'>(
    'loading'
  );
  const [error, setError] = React.useState('');
  const hover = React.useRef(onHover);
  hover.current = onHover;
  // What the figure shows: the drawing below runs again only when this changes.
  const shown = React.useMemo(() => JSON.stringify(figure), [figure]);
  const latest = React.useRef(figure);
  latest.current = figure;

  React.useEffect(() => {
    let live = true;
    const div = node.current;
    if (!div) {
      return;
    }
    const { data, layout } = latest.current;
    loadPlotly()
      .then(async Plotly => {
        if (!live) {
          return;
        }
        await Plotly.react(div, data as any, layout as any, CONFIG as any);
        const events = div as any;
        if (!events.__pxEvents && events.on) {
          events.__pxEvents = true;
          events.on('plotly_hover', (event: any) =>
            hover.current?.(event?.points?.[0]?.data?.meta ?? null)
          );
          events.on('plotly_unhover', () => hover.current?.(null));
        }
        if (live) {
          setState('drawn');
          drawn.current?.();
        }
      })
      .catch(reason => {
        if (live) {
          setError(String(reason?.message ?? reason));
          setState('error');
        }
      });
    return () => {
      live = false;
    };
  }, [shown]);

  React.useEffect(() => {
    const div = node.current;
    if (!div || typeof ResizeObserver === 'undefined') {
      return;
    }
    // A panel resized (the sidebar dragged, a notebook's width changed): plotly follows.
    const observer = new ResizeObserver(() => {
      if (div.clientWidth > 0 && (div as any)._fullLayout) {
        void loadPlotly().then(Plotly => Plotly.Plots.resize(div));
      }
    });
    observer.observe(div);
    return () => {
      observer.disconnect();
      void loadPlotly().then(
        Plotly => Plotly.purge(div),
        () => undefined
      );
    };
  }, []);

  return (
    <div
      className={`jp-px-plotly ${props.className ?? ''}`}
      role="img"
      aria-label={props.label}
      data-state={state}
      data-traces={
        figure.data.filter(trace => trace.hoverinfo !== 'skip').length
      }
    >
      {/* Its height held in the layout's flow (plotly draws into it, absolutely positioned). */}
      <div
        ref={node}
        className="jp-px-plotly-target"
        style={{ height: `${figure.layout.height ?? 320}px` }}
      />
      {state === 'error' && (
        <div className="jp-px-error">The plot could not be drawn: {error}</div>
      )}
    </div>
  );
}
