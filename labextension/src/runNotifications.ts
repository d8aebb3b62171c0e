import { Notification } from '@jupyterlab/apputils';

import type { OpenPanel } from './commands/runPanels';
import { runLabel } from './runs';
import type { RunsModel } from './runsModel';
import type { IRunSummary, ISweep } from './types';

/**
 * What a run's end says, and how loud: a failure is an error; a Stop the user asked for here is
 * plain news, not an error; a stop from elsewhere (the CLI, another user) a warning.
 */
export function endNotice(
  run: IRunSummary,
  stoppedHere: boolean
): { message: string; type: Notification.TypeOptions } {
  const label = runLabel(run);
  if (run.state === 'Succeeded') {
    return { message: `Run ${label} succeeded`, type: 'success' };
  }
  if (run.state === 'Stopped' && stoppedHere) {
    return { message: `Run ${label} stopped`, type: 'info' };
  }
  const detail = run.message ? `: ${run.message}` : '';
  const type = run.state === 'Stopped' ? 'warning' : 'error';
  return { message: `Run ${label} ${run.state}${detail}`, type };
}

/**
 * One notification per run submitted from this page: "Submitted" when it starts, turned in
 * place into how it ended (with its Logs and Metrics a click away) rather than a second toast.
 */
export class RunNotices {
  constructor(private openPanel: OpenPanel) {}

  /** A run was submitted from here: its notification, until it ends. */
  submitted(run: IRunSummary): void {
    const id = Notification.emit(
      `Submitted ${runLabel(run)} (${run.replicas_total} replicas)`,
      'in-progress',
      { autoClose: 3000 }
    );
    this._ids.set(run.run_id, id);
  }

  /** A submission from here started a sweep (its topology had a sweep section). */
  sweepStarted(sweep: ISweep): void {
    const trials = `${sweep.n_trials} trial${sweep.n_trials === 1 ? '' : 's'}`;
    Notification.emit(
      `Started sweep ${sweep.name || sweep.sweep_id} (${trials}, ${sweep.concurrency} at a time)`,
      'in-progress',
      { autoClose: 5000 }
    );
  }

  /** The user stopped a run here: its end is not an error. */
  stopping(runId: string): void {
    this._stoppedHere.add(runId);
  }

  /** A watched run ended: its notification says so (updated in place, once). */
  ended(run: IRunSummary): void {
    if (this._done.has(run.run_id)) {
      return;
    }
    this._done.add(run.run_id);
    const { message, type } = endNotice(run, this._stoppedHere.has(run.run_id));
    const options = {
      autoClose: type === 'error' ? (false as const) : 8000,
      actions: [
        { label: 'Logs', callback: () => this.openPanel('logs', run.run_id) },
        {
          label: 'Metrics',
          callback: () => this.openPanel('metrics', run.run_id)
        }
      ]
    };
    const id = this._ids.get(run.run_id);
    this._ids.delete(run.run_id);
    if (id && Notification.update({ id, message, type, ...options })) {
      return;
    }
    Notification.emit(message, type, options);
  }

  /** Follow the runs model: every watched run that ends. */
  follow(runs: RunsModel): void {
    runs.ended.connect((_, ended) => ended.forEach(run => this.ended(run)));
  }

  private _ids = new Map<string, string>();
  private _stoppedHere = new Set<string>();
  private _done = new Set<string>();
}
