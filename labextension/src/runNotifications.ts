import { Notification } from '@jupyterlab/apputils';

import type { OpenPanel } from './commands/runPanels';
import { runLabel } from './runs';
import type { RunsModel } from './runsModel';

/** A notification when a run this page submitted ends, with its Logs and Metrics a click away. */
export function notifyWhenRunsEnd(runs: RunsModel, openPanel: OpenPanel): void {
  runs.ended.connect((_, ended) => {
    for (const run of ended) {
      const message = `Run ${runLabel(run)} ${run.state}${run.message ? `: ${run.message}` : ''}`;
      const options = {
        autoClose: 8000,
        actions: [
          { label: 'Logs', callback: () => openPanel('logs', run.run_id) },
          {
            label: 'Metrics',
            callback: () => openPanel('metrics', run.run_id)
          }
        ]
      };
      if (run.state === 'Succeeded') {
        Notification.success(message, options);
      } else {
        Notification.error(message, options);
      }
    }
  });
}
