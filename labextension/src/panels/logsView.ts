import { TabPanel, Widget } from '@lumino/widgets';

import * as api from '../api';
import type { IRunDetail } from '../types';
import { ReplicaLog } from './replicaLog';

/** Logs: a tab per replica of the run, each following live while the run runs. */
export class LogsView extends TabPanel {
  constructor(
    private runId: string,
    private interval: number
  ) {
    super();
    this.addClass('jp-px-logs');
    void this.load();
  }

  private async load(): Promise<void> {
    let run: IRunDetail;
    try {
      run = await api.getRun(this.runId);
    } catch (error) {
      const message = new Widget();
      message.node.textContent = (error as Error).message;
      message.title.label = 'error';
      this.addWidget(message);
      return;
    }
    for (const replica of run.replicas) {
      this.addWidget(
        new ReplicaLog(this.runId, replica.role, replica.index, this.interval)
      );
    }
  }
}
