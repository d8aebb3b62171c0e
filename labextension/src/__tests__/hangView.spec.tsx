/**
 * A hung run as its notebook output shows it (docs/hangs.md): the Stalled badge on the replica
 * rows the server marked (a mark beside Running, with since when and the limit), each replica's
 * CPU and memory in a strip (a rank at 100% beside ranks at 3% stands out), and the "Stacks"
 * button: a running run's replicas asked now (POST), a finished run's newest kept snapshot (GET),
 * grouped by identical stack with each group's frames under a fold.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { MessageLoop } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import * as React from 'react';

import * as api from '../api';
import { RunOutput } from '../output/runOutput';
import { RUN_MIMETYPE } from '../output/runMime';
import { stalledTitle } from '../output/stalledBadge';
import { frameText, groupWho } from '../output/stacksView';
import { memoryText } from '../output/systemStrip';
import { ApiError } from '../request';
import type {
  IReplicaRowView,
  IStackFrame,
  IStacksSnapshot,
  IRunViewModel
} from '../types';
import './render';

// The server's answers are the boundary.
jest.mock('../api');
const getRunView = api.getRunView as jest.MockedFunction<typeof api.getRunView>;
const readMetrics = api.readMetrics as jest.MockedFunction<
  typeof api.readMetrics
>;
const takeStacks = api.takeStacks as jest.MockedFunction<typeof api.takeStacks>;
const getStacks = api.getStacks as jest.MockedFunction<typeof api.getStacks>;

const KEYS = ['master-0', 'worker-0', 'worker-1'];
const SINCE = Date.now() / 1000 - 75;

function row(key: string, stalled: boolean): IReplicaRowView {
  return {
    key,
    label: key,
    state: 'Running',
    phase: stalled ? 'stalled' : 'Running',
    restarts: 0,
    exit_code: '-',
    resources: '-',
    step: 'step 29',
    reason: '',
    last_line: '',
    stalled_since: stalled ? SINCE : null,
    stall_after_s: stalled ? 60 : null
  };
}

function view(overrides: Partial<IRunViewModel> = {}): IRunViewModel {
  return {
    run_id: 'hang-1',
    name: 'hang',
    backend: 'local',
    state: 'Running',
    finished: false,
    reason: null,
    message: null,
    owner_problem: null,
    created_at: Date.now() / 1000 - 120,
    started_at: Date.now() / 1000 - 120,
    finished_at: null,
    updated_at: Date.now() / 1000,
    replicas: [
      row('master-0', true),
      row('worker-0', true),
      row('worker-1', false)
    ],
    replicas_total: 3,
    phases: [{ phase: 'Running', state: 'Running', count: 3 }],
    counts: '3 running of 3',
    progress: null,
    progress_fraction: null,
    rates: [],
    straggler: null,
    stalled:
      'Stalled: master-0 (no step for 75 s), worker-0 (no step for 75 s): `jupyter px stacks hang-1` shows where each rank is',
    failure: null,
    changes: null,
    ...overrides
  };
}

function frame(overrides: Partial<IStackFrame>): IStackFrame {
  return {
    file: '/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py',
    line: 2501,
    function: 'all_reduce',
    cell: null,
    cell_line: null,
    user: false,
    code: null,
    ...overrides
  };
}

const IN_ALL_REDUCE = [
  frame({}),
  frame({
    file: '/run/code/cell_4.py',
    line: 5,
    function: 'step',
    cell: 'cell [4]',
    cell_line: 5,
    user: true,
    code: 'dist.all_reduce(value)'
  }),
  frame({
    file: '/run/code/cell_4.py',
    line: 8,
    function: '<module>',
    cell: 'cell [4]',
    cell_line: 8,
    user: true,
    code: null
  }),
  frame({ file: '/px/runner.py', line: 250, function: 'run' }),
  frame({ file: '/px/runner.py', line: 438, function: 'main' })
];
const ASLEEP = [
  frame({
    file: '/run/code/cell_4.py',
    line: 11,
    function: '<module>',
    cell: 'cell [4]',
    cell_line: 11,
    user: true,
    code: 'time.sleep(900)'
  })
];

function snapshot(why = 'on request'): IStacksSnapshot {
  const replica = (key: string, frames: IStackFrame[]) => ({
    key,
    pid: 100,
    error: null,
    threads: [
      {
        ident: '0x7f01',
        main: false,
        current: false,
        truncated: false,
        frames: [
          frame({
            function: 'wait',
            file: '/usr/lib/python3.11/threading.py',
            line: 331
          })
        ]
      },
      { ident: '0x7f00', main: true, current: true, truncated: false, frames }
    ]
  });
  return {
    run_id: 'hang-1',
    taken_at: Date.now() / 1000,
    why,
    replicas: [
      replica('master-0', IN_ALL_REDUCE),
      replica('worker-0', IN_ALL_REDUCE),
      replica('worker-1', ASLEEP)
    ],
    groups: [
      {
        replicas: ['master-0', 'worker-0'],
        summary: 'all_reduce <- step, cell [4] line 5'
      },
      {
        replicas: ['worker-1'],
        summary: '<module>, cell [4] line 11: time.sleep(900)'
      }
    ],
    text: ''
  };
}

function series(values: number[]) {
  return {
    steps: values.map(() => null),
    values,
    times: values.map((_, i) => i * 2)
  };
}

function mimeModel(data: { [mime: string]: any }): IRenderMime.IMimeModel {
  return { data, metadata: {}, trusted: true, setData: () => undefined };
}

function payload(overrides: { [key: string]: any } = {}) {
  return {
    version: 1,
    run_id: 'hang-1',
    name: 'hang',
    backend: 'local',
    created_at: Date.now() / 1000 - 120,
    state: 'Running',
    finished: false,
    finished_at: null,
    replicas: KEYS.map(key => ({ key, state: 'Running' })),
    final: false,
    tensorboard: false,
    ...overrides
  };
}

async function settle(until: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !until(); i++) {
    await React.act(
      () => new Promise<void>(resolve => setTimeout(resolve, 20))
    );
  }
  expect(until()).toBe(true);
}

describe('a hung run in its notebook output', () => {
  let output: RunOutput;

  beforeEach(() => {
    getRunView.mockReset();
    readMetrics.mockReset();
    takeStacks.mockReset();
    getStacks.mockReset();
    getRunView.mockResolvedValue(view());
    readMetrics.mockResolvedValue({
      run_id: 'hang-1',
      finished: false,
      cursor: 'c1',
      progress: {},
      history_pending: false,
      series: {
        'master-0': {
          loss: series([1, 0.5]),
          'system/cpu_percent': series([40, 3.2]),
          'system/rss_mib': series([300, 412])
        },
        'worker-0': {
          'system/cpu_percent': series([2.9]),
          'system/rss_mib': series([408])
        },
        'worker-1': {
          'system/cpu_percent': series([99.6]),
          'system/rss_mib': series([1536])
        }
      }
    } as any);
    output = new RunOutput({
      interval: 60,
      actions: { openTensorBoard: () => undefined, openLogs: () => undefined },
      createHtmlRenderer: () => null
    });
    React.act(() => {
      Widget.attach(output, document.body);
      MessageLoop.sendMessage(output, Widget.Msg.UpdateRequest);
    });
  });

  afterEach(() => {
    React.act(() => output.dispose());
  });

  const node = () => output.node;
  const show = async (run = payload()) => {
    await React.act(() =>
      output.renderModel(mimeModel({ [RUN_MIMETYPE]: run }))
    );
    await settle(() => node().querySelector('.jp-px-phase-bar') !== null);
  };

  it('badges the stalled replicas, beside their Running state, saying since when and the limit', async () => {
    await show();
    React.act(() =>
      (
        node().querySelector('.jp-px-output-tab-replicas') as HTMLButtonElement
      ).click()
    );
    await settle(
      () => node().querySelector('.jp-px-replica-table tbody tr') !== null
    );
    const rows = [...node().querySelectorAll('.jp-px-replica-table tbody tr')];
    const drawn = rows.map(tr => [
      tr.getAttribute('data-replica'),
      tr.querySelector('.jp-px-phase-word')!.textContent,
      tr.querySelector('.jp-px-badge-stalled')?.textContent ?? null
    ]);
    expect(drawn).toEqual([
      ['master-0', 'Running', 'Stalled'],
      ['worker-0', 'Running', 'Stalled'],
      ['worker-1', 'Running', null]
    ]);
    const title = rows[0]
      .querySelector('.jp-px-badge-stalled')!
      .getAttribute('title')!;
    expect(title).toContain(
      `since ${new Date(SINCE * 1000).toLocaleTimeString()}`
    );
    expect(title).toMatch(/\(7\d s ago\)/);
    expect(title).toContain('stalled after 60 s without one');
    // And the card's notice, above the tabs.
    expect(node().querySelector('.jp-px-stalled')!.textContent).toContain(
      'Stalled: master-0'
    );
  });

  it("draws each replica's CPU and memory: the rank at 100% stands out from those at 3%", async () => {
    await show();
    await settle(
      () => node().querySelectorAll('.jp-px-system-cell').length === 3
    );
    const cells = [...node().querySelectorAll('.jp-px-system-cell')];
    expect(
      cells.map(cell => [
        cell.getAttribute('data-replica'),
        cell.querySelector('.jp-px-system-cpu')!.textContent,
        cell.querySelector('.jp-px-system-mem')!.textContent,
        cell.classList.contains('jp-px-system-hot')
      ])
    ).toEqual([
      ['master-0', '3%', '412 MiB', false],
      ['worker-0', '3%', '408 MiB', false],
      ['worker-1', '100%', '1.5 GiB', true]
    ]);
    const bars = cells.map(
      cell =>
        (cell.querySelector('.jp-px-system-bar > span') as HTMLElement).style
          .width
    );
    expect(bars).toEqual(['3.2%', '2.9%', '99.6%']);
  });

  it("draws each replica's memory beside its limit, marked once it is near", async () => {
    const limited = view();
    limited.replicas = [
      { ...row('master-0', false), memory_limit_mib: 900 },
      { ...row('worker-0', false), memory_limit_mib: null },
      { ...row('worker-1', false), memory_limit_mib: 1600 }
    ];
    getRunView.mockResolvedValue(limited);
    await show();
    await settle(
      () =>
        node().querySelector('.jp-px-system-cell .jp-px-system-mem')
          ?.textContent === '412 MiB of 900 MiB'
    );
    const cells = [...node().querySelectorAll('.jp-px-system-cell')];
    expect(
      cells.map(cell => [
        cell.querySelector('.jp-px-system-mem')!.textContent,
        cell.classList.contains('jp-px-system-near-limit')
      ])
    ).toEqual([
      ['412 MiB of 900 MiB', false],
      ['408 MiB', false], // no limit: its usage alone
      ['1.5 GiB of 1.6 GiB', true] // 1,536 of 1,600 MiB: past 90%
    ]);
    expect(cells[2].getAttribute('title')).toContain(
      '1.5 GiB resident of its 1.6 GiB limit'
    );
  });

  it('hides the strip of a run deleted since', async () => {
    getRunView.mockRejectedValue(new ApiError('no run', 404));
    await React.act(() =>
      output.renderModel(mimeModel({ [RUN_MIMETYPE]: payload() }))
    );
    await settle(() => node().querySelector('.jp-px-run-gone') !== null);
    const strip = node().querySelector('.jp-px-run-output-system')!;
    expect(strip.classList.contains('lm-mod-hidden')).toBe(true);
  });

  it('draws no strip for a run whose owner samples nothing', async () => {
    readMetrics.mockResolvedValue({
      run_id: 'hang-1',
      finished: false,
      cursor: 'c1',
      progress: {},
      history_pending: false,
      series: { 'master-0': { loss: series([1]) } }
    } as any);
    await show();
    await settle(() => readMetrics.mock.calls.length > 0);
    expect(node().querySelector('.jp-px-system-strip')).toBeNull();
  });

  it("asks a running run's replicas for their stacks and shows them grouped, each group's frames folded", async () => {
    takeStacks.mockResolvedValue(snapshot());
    await show();
    const button = node().querySelector(
      '.jp-px-output-stacks'
    ) as HTMLButtonElement;
    expect(button.textContent).toBe('Stacks');
    React.act(() => button.click());
    await settle(() => node().querySelector('.jp-px-stacks') !== null);
    expect(takeStacks).toHaveBeenCalledWith('hang-1');
    expect(getStacks).not.toHaveBeenCalled();
    const groups = [...node().querySelectorAll('.jp-px-stacks-group')];
    expect(groups.map(g => g.querySelector('summary')!.textContent)).toEqual([
      '2 replicas (master-0, worker-0): all_reduce <- step, cell [4] line 5',
      'worker-1: <module>, cell [4] line 11: time.sleep(900)'
    ]);
    expect(node().querySelector('.jp-px-stacks-head')!.textContent).toContain(
      '(on request)'
    );
    // Folded until opened; opened, the group's main-thread frames, innermost first, and the rest.
    expect(groups[0].hasAttribute('open')).toBe(false);
    const frames = [
      ...groups[0].querySelectorAll(':scope > .jp-px-stack-frames > li')
    ];
    expect(frames.map(li => li.textContent)).toEqual([
      'all_reduce, distributed_c10d.py line 2501',
      'step, cell [4] line 5: dist.all_reduce(value)',
      '<module>, cell [4] line 8'
    ]);
    expect(
      frames.map(li => li.classList.contains('jp-px-stack-frame-user'))
    ).toEqual([false, true, true]);
    // The frames around the run's code (its runner) folded apart, outermost last.
    const outer = groups[0].querySelector(':scope > .jp-px-stack-outer')!;
    expect(outer.querySelector('summary')!.textContent).toBe(
      "2 frames around the run's code"
    );
    expect([...outer.querySelectorAll('li')].map(li => li.textContent)).toEqual(
      ['run, runner.py line 250', 'main, runner.py line 438']
    );
    // A stack wholly the run's own has no such fold.
    expect(groups[1].querySelector(':scope > .jp-px-stack-outer')).toBeNull();
    expect(
      groups[1].querySelector('.jp-px-stack-threads summary')!.textContent
    ).toBe('1 other thread of worker-1');
  });

  it("shows a finished run's newest kept snapshot, without asking anybody", async () => {
    getRunView.mockResolvedValue(
      view({
        state: 'Stopped',
        finished: true,
        finished_at: Date.now() / 1000,
        stalled: null
      })
    );
    getStacks.mockResolvedValue(snapshot('stalled: master-0, worker-0'));
    await show(payload({ state: 'Stopped', finished: true }));
    await settle(
      () =>
        node().querySelector('.jp-px-run-output[data-state="Stopped"]') !== null
    );
    React.act(() =>
      (
        node().querySelector('.jp-px-output-stacks') as HTMLButtonElement
      ).click()
    );
    await settle(() => node().querySelector('.jp-px-stacks') !== null);
    expect(getStacks).toHaveBeenCalledWith('hang-1');
    expect(takeStacks).not.toHaveBeenCalled();
    expect(node().querySelector('.jp-px-stacks-head')!.textContent).toContain(
      '(stalled: master-0, worker-0)'
    );
  });

  it('says why there are no stacks, in one line', async () => {
    getRunView.mockResolvedValue(view({ state: 'Succeeded', finished: true }));
    getStacks.mockRejectedValue(
      new ApiError('no stacks were taken of run hang-1', 404)
    );
    await show(payload({ state: 'Succeeded', finished: true }));
    await settle(
      () =>
        node().querySelector('.jp-px-run-output[data-state="Succeeded"]') !==
        null
    );
    React.act(() =>
      (
        node().querySelector('.jp-px-output-stacks') as HTMLButtonElement
      ).click()
    );
    await settle(() => node().querySelector('.jp-px-stacks-error') !== null);
    expect(node().querySelector('.jp-px-stacks-error')!.textContent).toContain(
      'no stacks were taken of run hang-1'
    );
    expect(node().querySelector('.jp-px-stacks')).toBeNull();
  });
});

describe('the words of a hang', () => {
  it('names a group as the command line does', () => {
    expect(groupWho({ replicas: ['worker-1'], summary: '' })).toBe('worker-1');
    expect(groupWho({ replicas: ['master-0', 'worker-0'], summary: '' })).toBe(
      '2 replicas (master-0, worker-0)'
    );
    expect(frameText(frame({ line: null }))).toBe(
      'all_reduce, distributed_c10d.py line ?'
    );
  });

  it('says the stall limit only when the server gave one', () => {
    const now = SINCE + 75;
    expect(stalledTitle(SINCE, null, now)).not.toContain('stalled after');
    expect(stalledTitle(SINCE, 123.456, now)).toContain(
      'stalled after 123 s without one'
    );
    expect(stalledTitle(SINCE, 60, now)).toContain('(75 s ago)');
  });

  it('writes memory in MiB, and GiB from 1 GiB', () => {
    expect([memoryText(null), memoryText(1023.4), memoryText(2048)]).toEqual([
      '–',
      '1023 MiB',
      '2.0 GiB'
    ]);
  });
});
