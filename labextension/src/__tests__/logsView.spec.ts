import { Widget } from '@lumino/widgets';

import * as api from '../api';
import { LogsView } from '../panels/logsView';
import { ReplicaLog } from '../panels/replicaLog';
import { ApiError } from '../request';
import { replicaTabLabel } from '../replicas';
import type { IReplica, IRunDetail } from '../types';
import { summary } from './fixtures';

// The REST client is the boundary: answer as the server does for a failed run.
jest.mock('../api');
const getRun = api.getRun as jest.MockedFunction<typeof api.getRun>;
const readLog = api.readLog as jest.MockedFunction<typeof api.readLog>;

function replica(
  role: string,
  index: number,
  state: string,
  exit: number | null
): IReplica {
  return {
    key: `${role}-${index}`,
    role,
    index,
    state,
    exit_code: exit,
    signal: null,
    restarts: 0,
    reason: null,
    message: null,
    started_at: 1,
    finished_at: 2,
    address: null
  };
}

function failedRun(): IRunDetail {
  return {
    ...summary({ state: 'Failed', finished: true }),
    replicas: [
      // stopped because worker 1 failed: not the replica to read
      replica('master', 0, 'Stopped', 143),
      replica('worker', 0, 'Succeeded', 0),
      replica('worker', 1, 'Failed', 1)
    ],
    topology: {},
    code: {
      entrypoint: 'main.py',
      language: 'python',
      args: [],
      source: null,
      pushed: []
    },
    workdir: null,
    host: null
  };
}

describe('LogsView', () => {
  let view: LogsView | null = null;

  beforeEach(() => {
    getRun.mockReset();
    readLog.mockReset();
    readLog.mockResolvedValue({
      replica: 'x',
      text: '',
      offset: 0,
      finished: true
    });
  });

  afterEach(() => {
    view?.dispose();
    view = null;
  });

  it('opens a failed run on its failing replica, tabs showing each state', async () => {
    getRun.mockResolvedValue(failedRun());
    view = new LogsView('run-1', 1);
    Widget.attach(view, document.body);
    await view.ready;
    expect(view.widgets.map(w => w.title.label)).toEqual([
      'master-0 · Stopped',
      'worker-0 · Succeeded',
      'worker-1 · Failed'
    ]);
    expect(view.currentIndex).toBe(2);
    expect(view.currentWidget!.title.className).toBe('jp-px-tab-failed');
  });

  it('says a deleted run no longer exists instead of an error tab', async () => {
    getRun.mockRejectedValue(new ApiError('no run run-9', 404));
    view = new LogsView('run-9', 1);
    Widget.attach(view, document.body);
    await view.ready;
    expect(view.node.textContent).toContain('Run run-9 no longer exists');
    expect(view.widgets.map(w => w.title.label)).not.toContain('error');
    expect(view.tabBar.isHidden).toBe(true);
  });
});

describe('ReplicaLog', () => {
  it('says so when a finished replica wrote nothing', async () => {
    readLog.mockResolvedValue({
      replica: 'worker-0',
      text: '',
      offset: 0,
      finished: true
    });
    const log = new ReplicaLog('run-1', 'worker', 0, 1);
    await log.fetch();
    expect(log.node.querySelector('.jp-px-log-scroller')!.textContent).toBe(
      'worker-0 wrote nothing to its log.'
    );
    log.dispose();
  });

  it('shows the text once there is some', async () => {
    readLog
      .mockResolvedValueOnce({
        replica: 'worker-0',
        text: 'hello\n',
        offset: 6,
        finished: false
      })
      .mockResolvedValueOnce({
        replica: 'worker-0',
        text: '',
        offset: 6,
        finished: true
      });
    const log = new ReplicaLog('run-1', 'worker', 0, 1);
    await log.fetch();
    expect(log.node.querySelector('pre')!.textContent).toBe('hello\n');
    expect(
      (log.node.querySelector('.jp-px-log-empty') as HTMLElement).hidden
    ).toBe(true);
    log.dispose();
  });
});

describe('panels of a deleted run', () => {
  it('metrics say the run no longer exists, and stop asking', async () => {
    const { MetricsModel } = await import('../panels/metricsModel');
    const readMetrics = api.readMetrics as jest.MockedFunction<
      typeof api.readMetrics
    >;
    readMetrics.mockRejectedValue(new ApiError('no run run-9', 404));
    const model = new MetricsModel('run-9', 1, () => true);
    await model.fetch();
    expect(model.error).toBe(
      'Run run-9 no longer exists: it was deleted, or its directory removed.'
    );
    expect(model.poll.state.phase).toBe('stopped');
    model.dispose();
  });
});

describe('the log toolbar', () => {
  beforeEach(() => readLog.mockReset());

  function chunk(text: string, offset: number) {
    return { replica: 'worker-0', text, offset, finished: true };
  }

  it('follows, wraps, searches and downloads the whole log', async () => {
    const lines = 'epoch 1 loss 0.5\nepoch 2 LOSS 0.25\nsaved\n';
    readLog.mockResolvedValueOnce(chunk(lines, lines.length));
    readLog.mockResolvedValueOnce(chunk('', lines.length));
    const log = new ReplicaLog('run-1', 'worker', 0, 60);
    Widget.attach(log, document.body);
    await log.fetch();
    const bar = log.node.querySelector('.jp-px-log-toolbar')!;
    const follow = bar.querySelector(
      '.jp-px-log-follow input'
    ) as HTMLInputElement;
    const wrap = bar.querySelector('.jp-px-log-wrap input') as HTMLInputElement;
    expect(follow.checked).toBe(true);
    expect(wrap.checked).toBe(true);

    wrap.click();
    expect(log.node.querySelector('pre')!.classList).toContain('jp-mod-nowrap');

    const search = bar.querySelector('.jp-px-log-search') as HTMLInputElement;
    search.value = 'loss';
    search.dispatchEvent(new Event('input'));
    expect(log.matches).toEqual({ count: 2, current: 0 });
    expect(bar.querySelector('.jp-px-log-count')!.textContent).toBe('1 of 2');
    expect(follow.checked).toBe(false); // reading a match: the newest lines no longer pull
    search.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
    expect(log.matches).toEqual({ count: 2, current: 1 });
    expect(bar.querySelector('.jp-px-log-count')!.textContent).toBe('2 of 2');
    search.value = 'nothing like it';
    search.dispatchEvent(new Event('input'));
    expect(bar.querySelector('.jp-px-log-count')!.textContent).toBe('no match');

    // Download reads the whole log from the server, from its first byte.
    readLog.mockReset();
    readLog.mockResolvedValueOnce(chunk('first half\n', 11));
    readLog.mockResolvedValueOnce(chunk('second half\n', 23));
    readLog.mockResolvedValueOnce(chunk('', 23));
    const urls: Blob[] = [];
    (URL as any).createObjectURL = (blob: Blob) => {
      urls.push(blob);
      return 'blob:log';
    };
    (URL as any).revokeObjectURL = () => undefined;
    let downloaded = '';
    const click = jest
      .spyOn(HTMLAnchorElement.prototype, 'click')
      .mockImplementation(function (this: HTMLAnchorElement) {
        downloaded = this.download;
      });
    await log.download();
    expect(readLog.mock.calls.map(call => call[3])).toEqual([0, 11, 23]);
    expect(downloaded).toBe('run-1-worker-0.log');
    const saved = await new Promise<string>(resolve => {
      const reader = new FileReader();
      reader.onload = () => resolve(reader.result as string);
      reader.readAsText(urls[0]);
    });
    expect(saved).toBe('first half\nsecond half\n');
    click.mockRestore();
    log.dispose();
  });
});

describe('replica tab labels', () => {
  it('name the master as the job does: chief in a TensorFlow job', () => {
    const master = replica('master', 0, 'Running', null);
    expect(replicaTabLabel(master, { framework: 'pytorch' })).toBe(
      'master-0 · Running'
    );
    expect(replicaTabLabel(master, { framework: 'tensorflow' })).toBe(
      'chief · Running'
    );
    expect(
      replicaTabLabel(master, {
        framework: 'tensorflow',
        environment: { tf_master_type: 'master' }
      })
    ).toBe('master-0 · Running');
    expect(
      replicaTabLabel(replica('worker', 1, 'Failed', 1), {
        framework: 'tensorflow'
      })
    ).toBe('worker-1 · Failed');
  });

  it("take the server's label when it sent one", () => {
    const chief = { ...replica('master', 0, 'Failed', 1), label: 'chief' };
    expect(replicaTabLabel(chief)).toBe('chief · Failed');
    const worker = {
      ...replica('worker', 2, 'Running', null),
      label: 'worker-2'
    };
    expect(replicaTabLabel(worker, { framework: 'tensorflow' })).toBe(
      'worker-2 · Running'
    );
  });
});
