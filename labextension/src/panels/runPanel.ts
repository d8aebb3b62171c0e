import { MainAreaWidget } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { pxIcon } from '../icons';

/** A main-area panel about one run; the tracker restores it by `runId`. */
export class RunPanel<T extends Widget = Widget> extends MainAreaWidget<T> {
  constructor(
    readonly runId: string,
    readonly kind: string,
    content: T
  ) {
    super({ content });
    this.id = `jupyter-px-${kind}-${runId}`;
    this.title.label = `${kind === 'tensorboard' ? 'TensorBoard' : kind[0].toUpperCase() + kind.slice(1)}: ${runId.split('+').join(', ')}`;
    this.title.icon = pxIcon;
    this.title.closable = true;
    this.addClass(`jp-px-panel-${kind}`);
  }
}
