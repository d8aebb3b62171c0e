import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import * as api from './api';
import { pollFrequency, viewPoll } from './polling';
import { newlyFinished } from './runs';
import type { IProgress, IRunsPage, IRunSummary, ISweep } from './types';

/** Fetches a page of runs from `offset`; `null` when unchanged since `etag` (HTTP 304). */
export type RunsFetcher = (
  limit: number,
  etag: string | null,
  offset?: number
) => Promise<{ page: IRunsPage; etag: string | null } | null>;

/** Runs per request when every run is read (Clear finished). */
const ALL_PAGE = 500;

/** Fetches the sweeps, each with its trials (the runs list groups trials under them). */
export type SweepsFetcher = () => Promise<ISweep[]>;

const listSweeps: SweepsFetcher = async () => (await api.listSweeps()).sweeps;

/**
 * The runs list, live: one `Poll` (backoff on errors, standby while hidden) asking with the
 * last ETag, so an unchanged store costs the server a few stats and the browser nothing.
 */
export class RunsModel {
  constructor(options: {
    interval: number;
    isVisible: () => boolean;
    fetcher?: RunsFetcher;
    /** Default: the server's sweeps; none where a `fetcher` alone is given (a test's runs). */
    sweepsFetcher?: SweepsFetcher;
    pageSize?: number;
  }) {
    this._fetch = options.fetcher ?? api.listRuns;
    this._fetchSweeps =
      options.sweepsFetcher ?? (options.fetcher ? async () => [] : listSweeps);
    this.limit = options.pageSize ?? 100;
    this.poll = viewPoll({
      name: 'jupyter-px:runs',
      intervalSeconds: options.interval,
      isVisible: options.isVisible,
      factory: () => this.refresh(),
      auto: false
    });
  }

  readonly poll: Poll;
  runs: IRunSummary[] = [];
  /** The sweeps with their trials; kept as they were while the sweeps cannot be read. */
  sweeps: ISweep[] = [];
  progress: { [runId: string]: IProgress } = {};
  total = 0;
  limit: number;
  error: string | null = null;
  /** Runs submitted from this browser: their end is notified. */
  readonly watched = new Set<string>();

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Runs of `watched` that ended in the last refresh. */
  get ended(): ISignal<this, IRunSummary[]> {
    return this._ended;
  }

  start(): void {
    void this.poll.start();
  }

  set interval(seconds: number) {
    this.poll.frequency = pollFrequency(seconds);
  }

  /** Show `more` runs (the next refresh asks for a longer page). */
  showMore(more = 100): Promise<void> {
    this.limit += more;
    this._etag = null;
    return this.poll.refresh();
  }

  /**
   * The runs (throws on failure, so the poll backs off) and the sweeps (a failure there leaves
   * the runs listed: the sweeps are their grouping, not their content).
   */
  async refresh(): Promise<void> {
    let answer;
    const sweeps = this._fetchSweeps().catch(() => null);
    try {
      answer = await this._fetch(this.limit, this._etag);
    } catch (error) {
      this.error = (error as Error).message;
      this._changed.emit();
      throw error;
    }
    const hadError = this.error !== null;
    this.error = null;
    const sweepsChanged = this._takeSweeps(await sweeps);
    if (answer === null) {
      if (hadError || sweepsChanged) {
        this._changed.emit();
      }
      return;
    }
    const before = new Map(this.runs.map(run => [run.run_id, run]));
    this._etag = answer.etag;
    this.runs = answer.page.runs;
    this.progress = answer.page.progress;
    this.total = answer.page.total;
    const ended = newlyFinished(before, this.runs, this.watched);
    for (const run of ended) {
      this.watched.delete(run.run_id);
    }
    this._changed.emit();
    if (ended.length) {
      this._ended.emit(ended);
    }
  }

  /**
   * Every finished run in the store, not only the page the list shows (Clear finished clears
   * them all): read page by page, newest first. A run listed twice because the store grew
   * meanwhile is kept once.
   */
  async allFinished(): Promise<IRunSummary[]> {
    const found = new Map<string, IRunSummary>();
    for (let offset = 0; ;) {
      const answer = await this._fetch(ALL_PAGE, null, offset);
      const runs = answer?.page.runs ?? [];
      for (const run of runs) {
        if (run.finished && !found.has(run.run_id)) {
          found.set(run.run_id, run);
        }
      }
      offset += runs.length;
      if (!runs.length || offset >= (answer?.page.total ?? 0)) {
        return [...found.values()];
      }
    }
  }

  dispose(): void {
    this.poll.dispose();
  }

  /** Keep `sweeps` when read; whether they differ from those kept before. */
  private _takeSweeps(sweeps: ISweep[] | null): boolean {
    if (sweeps === null) {
      return false;
    }
    const text = JSON.stringify(sweeps);
    if (text === this._sweepsText) {
      return false;
    }
    this._sweepsText = text;
    this.sweeps = sweeps;
    return true;
  }

  private _fetch: RunsFetcher;
  private _fetchSweeps: SweepsFetcher;
  private _sweepsText = '[]';
  private _etag: string | null = null;
  private _changed = new Signal<this, void>(this);
  private _ended = new Signal<this, IRunSummary[]>(this);
}
