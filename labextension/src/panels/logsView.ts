import { TabPanel, Widget } from '@lumino/widgets';

import * as api from '../api';
import { runGoneMessage } from '../runGone';
import { replicaTabLabel, replicaToOpen } from '../replicas';
import type { IRunDetail } from '../types';
import { ReplicaLog } from './replicaLog';

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
      log.title.label = replicaTabLabel(replica, run.topology);
      log.title.className = `jp-px-tab-${replica.state.toLowerCase()}`;
      log.node.dataset.state = replica.state;
      this.addWidget(log);
    }
    this.currentIndex = replicaToOpen(run.replicas);
  }
}
