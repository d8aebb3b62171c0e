import * as React from 'react';

import { filterRuns } from '../runs';
import { RunsModel } from '../runsModel';
import { AGE_TICK_MS, RunsList } from '../sidebar/runsList';
import { summary } from './fixtures';
import { actions, mount } from './render';

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
