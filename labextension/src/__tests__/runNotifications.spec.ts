import { Notification } from '@jupyterlab/apputils';

import { isSweep } from '../api';
import { endNotice, RunNotices } from '../runNotifications';
import type { IRunDetail, ISweep } from '../types';
import { summary } from './fixtures';

describe('endNotice', () => {
  it("is not an error for the user's own Stop", () => {
    const stopped = summary({
      name: 'quick',
      state: 'Stopped',
      finished: true
    });
    expect(endNotice(stopped, true)).toEqual({
      message: 'Run quick stopped',
      type: 'info'
    });
    expect(endNotice(stopped, false).type).toBe('warning');
    expect(
      endNotice(
        summary({
          state: 'Failed',
          finished: true,
          message: 'worker 1 exited with 1'
        }),
        false
      )
    ).toEqual({
      message: 'Run run-1 Failed: worker 1 exited with 1',
      type: 'error'
    });
  });
});

describe('RunNotices', () => {
  beforeEach(() => Notification.dismiss());

  const opened: string[] = [];
  const notices = () =>
    new RunNotices((kind, runId) => {
      opened.push(`${kind}:${runId}`);
      return null as any;
    });

  it('says a run ended in the notification that said it was submitted', () => {
    const list = notices();
    list.submitted(summary({ run_id: 'run-a', name: 'a' }));
    expect(Notification.manager.notifications.map(n => n.message)).toEqual([
      'Submitted a (3 replicas)'
    ]);
    const ended = summary({
      run_id: 'run-a',
      name: 'a',
      state: 'Succeeded',
      finished: true
    });
    list.ended(ended);
    list.ended(ended); // a second report of the same end changes nothing
    const all = Notification.manager.notifications;
    expect(all.map(n => [n.message, n.type])).toEqual([
      ['Run a succeeded', 'success']
    ]);
    all[0].options.actions![0].callback(new MouseEvent('click'));
    expect(opened).toEqual(['logs:run-a']);
  });

  it("does not raise an error toast for the user's own Stop", () => {
    const list = notices();
    list.submitted(summary({ run_id: 'run-b', name: 'b' }));
    list.stopping('run-b');
    list.ended(
      summary({ run_id: 'run-b', name: 'b', state: 'Stopped', finished: true })
    );
    expect(
      Notification.manager.notifications.map(n => [n.message, n.type])
    ).toEqual([['Run b stopped', 'info']]);
  });

  it('tells of an end even when the submit notice was dismissed', () => {
    const list = notices();
    list.submitted(summary({ run_id: 'run-c', name: 'c' }));
    Notification.dismiss();
    list.ended(
      summary({ run_id: 'run-c', name: 'c', state: 'Failed', finished: true })
    );
    expect(
      Notification.manager.notifications.map(n => [n.message, n.type])
    ).toEqual([['Run c Failed', 'error']]);
  });

  it('says a submission started a sweep, when its topology had a sweep section', () => {
    const started = {
      sweep_id: 'sweep-1',
      name: 'lr',
      n_trials: 4,
      concurrency: 2
    } as ISweep;
    expect(isSweep(started)).toBe(true);
    expect(isSweep(summary() as unknown as IRunDetail)).toBe(false); // a run has its run_id
    notices().sweepStarted(started);
    expect(
      Notification.manager.notifications.map(n => [n.message, n.type])
    ).toEqual([['Started sweep lr (4 trials, 2 at a time)', 'in-progress']]);
  });
});
