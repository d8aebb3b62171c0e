/**
 * The plots' colors and fonts, read from JupyterLab's own CSS variables, so a plot follows the
 * theme (Light, Dark, any other) instead of guessing one; and a signal when the theme changes
 * (JupyterLab marks the body with the theme's name once its stylesheet is in place).
 */
import { ISignal, Signal } from '@lumino/signaling';

export interface IPlotTheme {
  /** Text, axes titles and tick labels. */
  text: string;
  /** Secondary text (notes, faint labels). */
  muted: string;
  grid: string;
  axis: string;
  /** The panel's background, where a plot needs one (hover labels). */
  background: string;
  font: string;
  fontSize: number;
  /** One color per replica or run, in order (`--px-replica-N`, the notebook's palette). */
  series: string[];
  /** The objective's color scale, low values first, as plotly takes it (`--px-objective-N`). */
  objectiveScale: [number, string][];
  dark: boolean;
}

/** The palette's fallback where the stylesheet is not loaded (tests): Tableau 10. */
export const SERIES = [
  '#4e79a7',
  '#f28e2b',
  '#e15759',
  '#76b7b2',
  '#59a14f',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac'
];

/**
 * The objective's colors, worse to better, where the stylesheet is not loaded: mid-tones of
 * Viridis's hues, each at least 3:1 on Light's white and Dark's near-black (Viridis ends in a
 * near-black purple, the worst trial's line invisible on Dark, and a pale yellow on Light).
 */
export const OBJECTIVE_SCALE = [
  '#8f63e0',
  '#4c7be0',
  '#1496a8',
  '#25a05a',
  '#b58a00'
];

function cssVariable(
  style: CSSStyleDeclaration,
  name: string,
  fallback: string
): string {
  const value = style.getPropertyValue(name).trim();
  return value || fallback;
}

/** The current theme's plot colors. */
export function plotTheme(): IPlotTheme {
  const body = document.body;
  const style = window.getComputedStyle(body);
  const dark = body.dataset.jpThemeLight === 'false';
  const size = parseFloat(cssVariable(style, '--jp-ui-font-size1', '13px'));
  return {
    text: cssVariable(
      style,
      '--jp-ui-font-color1',
      dark ? '#e0e0e0' : '#212121'
    ),
    muted: cssVariable(
      style,
      '--jp-ui-font-color2',
      dark ? '#a0a0a0' : '#616161'
    ),
    grid: cssVariable(
      style,
      '--jp-border-color2',
      dark ? '#424242' : '#e0e0e0'
    ),
    axis: cssVariable(
      style,
      '--jp-border-color1',
      dark ? '#616161' : '#bdbdbd'
    ),
    background: cssVariable(
      style,
      '--jp-layout-color1',
      dark ? '#111111' : '#ffffff'
    ),
    font: cssVariable(style, '--jp-ui-font-family', 'sans-serif'),
    fontSize: Number.isFinite(size) ? size : 13,
    series: SERIES.map((fallback, i) =>
      cssVariable(style, `--px-replica-${i}`, fallback)
    ),
    objectiveScale: OBJECTIVE_SCALE.map((fallback, i) => [
      i / (OBJECTIVE_SCALE.length - 1),
      cssVariable(style, `--px-objective-${i}`, fallback)
    ]),
    dark
  };
}

class ThemeWatch {
  constructor() {
    if (typeof MutationObserver !== 'undefined') {
      new MutationObserver(() => this._changed.emit()).observe(document.body, {
        attributes: true,
        attributeFilter: ['data-jp-theme-name', 'data-jp-theme-light']
      });
    }
  }
  get changed(): ISignal<this, void> {
    return this._changed;
  }
  private _changed = new Signal<this, void>(this);
}

let watch: ThemeWatch | null = null;

/** Emitted after JupyterLab switched themes (every plot redraws in the new colors). */
export function themeChanged(): ISignal<unknown, void> {
  watch = watch ?? new ThemeWatch();
  return watch.changed;
}
