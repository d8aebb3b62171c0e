/**
 * The server's figures in the page's theme (`plotting/themeFigure.ts`): a sweep's views as the
 * server sends them (`sweepView.json`, which pytest checks is what `sweep_view` makes of its
 * model) keep what they draw and take the theme's colors: the palette's by place, the grey as
 * text or muted, the objective's scale, the axes and fonts of every plot of the extension.
 */
import { readFileSync } from 'fs';
import { join } from 'path';

import { metricFigures, spansDecades } from '../output/sweepViews';
import { IPlotTheme, plotTheme, SERIES } from '../plotting/theme';
import { NEUTRAL_GREY, themeFigure } from '../plotting/themeFigure';
import type { ISweepView } from '../types';

function view(): ISweepView {
  return JSON.parse(
    readFileSync(join(__dirname, 'sweepView.json'), 'utf-8')
  ) as ISweepView;
}

/** A theme unlike the neutral look in every color, so a color left as it was shows. */
function theme(): IPlotTheme {
  return {
    ...plotTheme(),
    text: '#010101',
    muted: '#020202',
    grid: '#030303',
    axis: '#040404',
    series: SERIES.map((_, i) => `#a0a0${String(i).padStart(2, '0')}`),
    objectiveScale: [
      [0, '#b00000'],
      [1, '#b00001']
    ]
  };
}

/** Every `color` in `value`, with where it was. */
function colors(value: any, path = ''): [string, string][] {
  if (Array.isArray(value)) {
    return value.flatMap((item, i) => colors(item, `${path}[${i}]`));
  }
  if (value === null || typeof value !== 'object') {
    return [];
  }
  return Object.entries(value).flatMap(([key, item]) =>
    key === 'color' && typeof item === 'string'
      ? [[`${path}.${key}`, item] as [string, string]]
      : colors(item, `${path}.${key}`)
  );
}

describe("the server's figures in the page's theme", () => {
  it('keep what they draw and take the palette by place', () => {
    const [history] = view().figures.history;
    const themed = themeFigure(history, theme());
    expect(themed.data.map(trace => trace.name)).toEqual([
      'loss',
      'best so far'
    ]);
    expect(themed.data[0].y).toEqual(history.data[0].y);
    expect(themed.data[1].line.shape).toBe('hv');
    // the points in the palette's first color, the best so far in its second
    expect(themed.data[0].marker.color).toBe(theme().series[0]);
    expect(themed.data[1].line.color).toBe(theme().series[1]);
    expect(themed.layout.yaxis.title.text).toBe('loss (minimize)');
    expect(themed.layout.yaxis.color).toBe('#010101');
    expect(themed.layout.yaxis.gridcolor).toBe('#030303');
    expect(themed.layout.font.color).toBe('#010101');
  });

  it('leave no color of the neutral look in any view', () => {
    const figures = view().figures;
    const all = [
      ...figures.history,
      ...figures.importance,
      figures.parallel!,
      figures.contour!,
      figures.slices!
    ];
    const neutral = new Set([NEUTRAL_GREY, ...SERIES]);
    for (const figure of all) {
      const themed = themeFigure(figure, theme());
      for (const [where, color] of colors(themed)) {
        expect([where, neutral.has(color.toLowerCase())]).toEqual([
          where,
          false
        ]);
      }
    }
    const [parallel] = themeFigure(figures.parallel!, theme()).data;
    expect(parallel.line.colorscale).toEqual(theme().objectiveScale);
    expect(parallel.line.reversescale).toBe(true); // lower loss, the better end
    expect(parallel.labelfont.color).toBe('#010101'); // text in a font
    expect(parallel.dimensions[1].ticktext).toEqual(['relu', 'tanh']);
    const [, trials] = themeFigure(figures.contour!, theme()).data;
    expect(trials.marker.line.color).toBe('#020202'); // muted elsewhere
  });

  it("draws the worst trial's line, and the best one's, legible in Dark and Light", () => {
    const contrast = (color: string, ground: string): number => {
      const luminance = (hex: string) => {
        const [r, g, b] = [1, 3, 5].map(i => {
          const c = parseInt(hex.slice(i, i + 2), 16) / 255;
          return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
      };
      const [high, low] = [luminance(color), luminance(ground)].sort(
        (a, b) => b - a
      );
      return (high + 0.05) / (low + 0.05);
    };
    for (const light of ['false', 'true']) {
      document.body.dataset.jpThemeLight = light;
      const [trace] = themeFigure(view().figures.parallel!, plotTheme()).data;
      const stops: [number, string][] = trace.line.colorscale;
      expect(stops[0][0]).toBe(0);
      expect(stops[stops.length - 1][0]).toBe(1);
      // both ends (the worst trial at one, the best at the other) and every stop between
      for (const [, color] of stops) {
        for (const ground of ['#ffffff', '#111111']) {
          expect(contrast(color, ground)).toBeGreaterThanOrEqual(3);
        }
      }
    }
    delete document.body.dataset.jpThemeLight;
  });
});

describe('a sweep without an objective', () => {
  it("draws the server's metric figures, on a log axis when asked", () => {
    const shown = view();
    const figure = {
      data: [
        { type: 'scatter', name: 'trial 0', x: [0, 1], y: [1, 1e-8] },
        { type: 'scatter', name: 'trial 1', x: [0, 1], y: [2, 0.5] }
      ],
      layout: { height: 260, yaxis: { title: { text: 'loss' } } }
    };
    const none: ISweepView = {
      ...shown,
      objectives: [],
      metrics: [{ name: 'loss', trials: [] }],
      figures: { ...shown.figures, metrics: [figure] }
    };
    const [loss] = metricFigures(none, theme(), true);
    expect(loss.name).toBe('loss');
    expect(loss.figure.data.map((trace: any) => trace.name)).toEqual([
      'trial 0',
      'trial 1'
    ]);
    expect(loss.figure.layout.yaxis.type).toBe('log');
    expect(loss.figure.layout.yaxis.title.text).toBe('loss');
    expect(spansDecades([1, 1e-8, 2, 0.5])).toBe(true); // 8 decades: log by itself
    expect(spansDecades([1, 0.5, 2])).toBe(false);
    expect(spansDecades([1, -1e-8])).toBe(false); // a log axis cannot draw it
  });
});
