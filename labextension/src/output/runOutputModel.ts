import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import * as api from '../api';
import { viewPoll } from '../polling';
import { runGoneMessage } from '../runGone';
import type { IRunViewModel } from '../types';
import type { IRunPayload } from './runMime';

/**
 * A run as a notebook output shows it: the server's view-model of it now (`GET runs/<id>/view`),
 * read again while the run has not finished, whatever the notebook's kernel does (a restarted
 * kernel holds no monitor, the server still holds the run); else what the output recorded. A
 * deleted run stays "gone"; a server that cannot be reached leaves the last view, said to be
 * one (`error`, `readAt`).
 */
export class RunOutputModel {
  constructor(
    public payload: IRunPayload,
    interval: number,
    isVisible: () => boolean
  ) {
    this.poll = viewPoll({
      name: `jupyter-px:output:${payload.run_id}`,
      intervalSeconds: interval,
      isVisible,
      factory: () => this.fetch()
    });
  }

  readonly poll: Poll;
  /** The run as the server has it; null until read. */
  view: IRunViewModel | null = null;
  /** When `view` was read (ms since the epoch). */
  readAt: number | null = null;
  /** "Run X no longer exists: ..." once the server says it does not know the run. */
  gone: string | null = null;
  error: string | null = null;

  get runId(): string {
    return this.payload.run_id;
  }

  /** The run's state now, else as the output recorded it. */
  get state(): string | null {
    return this.view?.state ?? this.payload.state;
  }

  get finished(): boolean {
    return this.view?.finished ?? this.payload.finished;
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  async fetch(): Promise<void> {
    try {
      this.view = await api.getRunView(this.runId);
      this.readAt = Date.now();
      this.error = null;
      this._changed.emit();
      if (this.view.finished) {
        void this.poll.stop();
      }
    } catch (error) {
      const gone = runGoneMessage(this.runId, error);
      this.gone = gone;
      this.error = gone ? null : (error as Error).message;
      this._changed.emit();
      if (gone) {
        void this.poll.stop(); // nothing will come back: no retries
        return;
      }
      throw error; // the poll backs off
    }
  }

  /** Read now (after Stop: the state changes at once, not at the next tick). */
  refresh(): void {
    void this.poll.refresh();
  }

  dispose(): void {
    this.poll.dispose();
  }

  private _changed = new Signal<this, void>(this);
}
