/**
 * The comparison panel's data (`panels/compareLayout.ts`): a line per run (x as step or time,
 * smoothing keeping the raw values faint, the best run thick, a highlighted run on top and the
 * others faded), labels that tell runs of one name apart, one column per param, the sort, and
 * the parallel-coordinates axes of the params.
 */
import { readFileSync } from 'fs';
import { join } from 'path';

import {
  compareColumns,
  compareLines,
  runColorSlots,
  defaultSort,
  formatValue,
  runLabels,
  sortRows
} from '../panels/compareLayout';
import { SERIES } from '../plotting/theme';
import type { IComparison } from '../types';

const comparison: IComparison = {
  runs: [
    { run_id: 'sw-t0-aaaa', name: 'sw', state: 'Succeeded', created_at: 1 },
    { run_id: 'b', name: null, state: 'Stopped', created_at: 2 },
    { run_id: 'sw-t2-cccc', name: 'sw', state: 'Succeeded', created_at: 3 }
  ],
  metrics: [
    {
      name: 'loss',
      optimization: 'min',
      best_run: 'sw-t0-aaaa',
      best_rule: 'lowest final value among the 2 runs that succeeded',
      common_step: null,
      curves: [
        {
          run_id: 'sw-t0-aaaa',
          replica: 'master-0',
          steps: [0, 10],
          values: [2, 1],
          times: [100, 110],
          total: 2
        },
        {
          run_id: 'b',
          replica: 'master-0',
          steps: [0, 5],
          values: [2, 0.5],
          times: [200, 201],
          total: 3
        },
        {
          run_id: 'sw-t2-cccc',
          replica: 'worker-0',
          steps: [0],
          values: [3],
          times: [5],
          total: 1
        }
      ]
    }
  ],
  params: ['lr', 'optimizer'],
  hidden_params: 4,
  rows: [
    {
      run_id: 'sw-t0-aaaa',
      name: 'sw',
      state: 'Succeeded',
      params: { lr: 0.1, optimizer: 'sgd' },
      final: { loss: 1 },
      best: { loss: 1 },
      best_step: { loss: 10 }
    },
    {
      run_id: 'b',
      name: null,
      state: 'Stopped',
      params: { lr: 0.01, optimizer: 'adam' },
      final: { loss: 0.5 },
      best: { loss: 0.5 },
      best_step: { loss: 5 }
    },
    {
      run_id: 'sw-t2-cccc',
      name: 'sw',
      state: 'Succeeded',
      params: { lr: null, optimizer: 'sgd' },
      final: {},
      best: {},
      best_step: {}
    }
  ],
  points: 500,
  objective: 'loss',
  importance: [],
  figures: { parallel: null, importance: null }
};

const lines = (overrides: object = {}) =>
  compareLines({
    comparison,
    metric: comparison.metrics[0],
    colors: SERIES,
    xKind: 'step',
    smoothing: 0,
    highlight: null,
    ...overrides
  });

describe('comparison panel', () => {
  it('draws a line per run in its color, the best thick and last (on top)', () => {
    const drawn = lines();
    expect(drawn.map(line => line.id)).toEqual([
      'b',
      'sw-t2-cccc',
      'sw-t0-aaaa'
    ]);
    expect(drawn[2].width).toBeGreaterThan(drawn[0].width!);
    expect(drawn[2].name).toMatch(/★$/);
    // each run's own color (a slot from its id), distinct within the comparison
    const slots = runColorSlots(
      ['sw-t0-aaaa', 'b', 'sw-t2-cccc'],
      SERIES.length
    );
    expect(drawn.map(line => line.color)).toEqual(
      drawn.map(line => SERIES[slots.get(line.id)!])
    );
    expect(new Set(drawn.map(line => line.color)).size).toBe(3);
  });

  it("gives each run the slot the notebook's figure gives it (one color in both)", () => {
    // the slots pytest checks the notebook's figure against (run_color_slots)
    const shared = JSON.parse(
      readFileSync(join(__dirname, 'runColorSlots.json'), 'utf-8')
    ) as { run_ids: string[]; slots: { [id: string]: number } };
    expect(SERIES.length).toBe(10);
    expect(
      Object.fromEntries(runColorSlots(shared.run_ids, SERIES.length))
    ).toEqual(shared.slots);
  });

  it('puts a run under the pointer on top and fades the others', () => {
    const drawn = lines({ highlight: 'b' });
    expect(drawn[drawn.length - 1].id).toBe('b');
    expect(drawn.find(line => line.id === 'sw-t0-aaaa')!.opacity).toBeLessThan(
      0.5
    );
    expect(drawn.find(line => line.id === 'b')!.opacity).toBe(1);
  });

  it('draws against wall or relative time, and smooths keeping the raw values faint', () => {
    const relative = lines({ xKind: 'relative' });
    expect(relative.find(line => line.id === 'b')!.x).toEqual([0, 1]);
    const wall = lines({ xKind: 'wall' });
    expect(wall.find(line => line.id === 'b')!.x[0]).toBe(
      new Date(200000).toISOString()
    );
    const smoothed = lines({ smoothing: 0.5 });
    expect(smoothed.filter(line => line.faint).length).toBe(3);
    expect(smoothed.filter(line => !line.faint).length).toBe(3);
  });

  it('tells runs of one name apart, and keeps a unique name as it is', () => {
    const labels = runLabels(comparison);
    expect(labels.get('sw-t0-aaaa')).toBe('sw (t0-aaaa)');
    expect(labels.get('sw-t2-cccc')).toBe('sw (t2-cccc)');
    expect(labels.get('b')).toBe('b');
  });

  it('has a column per metric value and one per param', () => {
    expect(compareColumns(comparison).map(c => c.title)).toEqual([
      'run',
      'state',
      'loss final',
      'loss min',
      'lr',
      'optimizer'
    ]);
  });

  it('sorts best first by default, either way by any column, empty cells last', () => {
    const order = defaultSort(comparison)!;
    expect(order.column.key).toBe('best:loss');
    expect(
      sortRows(comparison.rows, order.column, order.ascending).map(
        r => r.run_id
      )
    ).toEqual(['b', 'sw-t0-aaaa', 'sw-t2-cccc']);
    const [, state] = compareColumns(comparison);
    expect(sortRows(comparison.rows, state, false).map(r => r.run_id)[0]).toBe(
      'sw-t0-aaaa'
    );
  });

  it('formats values compactly', () => {
    expect(formatValue(null)).toBe('–');
    expect(formatValue(0.000123)).toBe('1.230e-4');
    expect(formatValue(0.5)).toBe('0.5');
    expect(formatValue('x')).toBe('x');
    expect(formatValue([1, 2])).toBe('[1,2]');
  });
});

describe('a run keeps its color across comparisons', () => {
  it('takes a slot from its id, whatever else is compared, and never shares one', () => {
    const alone = runColorSlots(['lr-0.1-a1', 'lr-0.01-b2'], 10);
    const more = runColorSlots(['x-9', 'lr-0.01-b2', 'y-3', 'lr-0.1-a1'], 10);
    expect(more.get('lr-0.1-a1')).toBe(alone.get('lr-0.1-a1'));
    expect(more.get('lr-0.01-b2')).toBe(alone.get('lr-0.01-b2'));
    const many = runColorSlots(
      Array.from({ length: 10 }, (_, i) => `run-${i}`),
      10
    );
    expect(new Set(many.values()).size).toBe(10); // distinct while there are colors
  });
});
