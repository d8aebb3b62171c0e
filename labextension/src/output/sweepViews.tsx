/**
 * What a tuner looks at, drawn from the sweep's view-model (`GET sweeps/<ref>/view`): the
 * optimization history, parameter importance, parallel coordinates, the contour of the two most
 * important parameters and the slices, and a multi-objective sweep's Pareto plot. A view the
 * model says is missing (too few trials, one parameter) shows the model's reason in its place,
 * never an empty box. A sweep without an objective says once how to declare one and draws every
 * metric its trials logged, a line per trial. Shown by the sweep's notebook output and its panel
 * from the sidebar. Every figure is the server's (`view.figures`, built in Python for the
 * notebook's monitor too); here it is put in the page's theme, and the log scale applied.
 */
import * as React from 'react';

import type { IFigure } from '../plotting/figures';
import { PlotlyFigure } from '../plotting/plotlyFigure';
import type { IPlotTheme } from '../plotting/theme';
import { themeFigure } from '../plotting/themeFigure';
import type { IPlotlyFigure, ISweepView } from '../types';

/** One view: its title, and its plot or why there is none. */
function View(props: {
  name: string;
  title: string;
  missing?: string;
  children?: React.ReactNode;
}): JSX.Element {
  return (
    <section className={`jp-px-sweep-view jp-px-sweep-${props.name}`}>
      <h4 className="jp-px-sweep-view-title">{props.title}</h4>
      {props.children ?? (
        <div className="jp-px-note jp-px-sweep-missing">
          {props.missing ?? 'nothing to draw yet'}
        </div>
      )}
    </section>
  );
}

/** Whether positive values span more than three decades: a log axis reads them, a linear one draws the smallest as 0. */
export function spansDecades(values: number[]): boolean {
  const positive = values.filter(v => Number.isFinite(v) && v > 0);
  if (positive.length < 2 || positive.length < values.length) {
    return false;
  }
  return Math.max(...positive) / Math.min(...positive) > 1000;
}

/** The figure with its y axis log (the sweep's "log scale" choice), else as it is. */
function withLogY(figure: IFigure, log: boolean): IFigure {
  if (!log) {
    return figure;
  }
  return {
    ...figure,
    layout: {
      ...figure.layout,
      yaxis: { ...(figure.layout.yaxis ?? {}), type: 'log' }
    }
  };
}

/**
 * A sweep without an objective: every metric its trials logged, a line per trial by step (no
 * trial is better than another, so none is starred), in the theme, log where asked.
 */
export function metricFigures(
  view: ISweepView,
  theme: IPlotTheme,
  log: boolean
): { name: string; figure: IFigure }[] {
  return view.figures.metrics.map((figure, i) => ({
    name: view.metrics[i]?.name ?? String(i),
    figure: withLogY(themeFigure(figure, theme), log)
  }));
}

export function SweepViews(props: {
  view: ISweepView;
  theme: IPlotTheme;
  log?: boolean;
}): JSX.Element {
  const { view, theme } = props;
  const missing = view.missing;
  const figures = React.useMemo(() => {
    const themed = (figure: IPlotlyFigure | null) =>
      figure ? themeFigure(figure, theme) : null;
    const drawn = view.figures;
    // a figure per objective, with the objective it is of (the model's order)
    const history = view.history.filter(h => h.points.length);
    return {
      history: drawn.history.map((figure, i) => ({
        objective: history[i]?.objective ?? String(i),
        figure: withLogY(themeFigure(figure, theme), props.log ?? false)
      })),
      importance: drawn.importance.map((figure, i) => ({
        objective: view.importance?.[i]?.objective ?? String(i),
        figure: themeFigure(figure, theme)
      })),
      parallel: themed(drawn.parallel),
      contour: themed(drawn.contour),
      slices: themed(drawn.slices),
      pareto: themed(drawn.pareto)
    };
  }, [view, theme, props.log]);
  if (!view.objectives.length) {
    const metricPlots = metricFigures(view, theme, props.log ?? false);
    return (
      <div className="jp-px-sweep-views">
        {view.note && (
          <div className="jp-px-note jp-px-sweep-note">{view.note}</div>
        )}
        <View
          name="metrics"
          title="Every logged metric, per trial"
          missing="no trial has logged a metric yet"
        >
          {metricPlots.length
            ? metricPlots.map(m => (
                <PlotlyFigure
                  key={m.name}
                  className="jp-px-sweep-metric-plot"
                  label={`${m.name} per trial by step`}
                  figure={m.figure}
                />
              ))
            : undefined}
        </View>
      </div>
    );
  }
  return (
    <div className="jp-px-sweep-views">
      {view.pareto !== null || missing.pareto ? (
        <View
          name="pareto"
          title={`Pareto front: ${view.objectives
            .slice(0, 2)
            .map(o => o.name)
            .join(
              ' against '
            )} (${view.pareto?.front.length ?? 0} trials on it)`}
          missing={missing.pareto}
        >
          {figures.pareto && view.pareto?.points.length ? (
            <PlotlyFigure
              className="jp-px-sweep-pareto-plot"
              label="the trials' objectives, the Pareto front marked"
              figure={figures.pareto}
            />
          ) : undefined}
        </View>
      ) : null}
      <View
        name="history"
        title="Optimization history"
        missing={missing.history}
      >
        {figures.history.length
          ? figures.history.map(h => (
              <PlotlyFigure
                key={h.objective}
                className="jp-px-sweep-history-plot"
                label={`${h.objective} by trial, and the best so far`}
                figure={h.figure}
              />
            ))
          : undefined}
      </View>
      <View
        name="importance"
        title="Parameter importance"
        missing={missing.importance}
      >
        {figures.importance.length
          ? figures.importance.map(i => (
              <PlotlyFigure
                key={i.objective}
                className="jp-px-sweep-importance-plot"
                label={`each parameter's importance for ${i.objective}`}
                figure={i.figure}
              />
            ))
          : undefined}
      </View>
      <View
        name="parallel"
        title="Parallel coordinates"
        missing={missing.parallel}
      >
        {figures.parallel ? (
          <PlotlyFigure
            className="jp-px-sweep-parallel-plot"
            label="the trials' values and objectives"
            figure={figures.parallel}
          />
        ) : undefined}
      </View>
      <View
        name="contour"
        title={
          view.contour
            ? `Contour: ${view.contour.objective} over ${view.contour.x_param} and ${view.contour.y_param}`
            : 'Contour'
        }
        missing={missing.contour}
      >
        {figures.contour ? (
          <PlotlyFigure
            className="jp-px-sweep-contour-plot"
            label="the objective over two parameters"
            figure={figures.contour}
          />
        ) : undefined}
      </View>
      <View name="slices" title="Slices" missing={missing.slices}>
        {figures.slices ? (
          <PlotlyFigure
            className="jp-px-sweep-slices-plot"
            label="each parameter against the objective"
            figure={figures.slices}
          />
        ) : undefined}
      </View>
    </div>
  );
}
