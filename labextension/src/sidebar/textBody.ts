import type { Dialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

/**
 * The body of the sidebar's text dialogs: a textarea to paste a polyaxonfile into, to read the
 * exported YAML from (read-only), or to type a name in, with the problems of the last attempt
 * above it. The dialog's value is its text.
 */
export class TextBody extends Widget implements Dialog.IBodyWidget<string> {
  constructor(
    value: string,
    readOnly: boolean,
    placeholder = '',
    problems: string[] = []
  ) {
    const node = document.createElement('div');
    node.className = 'jp-px-text-body';
    if (problems.length) {
      const list = document.createElement('ul');
      list.className = 'jp-px-error jp-px-problems';
      for (const problem of problems) {
        const item = document.createElement('li');
        item.textContent = problem;
        list.appendChild(item);
      }
      node.appendChild(list);
    }
    const area = document.createElement('textarea');
    area.className = 'jp-px-yaml';
    area.value = value;
    area.readOnly = readOnly;
    area.placeholder = placeholder;
    area.rows = 18;
    area.spellcheck = false;
    node.appendChild(area);
    super({ node });
    this._area = area;
  }

  getValue(): string {
    return this._area.value;
  }

  private _area: HTMLTextAreaElement;
}
