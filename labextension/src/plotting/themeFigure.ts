/**
 * A figure the server built (`jupyter_px/presentation/sweep_figures.py`: every figure of a view
 * is built once, in Python, for the notebook's monitor and for this extension alike), put in the
 * page's theme. The server draws it in the notebook's neutral look, which reads in any theme
 * since a kernel cannot ask the page for one (`jupyter_px/presentation/plot_theme.py`): a grey
 * for text and axes, the replica palette, the objective's color scale. Here those become the
 * theme's own (`theme.ts`, read from JupyterLab's CSS variables): fonts, axes, grid and hover
 * labels as every plot of the extension has them (`baseLayout`, `axis`), the palette's colors by
 * their place in it, the objective's scale. What is drawn, and where, stays the server's.
 */
import { axis, baseLayout, IFigure } from './figures';
import { IPlotTheme, SERIES } from './theme';

/** The neutral grey of the notebook's figures (`plot_theme.GREY`; a pytest keeps them equal). */
export const NEUTRAL_GREY = '#8c8c8c';

const AXIS_KEY = /^[xy]axis\d*$/;

/** The theme's color for one the server drew in (the palette's by place; the grey as `grey`). */
function themed(color: string, theme: IPlotTheme, grey: string): string {
  const lower = color.toLowerCase();
  if (lower === NEUTRAL_GREY) {
    return grey;
  }
  const slot = SERIES.indexOf(lower);
  return slot >= 0 ? theme.series[slot] : color;
}

/**
 * A trace's colors in the theme: the palette's and the objective's scale; the grey is the
 * theme's text in a font (color bars', parallel coordinates' labels) and muted elsewhere. Only
 * a `color` is a color (a category named like one stays a name).
 */
function recolor(
  value: any,
  theme: IPlotTheme,
  grey: string,
  isColor = false
): any {
  if (typeof value === 'string') {
    return isColor ? themed(value, theme, grey) : value;
  }
  if (Array.isArray(value)) {
    return value.map(item => recolor(item, theme, grey, isColor));
  }
  if (value === null || typeof value !== 'object') {
    return value;
  }
  const out: { [key: string]: any } = {};
  for (const [key, item] of Object.entries(value)) {
    out[key] =
      key === 'colorscale'
        ? theme.objectiveScale
        : recolor(
            item,
            theme,
            key.endsWith('font') ? theme.text : grey,
            key === 'color'
          );
  }
  return out;
}

/** `figure` in the page's theme: the server's data and layout, the theme's colors and font. */
export function themeFigure(figure: IFigure, theme: IPlotTheme): IFigure {
  const base = baseLayout(theme, figure.layout.height ?? 320);
  const layout: { [key: string]: any } = {
    ...figure.layout,
    font: base.font,
    hoverlabel: base.hoverlabel,
    modebar: base.modebar,
    legend: { ...(figure.layout.legend ?? {}), font: base.legend.font }
  };
  for (const [key, value] of Object.entries(figure.layout)) {
    if (AXIS_KEY.test(key)) {
      layout[key] = { ...value, ...axis(theme, value.title?.text ?? '') };
    }
  }
  return {
    data: figure.data.map(trace => recolor(trace, theme, theme.muted)),
    layout
  };
}
