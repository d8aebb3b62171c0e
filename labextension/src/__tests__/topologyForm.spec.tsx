import type { Widget } from '@lumino/widgets';
import * as React from 'react';

import { TopologyForm } from '../sidebar/topologyForm';
import { formSchema, problemsToErrorSchema } from '../topology';
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

describe('TopologyForm', () => {
  let widget: Widget;
  let host: HTMLElement;
  let model: TopologyModel;

  beforeEach(() => {
    model = new TopologyModel(null, 'local');
    model.schema = formSchema(MODEL_SCHEMA);
    model.formData = {
      framework: 'pytorch',
      backend: 'local',
      environment: { replicas: { n_workers: 2 } }
    };
  });

  afterEach(() => {
    React.act(() => widget.dispose());
    model.dispose();
  });

  it('does not add an empty per-worker override on Enter in a field', () => {
    widget = mount(<TopologyForm model={model} actions={actions()} />);
    host = widget.node;
    const workers = host.querySelector(
      'input[id$="environment_replicas_n_workers"]'
    ) as HTMLInputElement;
    expect(workers).not.toBeNull();
    // The form does have an Add button that a browser would "click" on Enter.
    expect(
      Array.from(workers.form!.elements).some(
        e => e instanceof HTMLButtonElement && e.type === 'submit'
      )
    ).toBe(true);

    let cancelled = false;
    React.act(() => {
      cancelled = pressEnter(workers);
    });

    expect(cancelled).toBe(true);
    expect(model.formData.environment.replicas.worker ?? []).toEqual([]);
    expect(model.formData.environment.replicas.n_workers).toBe(2);
  });
});

describe('TopologyForm problems', () => {
  it('names an override by its worker, says each problem once, no array positions', () => {
    const model = new TopologyModel(null, 'local');
    model.schema = formSchema(MODEL_SCHEMA);
    model.formData = {
      framework: 'pytorch',
      environment: { replicas: { n_workers: 1, worker: [{ index: 1 }] } }
    };
    const problem = {
      path: 'environment.replicas.worker[0].index',
      message: '1 is not below n_workers (1)'
    };
    model.validation = { valid: false, problems: [problem, problem] };
    model.errorSchema = problemsToErrorSchema([problem], model.schema);
    const widget = mount(<TopologyForm model={model} actions={actions()} />);
    const verdict = widget.node.querySelector('.jp-px-verdict')!;
    expect(verdict.textContent).toBe(
      '1 problem:worker 1 index: 1 is not below n_workers (1)'
    );
    const text = widget.node.textContent ?? '';
    expect(text).not.toMatch(/worker\.0|worker\[0\]/);
    expect(text.split('worker 1 index:').length - 1).toBe(1);
    React.act(() => widget.dispose());
    model.dispose();
  });
});
