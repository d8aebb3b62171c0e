/**
 * Every plot of the extension as plotly.js figures (data + layout), built by pure functions: what
 * a plot draws is decided here and checked by jest; `PlotlyFigure` only hands it to plotly.js.
 *
 * One look everywhere, the notebook's plotly figures included (jupyter_px/widgets/plots.py):
 * transparent backgrounds, the theme's text, grid and font (`theme.ts`), one color per replica
 * or run from the same palette, a legend under the plot (a plot the width of a notebook
 * keeps its width for the lines), integer steps ticked at integers, and a log scale by default
 * where a positive curve spans decades (a loss falling from 10 to 0.01 reads as a flat line at 0
 * on a linear axis).
 */
import type { IPlotTheme } from './theme';

/** A plotly.js figure, as `Plotly.react` takes it. */
export interface IFigure {
  data: { [key: string]: any }[];
  layout: { [key: string]: any };
}

/** One line of a line plot. */
export interface ILine {
  /** The legend's name, and the hover's. */
  name: string;
  /** What the line stands for (a run id, a replica key): the trace's `meta`, for events. */
  id: string;
  x: (number | string)[];
  /** null: a gap (a NaN or infinite value is never bridged). */
  y: (number | null)[];
  color: string;
  width?: number;
  opacity?: number;
  dash?: 'solid' | 'dot' | 'dash';
  showlegend?: boolean;
  /** Lines sharing a group show and hide together from the legend. */
  group?: string;
  /** A faint line behind another (smoothing's raw values): no hover, no legend. */
  faint?: boolean;
}

export type XKind = 'step' | 'wall' | 'relative';

export const X_TITLES: { [kind in XKind]: string } = {
  step: 'step',
  wall: 'wall time',
  relative: 'time since the run started (s)'
};

/** A log y axis suits `values` when they are all positive and span `decades` or more. */
export function suggestLog(
  values: Iterable<number | null>,
  decades = 2
): boolean {
  let low = Infinity;
  let high = -Infinity;
  for (const value of values) {
    if (value === null || !Number.isFinite(value)) {
      continue;
    }
    if (value <= 0) {
      return false;
    }
    low = Math.min(low, value);
    high = Math.max(high, value);
  }
  return Number.isFinite(low) && high / low >= 10 ** decades;
}

/**
 * The x axis' tick spacing when every x is a whole number and the range is short: 1 (plotly
 * would tick 0, 0.5, 1, ... over three steps). Undefined: plotly chooses (its ticks over a longer
 * range are whole numbers already).
 */
export function integerTickStep(
  xs: Iterable<number | string>
): number | undefined {
  let low = Infinity;
  let high = -Infinity;
  for (const x of xs) {
    if (typeof x !== 'number' || !Number.isInteger(x)) {
      return undefined;
    }
    low = Math.min(low, x);
    high = Math.max(high, x);
  }
  return Number.isFinite(low) && high - low <= 10 ? 1 : undefined;
}

/**
 * TensorBoard's smoothing: an exponential moving average, debiased at the start (so the first
 * points are not pulled towards 0), over the finite values; gaps stay gaps.
 */
export function smooth(
  values: (number | null)[],
  weight: number
): (number | null)[] {
  if (!(weight > 0)) {
    return values;
  }
  let last = 0;
  let count = 0;
  return values.map(value => {
    if (value === null || !Number.isFinite(value)) {
      return null;
    }
    last = last * weight + (1 - weight) * value;
    count++;
    return last / (1 - weight ** count);
  });
}

export function axis(theme: IPlotTheme, title: string): { [key: string]: any } {
  return {
    title: { text: title, font: { color: theme.muted } },
    color: theme.text,
    gridcolor: theme.grid,
    linecolor: theme.axis,
    zerolinecolor: theme.grid,
    tickfont: { color: theme.text },
    automargin: true
  };
}

/** What every figure's layout starts from: the theme, transparent grounds, the legend below. */
export function baseLayout(
  theme: IPlotTheme,
  height: number
): { [key: string]: any } {
  return {
    height,
    autosize: true,
    paper_bgcolor: 'rgba(0,0,0,0)',
    plot_bgcolor: 'rgba(0,0,0,0)',
    font: { family: theme.font, size: theme.fontSize, color: theme.text },
    margin: { l: 56, r: 16, t: 12, b: 40 },
    hoverlabel: {
      bgcolor: theme.background,
      bordercolor: theme.axis,
      font: { color: theme.text, family: theme.font }
    },
    // Under the plot, at the figure's foot (below the x axis' title, never over it).
    legend: {
      orientation: 'h',
      x: 0,
      xanchor: 'left',
      yref: 'container',
      y: 0,
      yanchor: 'bottom',
      font: { color: theme.text },
      bgcolor: 'rgba(0,0,0,0)'
    },
    modebar: {
      bgcolor: 'rgba(0,0,0,0)',
      color: theme.muted,
      activecolor: theme.text
    }
  };
}

/**
 * The config of every plot: responsive, the mode bar on hover, no plotly logo, and nothing that
 * sends a figure off this machine: plotly.js 4 shows "Share chart..." (`sendChartToCloud`, on by
 * default), which posts the figure's data to plotly's cloud. A user's training data never leaves
 * from a monitor: it is off, its button removed and plotly's server URL empty. The notebook's
 * figures take the same flags (`jupyter_px/presentation/plot_theme.py`, `PLOT_CONFIG`).
 */
export const CONFIG = {
  responsive: true,
  displaylogo: false,
  showSendToCloud: false,
  plotlyServerURL: '',
  modeBarButtonsToRemove: [
    'sendChartToCloud',
    'lasso2d',
    'select2d',
    'autoScale2d'
  ],
  toImageButtonOptions: { format: 'png', scale: 2 }
};

/**
 * Lines on shared axes: one metric, a line per replica or run. `hover: 'x unified'` lists every
 * line's value at the step under the pointer (with many lines, the nearest one only).
 */
export function lineFigure(options: {
  lines: ILine[];
  theme: IPlotTheme;
  yTitle: string;
  xKind?: XKind;
  log?: boolean;
  height?: number;
  legend?: boolean;
  /** Vertical lines across the plot, each labelled at its top (where an attempt began). */
  marks?: IMark[];
}): IFigure {
  const { lines, theme } = options;
  const xKind = options.xKind ?? 'step';
  const data = lines.map(line => ({
    type: 'scatter',
    mode: 'lines',
    name: line.name,
    meta: line.id,
    x: line.x,
    y: line.y,
    connectgaps: false,
    legendgroup: line.group ?? line.id,
    showlegend: line.faint ? false : (line.showlegend ?? true),
    hoverinfo: line.faint ? 'skip' : undefined,
    opacity: line.opacity ?? 1,
    line: {
      color: line.color,
      width: line.width ?? 1.5,
      dash: line.dash ?? 'solid'
    },
    hovertemplate: line.faint
      ? undefined
      : `%{y:.4~g}<extra>${escapeText(line.name)}</extra>`
  }));
  const shown = lines.filter(line => !line.faint);
  const xs = shown.flatMap(line => line.x);
  const dtick = xKind === 'step' ? integerTickStep(xs) : undefined;
  const layout = baseLayout(theme, options.height ?? 320);
  const legend = options.legend ?? shown.length > 1;
  return {
    data,
    layout: {
      ...layout,
      // Room at the foot for the legend's rows (about 22 px each, five lines a row).
      margin: {
        ...layout.margin,
        b: legend ? 64 + 22 * Math.floor(shown.length / 5) : 40
      },
      showlegend: legend,
      hovermode: shown.length <= 24 ? 'x unified' : 'closest',
      xaxis: {
        ...axis(theme, X_TITLES[xKind]),
        type: xKind === 'wall' ? 'date' : 'linear',
        ...(dtick ? { dtick, tick0: 0 } : {}),
        hoverformat: xKind === 'step' ? ',d' : undefined
      },
      yaxis: {
        ...axis(theme, options.yTitle),
        type: options.log ? 'log' : 'linear',
        exponentformat: 'power',
        // A log axis over a decade or two: a few labelled ticks, not one per digit.
        ...(options.log ? { nticks: 6, tickformat: '~g' } : {})
      },
      ...markLayout(options.marks ?? [], theme)
    }
  };
}

/** A vertical line at `x` (in the plot's x units) with its label. */
export interface IMark {
  x: number | string;
  label: string;
}

function markLayout(
  marks: IMark[],
  theme: IPlotTheme
): { shapes?: any[]; annotations?: any[] } {
  if (marks.length === 0) {
    return {};
  }
  return {
    shapes: marks.map(mark => ({
      type: 'line',
      xref: 'x',
      yref: 'paper',
      x0: mark.x,
      x1: mark.x,
      y0: 0,
      y1: 1,
      line: { color: theme.muted, width: 1, dash: 'dash' }
    })),
    annotations: marks.map(mark => ({
      xref: 'x',
      yref: 'paper',
      x: mark.x,
      y: 1,
      yanchor: 'bottom',
      text: escapeText(mark.label),
      showarrow: false,
      font: { size: 10, color: theme.muted }
    }))
  };
}

/** Text for plotly's templates (which read `%{...}` and HTML). */
function escapeText(text: string): string {
  return text.replace(/[<>&%{}]/g, c => `&#${c.charCodeAt(0)};`);
}
