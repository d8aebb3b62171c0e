/**
 * What a tuner looks at, as plotly.js figures built from the sweep's view-model
 * (`GET sweeps/<ref>/view`, `jupyter_px/sweeps/view_model.py`): every number comes from the
 * model, these functions only decide how it is drawn (and jest checks that). The notebook's
 * ipywidgets monitor draws the same views from the same model (`widgets/sweep_figures.py`).
 *
 * - history: each complete trial's objective (points) and the best so far (a step line);
 * - importance: each parameter's eta squared (the comparison's calculation), a bar each, largest on top;
 * - parallel coordinates: an axis per parameter and objective, a line per trial;
 * - contour: the objective over the two most important parameters, the trials on top;
 * - slices: each parameter against the objective, side by side;
 * - Pareto: the first two objectives, every trial, the front marked and joined.
 */
import { axis, baseLayout, barFigure, IFigure } from './figures';
import type { IPlotTheme } from './theme';
import type {
  ISweepContour,
  ISweepHistory,
  ISweepImportance,
  ISweepObjectiveView,
  ISweepParallel,
  ISweepParetoFront,
  ISweepSlice
} from '../types';

/** The colors of the trials' points and of the best-so-far line (and the Pareto front). */
function accents(theme: IPlotTheme): { points: string; best: string } {
  return { points: theme.series[0], best: theme.series[1] };
}

/** A categorical axis' ticks at its categories' indices; a log axis drawn log. */
function paramAxis(
  theme: IPlotTheme,
  title: string,
  categories: string[] | null,
  log: boolean
): { [key: string]: any } {
  return {
    ...axis(theme, title),
    type: log ? 'log' : 'linear',
    ...(categories
      ? {
          tickmode: 'array',
          tickvals: categories.map((_, i) => i),
          ticktext: categories
        }
      : {}),
    exponentformat: 'power'
  };
}

/**
 * Ticks of an axis drawn at log10 of its values, labelled in the values' own units (0.001, not
 * -3): a tick per decade within the range, or its ends and middle when it spans less.
 */
export function logTicks(positions: number[]): {
  tickvals: number[];
  ticktext: string[];
} {
  const low = Math.min(...positions);
  const high = Math.max(...positions);
  const decades: number[] = [];
  for (let t = Math.ceil(low); t <= Math.floor(high); t++) {
    decades.push(t);
  }
  const tickvals =
    decades.length >= 2 ? decades : [low, (low + high) / 2, high];
  return {
    tickvals,
    ticktext: tickvals.map(t => String(Number(Math.pow(10, t).toPrecision(3))))
  };
}

/** The optimization history of one objective: each trial's value and the best so far. */
export function historyFigure(
  history: ISweepHistory,
  theme: IPlotTheme
): IFigure {
  const { points, best } = accents(theme);
  const trials = history.points.map(p => p.trial);
  const layout = baseLayout(theme, 280);
  return {
    data: [
      {
        type: 'scatter',
        mode: 'markers',
        name: history.objective,
        x: trials,
        y: history.points.map(p => p.value),
        marker: { size: 7, color: points },
        hovertemplate: 'trial %{x}: %{y:.4~g}<extra></extra>'
      },
      {
        type: 'scatter',
        mode: 'lines',
        name: 'best so far',
        x: trials,
        y: history.points.map(p => p.best),
        line: { color: best, width: 2, shape: 'hv' },
        hovertemplate: 'best after trial %{x}: %{y:.4~g}<extra></extra>'
      }
    ],
    layout: {
      ...layout,
      margin: { ...layout.margin, b: 64 },
      showlegend: true,
      xaxis: {
        ...axis(theme, 'trial'),
        dtick: trials.length <= 20 ? 1 : undefined
      },
      yaxis: {
        ...axis(theme, `${history.objective} (${history.direction})`),
        exponentformat: 'power'
      }
    }
  };
}

/** The axis title of importance bars, in the sweep view and the comparison alike. */
export function importanceLabel(metric: string): string {
  return `share of ${metric}'s variance each param alone explains (η²)`;
}

/** Each parameter's eta squared for the objective (the comparison's calculation), largest on top. */
export function importanceFigure(
  importance: ISweepImportance,
  theme: IPlotTheme
): IFigure {
  const names = Object.keys(importance.params);
  return barFigure({
    labels: names,
    values: names.map(name => importance.params[name]),
    title: importanceLabel(importance.objective),
    theme
  });
}

/**
 * Parallel coordinates: an axis per parameter and objective (a categorical one labelled with
 * its categories, a log one drawn as log10 and so named), a line per complete trial colored by
 * the model's `color` objective, the better end of the scale for the better trials.
 */
export function sweepParallelFigure(
  parallel: ISweepParallel,
  objectives: ISweepObjectiveView[],
  theme: IPlotTheme
): IFigure {
  const dimensions = parallel.axes.map(a => {
    if (a.categorical && a.categories) {
      return {
        label: a.name,
        values: a.values,
        tickvals: a.categories.map((_, i) => i),
        ticktext: a.categories,
        range: [0, Math.max(a.categories.length - 1, 1)]
      };
    }
    if (a.log) {
      const positions = a.values.map(v => Math.log10(v));
      return {
        label: `${a.name} (log scale)`,
        values: positions,
        ...logTicks(positions)
      };
    }
    return { label: a.name, values: a.values };
  });
  const colorAxis = parallel.axes.find(
    a => a.role === 'objective' && a.name === parallel.color
  );
  const direction = objectives.find(o => o.name === parallel.color)?.direction;
  const layout = baseLayout(theme, 340);
  return {
    data: [
      {
        type: 'parcoords',
        line: {
          color: colorAxis?.values ?? [],
          colorscale: theme.objectiveScale,
          reversescale: direction !== 'maximize',
          showscale: true,
          colorbar: {
            tickfont: { color: theme.text },
            title: { text: parallel.color, font: { color: theme.muted } },
            thickness: 12,
            x: 1.02,
            xanchor: 'left'
          }
        },
        dimensions,
        labelfont: { color: theme.text, shadow: 'none' },
        tickfont: { color: theme.text, shadow: 'none' },
        rangefont: { color: theme.muted, shadow: 'none' }
      }
    ],
    // Room on the right for the color bar, on top for the labels.
    layout: { ...layout, margin: { l: 64, r: 120, t: 48, b: 24 } }
  };
}

/** The objective over two parameters: interpolated contours, and the trials as points. */
export function contourFigure(
  contour: ISweepContour,
  direction: 'minimize' | 'maximize',
  theme: IPlotTheme
): IFigure {
  const layout = baseLayout(theme, 360);
  return {
    data: [
      {
        type: 'contour',
        name: contour.objective,
        x: contour.grid_x,
        y: contour.grid_y,
        z: contour.grid_z,
        colorscale: theme.objectiveScale,
        reversescale: direction !== 'maximize',
        contours: { coloring: 'heatmap' },
        line: { width: 0.5, color: theme.grid },
        colorbar: {
          tickfont: { color: theme.text },
          title: { text: contour.objective, font: { color: theme.muted } },
          thickness: 12
        },
        hovertemplate: `${contour.x_param} %{x:.3~g}, ${contour.y_param} %{y:.3~g}: %{z:.4~g}<extra>interpolated</extra>`
      },
      {
        type: 'scatter',
        mode: 'markers',
        name: 'trials',
        x: contour.x,
        y: contour.y,
        customdata: contour.trials.map((trial, i) => [trial, contour.z[i]]),
        marker: {
          size: 8,
          color: theme.background,
          line: { color: theme.text, width: 1.5 }
        },
        hovertemplate:
          'trial %{customdata[0]}: %{customdata[1]:.4~g}<extra></extra>'
      }
    ],
    layout: {
      ...layout,
      margin: { ...layout.margin, r: 24 },
      showlegend: false,
      xaxis: paramAxis(
        theme,
        contour.x_param,
        contour.x_categories,
        contour.x_log
      ),
      yaxis: paramAxis(
        theme,
        contour.y_param,
        contour.y_categories,
        contour.y_log
      )
    }
  };
}

/** Each parameter against the objective, a panel each side by side, the y axis shared. */
export function slicesFigure(
  slices: ISweepSlice[],
  theme: IPlotTheme
): IFigure {
  const gap = 0.04;
  const width = (1 - gap * (slices.length - 1)) / Math.max(slices.length, 1);
  const layout = baseLayout(theme, 280);
  const axes: { [key: string]: any } = {};
  const data = slices.map((slice, i) => {
    const suffix = i === 0 ? '' : String(i + 1);
    axes[`xaxis${suffix}`] = {
      ...paramAxis(theme, slice.param, slice.categories, slice.log),
      domain: [i * (width + gap), i * (width + gap) + width],
      anchor: 'y'
    };
    return {
      type: 'scatter',
      mode: 'markers',
      name: slice.param,
      xaxis: `x${suffix}`,
      yaxis: 'y',
      x: slice.x,
      y: slice.y,
      customdata: slice.trials,
      marker: { size: 7, color: theme.series[i % theme.series.length] },
      hovertemplate: `trial %{customdata}: ${slice.param} %{x:.3~g}, %{y:.4~g}<extra></extra>`
    };
  });
  return {
    data,
    layout: {
      ...layout,
      showlegend: false,
      ...axes,
      yaxis: {
        ...axis(theme, slices[0]?.objective ?? 'objective'),
        exponentformat: 'power'
      }
    }
  };
}

/**
 * The Pareto plot of a multi-objective sweep: the first two objectives, every complete trial,
 * the trials on the front larger, in the accent color and joined in order of the first.
 */
export function paretoFigure(
  pareto: ISweepParetoFront,
  theme: IPlotTheme
): IFigure {
  const [first, second] = pareto.objectives;
  const others = pareto.points.filter(p => !p.on_front);
  const front = pareto.points
    .filter(p => p.on_front)
    .sort((a, b) => a.values[0] - b.values[0]);
  const layout = baseLayout(theme, 320);
  const title = (o: ISweepObjectiveView) =>
    `${o.name} (${o.direction === 'minimize' ? 'min' : 'max'})`;
  return {
    data: [
      {
        type: 'scatter',
        mode: 'markers',
        name: 'trials',
        x: others.map(p => p.values[0]),
        y: others.map(p => p.values[1]),
        customdata: others.map(p => p.trial),
        marker: { size: 7, color: theme.muted, opacity: 0.7 },
        hovertemplate:
          'trial %{customdata}: %{x:.4~g}, %{y:.4~g}<extra></extra>'
      },
      {
        type: 'scatter',
        mode: 'lines+markers',
        name: 'Pareto front',
        x: front.map(p => p.values[0]),
        y: front.map(p => p.values[1]),
        customdata: front.map(p => p.trial),
        marker: { size: 10, color: theme.series[2], symbol: 'diamond' },
        line: { color: theme.series[2], width: 1.5, shape: 'hv', dash: 'dot' },
        hovertemplate:
          'trial %{customdata} (on the front): %{x:.4~g}, %{y:.4~g}<extra></extra>'
      }
    ],
    layout: {
      ...layout,
      margin: { ...layout.margin, b: 64 },
      showlegend: true,
      xaxis: { ...axis(theme, title(first)), exponentformat: 'power' },
      yaxis: { ...axis(theme, title(second)), exponentformat: 'power' }
    }
  };
}
