import { Poll } from '@lumino/polling';
import { Widget } from '@lumino/widgets';

import * as api from '../api';
import { pollFrequency } from '../polling';

/** The most log text a tab keeps (its tail): a long run's log does not grow the page without end. */
const MAX_LOG_TEXT = 2 * 1024 * 1024;

/**
 * One replica's log, read from a byte offset and followed live while visible; the poll stops once
 * the run has ended and everything has been read (`data-complete`).
 */
export class ReplicaLog extends Widget {
  constructor(
    private runId: string,
    readonly role: string,
    readonly index: number,
    interval: number
  ) {
    super();
    this.addClass('jp-px-log');
    this.title.label = `${role}-${index}`;
    this.node.dataset.replica = `${role}-${index}`;
    this._empty = document.createElement('div');
    this._empty.className = 'jp-px-log-empty';
    this._empty.textContent = 'No output yet.';
    this.node.appendChild(this._empty);
    this._pre = document.createElement('pre');
    this.node.appendChild(this._pre);
    this.poll = new Poll({
      factory: () => this.fetch(),
      frequency: pollFrequency(interval),
      standby: () => (this.isVisible ? 'when-hidden' : true),
      name: `jupyter-px:log:${runId}:${role}-${index}`
    });
  }

  readonly poll: Poll;

  async fetch(): Promise<void> {
    for (let i = 0; i < 8; i++) {
      const chunk = await api.readLog(
        this.runId,
        this.role,
        this.index,
        this._offset
      );
      const atBottom =
        this.node.scrollTop + this.node.clientHeight >=
        this.node.scrollHeight - 4;
      if (chunk.text) {
        this._empty.hidden = true;
        this._pre.textContent = (this._pre.textContent + chunk.text).slice(
          -MAX_LOG_TEXT
        );
        if (atBottom) {
          this.node.scrollTop = this.node.scrollHeight;
        }
      }
      const more = chunk.offset !== this._offset;
      this._offset = chunk.offset;
      if (!more) {
        if (chunk.finished) {
          if (!this._pre.textContent) {
            this._empty.textContent = `${this.role} ${this.index} wrote nothing to its log.`;
          }
          this.node.dataset.complete = 'true';
          this.poll.stop();
        }
        return;
      }
    }
  }

  dispose(): void {
    this.poll.dispose();
    super.dispose();
  }

  private _pre: HTMLPreElement;
  private _empty: HTMLDivElement;
  private _offset = 0;
}
