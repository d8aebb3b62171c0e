import {
  compareColumns,
  defaultSort,
  formatValue,
  layoutComparePlot,
  sortRows
} from '../panels/compareLayout';
import type { IComparison } from '../types';

const comparison: IComparison = {
  runs: [
    { run_id: 'a', name: 'lr-0.1', state: 'Succeeded', created_at: 1 },
    { run_id: 'b', name: null, state: 'Failed', created_at: 2 },
    { run_id: 'c', name: 'lr-0.001', state: 'Succeeded', created_at: 3 }
  ],
  metrics: [
    {
      name: 'loss',
      optimisation: 'min',
      best_run: 'b',
      curves: [
        {
          run_id: 'a',
          replica: 'master-0',
          steps: [0, 10],
          values: [2, 1],
          total: 2
        },
        {
          run_id: 'b',
          replica: 'master-0',
          steps: [0, 5, 10],
          values: [2, 0.5, 0],
          total: 3
        },
        { run_id: 'c', replica: 'worker-0', steps: [0], values: [3], total: 1 }
      ]
    }
  ],
  params: ['lr'],
  hidden_params: 4,
  rows: [
    {
      run_id: 'a',
      name: 'lr-0.1',
      state: 'Succeeded',
      params: { lr: 0.1 },
      final: { loss: 1 },
      best: { loss: 1 },
      best_step: { loss: 10 }
    },
    {
      run_id: 'b',
      name: null,
      state: 'Failed',
      params: { lr: 0.01 },
      final: { loss: 0 },
      best: { loss: 0 },
      best_step: { loss: 10 }
    },
    {
      run_id: 'c',
      name: 'lr-0.001',
      state: 'Succeeded',
      params: { lr: null },
      final: {},
      best: {},
      best_step: {}
    }
  ],
  points: 500
};

describe('comparison panel layout', () => {
  it('puts every run on shared axes and the best line last', () => {
    const plot = layoutComparePlot(
      comparison.metrics[0],
      ['a', 'b', 'c'],
      100,
      30
    );
    expect(plot.xRange).toEqual([0, 10]);
    expect(plot.yRange).toEqual([0, 3]);
    expect(plot.lines.map(line => line.runId)).toEqual(['a', 'c', 'b']);
    expect(plot.lines[2].best).toBe(true);
    expect(plot.lines[0].path).toBe('M0,10 L100,20');
    expect(plot.lines[2].path).toBe('M0,10 L50,25 L100,30');
    expect(plot.lines.map(line => line.position)).toEqual([0, 2, 1]);
  });

  it('draws nothing without points and pads a flat range', () => {
    const empty = layoutComparePlot(
      { ...comparison.metrics[0], curves: [] },
      [],
      10,
      10
    );
    expect(empty.lines).toEqual([]);
    const flat = layoutComparePlot(
      {
        name: 'x',
        optimisation: 'max',
        best_run: null,
        curves: [
          { run_id: 'a', replica: 'm', steps: [3], values: [2], total: 1 }
        ]
      },
      ['a'],
      10,
      10
    );
    expect(flat.xRange).toEqual([3, 4]);
    expect(flat.yRange[0]).toBeLessThan(2);
    expect(flat.yRange[1]).toBeGreaterThan(2);
  });

  it('has a column per metric value and per differing param', () => {
    expect(compareColumns(comparison).map(c => c.title)).toEqual([
      'run',
      'state',
      'loss final',
      'loss best (min)',
      'lr'
    ]);
  });

  it('sorts best first by default, either way by any column, empty cells last', () => {
    const order = defaultSort(comparison)!;
    expect(order.column.key).toBe('best:loss');
    expect(
      sortRows(comparison.rows, order.column, order.ascending).map(
        r => r.run_id
      )
    ).toEqual(['b', 'a', 'c']);
    expect(
      sortRows(comparison.rows, order.column, false).map(r => r.run_id)
    ).toEqual(['a', 'b', 'c']);
    const [run, state] = compareColumns(comparison);
    expect(sortRows(comparison.rows, run, true).map(r => r.run_id)).toEqual([
      'b',
      'c',
      'a'
    ]);
    expect(sortRows(comparison.rows, state, false).map(r => r.run_id)).toEqual([
      'a',
      'c',
      'b'
    ]);
  });

  it('formats values compactly', () => {
    expect(formatValue(null)).toBe('–');
    expect(formatValue(0.000123)).toBe('1.230e-4');
    expect(formatValue(0.5)).toBe('0.5');
    expect(formatValue('x')).toBe('x');
    expect(formatValue([1, 2])).toBe('[1,2]');
  });
});
