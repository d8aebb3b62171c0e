import { ReactWidget } from '@jupyterlab/ui-components';
import { MessageLoop } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import * as React from 'react';

import type { ISidebarActions } from '../sidebar/actions';
import { TopologyForm } from '../sidebar/topologyForm';
import { formSchema } from '../topology';
import { TopologyModel } from '../topologyModel';
import { MODEL_SCHEMA } from './fixtures';

const actions: ISidebarActions = {
  submitActive: async () => undefined,
  activeNotebook: () => null,
  activeKernel: () => null,
  openLogs: () => undefined,
  openMetrics: () => undefined,
  openTensorBoard: () => undefined,
  stopRun: async () => undefined
};

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

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;

/** Render a sidebar section the way the sidebar does (a ReactWidget), synchronously. */
export function mount(element: JSX.Element): Widget {
  const widget = ReactWidget.create(element);
  React.act(() => {
    Widget.attach(widget, document.body);
    MessageLoop.sendMessage(widget, Widget.Msg.UpdateRequest);
  });
  return widget;
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
    widget = mount(<TopologyForm model={model} actions={actions} />);
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
