/**
 * The topology form's problems as drawn: each said once (under its field, or in the verdict
 * when no field of the card shows it), the verdict outside the form's scrolling section, and
 * nothing of one notebook's form or run left on screen when another notebook becomes active.
 */
import { StateDB } from '@jupyterlab/statedb';
import { MessageLoop } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import * as React from 'react';

import * as api from '../api';
import { RunsModel } from '../runsModel';
import { PxSidebar } from '../sidebar/panel';
import { SubmitOutcome } from '../sidebar/submitForm';
import { SubmitState } from '../sidebar/submitState';
import { TopologyForm } from '../sidebar/topologyForm';
import { formSchema, problemsToErrorSchema } from '../topology';
import { TopologyModel } from '../topologyModel';
import { MODEL_SCHEMA } from './fixtures';
import { actions, mount } from './render';

// The server's validation is the boundary: it answers as the server does for these forms.
jest.mock('../api');
const validate = api.validateTopology as jest.MockedFunction<
  typeof api.validateTopology
>;

const WORKERS_PROBLEM = {
  path: 'environment.replicas.n_workers',
  message: "'abc' is not a whole number"
};
const OVERRIDE_PROBLEM = {
  path: 'environment.replicas.worker[0].index',
  message: '1 is not below n_workers (1)'
};

function badModel(problems: { path: string; message: string }[]) {
  const model = new TopologyModel(null, 'local');
  model.schema = formSchema(MODEL_SCHEMA);
  model.formData = {
    framework: 'pytorch',
    environment: { replicas: { n_workers: 'abc', worker: [{ index: 1 }] } }
  };
  model.validation = { valid: false, problems };
  model.errorSchema = problemsToErrorSchema(problems, model.schema);
  return model;
}

function count(text: string, part: string): number {
  return text.split(part).length - 1;
}

describe('the topology form says each problem once', () => {
  afterEach(() => {
    document.body.innerHTML = '';
  });

  it('prints a problem under its card field, and the verdict only counts it', () => {
    const model = badModel([WORKERS_PROBLEM]);
    const widget = mount(<TopologyForm model={model} actions={actions()} />);
    const text = widget.node.textContent ?? '';
    expect(count(text, 'not a whole number')).toBe(1);
    expect(
      widget.node.querySelector('#root_environment_replicas_n_workers__error')!
        .textContent
    ).toBe("'abc' is not a whole number");
    expect(widget.node.querySelector('.jp-px-verdict')!.textContent).toBe(
      '1 problem, under its field'
    );
    React.act(() => widget.dispose());
    model.dispose();
  });

  it('lists in the verdict what no card field shows, and counts the rest', () => {
    const model = badModel([WORKERS_PROBLEM, OVERRIDE_PROBLEM]);
    const widget = mount(<TopologyForm model={model} actions={actions()} />);
    const verdict = widget.node.querySelector('.jp-px-verdict')!;
    expect(verdict.firstChild!.textContent).toBe(
      '2 problems (1 under its field):'
    );
    expect(
      Array.from(verdict.querySelectorAll('li')).map(li => li.textContent)
    ).toEqual(['worker 1 index: 1 is not below n_workers (1)']);
    expect(count(widget.node.textContent ?? '', 'not a whole number')).toBe(1);
    React.act(() => widget.dispose());
    model.dispose();
  });

  it('leaves out of its list what the opened overrides section prints under its field', () => {
    const model = badModel([WORKERS_PROBLEM, OVERRIDE_PROBLEM]);
    const widget = mount(<TopologyForm model={model} actions={actions()} />);
    const verdict = () => widget.node.querySelector('.jp-px-verdict')!;
    const section = widget.node.querySelector(
      '.jp-px-more-settings'
    ) as HTMLDetailsElement;
    const toggle = (open: boolean) =>
      React.act(() => {
        section.open = open;
        section.dispatchEvent(new Event('toggle'));
      });
    // Closed, the section hides its field's line: the verdict says it.
    expect(section.open).toBe(false);
    expect(verdict().querySelectorAll('li').length).toBe(1);
    toggle(true);
    expect(model.advancedOpen).toBe(true);
    expect(verdict().textContent).toBe('2 problems, under their fields');
    expect(
      widget.node.querySelector(
        '#root_environment_replicas_worker_0_index__error'
      )!.textContent
    ).toContain('1 is not below n_workers (1)');
    expect(count(widget.node.textContent ?? '', 'is not below n_workers')).toBe(
      1
    );
    toggle(false);
    expect(verdict().firstChild!.textContent).toBe(
      '2 problems (1 under its field):'
    );
    React.act(() => widget.dispose());
    model.dispose();
  });

  it('prints a resource problem once, under the grid, naming its role when another is shown', () => {
    const problem = {
      path: 'environment.resources.memory.requests',
      message: "'lots' is not a quantity"
    };
    const model = badModel([problem]);
    const widget = mount(<TopologyForm model={model} actions={actions()} />);
    expect(count(widget.node.textContent ?? '', 'not a quantity')).toBe(1);
    expect(
      widget.node.querySelector('#px_card_master_resources__error')!.textContent
    ).toBe("'lots' is not a quantity");
    expect(widget.node.querySelector('.jp-px-verdict')!.textContent).toBe(
      '1 problem, under its field'
    );
    // the worker's grid shown: the master's problem still there, once, named
    React.act(() =>
      widget.node
        .querySelector<HTMLButtonElement>('.jp-px-card-role[data-role=worker]')!
        .click()
    );
    expect(count(widget.node.textContent ?? '', 'not a quantity')).toBe(1);
    expect(
      widget.node.querySelector('#px_card_worker_resources__error')!.textContent
    ).toBe("master: 'lots' is not a quantity");
    React.act(() => widget.dispose());
    model.dispose();
  });
});

describe('the sidebar draws the verdict outside the form scroll', () => {
  it('puts the problem list above the scrolling form section', async () => {
    validate.mockResolvedValue({
      valid: false,
      problems: [OVERRIDE_PROBLEM]
    });
    const topology = badModel([OVERRIDE_PROBLEM]);
    const runs = new RunsModel({
      interval: 3600,
      isVisible: () => false,
      fetcher: async () => null
    });
    const sidebar = new PxSidebar(topology, runs, actions());
    React.act(() => {
      Widget.attach(sidebar, document.body);
      for (const widget of [sidebar, ...Array.from(sidebar.children())]) {
        MessageLoop.sendMessage(widget, Widget.Msg.UpdateRequest);
      }
    });
    const summary = sidebar.node.querySelector<HTMLButtonElement>(
      '.jp-px-topology-summary'
    )!;
    React.act(() => summary.click());
    const verdicts = sidebar.node.querySelectorAll('.jp-px-verdict');
    expect(verdicts).toHaveLength(1);
    expect(verdicts[0].closest('.jp-px-section-topology')).toBeNull();
    expect(verdicts[0].closest('.jp-px-section-verdict')).not.toBeNull();
    // above the form, under the run bar
    const section = sidebar.node.querySelector('.jp-px-section-topology')!;
    expect(
      verdicts[0].compareDocumentPosition(section) &
        Node.DOCUMENT_POSITION_FOLLOWING
    ).toBeTruthy();
    expect(verdicts[0].textContent).toContain('worker 1 index');
    React.act(() => sidebar.dispose());
    runs.dispose();
    topology.dispose();
  });
});

describe('switching notebooks leaves nothing stale on screen', () => {
  it("drops the previous form's problems as soon as another notebook's form shows", async () => {
    const state = new StateDB();
    await state.save('jupyter-px:topology:a.ipynb', {
      framework: 'pytorch',
      environment: { replicas: { n_workers: -1 } }
    });
    validate.mockReset();
    validate.mockImplementation(async topology =>
      typeof topology === 'string'
        ? {
            valid: true,
            topology: {
              framework: 'pytorch',
              environment: { replicas: { n_workers: 2 } }
            }
          }
        : (topology as any).environment?.replicas?.n_workers === -1
          ? {
              valid: false,
              problems: [
                {
                  path: 'environment.replicas.n_workers',
                  message: 'at least 0'
                }
              ]
            }
          : { valid: true, summary: '3 replicas', topology: topology as any }
    );
    const model = new TopologyModel(state, 'local');
    model.schema = formSchema(MODEL_SCHEMA);
    const widget = mount(<TopologyForm model={model} actions={actions()} />);
    await React.act(async () => {
      await model.setNotebook('a.ipynb', []);
      await model.verdict();
    });
    expect(
      widget.node.querySelector('#root_environment_replicas_n_workers__error')!
        .textContent
    ).toBe('at least 0');

    await React.act(async () => {
      await model.setNotebook('b.ipynb', [
        '%%px_topology\nframework: pytorch\n'
      ]);
    });
    // drawn at once, without waiting for a debounced check: b's verdict, no field error of a's
    expect(
      widget.node.querySelector('#root_environment_replicas_n_workers__error')
    ).toBeNull();
    expect(widget.node.querySelector('.jp-px-verdict')!.textContent).toBe(
      '✓ 3 replicas'
    );
    React.act(() => widget.dispose());
    model.dispose();
  });

  it("shows a run's failure only while its notebook is the active one", async () => {
    let active = 'a.ipynb';
    const sidebarActions = actions({
      activeNotebook: () => active,
      submitActive: async () => {
        throw new Error('the kernel of a.ipynb is gone');
      }
    });
    const submit = new SubmitState(sidebarActions);
    const widget = mount(<SubmitOutcome submit={submit} />);
    await React.act(async () => {
      await submit.run();
    });
    expect(widget.node.querySelector('.jp-px-submit-error')!.textContent).toBe(
      'the kernel of a.ipynb is gone'
    );
    active = 'b.ipynb';
    React.act(() => submit.update({})); // any redraw (the sidebar redraws on a switch)
    expect(widget.node.querySelector('.jp-px-submit-error')).toBeNull();
    active = 'a.ipynb';
    React.act(() => submit.update({}));
    expect(widget.node.querySelector('.jp-px-submit-error')).not.toBeNull();
    React.act(() => widget.dispose());
  });
});
