/** Pure presentation of runs for the list: badges, replica counts, progress, age. */
import type { IProgress, IRunSummary } from './types';

export type Tone =
  'pending' | 'running' | 'succeeded' | 'failed' | 'stopped' | 'lost';

const TONES: { [state: string]: Tone } = {
  Pending: 'pending',
  Running: 'running',
  Restarting: 'running',
  Succeeded: 'succeeded',
  Failed: 'failed',
  Stopped: 'stopped',
  Lost: 'lost'
};

/** A state's badge: its label and the CSS class that colors it from theme variables. */
export function stateBadge(state: string): {
  label: string;
  className: string;
  tone: Tone;
} {
  const tone = TONES[state] ?? 'pending';
  return { label: state, tone, className: `jp-px-badge jp-px-badge-${tone}` };
}

/** "2/3 running", or "3 replicas" once nothing runs. */
export function replicaText(run: IRunSummary): string {
  const running =
    (run.replica_counts['Running'] ?? 0) +
    (run.replica_counts['Restarting'] ?? 0);
  if (run.finished) {
    return `${run.replicas_total} replica${run.replicas_total === 1 ? '' : 's'}`;
  }
  return `${running}/${run.replicas_total} running`;
}

/** Fraction done (0..1) when training reports total_steps; null otherwise. */
export function progressFraction(
  progress: IProgress | undefined
): number | null {
  if (!progress || !progress.total_steps || progress.step === null) {
    return null;
  }
  return Math.max(0, Math.min(1, (progress.step + 1) / progress.total_steps));
}

/** "12s", "5m", "3h", "2d" since `then` (seconds since the epoch). */
export function formatAge(
  then: number,
  now: number = Date.now() / 1000
): string {
  const seconds = Math.max(0, Math.round(now - then));
  if (seconds < 60) {
    return `${seconds}s`;
  }
  if (seconds < 3600) {
    return `${Math.floor(seconds / 60)}m`;
  }
  if (seconds < 86400) {
    return `${Math.floor(seconds / 3600)}h`;
  }
  return `${Math.floor(seconds / 86400)}d`;
}

/** How a run is named in the list: its name, else its id. */
export function runLabel(run: IRunSummary): string {
  return run.name || run.run_id;
}

/**
 * Runs of `watched` that finished between two snapshots of the list, for the "your run ended"
 * notification. A run missing from `before` counts as unfinished (it was just submitted).
 */
export function newlyFinished(
  before: Map<string, IRunSummary>,
  after: IRunSummary[],
  watched: Set<string>
): IRunSummary[] {
  return after.filter(
    run =>
      watched.has(run.run_id) &&
      run.finished &&
      !(before.get(run.run_id)?.finished ?? false)
  );
}

/**
 * What the row says about a run nobody keeps (its supervisor or follower is gone): the server
 * reports it and leaves the state as recorded until its keeper settles the run; `null` otherwise.
 */
export function ownerNote(run: IRunSummary): string | null {
  return run.finished ? null : (run.owner_problem ?? null);
}

/** What the runs list shows: runs whose name or id contains `text`, in `state`. */
export interface IRunFilter {
  text: string;
  /** 'all', 'active' (not finished), or one state ('Failed', ...). */
  state: string;
}

export function filterRuns(
  runs: IRunSummary[],
  filter: IRunFilter
): IRunSummary[] {
  const text = filter.text.trim().toLowerCase();
  return runs.filter(run => {
    if (
      text &&
      !(run.name ?? '').toLowerCase().includes(text) &&
      !run.run_id.toLowerCase().includes(text)
    ) {
      return false;
    }
    if (filter.state === 'all') {
      return true;
    }
    if (filter.state === 'active') {
      return !run.finished;
    }
    return run.state === filter.state;
  });
}

/**
 * How a run's replicas started, in one word for a row or a header ("warm" or "cold"), with the
 * whole of it (which template, or why cold) for its tooltip; null when the backend does not say.
 */
export function launchWord(
  launch: string | null | undefined
): { word: 'warm' | 'cold'; why: string } | null {
  if (!launch) {
    return null;
  }
  return { word: launch.startsWith('warm') ? 'warm' : 'cold', why: launch };
}
