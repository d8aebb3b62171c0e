import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import * as api from '../api';
import { runGoneMessage } from '../runGone';
import { mergeSeries } from '../series';
import { viewPoll } from '../polling';
import type { ISeries } from '../types';

/** A series the run's owner samples (`system/cpu_percent`, ...), not one the code logged. */
export function isSystemMetric(name: string): boolean {
  return name.startsWith('system/');
}

/**
 * A run's metrics as the panel holds them: every replica's series, merged as they arrive from the
 * server's cursor (opaque: each answer's `cursor` goes back as `since`), and the chosen metric.
 */
export class MetricsModel {
  constructor(
    readonly runId: string,
    interval: number,
    isVisible: () => boolean
  ) {
    this.poll = viewPoll({
      name: `jupyter-px:metrics:${runId}`,
      intervalSeconds: interval,
      isVisible,
      factory: () => this.fetch()
    });
  }

  readonly poll: Poll;
  /** When this view began to wait for the run's metrics (seconds since the epoch). */
  readonly watchingSince = Date.now() / 1000;
  data: { [replica: string]: { [metric: string]: ISeries } } = {};
  metric: string | null = null;
  error: string | null = null;
  finished = false;

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Every metric, the code's own first, then the `system/` ones the run's owner samples. */
  metrics(): string[] {
    const names = new Set<string>();
    for (const metrics of Object.values(this.data)) {
      Object.keys(metrics).forEach(name => names.add(name));
    }
    const sorted = [...names].sort();
    return [
      ...sorted.filter(name => !isSystemMetric(name)),
      ...sorted.filter(isSystemMetric)
    ];
  }

  /** The metrics the training code logged (what "no metrics were logged" is about). */
  loggedByTheCode(): string[] {
    return this.metrics().filter(name => !isSystemMetric(name));
  }

  async fetch(): Promise<void> {
    try {
      const update = await api.readMetrics(this.runId, this._cursor);
      this.error = null;
      for (const [replica, metrics] of Object.entries(update.series)) {
        const held = (this.data[replica] = this.data[replica] || {});
        for (const [name, points] of Object.entries(metrics)) {
          held[name] = mergeSeries(held[name], points);
        }
      }
      this._cursor = update.cursor;
      this.finished = update.finished;
      if (!this._chosen) {
        // Until the user picks one: `loss`, else the code's first. The system samples come
        // every 2 s from the start, long before the code's first metric, and are never chosen
        // for the user: the strip above the plot shows them.
        const names = this.loggedByTheCode();
        this.metric = names.includes('loss') ? 'loss' : (names[0] ?? null);
      }
      this._changed.emit();
      // A page may hold no points while more are waiting (`history_pending`): stop only when the
      // run has finished and the server has nothing more to send.
      if (
        update.finished &&
        !update.history_pending &&
        Object.keys(update.series).length === 0
      ) {
        this.poll.stop();
      }
    } catch (error) {
      const gone = runGoneMessage(this.runId, error);
      this.error = gone ?? (error as Error).message;
      this._changed.emit();
      if (gone) {
        void this.poll.stop(); // nothing will come back: no retries
        return;
      }
      throw error;
    }
  }

  select(metric: string): void {
    this.metric = metric;
    this._chosen = true;
    this._changed.emit();
  }

  dispose(): void {
    this.poll.dispose();
  }

  private _cursor: string | null = null;
  private _chosen = false;
  private _changed = new Signal<this, void>(this);
}
