import type { Widget } from '@lumino/widgets';
import * as React from 'react';

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
