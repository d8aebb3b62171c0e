import type { IRunSummary, ISweep, ISweepTrial } from './types';

/** A trial's run in its sweep's group, with the trial it is. */
export interface ITrialRun {
  run: IRunSummary;
  trial: ISweepTrial;
}

/** One entry of the runs list: a run of no sweep, or a sweep with its listed trials. */
export type RunsListItem =
  | { kind: 'run'; run: IRunSummary }
  | { kind: 'sweep'; sweep: ISweep; trials: ITrialRun[] };

/**
 * The runs list with each sweep's trials under the sweep, where its newest listed trial is (as
 * `jupyter px runs` groups them); a trial is in its group only, never also on its own. A sweep
 * none of whose trials is listed (none started yet, or all on a later page) is placed by its
 * creation time, when `keepEmpty` says so (a filter hides those that do not match it).
 */
export function groupRuns(
  runs: IRunSummary[],
  sweeps: ISweep[],
  keepEmpty: (sweep: ISweep) => boolean = () => true
): RunsListItem[] {
  const trialOf = new Map<string, { sweep: ISweep; trial: ISweepTrial }>();
  for (const sweep of sweeps) {
    for (const trial of sweep.trials ?? []) {
      if (trial.run_id !== null) {
        trialOf.set(trial.run_id, { sweep, trial });
      }
    }
  }
  const groups = new Map<string, RunsListItem & { kind: 'sweep' }>();
  const items: RunsListItem[] = [];
  for (const run of runs) {
    const link = trialOf.get(run.run_id);
    if (!link) {
      items.push({ kind: 'run', run });
      continue;
    }
    let group = groups.get(link.sweep.sweep_id);
    if (!group) {
      group = { kind: 'sweep', sweep: link.sweep, trials: [] };
      groups.set(link.sweep.sweep_id, group);
      items.push(group);
    }
    group.trials.push({ run, trial: link.trial });
  }
  for (const group of groups.values()) {
    group.trials.sort((a, b) => a.trial.number - b.trial.number);
  }
  for (const sweep of sweeps) {
    if (groups.has(sweep.sweep_id) || !keepEmpty(sweep)) {
      continue;
    }
    const at = items.findIndex(item => itemTime(item) < sweep.created_at);
    items.splice(at < 0 ? items.length : at, 0, {
      kind: 'sweep',
      sweep,
      trials: []
    });
  }
  return items;
}

/** Where an item sits in the newest-first list: a group where its newest listed trial is. */
function itemTime(item: RunsListItem): number {
  if (item.kind === 'run') {
    return item.run.created_at;
  }
  return Math.max(
    item.sweep.created_at,
    ...item.trials.map(trial => trial.run.created_at)
  );
}

/** Whether a sweep's name or id has `text` in it (the filter box's rule for runs). */
export function sweepMatches(sweep: ISweep, text: string): boolean {
  const wanted = text.trim().toLowerCase();
  return (
    !wanted ||
    (sweep.name ?? '').toLowerCase().includes(wanted) ||
    sweep.sweep_id.toLowerCase().includes(wanted)
  );
}

const number = (value: number): string =>
  Number.isInteger(value)
    ? String(value)
    : value.toPrecision(4).replace(/\.?0+(e|$)/, '$1');

/** "lr=0.001, momentum=0.9": a trial's values, briefly. */
export function paramsText(params: { [name: string]: any }): string {
  return Object.entries(params)
    .map(
      ([key, value]) =>
        `${key}=${typeof value === 'number' ? number(value) : String(value)}`
    )
    .join(', ');
}

/** "trial 2 (Pruned): lr=0.01, momentum=0.9 · loss 0.25": a trial's line under its run. */
export function trialText(
  trial: ISweepTrial,
  objective: string | null
): string {
  const values = paramsText(trial.params);
  const state = trial.state === 'Pruned' ? ' (Pruned)' : '';
  const value =
    trial.value !== null && objective
      ? ` · ${objective} ${number(trial.value)}`
      : '';
  return `trial ${trial.number}${state}${values ? `: ${values}` : ''}${value}`;
}

/** "3/8 done": trials finished of those the sweep runs. */
/**
 * A trial's state as every table says it: one that succeeded reads Succeeded, as its run does in
 * the runs list (Optuna's "Complete" stays the data's word).
 */
export function trialStateWord(state: string): string {
  return state === 'Complete' ? 'Succeeded' : state;
}

export function trialsText(sweep: ISweep): string {
  const running = sweep.counts['Running'] ?? 0;
  const done = Object.values(sweep.counts).reduce((a, b) => a + b, 0) - running;
  return `${done}/${sweep.n_trials} done`;
}

/** "best loss 0.25 (trial 3)", or null before a trial has a value. */
export function bestText(sweep: ISweep): string | null {
  const best = (sweep.trials ?? []).find(trial => trial.number === sweep.best);
  if (!best || best.value === null || sweep.objective === null) {
    return null;
  }
  return `best ${sweep.objective} ${number(best.value)} (trial ${best.number})`;
}

/** The run ids of a sweep's trials that have a run, in trial order. */
export function trialRunIds(sweep: ISweep): string[] {
  return [...(sweep.trials ?? [])]
    .sort((a, b) => a.number - b.number)
    .map(trial => trial.run_id)
    .filter((runId): runId is string => runId !== null);
}
