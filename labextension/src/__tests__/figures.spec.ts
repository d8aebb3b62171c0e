/**
 * What every plot draws, as plotly.js figures (`plotting/figures.ts`): the theme's colors, the
 * legend under the plot, integer steps ticked at integers, the log scale where a curve spans
 * decades, smoothing, gaps kept; and the metrics' series merged as pages arrive.
 */
import { replicaLines, xOf } from '../panels/metricsPlot';
import {
  integerTickStep,
  lineFigure,
  smooth,
  suggestLog
} from '../plotting/figures';
import { plotTheme, SERIES } from '../plotting/theme';
import { mergeSeries } from '../series';

const theme = () => plotTheme();

describe('line plots', () => {
  it('ticks integer steps at integers, never at halves', () => {
    // Three steps: plotly's own choice is 0, 0.5, 1, ... 2.5, 3.
    expect(integerTickStep([0, 1, 2, 3])).toBe(1);
    const figure = lineFigure({
      lines: [
        {
          name: 'worker-0',
          id: 'worker-0',
          x: [0, 1, 2, 3],
          y: [4, 3, 2, 1],
          color: 'red'
        }
      ],
      theme: theme(),
      yTitle: 'loss'
    });
    expect(figure.layout.xaxis.dtick).toBe(1);
    expect(figure.layout.xaxis.title.text).toBe('step');
    // A long run's steps, or times: plotly's own round ticks.
    expect(integerTickStep([0, 500, 1000])).toBeUndefined();
    expect(integerTickStep([0.5, 1])).toBeUndefined();
  });

  it('puts the legend under the plot and fills the width it is given', () => {
    const figure = lineFigure({
      lines: ['master-0', 'worker-0'].map((name, i) => ({
        name,
        id: name,
        x: [0, 1],
        y: [1, 2],
        color: SERIES[i]
      })),
      theme: theme(),
      yTitle: 'loss'
    });
    expect(figure.layout.autosize).toBe(true);
    expect(figure.layout.legend.orientation).toBe('h');
    // At the figure's foot, in room kept for it under the x axis.
    expect([figure.layout.legend.yref, figure.layout.legend.y]).toEqual([
      'container',
      0
    ]);
    expect(figure.layout.margin.b).toBeGreaterThan(60);
    expect(figure.layout.showlegend).toBe(true);
    // Hover lists every replica's value at the step under the pointer.
    expect(figure.layout.hovermode).toBe('x unified');
    expect(figure.data.map(trace => trace.line.color)).toEqual(
      SERIES.slice(0, 2)
    );
  });

  it('takes its colors from the theme: text, grid, transparent grounds', () => {
    document.body.style.setProperty('--jp-ui-font-color1', 'rgb(1, 2, 3)');
    document.body.style.setProperty('--jp-border-color2', 'rgb(4, 5, 6)');
    const figure = lineFigure({
      lines: [],
      theme: plotTheme(),
      yTitle: 'loss'
    });
    expect(figure.layout.font.color).toBe('rgb(1, 2, 3)');
    expect(figure.layout.xaxis.gridcolor).toBe('rgb(4, 5, 6)');
    expect(figure.layout.paper_bgcolor).toBe('rgba(0,0,0,0)');
    document.body.style.removeProperty('--jp-ui-font-color1');
    document.body.style.removeProperty('--jp-border-color2');
  });

  it('suggests a log scale where a positive curve spans two decades', () => {
    expect(suggestLog([10, 1, 0.1, 0.01])).toBe(true);
    expect(suggestLog([1, 0.5, 0.2])).toBe(false);
    expect(suggestLog([10, 0, 0.01])).toBe(false); // a zero has no log
    expect(suggestLog([null, 100, 0.5])).toBe(true);
  });

  it('smooths as TensorBoard does: a debiased moving average, gaps kept', () => {
    expect(smooth([1, 2, 3], 0)).toEqual([1, 2, 3]);
    const smoothed = smooth([1, null, 1, 1], 0.9);
    expect(smoothed[0]).toBeCloseTo(1); // debiased: the first point is not pulled to 0
    expect(smoothed[1]).toBeNull();
    expect(smoothed[3]).toBeCloseTo(1);
    const noisy = smooth([0, 10, 0, 10, 0, 10], 0.6);
    expect(Math.max(...(noisy.slice(2) as number[]))).toBeLessThan(8);
  });

  it('draws a line per replica from its steps, a gap where a value was not finite', () => {
    const data = {
      'worker-0': {
        loss: { steps: [0, 1, 2], values: [1, null, 3], times: [10, 11, 12] }
      },
      'master-0': {
        loss: { steps: [0, 1, 2], values: [3, 2, 1], times: [10, 11, 13] }
      }
    };
    const lines = replicaLines(data, 'loss', SERIES, 'step');
    expect(lines.map(line => line.name)).toEqual(['master-0', 'worker-0']);
    expect(lines[1].y).toEqual([1, null, 3]);
    expect(xOf(data['master-0'].loss, 'relative')).toEqual([0, 1, 3]);
    const figure = lineFigure({ lines, theme: theme(), yTitle: 'loss' });
    expect(figure.data[1].connectgaps).toBe(false);
  });
});

describe('series merging', () => {
  it('appends new points and moves the positions of non-finite values', () => {
    const merged = mergeSeries(
      {
        steps: [0, 1],
        values: [null, 1],
        times: [0, 0],
        nonfinite: { '0': 'Infinity' }
      },
      {
        steps: [2, 3],
        values: [2, null],
        times: [0, 0],
        nonfinite: { '1': 'NaN' }
      }
    );
    expect(merged.values).toEqual([null, 1, 2, null]);
    expect(merged.nonfinite).toEqual({ '0': 'Infinity', '3': 'NaN' });
  });
});
