import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

/** A file's stem: `dir/train_mnist.py` -> `train_mnist`, a run's default name. */
export function fileStem(path: string): string {
  const base = path.split('/').pop() ?? path;
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(0, dot) : base;
}

/**
 * The body of "Run distributed" on a file: the run's name (the file's stem unless changed) and
 * the summary of the sidebar's topology it will run with, so nothing is submitted unseen.
 */
export class RunFileBody extends Widget implements Dialog.IBodyWidget<string> {
  constructor(path: string, summary: string) {
    const node = document.createElement('div');
    node.className = 'jp-px-run-file';
    const file = document.createElement('div');
    file.className = 'jp-px-run-file-path';
    file.textContent = path;
    const label = document.createElement('label');
    label.className = 'jp-px-field';
    const caption = document.createElement('span');
    caption.textContent = 'Run name';
    const input = document.createElement('input');
    input.className = 'jp-mod-styled jp-px-run-file-name';
    input.value = fileStem(path);
    input.spellcheck = false;
    label.append(caption, input);
    const heading = document.createElement('div');
    heading.className = 'jp-px-run-file-heading';
    heading.textContent = "Topology (the sidebar's form)";
    const pre = document.createElement('pre');
    pre.className = 'jp-px-run-file-summary';
    pre.textContent = summary;
    node.append(file, label, heading, pre);
    super({ node });
    this._input = input;
  }

  getValue(): string {
    return this._input.value.trim();
  }

  protected onAfterAttach(): void {
    this._input.select();
  }

  private _input: HTMLInputElement;
}

/** Ask for the run's name, showing the topology; the name (may be empty), or null on Cancel. */
export async function askRunFile(
  path: string,
  summary: string
): Promise<string | null> {
  const answer = await showDialog({
    title: 'Run distributed',
    body: new RunFileBody(path, summary),
    focusNodeSelector: '.jp-px-run-file-name',
    buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Run' })]
  });
  return answer.button.accept ? (answer.value ?? '') : null;
}
