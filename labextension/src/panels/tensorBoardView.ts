import { IFrame } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import * as api from '../api';
import { plotTheme, themeChanged } from '../plotting/theme';
import { runGoneMessage } from '../runGone';

/**
 * TensorBoard's page in JupyterLab's theme: its `?darkMode=true` (TensorBoard's own query flag,
 * as jupyter_px/presentation/theme.py writes it for the notebook) while the theme is dark.
 */
export function tensorBoardPage(url: string, dark: boolean): string {
  return dark ? `${url}${url.includes('?') ? '&' : '?'}darkMode=true` : url;
}

/**
 * What the panel says while the server starts TensorBoard (one request, answered once its page
 * answers): what is happening and for how long, so a wait of 10-20 s never reads as stuck.
 */
export function startingText(runs: number, seconds: number): string {
  const what = runs === 1 ? 'the run' : `${runs} runs`;
  return (
    `Starting TensorBoard over ${what}: its server starts, reads the event files and ` +
    `answers, then its page shows here (${Math.floor(seconds)} s)`
  );
}

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
    this._status.className = 'jp-px-note jp-px-tensorboard-starting';
    this.node.appendChild(this._status);
    const runs = runId.split(SEPARATOR).length;
    const began = Date.now();
    const say = () => {
      this._status.textContent = startingText(
        runs,
        (Date.now() - began) / 1000
      );
    };
    say();
    this._ticker = window.setInterval(say, 1000);
    void this.start();
  }

  private async start(): Promise<void> {
    try {
      await this._start();
    } finally {
      window.clearInterval(this._ticker);
    }
  }

  private async _start(): Promise<void> {
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
      frame.node.dataset.url = answer.url;
      this._url = answer.url;
      this._frame = frame;
      this._follow();
      this.node.appendChild(frame.node);
      // An embedded TensorBoard follows a theme switch: the page again, in the new mode.
      themeChanged().connect(this._follow, this);
    } catch (error) {
      const gone = runGoneMessage(this.runId, error);
      this._status.className = gone ? 'jp-px-run-gone' : 'jp-px-error';
      this._status.textContent = gone ?? (error as Error).message;
    }
  }

  private _follow(): void {
    if (!this._frame || this._url === null) {
      return;
    }
    const page = tensorBoardPage(this._url, plotTheme().dark);
    if (this._frame.url !== page) {
      this._frame.url = page;
      this._frame.node.dataset.page = page;
    }
  }

  dispose(): void {
    window.clearInterval(this._ticker);
    themeChanged().disconnect(this._follow, this);
    this._frame?.dispose();
    super.dispose();
  }

  private _status: HTMLDivElement;
  private _ticker = 0;
  private _frame: IFrame | null = null;
  private _url: string | null = null;
}
