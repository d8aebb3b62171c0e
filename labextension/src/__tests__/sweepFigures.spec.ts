/**
 * What the sweep's tuning views draw from its view-model (`plotting/sweepFigures.ts`): the
 * history's points and best-so-far line, the importance bars in order, the parallel coordinates'
 * axes (categorical ticks, log axes at log10 with ticks in real units), the contour's grid and trial points, a slice per
 * parameter on its own x axis, and the Pareto plot's front apart from the other trials.
 */
import {
  contourFigure,
  historyFigure,
  importanceFigure,
  paretoFigure,
  slicesFigure,
  sweepParallelFigure
} from '../plotting/sweepFigures';
import { plotTheme } from '../plotting/theme';
import { metricFigures, spansDecades } from '../output/sweepViews';
import type { ISweepViewModel } from '../types';

const theme = () => plotTheme();

function model(): ISweepViewModel {
  return {
    sweep_id: 'sw',
    name: 'sw',
    state: 'Succeeded',
    algorithm: 'grid',
    objectives: [{ name: 'loss', direction: 'minimize' }],
    n_trials: 4,
    counts: { Complete: 4 },
    best: 2,
    complete: 4,
    history: [
      {
        objective: 'loss',
        direction: 'minimize',
        points: [
          { trial: 0, value: 3, best: 3 },
          { trial: 1, value: 4, best: 3 },
          { trial: 2, value: 1, best: 1 },
          { trial: 3, value: 2, best: 1 }
        ]
      }
    ],
    importance: [
      {
        objective: 'loss',
        evaluator: 'eta-squared',
        params: { lr: 0.8, act: 0.2 }
      }
    ],
    parallel: {
      trials: [0, 1, 2, 3],
      color: 'loss',
      axes: [
        {
          name: 'lr',
          role: 'param',
          categorical: false,
          categories: null,
          log: true,
          values: [0.001, 0.01, 0.1, 1],
          range: [0.001, 1]
        },
        {
          name: 'act',
          role: 'param',
          categorical: true,
          categories: ['relu', 'tanh'],
          log: false,
          values: [0, 1, 0, 1],
          range: [0, 1]
        },
        {
          name: 'loss',
          role: 'objective',
          categorical: false,
          categories: null,
          log: false,
          values: [3, 4, 1, 2],
          range: [1, 4]
        }
      ]
    },
    slices: [
      {
        param: 'lr',
        objective: 'loss',
        categorical: false,
        categories: null,
        log: true,
        trials: [0, 1, 2, 3],
        x: [0.001, 0.01, 0.1, 1],
        y: [3, 4, 1, 2]
      },
      {
        param: 'act',
        objective: 'loss',
        categorical: true,
        categories: ['relu', 'tanh'],
        log: false,
        trials: [0, 1, 2, 3],
        x: [0, 1, 0, 1],
        y: [3, 4, 1, 2]
      }
    ],
    contour: {
      x_param: 'lr',
      y_param: 'act',
      objective: 'loss',
      x_log: true,
      y_log: false,
      x_categories: null,
      y_categories: ['relu', 'tanh'],
      trials: [0, 1, 2, 3],
      x: [0.001, 0.01, 0.1, 1],
      y: [0, 1, 0, 1],
      z: [3, 4, 1, 2],
      grid_x: [0.001, 1],
      grid_y: [0, 1],
      grid_z: [
        [3, 1],
        [4, 2]
      ]
    },
    pareto: null,
    missing: {},
    note: null,
    metrics: []
  };
}

describe("a sweep's tuning views", () => {
  it('draws each trial and the best so far by trial', () => {
    const figure = historyFigure(model().history[0], theme());
    expect(figure.data.map(trace => trace.name)).toEqual([
      'loss',
      'best so far'
    ]);
    expect(figure.data[0].x).toEqual([0, 1, 2, 3]);
    expect(figure.data[0].y).toEqual([3, 4, 1, 2]);
    expect(figure.data[1].y).toEqual([3, 3, 1, 1]);
    expect(figure.data[1].line.shape).toBe('hv');
    expect(figure.layout.xaxis.title.text).toBe('trial');
    expect(figure.layout.yaxis.title.text).toBe('loss (minimize)');
  });

  it('draws the importance largest on top', () => {
    const figure = importanceFigure(model().importance![0], theme());
    // plotly draws a horizontal bar chart's first category at the bottom.
    expect(figure.data[0].y).toEqual(['act', 'lr']);
    expect(figure.data[0].x).toEqual([0.2, 0.8]);
    expect(figure.layout.xaxis.title.text).toBe(
      "share of loss's variance each param alone explains (η²)"
    );
  });

  it('draws the parallel coordinates with categories and log axes', () => {
    const view = model();
    const figure = sweepParallelFigure(
      view.parallel!,
      view.objectives,
      theme()
    );
    const [trace] = figure.data;
    expect(trace.type).toBe('parcoords');
    expect(trace.dimensions.map((d: any) => d.label)).toEqual([
      'lr (log scale)',
      'act',
      'loss'
    ]);
    expect(trace.dimensions[0].values).toEqual([-3, -2, -1, 0]);
    // labelled in lr's own units, never its raw log10 (-0.4763)
    expect(trace.dimensions[0].tickvals).toEqual([-3, -2, -1, 0]);
    expect(trace.dimensions[0].ticktext).toEqual(['0.001', '0.01', '0.1', '1']);
    expect(trace.dimensions[1].ticktext).toEqual(['relu', 'tanh']);
    expect(trace.line.color).toEqual([3, 4, 1, 2]);
    expect(trace.line.reversescale).toBe(true); // lower loss, the better end
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
      const view = model();
      const [trace] = sweepParallelFigure(
        view.parallel!,
        view.objectives,
        theme()
      ).data;
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

  it('draws the contour grid and the trials on it', () => {
    const figure = contourFigure(model().contour!, 'minimize', theme());
    const [contour, points] = figure.data;
    expect(contour.type).toBe('contour');
    expect(contour.z).toEqual([
      [3, 1],
      [4, 2]
    ]);
    expect(points.x).toHaveLength(4);
    expect(points.customdata[2]).toEqual([2, 1]);
    expect(figure.layout.xaxis.type).toBe('log');
    expect(figure.layout.xaxis.title.text).toBe('lr');
    expect(figure.layout.yaxis.ticktext).toEqual(['relu', 'tanh']);
  });

  it('draws a slice per parameter, each on its own x axis', () => {
    const figure = slicesFigure(model().slices, theme());
    expect(figure.data.map(trace => trace.xaxis)).toEqual(['x', 'x2']);
    expect(figure.data.map(trace => trace.x.length)).toEqual([4, 4]);
    expect(figure.layout.xaxis.title.text).toBe('lr');
    expect(figure.layout.xaxis2.title.text).toBe('act');
    expect(figure.layout.xaxis.domain[1]).toBeLessThan(
      figure.layout.xaxis2.domain[0]
    );
    expect(figure.layout.yaxis.title.text).toBe('loss');
  });

  it('marks the Pareto front apart from the other trials, joined in order', () => {
    const figure = paretoFigure(
      {
        objectives: [
          { name: 'loss', direction: 'minimize' },
          { name: 'throughput', direction: 'maximize' }
        ],
        front: [0, 2],
        points: [
          { trial: 0, values: [2, 9], on_front: true },
          { trial: 1, values: [3, 5], on_front: false },
          { trial: 2, values: [1, 4], on_front: true },
          { trial: 3, values: [4, 1], on_front: false }
        ]
      },
      theme()
    );
    const [others, front] = figure.data;
    expect(others.customdata).toEqual([1, 3]);
    expect(front.name).toBe('Pareto front');
    expect(front.customdata).toEqual([2, 0]); // by the first objective
    expect(front.x).toEqual([1, 2]);
    expect(front.y).toEqual([4, 9]);
    expect(figure.layout.xaxis.title.text).toBe('loss (min)');
    expect(figure.layout.yaxis.title.text).toBe('throughput (max)');
  });
});

describe('a sweep without an objective', () => {
  it('draws every logged metric, a line per trial, on a log axis when asked', () => {
    const view: ISweepViewModel = {
      ...model(),
      objectives: [],
      history: [],
      importance: null,
      parallel: null,
      slices: [],
      contour: null,
      best: null,
      note: 'this sweep has no objective',
      metrics: [
        {
          name: 'loss',
          trials: [
            { trial: 0, steps: [0, 1], values: [1, 1e-8] },
            { trial: 1, steps: [0, 1], values: [2, 0.5] }
          ]
        }
      ]
    };
    const [loss] = metricFigures(view, theme(), true);
    expect(loss.name).toBe('loss');
    expect(loss.figure.data.map((trace: any) => trace.name)).toEqual([
      'trial 0',
      'trial 1'
    ]);
    expect(loss.figure.layout.yaxis.type).toBe('log');
    expect(spansDecades([1, 1e-8, 2, 0.5])).toBe(true); // 8 decades: log by itself
    expect(spansDecades([1, 0.5, 2])).toBe(false);
    expect(spansDecades([1, -1e-8])).toBe(false); // a log axis cannot draw it
  });
});
