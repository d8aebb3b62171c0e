import type { Dialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

/**
 * The body of the sidebar's text dialogs: a textarea to paste a polyaxonfile into, to read the
 * exported YAML from (read-only), or to type a name in. The dialog's value is its text.
 */
export class TextBody extends Widget implements Dialog.IBodyWidget<string> {
  constructor(value: string, readOnly: boolean, placeholder = '') {
    const area = document.createElement('textarea');
    area.className = 'jp-px-yaml';
    area.value = value;
    area.readOnly = readOnly;
    area.placeholder = placeholder;
    area.rows = 18;
    area.spellcheck = false;
    super({ node: area });
  }

  getValue(): string {
    return (this.node as HTMLTextAreaElement).value;
  }
}
