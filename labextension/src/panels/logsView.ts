import { TabPanel, Widget } from '@lumino/widgets';

import * as api from '../api';
import { runGoneMessage } from '../runGone';
import type { IReplica, IRunDetail } from '../types';
import { ReplicaLog } from './replicaLog';

/** States a replica tab is coloured by (the sidebar's badge tones). */
const FAILED = new Set(['Failed', 'Lost']);

/** A replica's tab label: "worker 1 · Failed". */
export function replicaTabLabel(replica: IReplica): string {
  return `${replica.role} ${replica.index} · ${replica.state}`;
}

/**
 * The replica a run's Logs open on: the first failed one (the one to read when a run fails),
 * else the first that exited with an error without being stopped, else the first replica. A
 * replica the run stopped because another failed (SIGTERM, exit 143) is not the one to read.
 */
export function replicaToOpen(replicas: IReplica[]): number {
  const failed = replicas.findIndex(replica => FAILED.has(replica.state));
  if (failed >= 0) {
    return failed;
  }
  const errored = replicas.findIndex(
    replica =>
      replica.state !== 'Stopped' &&
      replica.exit_code !== null &&
      replica.exit_code !== 0
  );
  return Math.max(0, errored);
}

/**
 * Logs: a tab per replica of the run, each following live while the run runs, labelled with
 * the replica's state; a failed run opens on its failing replica. A run that no longer exists
 * (a panel restored after the run was deleted) says so instead of showing an error tab.
 */
export class LogsView extends TabPanel {
  constructor(
    private runId: string,
    private interval: number
  ) {
    super();
    this.addClass('jp-px-logs');
    this.ready = this.load();
  }

  /** Settles once the replicas' tabs (or the message saying why there are none) are shown. */
  readonly ready: Promise<void>;

  private async load(): Promise<void> {
    let run: IRunDetail;
    try {
      run = await api.getRun(this.runId);
    } catch (error) {
      const gone = runGoneMessage(this.runId, error);
      const message = new Widget();
      message.addClass(gone ? 'jp-px-run-gone' : 'jp-px-error');
      message.node.textContent =
        gone ??
        `The logs of run ${this.runId} could not be read: ${(error as Error).message}`;
      message.title.label = gone ? 'no longer exists' : 'not readable';
      this.tabBar.hide();
      this.addWidget(message);
      return;
    }
    for (const replica of run.replicas) {
      const log = new ReplicaLog(
        this.runId,
        replica.role,
        replica.index,
        this.interval
      );
      log.title.label = replicaTabLabel(replica);
      log.title.className = `jp-px-tab-${replica.state.toLowerCase()}`;
      log.node.dataset.state = replica.state;
      this.addWidget(log);
    }
    this.currentIndex = replicaToOpen(run.replicas);
  }
}
