import { IFrame } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import * as api from '../api';
import { runGoneMessage } from '../runGone';

/** Joins run ids in a panel's key ('+' is never in a run id), so a restored panel reopens all. */
const SEPARATOR = '+';

/** The TensorBoard panel's key for these runs: one panel per set, in the order given. */
export function tensorBoardKey(runIds: string[]): string {
  return Array.from(new Set(runIds)).join(SEPARATOR);
}

/**
 * TensorBoard: started (or reused) by the server, shown through its px/tensorboard/<port>/ route.
 * `runId` is one run, or several joined by `tensorBoardKey`: one TensorBoard shows them all.
 */
export class TensorBoardView extends Widget {
  constructor(private runId: string) {
    super();
    this.addClass('jp-px-tensorboard');
    this._status = document.createElement('div');
    this._status.className = 'jp-px-note';
    this._status.textContent = 'Starting TensorBoard…';
    this.node.appendChild(this._status);
    void this.start();
  }

  private async start(): Promise<void> {
    try {
      const [first, ...also] = this.runId.split(SEPARATOR);
      const answer = await api.startTensorBoard(
        first,
        also.length ? { also } : {}
      );
      this._status.remove();
      const frame = new IFrame({
        sandbox: [
          'allow-scripts',
          'allow-same-origin',
          'allow-forms',
          'allow-popups',
          'allow-downloads'
        ]
      });
      frame.url = answer.url;
      frame.node.dataset.url = answer.url;
      this.node.appendChild(frame.node);
      this._frame = frame;
    } catch (error) {
      const gone = runGoneMessage(this.runId, error);
      this._status.className = gone ? 'jp-px-run-gone' : 'jp-px-error';
      this._status.textContent = gone ?? (error as Error).message;
    }
  }

  dispose(): void {
    this._frame?.dispose();
    super.dispose();
  }

  private _status: HTMLDivElement;
  private _frame: IFrame | null = null;
}
