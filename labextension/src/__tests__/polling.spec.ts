import { pollFrequency } from '../polling';
import { RunsModel } from '../runsModel';
import type { IRunsPage } from '../types';
import { summary } from './fixtures';

function page(runs = [summary()]): { page: IRunsPage; etag: string } {
  return {
    page: { runs, total: runs.length, offset: 0, limit: 100, progress: {} },
    etag: '"e1"'
  };
}

describe('poll frequency', () => {
  it('backs off up to a minute from the configured interval', () => {
    expect(pollFrequency(2)).toEqual({
      interval: 2000,
      backoff: 2,
      max: 60000
    });
    expect(pollFrequency(0.1).interval).toBe(500);
    expect(pollFrequency(120)).toEqual({
      interval: 120000,
      backoff: 2,
      max: 120000
    });
  });
});

describe('RunsModel', () => {
  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('sends the last ETag and keeps the list when nothing changed', async () => {
    const calls: (string | null)[] = [];
    const answers = [page(), null];
    const model = new RunsModel({
      interval: 1,
      isVisible: () => true,
      fetcher: async (_limit, etag) => {
        calls.push(etag);
        return answers.shift() ?? null;
      }
    });
    let changes = 0;
    model.changed.connect(() => changes++);
    await model.refresh();
    await model.refresh();
    expect(calls).toEqual([null, '"e1"']);
    expect(model.runs.map(run => run.run_id)).toEqual(['run-1']);
    expect(changes).toBe(1);
    model.dispose();
  });

  it('backs off after failures and returns to the interval after a success', async () => {
    jest.useFakeTimers();
    jest.spyOn(Math, 'random').mockReturnValue(0.999999);
    let failing = true;
    const model = new RunsModel({
      interval: 1,
      isVisible: () => true,
      fetcher: async () => {
        if (failing) {
          throw new Error('server went away');
        }
        return page();
      }
    });
    const ticks: [string, number][] = [];
    model.poll.ticked.connect((_, state) =>
      ticks.push([state.phase, state.interval])
    );
    model.start();
    for (let i = 0; i < 12; i++) {
      await jest.advanceTimersByTimeAsync(65000);
    }
    const rejected = ticks
      .filter(([phase]) => phase === 'rejected')
      .map(([, interval]) => interval);
    expect(model.error).toBe('server went away');
    // Each failure waits longer (up to twice the last wait, with jitter; random() is pinned to
    // its top here), capped at a minute.
    const capped = rejected.indexOf(60000);
    expect(capped).toBeGreaterThan(3);
    for (let i = 1; i < capped; i++) {
      expect(rejected[i]).toBeGreaterThan(rejected[i - 1]);
    }
    expect(rejected.slice(capped)).toEqual(
      rejected.slice(capped).map(() => 60000)
    );
    expect(rejected.length - capped).toBeGreaterThan(2);
    failing = false;
    await jest.advanceTimersByTimeAsync(65000);
    expect(ticks[ticks.length - 1]).toEqual(['resolved', 1000]);
    expect(model.error).toBeNull();
    model.dispose();
  });

  it('stands by while the sidebar is hidden', async () => {
    let visible = false;
    const fetcher = jest.fn(async () => page());
    const model = new RunsModel({
      interval: 1,
      isVisible: () => visible,
      fetcher
    });
    const phases: string[] = [];
    model.poll.ticked.connect((_, state) => phases.push(state.phase));
    model.start();
    await model.poll.tick;
    await model.poll.refresh();
    await model.poll.tick;
    expect(phases).toContain('standby');
    expect(fetcher).not.toHaveBeenCalled();
    visible = true;
    await model.poll.refresh();
    await model.poll.tick;
    expect(fetcher).toHaveBeenCalledTimes(1);
    model.dispose();
  });

  it('signals the watched runs that ended', async () => {
    const answers = [
      page([summary({ run_id: 'mine' })]),
      {
        ...page([summary({ run_id: 'mine', finished: true, state: 'Failed' })]),
        etag: '"e2"'
      }
    ];
    const model = new RunsModel({
      interval: 1,
      isVisible: () => true,
      fetcher: async () => answers.shift()!
    });
    model.watched.add('mine');
    const ended: string[] = [];
    model.ended.connect((_, runs) =>
      ended.push(...runs.map(run => `${run.run_id}:${run.state}`))
    );
    await model.refresh();
    await model.refresh();
    expect(ended).toEqual(['mine:Failed']);
    expect(model.watched.has('mine')).toBe(false);
    model.dispose();
  });
});
