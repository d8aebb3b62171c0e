import {
  formatAge,
  newlyFinished,
  ownerNote,
  progressFraction,
  replicaText,
  stateBadge
} from '../runs';
import { summary } from './fixtures';

describe('state badges', () => {
  it.each([
    ['Pending', 'pending'],
    ['Running', 'running'],
    ['Restarting', 'running'],
    ['Succeeded', 'succeeded'],
    ['Failed', 'failed'],
    ['Stopped', 'stopped'],
    ['Lost', 'lost'],
    ['Something new', 'pending']
  ])('%s is %s', (state, tone) => {
    const badge = stateBadge(state);
    expect(badge.tone).toBe(tone);
    expect(badge.label).toBe(state);
    expect(badge.className).toBe(`jp-px-badge jp-px-badge-${tone}`);
  });
});

describe('run rows', () => {
  it('counts running replicas while the run runs', () => {
    expect(replicaText(summary())).toBe('2/3 running');
    expect(
      replicaText(summary({ replica_counts: { Restarting: 1, Running: 1 } }))
    ).toBe('2/3 running');
    expect(replicaText(summary({ finished: true, state: 'Succeeded' }))).toBe(
      '3 replicas'
    );
    expect(replicaText(summary({ finished: true, replicas_total: 1 }))).toBe(
      '1 replica'
    );
  });

  it('shows progress only when total_steps is known', () => {
    expect(progressFraction(undefined)).toBeNull();
    expect(progressFraction({ step: 4, total_steps: null })).toBeNull();
    expect(progressFraction({ step: 49, total_steps: 100 })).toBe(0.5);
    expect(progressFraction({ step: 500, total_steps: 100 })).toBe(1);
  });

  it('formats ages', () => {
    expect(formatAge(100, 112)).toBe('12s');
    expect(formatAge(0, 300)).toBe('5m');
    expect(formatAge(0, 3 * 3600 + 5)).toBe('3h');
    expect(formatAge(0, 2 * 86400)).toBe('2d');
    expect(formatAge(10, 5)).toBe('0s');
  });

  it('notifies only watched runs that just finished', () => {
    const before = new Map([
      ['a', summary({ run_id: 'a' })],
      ['b', summary({ run_id: 'b', finished: true, state: 'Failed' })]
    ]);
    const after = [
      summary({ run_id: 'a', finished: true, state: 'Succeeded' }),
      summary({ run_id: 'b', finished: true, state: 'Failed' }),
      summary({ run_id: 'c', finished: true, state: 'Succeeded' }),
      summary({ run_id: 'd', finished: true, state: 'Succeeded' })
    ];
    const ended = newlyFinished(before, after, new Set(['a', 'b', 'c']));
    expect(ended.map(run => run.run_id)).toEqual(['a', 'c']);
  });
});

describe('runs nobody keeps', () => {
  it('say so while unfinished, and not once the run has ended', () => {
    const gone = 'the supervisor (pid 42) is gone';
    expect(ownerNote(summary({ owner_problem: gone }))).toBe(gone);
    expect(ownerNote(summary())).toBeNull();
    expect(
      ownerNote(summary({ owner_problem: gone, finished: true, state: 'Lost' }))
    ).toBeNull();
  });
});
