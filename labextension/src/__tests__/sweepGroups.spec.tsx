import { acceptDialog, waitForDialog } from '@jupyterlab/testutils';
import { Signal } from '@lumino/signaling';
import * as React from 'react';

import { RunsModel } from '../runsModel';
import { RunsList } from '../sidebar/runsList';
import {
  bestText,
  groupRuns,
  paramsText,
  trialsText,
  trialText
} from '../sweepGroups';
import type { ISweep, ISweepTrial } from '../types';
import { summary } from './fixtures';
import { actions, dialogText, mount } from './render';

function trial(
  number: number,
  overrides: Partial<ISweepTrial> = {}
): ISweepTrial {
  return {
    number,
    state: 'Complete',
    run_id: `lr-t${number}`,
    params: { lr: 0.1 / (number + 1), opt: 'sgd' },
    value: 1 / (number + 1),
    step: 9,
    intermediate: [],
    reason: null,
    started_at: 900,
    finished_at: 950,
    ...overrides
  };
}

function sweep(overrides: Partial<ISweep> = {}): ISweep {
  return {
    sweep_id: 'lr',
    name: 'lr search',
    state: 'Running',
    message: null,
    owner_problem: null,
    created_at: 890,
    started_at: 891,
    finished_at: null,
    n_trials: 4,
    concurrency: 2,
    objective: 'loss',
    direction: 'minimize',
    counts: { Complete: 2, Running: 1 },
    best: 1,
    trials: [trial(0), trial(1), trial(2, { state: 'Running', value: null })],
    ...overrides
  };
}

// Newest first, as the server lists them: a trial between two runs of no sweep.
const RUNS = [
  summary({ run_id: 'solo-new', name: 'solo new', created_at: 1000 }),
  summary({ run_id: 'lr-t2', name: 'lr 2', created_at: 960 }),
  summary({ run_id: 'solo-mid', name: 'solo mid', created_at: 950 }),
  summary({
    run_id: 'lr-t1',
    name: 'lr 1',
    created_at: 920,
    state: 'Succeeded',
    finished: true
  }),
  summary({
    run_id: 'lr-t0',
    name: 'lr 0',
    created_at: 910,
    state: 'Succeeded',
    finished: true
  }),
  summary({ run_id: 'solo-old', name: 'solo old', created_at: 800 })
];

const shape = (items: ReturnType<typeof groupRuns>) =>
  items.map(item =>
    item.kind === 'run'
      ? item.run.run_id
      : `${item.sweep.sweep_id}[${item.trials.map(t => t.run.run_id).join(',')}]`
  );

describe('groupRuns', () => {
  it('puts a sweep where its newest trial is, its trials under it in trial order, each once', () => {
    expect(shape(groupRuns(RUNS, [sweep()]))).toEqual([
      'solo-new',
      'lr[lr-t0,lr-t1,lr-t2]',
      'solo-mid',
      'solo-old'
    ]);
  });

  it('lists runs as they are without sweeps', () => {
    expect(shape(groupRuns(RUNS, []))).toEqual(RUNS.map(run => run.run_id));
  });

  it('places a sweep with no listed trial by its creation time, unless left out', () => {
    const empty = sweep({ sweep_id: 'new', created_at: 955, trials: [] });
    expect(shape(groupRuns(RUNS, [sweep(), empty]))).toEqual([
      'solo-new',
      'lr[lr-t0,lr-t1,lr-t2]',
      'new[]',
      'solo-mid',
      'solo-old'
    ]);
    expect(shape(groupRuns(RUNS, [sweep(), empty], () => false))).toEqual([
      'solo-new',
      'lr[lr-t0,lr-t1,lr-t2]',
      'solo-mid',
      'solo-old'
    ]);
  });

  it('says the sweep and its trials briefly', () => {
    expect(trialsText(sweep())).toBe('2/4 done');
    expect(bestText(sweep())).toBe('best loss 0.5 (trial 1)');
    expect(bestText(sweep({ best: null }))).toBeNull();
    expect(paramsText({ lr: 0.000123456, opt: 'adam', layers: 3 })).toBe(
      'lr=0.0001235, opt=adam, layers=3'
    );
    expect(trialText(trial(1, { state: 'Pruned' }), 'loss')).toBe(
      'trial 1 (Pruned): lr=0.05, opt=sgd · loss 0.5'
    );
  });
});

describe('RunsList with sweeps', () => {
  const click = (element: Element | null) => {
    expect(element).not.toBeNull();
    React.act(() => (element as HTMLElement).click());
  };

  function listModel(sweeps: ISweep[]): RunsModel {
    const model = new RunsModel({
      interval: 60,
      isVisible: () => true,
      fetcher: async () => null
    });
    model.runs = RUNS;
    model.sweeps = sweeps;
    model.total = RUNS.length;
    return model;
  }

  const listed = (node: HTMLElement) =>
    Array.from(node.querySelectorAll('.jp-px-run')).map(
      row => (row as HTMLElement).dataset.runId
    );

  it('shows a sweep collapsed, its trials once expanded, never a trial twice', () => {
    const model = listModel([sweep()]);
    const widget = mount(<RunsList model={model} actions={actions()} />);
    const group = widget.node.querySelector(
      '.jp-px-sweep[data-sweep-id="lr"]'
    )!;
    expect(group.querySelector('.jp-px-run-name')!.textContent).toBe(
      'lr search'
    );
    expect(group.querySelector('.jp-px-badge')!.textContent).toBe('Running');
    expect(group.querySelector('.jp-px-sweep-trials')!.textContent).toBe(
      '2/4 done'
    );
    expect(group.querySelector('.jp-px-sweep-best')!.textContent).toBe(
      'best loss 0.5 (trial 1)'
    );
    expect(listed(widget.node)).toEqual(['solo-new', 'solo-mid', 'solo-old']);

    const toggle = group.querySelector('.jp-px-sweep-toggle')!;
    expect(toggle.getAttribute('aria-expanded')).toBe('false');
    click(toggle);
    expect(toggle.getAttribute('aria-expanded')).toBe('true');
    expect(listed(group as HTMLElement)).toEqual(['lr-t0', 'lr-t1', 'lr-t2']);
    expect(listed(widget.node)).toEqual([
      'solo-new',
      'lr-t0',
      'lr-t1',
      'lr-t2',
      'solo-mid',
      'solo-old'
    ]);
    expect(
      Array.from(group.querySelectorAll('.jp-px-run-detail')).map(
        d => d.textContent
      )
    ).toEqual([
      'trial 0: lr=0.1, opt=sgd · loss 1',
      'trial 1: lr=0.05, opt=sgd · loss 0.5',
      'trial 2: lr=0.03333, opt=sgd'
    ]);
    click(toggle);
    expect(listed(group as HTMLElement)).toEqual([]);
    React.act(() => widget.dispose());
    model.dispose();
  });

  it('shows the matching trials of a sweep while filtering', () => {
    const model = listModel([sweep()]);
    const widget = mount(<RunsList model={model} actions={actions()} />);
    const text = widget.node.querySelector(
      '.jp-px-filter-text'
    ) as HTMLInputElement;
    React.act(() => {
      Object.getOwnPropertyDescriptor(
        HTMLInputElement.prototype,
        'value'
      )!.set!.call(text, 'lr 1');
      text.dispatchEvent(new Event('input', { bubbles: true }));
    });
    expect(listed(widget.node)).toEqual(['lr-t1']);
    React.act(() => widget.dispose());
    model.dispose();
  });

  it("compares the sweep's trials and stops it from the group's menu", async () => {
    const compared: string[][] = [];
    const stopped: string[] = [];
    const opened: string[] = [];
    let compare: ((ids: string[]) => void) | null = null;
    const sidebarActions = actions({
      stopSweep: async id => void stopped.push(id),
      openSweep: id => void opened.push(id)
    });
    Object.defineProperty(sidebarActions, 'compareRuns', {
      get: () => compare
    });
    const model = listModel([sweep()]);
    const widget = mount(<RunsList model={model} actions={sidebarActions} />);
    const group = () => widget.node.querySelector('.jp-px-sweep')!;
    const menu = () => {
      click(group().querySelector('.jp-px-row-menu'));
      return Array.from(group().querySelectorAll('.jp-px-menu-item'));
    };
    // Without a comparison view, the menu has the tuning views and Stop.
    expect(menu().map(item => item.textContent)).toEqual([
      'Tuning views',
      'Stop'
    ]);
    click(group().querySelector('.jp-px-row-menu'));

    compare = ids => compared.push(ids);
    React.act(() => (model.changed as Signal<RunsModel, void>).emit());
    const items = menu();
    expect(items.map(item => item.textContent)).toEqual([
      'Compare trials',
      'Tuning views',
      'Stop'
    ]);
    click(items[0]);
    expect(compared).toEqual([['lr-t0', 'lr-t1', 'lr-t2']]);
    click(menu()[1]);
    expect(opened).toEqual(['lr']);

    click(menu()[2]);
    await waitForDialog();
    expect(await dialogText('Stop lr search (lr)?')).toContain(
      'Stop lr search (lr)?'
    );
    await acceptDialog();
    await React.act(async () => undefined);
    expect(stopped).toEqual(['lr']);
    React.act(() => widget.dispose());
    model.dispose();
  });

  it('offers no Stop once the sweep has finished', () => {
    const model = listModel([sweep({ state: 'Succeeded', finished_at: 990 })]);
    const widget = mount(<RunsList model={model} actions={actions()} />);
    click(widget.node.querySelector('.jp-px-sweep .jp-px-row-menu'));
    expect(
      Array.from(
        widget.node.querySelectorAll('.jp-px-sweep .jp-px-menu-item')
      ).map(item => item.textContent)
    ).toEqual(['Tuning views']);
    React.act(() => widget.dispose());
    model.dispose();
  });
});

describe('RunsModel with sweeps', () => {
  it('keeps the sweeps it reads, and the runs when the sweeps cannot be read', async () => {
    let fail = false;
    const model = new RunsModel({
      interval: 60,
      isVisible: () => true,
      fetcher: async () => ({
        page: {
          runs: RUNS,
          total: RUNS.length,
          offset: 0,
          limit: 100,
          progress: {}
        },
        etag: null
      }),
      sweepsFetcher: async () => {
        if (fail) {
          throw new Error('404');
        }
        return [sweep()];
      }
    });
    await model.refresh();
    expect(model.sweeps.map(s => s.sweep_id)).toEqual(['lr']);
    fail = true;
    await model.refresh();
    expect(model.sweeps.map(s => s.sweep_id)).toEqual(['lr']);
    expect(model.runs).toHaveLength(RUNS.length);
    expect(model.error).toBeNull();
    model.dispose();
  });
});
