import type { Widget } from '@lumino/widgets';
import * as React from 'react';

import type { ISidebarActions } from '../sidebar/actions';
import { RunBar } from '../sidebar/panel';
import { SubmitState } from '../sidebar/submitState';
import { notebookRunName } from '../commands/submit';
import { RunButton } from '../sidebar/topologyForm';
import { TopologyModel } from '../topologyModel';
import { actions, mount } from './render';

describe('Run distributed', () => {
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
    const sidebarActions = actions({ activeNotebook: () => notebook });
    widget = mount(
      <RunButton
        model={model}
        actions={sidebarActions}
        submit={new SubmitState(sidebarActions)}
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

  it("runs with the Submit section's name, which clears after a submit", async () => {
    model.validation = { valid: true };
    const submitted: string[] = [];
    const sidebarActions: ISidebarActions = actions({
      activeNotebook: () => 'quickstart.ipynb',
      submitActive: async ({ name }) => void submitted.push(name)
    });
    const submit = new SubmitState(sidebarActions);
    widget = mount(
      <RunBar
        submit={submit}
        model={model}
        actions={sidebarActions}
        formOpen={true}
        onForm={() => undefined}
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

  it('names the notebook that is active now, and the run after it unless named', async () => {
    let notebook: string | null = null;
    const sidebarActions = actions({ activeNotebook: () => notebook });
    let open = false;
    widget = mount(
      <RunBar
        submit={new SubmitState(sidebarActions)}
        model={model}
        actions={sidebarActions}
        formOpen={false}
        onForm={value => (open = value)}
      />
    );
    const line = () =>
      widget!.node.querySelector('.jp-px-notebook')!.textContent;
    expect(line()).toBe('no notebook open');
    notebook = 'work/train.ipynb';
    await React.act(() => model.setNotebook('work/train.ipynb', []));
    expect(line()).toBe('train.ipynb');
    const name = widget!.node.querySelector(
      '.jp-px-run-name-input'
    ) as HTMLInputElement;
    expect(name.placeholder).toBe('name: train'); // submitted as `train`, not run-<date>-<hex>
    expect(notebookRunName('work/ux.ipynb')).toBe('ux');
    // The topology in one line: its headline and verdict; a click opens the form.
    model.validation = {
      valid: true,
      summary: 'pytorch: 1 master, 2 workers\n...'
    };
    await React.act(() => model.setNotebook('work/train.ipynb', []));
    const summary = widget!.node.querySelector(
      '.jp-px-topology-summary'
    ) as HTMLButtonElement;
    expect(summary.textContent).toContain('Topology');
    React.act(() => summary.click());
    expect(open).toBe(true);
  });
});
