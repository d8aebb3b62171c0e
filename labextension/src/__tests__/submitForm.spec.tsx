import type { Widget } from '@lumino/widgets';
import * as React from 'react';

import { SubmitForm } from '../sidebar/submitForm';
import { TopologyModel } from '../topologyModel';
import { actions, mount } from './render';

describe('SubmitForm', () => {
  let widget: Widget | null = null;
  let model: TopologyModel;

  beforeEach(() => {
    model = new TopologyModel(null, 'local');
  });

  afterEach(() => {
    React.act(() => widget?.dispose());
    model.dispose();
  });

  function runButton(notebook: string | null): HTMLButtonElement {
    widget = mount(
      <SubmitForm
        model={model}
        actions={actions({ activeNotebook: () => notebook })}
      />
    );
    return widget.node.querySelector('.jp-px-submit-button')!;
  }

  it("is JupyterLab's accent button when it can run", () => {
    model.validation = { valid: true, summary: 'pytorch: 1 master, 1 worker' };
    const button = runButton('quickstart.ipynb');
    expect(button.disabled).toBe(false);
    expect(button.classList).toContain('jp-mod-styled');
    expect(button.classList).toContain('jp-mod-accept');
  });

  it('looks disabled only when it is: an invalid topology, or no notebook', () => {
    model.validation = { valid: false, problems: [] };
    let button = runButton('quickstart.ipynb');
    expect(button.disabled).toBe(true);
    expect(button.classList).not.toContain('jp-mod-accept');
    React.act(() => widget?.dispose());

    model.validation = { valid: true };
    button = runButton(null);
    expect(button.disabled).toBe(true);
    expect(button.classList).not.toContain('jp-mod-accept');
  });

  it('clears the run name after a submit', async () => {
    model.validation = { valid: true };
    const submitted: string[] = [];
    widget = mount(
      <SubmitForm
        model={model}
        actions={actions({
          activeNotebook: () => 'quickstart.ipynb',
          submitActive: async ({ name }) => void submitted.push(name)
        })}
      />
    );
    const input = widget.node.querySelector(
      '.jp-px-run-name-input'
    ) as HTMLInputElement;
    React.act(() => {
      Object.getOwnPropertyDescriptor(
        HTMLInputElement.prototype,
        'value'
      )!.set!.call(input, 'lr sweep 1');
      input.dispatchEvent(new Event('input', { bubbles: true }));
    });
    expect(input.value).toBe('lr sweep 1');
    await React.act(async () =>
      (
        widget!.node.querySelector('.jp-px-submit-button') as HTMLElement
      ).click()
    );
    expect(submitted).toEqual(['lr sweep 1']);
    expect(input.value).toBe('');
  });
});
