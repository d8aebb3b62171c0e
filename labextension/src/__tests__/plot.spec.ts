import {
  formatTick,
  layoutPlot,
  mergeSeries,
  niceTicks,
  valuesAt
} from '../plot';

describe('metrics plot', () => {
  it('scales every replica onto shared axes', () => {
    const plot = layoutPlot(
      [
        {
          label: 'master-0',
          series: { steps: [0, 1, 2], values: [1, 0.5, 0], times: [0, 0, 0] }
        },
        {
          label: 'worker-0',
          series: { steps: [0, 2], values: [2, NaN], times: [0, 0] }
        }
      ],
      100,
      50
    );
    expect(plot.xRange).toEqual([0, 2]);
    expect(plot.yRange).toEqual([0, 2]);
    expect(plot.traces[0].points).toBe('0,25 50,37.5 100,50');
    expect(plot.traces[1].points).toBe('0,0');
    expect(plot.traces[0].last).toBe(0);
  });

  it('keeps a flat line visible and handles no points', () => {
    const flat = layoutPlot(
      [
        {
          label: 'a',
          series: { steps: [null, null], values: [3, 3], times: [0, 0] }
        }
      ],
      10,
      10
    );
    expect(flat.traces[0].points).toBe('0,5 10,5');
    expect(layoutPlot([], 10, 10).traces).toEqual([]);
  });

  it('appends new points', () => {
    const merged = mergeSeries(
      { steps: [0], values: [1], times: [5] },
      { steps: [1], values: [2], times: [6] }
    );
    expect(merged).toEqual({ steps: [0, 1], values: [1, 2], times: [5, 6] });
    expect(formatTick(0.5)).toBe('0.5');
    expect(formatTick(123456)).toBe('1.23e+5');
  });

  it('draws a gap where a value is not finite (null on the wire)', () => {
    const plot = layoutPlot(
      [
        {
          label: 'master-0',
          series: {
            steps: [0, 1, 2, 3, 4],
            values: [1, 2, null, 2, 1],
            times: [0, 0, 0, 0, 0],
            nonfinite: { '2': 'NaN' }
          }
        }
      ],
      40,
      10
    );
    expect(plot.yRange).toEqual([1, 2]);
    expect(plot.traces[0].path).toBe('M0,10 L10,0 M30,0 L40,10');
    expect(plot.traces[0].last).toBe(1);
  });

  it('moves the positions of non-finite values when pages are appended', () => {
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

describe('metrics plot axes, log scale and hover', () => {
  const loss = {
    label: 'worker-0',
    series: {
      steps: [0, 10, 20, 30],
      values: [1, 0.1, 0.01, 0.001],
      times: [0, 0, 0, 0]
    }
  };

  it('has round ticks for its grid', () => {
    expect(niceTicks(0, 30, 3)).toEqual([0, 10, 20, 30]);
    expect(niceTicks(0.001, 1, 5)).toEqual([0.2, 0.4, 0.6, 0.8, 1]);
    const plot = layoutPlot([loss], 300, 100);
    expect(plot.xTicks.map(t => t.value)).toEqual([0, 10, 20, 30]);
    expect(plot.xTicks.map(t => t.position)).toEqual([0, 100, 200, 300]);
    expect(plot.yTicks[0].position).toBeGreaterThan(
      plot.yTicks[plot.yTicks.length - 1].position
    );
  });

  it('on a log scale, decades are evenly spaced and values <= 0 are left out', () => {
    const plot = layoutPlot([loss], 300, 90, { log: true });
    expect(plot.traces[0].points).toBe('0,0 100,30 200,60 300,90');
    expect(plot.yTicks.map(t => t.value)).toEqual([0.001, 0.01, 0.1, 1]);
    expect(plot.yTicks.map(t => t.position)).toEqual([90, 60, 30, 0]);
    expect(plot.hidden).toBe(0);
    const withZero = layoutPlot(
      [
        {
          label: 'a',
          series: { steps: [0, 1, 2], values: [1, 0, -1], times: [0, 0, 0] }
        }
      ],
      10,
      10,
      { log: true }
    );
    expect(withZero.hidden).toBe(2);
  });

  it('reads every replica at the step under the pointer', () => {
    const other = {
      label: 'worker-1',
      series: { steps: [0, 20], values: [2, NaN], times: [0, 0] }
    };
    const plot = layoutPlot([loss, other], 300, 100);
    expect(valuesAt([loss, other], plot, 190, 300)).toEqual({
      step: 20,
      values: [
        { label: 'worker-0', value: 0.01 },
        { label: 'worker-1', value: null }
      ]
    });
  });
});
