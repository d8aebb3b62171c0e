import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import * as api from '../api';
import { viewPoll } from '../polling';
import { runGoneMessage } from '../runGone';
import type { IRunDetail } from '../types';
import type { IRunPayload } from './runMime';

/**
 * A run as a notebook output shows it: the server's record of it now (read again while it has
 * not finished), else what the output knew when it was written. A deleted run stays "gone".
 */
export class RunOutputModel {
  constructor(
    readonly payload: IRunPayload,
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
  /** The run as the server has it; null until read, or when it cannot be. */
  detail: IRunDetail | null = null;
  /** "Run X no longer exists: ..." once the server says it does not know the run. */
  gone: string | null = null;
  error: string | null = null;

  get runId(): string {
    return this.payload.run_id;
  }

  /** The run's state now, else as the output recorded it. */
  get state(): string | null {
    return this.detail?.state ?? this.payload.state;
  }

  get finished(): boolean {
    return this.detail?.finished ?? this.payload.finished;
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  async fetch(): Promise<void> {
    try {
      this.detail = await api.getRun(this.runId);
      this.error = null;
      this._changed.emit();
      if (this.detail.finished) {
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

  dispose(): void {
    this.poll.dispose();
  }

  private _changed = new Signal<this, void>(this);
}
