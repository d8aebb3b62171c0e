import {
  acceptDialog,
  dismissDialog,
  waitForDialog
} from '@jupyterlab/testutils';
import { Signal } from '@lumino/signaling';
import * as React from 'react';

import { filterRuns } from '../runs';
import { RunsModel } from '../runsModel';
import { AGE_TICK_MS, RunsList } from '../sidebar/runsList';
import { summary } from './fixtures';
import { actions, dialogText, mount } from './render';

const RUNS = [
  summary({
    run_id: 'run-1',
    name: 'quickstart',
    state: 'Running',
    created_at: 1000
  }),
  summary({
    run_id: 'run-2',
    name: 'sweep lr',
    state: 'Failed',
    finished: true,
    created_at: 990
  }),
  summary({
    run_id: 'run-3',
    name: null,
    state: 'Succeeded',
    finished: true,
    created_at: 980
  })
];

function listModel(): RunsModel {
  const model = new RunsModel({
    interval: 60,
    isVisible: () => true,
    fetcher: async () => null
  });
  model.runs = RUNS;
  model.total = RUNS.length;
  return model;
}

function setInput(
  element: HTMLInputElement | HTMLSelectElement,
  value: string
) {
  const proto = Object.getPrototypeOf(element);
  Object.getOwnPropertyDescriptor(proto, 'value')!.set!.call(element, value);
  element.dispatchEvent(
    new Event(element.tagName === 'SELECT' ? 'change' : 'input', {
      bubbles: true
    })
  );
}

describe('filterRuns', () => {
  it('matches name or id, and a state', () => {
    const ids = (text: string, state: string) =>
      filterRuns(RUNS, { text, state }).map(run => run.run_id);
    expect(ids('', 'all')).toEqual(['run-1', 'run-2', 'run-3']);
    expect(ids('SWEEP', 'all')).toEqual(['run-2']);
    expect(ids('run-3', 'all')).toEqual(['run-3']);
    expect(ids('', 'Failed')).toEqual(['run-2']);
    expect(ids('', 'active')).toEqual(['run-1']);
    expect(ids('quick', 'Failed')).toEqual([]);
  });
});

describe('RunsList', () => {
  afterEach(() => jest.useRealTimers());

  it('ages tick without a new poll', () => {
    jest.useFakeTimers({ now: 1005_000 });
    const model = listModel();
    const widget = mount(<RunsList model={model} actions={actions()} />);
    const ages = () =>
      Array.from(widget.node.querySelectorAll('.jp-px-age')).map(
        a => a.textContent
      );
    expect(ages()).toEqual(['5s', '15s', '25s']);
    React.act(() => {
      jest.advanceTimersByTime(10 * AGE_TICK_MS);
    });
    expect(ages()).toEqual(['15s', '25s', '35s']);
    React.act(() => widget.dispose());
    model.dispose();
  });

  it('says whether each run started warm or cold, and why, in its row', () => {
    const model = listModel();
    model.runs = [
      summary({ run_id: 'w', launch: 'warm (template pid 4242)' }),
      summary({
        run_id: 'c',
        launch: 'cold: no warm template for torch 2.13 yet (one is starting)'
      }),
      summary({ run_id: 'k', launch: null })
    ];
    const widget = mount(<RunsList model={model} actions={actions()} />);
    const chips = Array.from(
      widget.node.querySelectorAll<HTMLElement>('.jp-px-launch')
    );
    expect(chips.map(c => c.textContent)).toEqual(['warm', 'cold']);
    expect(chips[1].title).toBe(
      'replicas started cold: no warm template for torch 2.13 yet (one is starting)'
    );
    React.act(() => widget.dispose());
    model.dispose();
  });

  it('filters by name and by state', () => {
    const model = listModel();
    const widget = mount(<RunsList model={model} actions={actions()} />);
    const shown = () =>
      Array.from(widget.node.querySelectorAll('.jp-px-run')).map(
        row => (row as HTMLElement).dataset.runId
      );
    React.act(() =>
      setInput(widget.node.querySelector('.jp-px-filter-state')!, 'Failed')
    );
    expect(shown()).toEqual(['run-2']);
    expect(widget.node.querySelector('.jp-px-filter-count')!.textContent).toBe(
      '1 of 3 shown'
    );
    React.act(() =>
      setInput(widget.node.querySelector('.jp-px-filter-state')!, 'all')
    );
    React.act(() =>
      setInput(widget.node.querySelector('.jp-px-filter-text')!, 'quick')
    );
    expect(shown()).toEqual(['run-1']);
    React.act(() => widget.dispose());
    model.dispose();
  });
});

describe('RunsList housekeeping', () => {
  const click = (element: Element | null) => {
    expect(element).not.toBeNull();
    React.act(() => (element as HTMLElement).click());
  };
  const row = (widget: { node: HTMLElement }, runId: string) =>
    widget.node.querySelector(`.jp-px-run[data-run-id="${runId}"]`)!;
  const menuItems = (widget: { node: HTMLElement }, runId: string) => {
    click(row(widget, runId).querySelector('.jp-px-row-menu'));
    return Array.from(
      row(widget, runId).querySelectorAll('.jp-px-menu-item')
    ).map(item => item.textContent);
  };

  it('shows Logs, Metrics and TensorBoard on the row, the rest in its menu: Stop for a running run, Delete for a finished one', () => {
    const model = listModel();
    const metrics: string[] = [];
    const widget = mount(
      <RunsList
        model={model}
        actions={actions({ openMetrics: runId => metrics.push(runId) })}
      />
    );
    for (const id of ['run-1', 'run-2']) {
      const links = row(widget, id).querySelectorAll(
        '.jp-px-run-actions > button, .jp-px-run-actions .jp-px-row-menu'
      );
      expect(Array.from(links).map(link => link.textContent)).toEqual([
        'Logs',
        'Metrics',
        'TensorBoard',
        '⋯'
      ]);
    }
    click(row(widget, 'run-1').querySelector('.jp-px-action-metrics'));
    expect(metrics).toEqual(['run-1']);
    expect(menuItems(widget, 'run-1')).toEqual(['Stop', 'Copy id']);
    expect(menuItems(widget, 'run-2')).toEqual(['Copy id', 'Delete…']);
    React.act(() => widget.dispose());
    model.dispose();
  });

  it('deletes a run only after asking', async () => {
    const model = listModel();
    const deleted: string[][] = [];
    const widget = mount(
      <RunsList
        model={model}
        actions={actions({ deleteRuns: async ids => void deleted.push(ids) })}
      />
    );
    menuItems(widget, 'run-3');
    click(row(widget, 'run-3').querySelector('.jp-px-action-delete'));
    await waitForDialog();
    expect(await dialogText('Delete run-3?')).toContain('Delete run-3?');
    await dismissDialog();
    expect(deleted).toEqual([]);
    menuItems(widget, 'run-3');
    click(row(widget, 'run-3').querySelector('.jp-px-action-delete'));
    await waitForDialog();
    await acceptDialog();
    await React.act(async () => undefined);
    expect(deleted).toEqual([['run-3']]);
    React.act(() => widget.dispose());
    model.dispose();
  });

  it('clears every finished run in the store, also beyond the page listed, after asking', async () => {
    // The store: the three listed, then 600 older runs the list has not loaded (one running).
    const older = Array.from({ length: 600 }, (_, i) =>
      summary({
        run_id: `old-${i}`,
        name: null,
        state: i === 7 ? 'Running' : 'Succeeded',
        finished: i !== 7,
        created_at: 900 - i
      })
    );
    const store = [...RUNS, ...older];
    const asked: [number, number][] = [];
    const model = new RunsModel({
      interval: 60,
      isVisible: () => true,
      fetcher: async (limit, _etag, offset = 0) => {
        asked.push([limit, offset]);
        return {
          page: {
            runs: store.slice(offset, offset + limit),
            total: store.length,
            offset,
            limit,
            progress: {}
          },
          etag: null
        };
      }
    });
    model.runs = RUNS;
    model.total = store.length;
    const deleted: string[][] = [];
    const widget = mount(
      <RunsList
        model={model}
        actions={actions({ deleteRuns: async ids => void deleted.push(ids) })}
      />
    );
    click(widget.node.querySelector('.jp-px-clear-finished'));
    await waitForDialog();
    const dialog = document.body.querySelector('.jp-Dialog')!;
    expect(dialog.textContent).toContain('Clear 601 finished runs?');
    expect(dialog.textContent).toContain('Delete sweep lr, run-3, old-0');
    expect(dialog.textContent).toContain('and 593 more');
    await dismissDialog();
    expect(deleted).toEqual([]);

    click(widget.node.querySelector('.jp-px-clear-finished'));
    await waitForDialog();
    await acceptDialog();
    await React.act(async () => undefined);
    expect(asked.map(([, offset]) => offset)).toEqual([0, 500, 0, 500]);
    expect(deleted).toHaveLength(1);
    expect(deleted[0]).toHaveLength(601);
    expect(deleted[0]).not.toContain('run-1');
    expect(deleted[0]).not.toContain('old-7');
    expect(new Set(deleted[0])).toEqual(
      new Set(store.filter(run => run.finished).map(run => run.run_id))
    );
    React.act(() => widget.dispose());
    model.dispose();
  });

  it('says so when no run in the store has finished', async () => {
    const model = listModel();
    const widget = mount(<RunsList model={model} actions={actions()} />);
    click(widget.node.querySelector('.jp-px-clear-finished'));
    await waitForDialog();
    expect(await dialogText('No finished runs')).toContain('No finished runs');
    await dismissDialog();
    React.act(() => widget.dispose());
    model.dispose();
  });

  it('opens several runs in one TensorBoard, and compares them when a comparison view exists', () => {
    const model = listModel();
    const opened: [string, string[] | undefined][] = [];
    const compared: string[][] = [];
    let compare: ((ids: string[]) => void) | null = null;
    const sidebarActions = actions({
      openTensorBoard: (runId, also) => opened.push([runId, also])
    });
    Object.defineProperty(sidebarActions, 'compareRuns', {
      get: () => compare
    });
    const widget = mount(<RunsList model={model} actions={sidebarActions} />);
    const bar = () => widget.node.querySelector('.jp-px-selection');
    expect(bar()).toBeNull();
    click(row(widget, 'run-1').querySelector('.jp-px-run-select'));
    click(row(widget, 'run-3').querySelector('.jp-px-run-select'));
    expect(bar()!.querySelector('.jp-px-selection-count')!.textContent).toBe(
      '2 selected'
    );
    expect(bar()!.querySelector('.jp-px-selection-compare')).toBeNull();
    click(bar()!.querySelector('.jp-px-selection-tensorboard'));
    expect(opened).toEqual([['run-1', ['run-3']]]);

    compare = ids => compared.push(ids);
    React.act(() => (model.changed as Signal<RunsModel, void>).emit());
    click(bar()!.querySelector('.jp-px-selection-compare'));
    expect(compared).toEqual([['run-1', 'run-3']]);
    // Only the finished one of the selection can be deleted.
    expect(bar()!.querySelector('.jp-px-selection-delete')!.textContent).toBe(
      'Delete the 1 finished…'
    );
    click(bar()!.querySelector('.jp-px-selection-clear'));
    expect(bar()).toBeNull();
    React.act(() => widget.dispose());
    model.dispose();
  });
});
