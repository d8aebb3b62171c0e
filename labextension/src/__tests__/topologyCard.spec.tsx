import type { Widget } from '@lumino/widgets';
import * as React from 'react';

import {
  advancedSchema,
  frameworkRoles,
  seedNewOverrides,
  withFramework
} from '../roles';
import { RunBar } from '../sidebar/panel';
import { SubmitState } from '../sidebar/submitState';
import { TopologyForm } from '../sidebar/topologyForm';
import { formSchema } from '../topology';
import { TopologyModel } from '../topologyModel';
import { MODEL_SCHEMA } from './fixtures';
import { actions, mount } from './render';

/**
 * What a browser does on Enter in a text field of a form (jsdom does not): unless the keydown
 * was cancelled, it clicks the form's first submit button.
 */
function pressEnter(input: HTMLInputElement): boolean {
  const event = new KeyboardEvent('keydown', {
    key: 'Enter',
    bubbles: true,
    cancelable: true
  });
  input.dispatchEvent(event);
  if (!event.defaultPrevented && input.form) {
    const submitter = Array.from(input.form.elements).find(
      element =>
        element instanceof HTMLButtonElement && element.type === 'submit'
    ) as HTMLButtonElement | undefined;
    submitter?.click();
  }
  return event.defaultPrevented;
}

function setValue(
  element: HTMLInputElement | HTMLSelectElement,
  value: string
) {
  const proto = Object.getPrototypeOf(element);
  React.act(() => {
    Object.getOwnPropertyDescriptor(proto, 'value')!.set!.call(element, value);
    element.dispatchEvent(
      new Event(element.tagName === 'SELECT' ? 'change' : 'input', {
        bubbles: true
      })
    );
  });
}

describe('the topology card', () => {
  let widget: Widget | null = null;
  let model: TopologyModel;

  beforeEach(() => {
    model = new TopologyModel(null, 'local');
    model.schema = formSchema(MODEL_SCHEMA);
    model.formData = {
      framework: 'pytorch',
      backend: 'local',
      environment: { replicas: { n_workers: 2 } }
    };
    model.scheduleValidation = () => undefined; // no server here
  });

  afterEach(() => {
    React.act(() => widget?.dispose());
    model.dispose();
  });

  const host = () => widget!.node;
  const labels = () =>
    Array.from(host().querySelectorAll('.jp-px-card-field > span')).map(
      span => span.textContent
    );

  it('comes first, short: counts and a requests/limits grid; the rest is collapsed', () => {
    widget = mount(<TopologyForm model={model} actions={actions()} />);
    const card = host().querySelector('.jp-px-card')!;
    expect(host().querySelector('.jp-px-topology')!.firstElementChild).toBe(
      card
    );
    // PyTorch: no parameter servers, no evaluators.
    expect(labels()).toEqual(['Framework', 'Backend', 'master', 'Workers']);
    expect(
      Array.from(card.querySelectorAll('.jp-px-card-role')).map(
        b => b.textContent
      )
    ).toEqual(['master', 'worker']);
    const grid = card.querySelector('table.jp-px-grid')!;
    expect(
      Array.from(grid.querySelectorAll('thead th')).map(th => th.textContent)
    ).toEqual(['', 'requests', 'limits']);
    expect(
      Array.from(grid.querySelectorAll('tbody th')).map(th => th.textContent)
    ).toEqual(['cpu', 'memory', 'gpu']);
    const more = host().querySelector('details.jp-px-more-settings')!;
    expect(more.hasAttribute('open')).toBe(false);
    expect(more.querySelector('summary')!.textContent).toBe(
      'Overrides, images, processes'
    );
    // The card's fields are not in the form below, nor what PyTorch lacks.
    expect(more.querySelector('[id$="_n_workers"]')).toBeNull();
    expect(more.querySelector('[id*="default_ps"]')).toBeNull();
    expect(more.textContent).toContain('Per-worker overrides');
    expect(more.textContent).not.toContain('Per-parameter-server overrides');
  });

  it('keeps "abc" typed in Workers as typed, and outlines what the server refused', () => {
    widget = mount(<TopologyForm model={model} actions={actions()} />);
    const workers = () =>
      host().querySelector<HTMLInputElement>(
        '#root_environment_replicas_n_workers'
      )!;
    setValue(workers(), 'abc');
    // kept as typed, for the server to refuse (a number field emptied itself: 0 workers, valid)
    expect(model.formData.environment.replicas.n_workers).toBe('abc');
    expect(workers().value).toBe('abc');
    React.act(() => {
      model.errorSchema = {
        environment: {
          replicas: {
            n_workers: { __errors: ["'abc' is not a whole number"] }
          }
        }
      } as any;
      model.setFormData({ ...model.formData });
    });
    expect(workers().classList.contains('jp-px-invalid')).toBe(true);
    expect(
      host().querySelector('#root_environment_replicas_n_workers__error')!
        .textContent
    ).toBe("'abc' is not a whole number");
  });

  it('edits the counts and the role resources into the topology', () => {
    widget = mount(<TopologyForm model={model} actions={actions()} />);
    setValue(
      host().querySelector('#root_environment_replicas_n_workers')!,
      '4'
    );
    expect(model.formData.environment.replicas.n_workers).toBe(4);
    React.act(() =>
      (
        host().querySelector(
          '.jp-px-card-role[data-role="worker"]'
        ) as HTMLElement
      ).click()
    );
    setValue(host().querySelector('#px_card_worker_cpu_requests')!, '0.5');
    setValue(host().querySelector('#px_card_worker_cpu_limits')!, '1');
    setValue(host().querySelector('#px_card_worker_gpu_limits')!, '1');
    expect(
      model.formData.environment.replicas.default_worker.resources
    ).toEqual({
      cpu: { requests: '0.5', limits: '1' },
      gpu: { limits: 1 }
    });
    expect(
      model.topology.environment.replicas.default_worker.resources
    ).toEqual({
      cpu: { requests: 0.5, limits: 1 },
      gpu: { limits: 1 }
    });
  });

  it('shows TensorFlow its chief, parameter servers and evaluators; PyTorch drops them', () => {
    model.formData = withFramework(model.formData, 'tensorflow');
    widget = mount(<TopologyForm model={model} actions={actions()} />);
    expect(labels()).toEqual([
      'Framework',
      'Backend',
      'chief',
      'Workers',
      'Parameter servers',
      'Evaluators'
    ]);
    setValue(host().querySelector('#root_environment_replicas_n_ps')!, '2');
    setValue(host().querySelector('#root_framework')!, 'pytorch');
    expect(model.formData.framework).toBe('pytorch');
    expect(model.formData.environment.replicas.n_ps).toBeUndefined();
    expect(labels()).toEqual(['Framework', 'Backend', 'master', 'Workers']);
  });

  it('Enter in a field of a valid form runs it and changes nothing else; in an invalid form, nothing', async () => {
    const runs: string[] = [];
    const sidebarActions = actions({
      activeNotebook: () => 'quickstart.ipynb',
      submitActive: async ({ name }) => void runs.push(name)
    });
    const submit = new SubmitState(sidebarActions);
    model.formData.environment.replicas.worker = [{ index: 0 }];
    model.validation = { valid: true };
    widget = mount(
      <div>
        <TopologyForm model={model} actions={sidebarActions} submit={submit} />
        <RunBar
          submit={submit}
          model={model}
          actions={sidebarActions}
          formOpen={true}
          onForm={() => undefined}
        />
      </div>
    );
    // In the collapsible form: a browser would click its first Add button.
    const index = host().querySelector(
      'input[id$="environment_replicas_worker_0_index"]'
    ) as HTMLInputElement;
    expect(index).not.toBeNull();
    expect(
      Array.from(index.form!.elements).some(
        e => e instanceof HTMLButtonElement && e.type === 'submit'
      )
    ).toBe(true);
    const workers = host().querySelector(
      '#root_environment_replicas_n_workers'
    ) as HTMLInputElement;
    const name = host().querySelector(
      '.jp-px-run-name-input'
    ) as HTMLInputElement;
    const before = JSON.stringify(model.formData);
    setValue(name, 'by enter');
    for (const field of [workers, index]) {
      let cancelled = false;
      await React.act(async () => {
        cancelled = pressEnter(field);
      });
      expect(cancelled).toBe(true);
    }
    // Each Enter ran the form once (the name clears after a submit); the form is as it was.
    expect(runs).toEqual(['by enter', '']);
    expect(JSON.stringify(model.formData)).toBe(before);
    expect(model.formData.environment.replicas.worker).toEqual([{ index: 0 }]);
    expect(model.formData.environment.replicas.n_workers).toBe(2);

    // An invalid form: Enter neither runs nor changes it.
    model.validation = { valid: false, problems: [] };
    await React.act(async () => {
      pressEnter(workers);
    });
    expect(runs).toEqual(['by enter', '']);
    expect(JSON.stringify(model.formData)).toBe(before);

    setValue(name, 'first');
    await React.act(async () => {
      pressEnter(name);
    });
    expect(runs).toEqual(['by enter', '', 'first']);
  });

  it("a new override starts from the role's defaults, at the first free index", () => {
    model.formData.environment.replicas.default_worker = {
      resources: { cpu: { requests: '1', limits: '2' } }
    };
    model.formData.environment.replicas.worker = [
      { index: 0, resources: { cpu: { requests: '4' } } }
    ];
    widget = mount(<TopologyForm model={model} actions={actions()} />);
    const add = host().querySelector(
      '[id$="environment_replicas_worker"] .array-item-add button, .jp-px-more-settings button.jp-mod-styled'
    ) as HTMLButtonElement | null;
    expect(add).not.toBeNull();
    React.act(() => add!.click());
    expect(model.formData.environment.replicas.worker).toEqual([
      { index: 0, resources: { cpu: { requests: '4' } } },
      { index: 1, resources: { cpu: { requests: '1', limits: '2' } } }
    ]);
  });
});

describe('environment variables and node selectors', () => {
  it('are KEY=value lines in their own collapsible section', () => {
    const model = new TopologyModel(null, 'local');
    model.schema = formSchema(MODEL_SCHEMA);
    model.formData = {
      framework: 'pytorch',
      environment: { replicas: { n_workers: 1 }, env: { A: '1' } }
    };
    model.scheduleValidation = () => undefined;
    const widget = mount(<TopologyForm model={model} actions={actions()} />);
    const section = widget.node.querySelector('details.jp-px-env-settings')!;
    expect(section.querySelector('summary')!.textContent).toBe(
      'Environment variables, node selectors'
    );
    const env = section.querySelector('#px_env') as HTMLTextAreaElement;
    expect(env.value).toBe('A=1');
    const type = (element: HTMLTextAreaElement, value: string) =>
      React.act(() => {
        Object.getOwnPropertyDescriptor(
          HTMLTextAreaElement.prototype,
          'value'
        )!.set!.call(element, value);
        element.dispatchEvent(new Event('input', { bubbles: true }));
      });
    type(env, 'A=1\nNCCL_DEBUG = INFO');
    expect(model.formData.environment.env).toEqual({
      A: '1',
      NCCL_DEBUG: 'INFO'
    });
    type(env, 'A=1\njust a word');
    expect(section.querySelector('#px_env__error')!.textContent).toBe(
      'line 2: write KEY=value'
    );
    expect(model.formData.environment.env).toEqual({
      A: '1',
      NCCL_DEBUG: 'INFO'
    });
    const selector = section.querySelector(
      '#px_node_selector'
    ) as HTMLTextAreaElement;
    type(selector, 'zone=a');
    expect(model.formData.environment.node_selector).toEqual({ zone: 'a' });
    type(selector, '');
    expect(model.formData.environment.node_selector).toBeUndefined();
    React.act(() => widget.dispose());
    model.dispose();
  });
});

describe('roles', () => {
  it('match the framework', () => {
    expect(frameworkRoles({ framework: 'mxnet' }).ps).toBe(true);
    expect(frameworkRoles({ framework: 'mxnet' }).evaluator).toBe(false);
    expect(
      frameworkRoles({
        framework: 'tensorflow',
        environment: { tf_master_type: 'master' }
      }).master
    ).toBe('master');
    const schema = advancedSchema(formSchema(MODEL_SCHEMA), {
      framework: 'tensorflow'
    });
    expect(Object.keys(schema.properties)).toEqual(['environment']);
  });

  it('seed only a fresh override', () => {
    const before = { environment: { replicas: { worker: [] } } };
    const typed = { environment: { replicas: { worker: [{ index: 3 }] } } };
    expect(seedNewOverrides(before, typed)).toEqual(typed);
  });
});
