import type { ILayoutRestorer, JupyterFrontEnd } from '@jupyterlab/application';
import { Notification, WidgetTracker } from '@jupyterlab/apputils';
import type { Widget } from '@lumino/widgets';

import * as api from '../api';
import { LogsView } from '../panels/logsView';
import { MetricsView } from '../panels/metricsView';
import { RunPanel } from '../panels/runPanel';
import { TensorBoardView } from '../panels/tensorBoardView';
import type { RunsModel } from '../runsModel';
import type { ISettings } from '../settings';
import { describe } from './describe';
import { CommandIDs } from './ids';

/** The kinds of main-area panel about one run. */
export type PanelKind = 'logs' | 'metrics' | 'tensorboard';

/** Opens (or brings forward) the panel of a kind for a run. */
export type OpenPanel = (kind: PanelKind, runId: string) => RunPanel;

/**
 * The commands about one run: open its logs, metrics or TensorBoard in the main area (one panel
 * per run and kind, restored with the layout) and stop it. Returns the panel opener that the
 * sidebar's buttons and the end-of-run notifications use.
 */
export function addRunPanelCommands(
  app: JupyterFrontEnd,
  options: {
    settings: ISettings;
    runs: RunsModel;
    restorer: ILayoutRestorer | null;
    /** Told of a Stop the user asked for here, before it is sent. */
    onStop?: (runId: string) => void;
  }
): OpenPanel {
  const { settings, runs, restorer } = options;
  const trackers = {
    logs: new WidgetTracker<RunPanel>({ namespace: 'jupyter-px-logs' }),
    metrics: new WidgetTracker<RunPanel>({ namespace: 'jupyter-px-metrics' }),
    tensorboard: new WidgetTracker<RunPanel>({
      namespace: 'jupyter-px-tensorboard'
    })
  };
  const openPanel: OpenPanel = (kind, runId) => {
    const tracker = trackers[kind];
    const existing = tracker.find(panel => panel.runId === runId);
    if (existing) {
      app.shell.activateById(existing.id);
      return existing;
    }
    let content: Widget;
    if (kind === 'logs') {
      content = new LogsView(runId, settings.refreshInterval);
    } else if (kind === 'metrics') {
      content = new MetricsView(runId, settings.refreshInterval);
    } else {
      content = new TensorBoardView(runId);
    }
    const panel = new RunPanel(runId, kind, content);
    void tracker.add(panel);
    app.shell.add(panel, 'main');
    app.shell.activateById(panel.id);
    return panel;
  };
  const runArg = (args: any): string => String(args.runId ?? '');
  app.commands.addCommand(CommandIDs.openLogs, {
    label: 'Distributed run: logs',
    execute: args => openPanel('logs', runArg(args))
  });
  app.commands.addCommand(CommandIDs.openMetrics, {
    label: 'Distributed run: metrics',
    execute: args => openPanel('metrics', runArg(args))
  });
  app.commands.addCommand(CommandIDs.openTensorBoard, {
    label: 'Distributed run: TensorBoard',
    execute: args => openPanel('tensorboard', runArg(args))
  });
  app.commands.addCommand(CommandIDs.deleteRuns, {
    label: 'Delete finished distributed runs',
    execute: async args => {
      const runIds = Array.isArray(args.runIds) ? args.runIds.map(String) : [];
      const failed: string[] = [];
      const removed: string[] = [];
      for (const runId of runIds) {
        try {
          const answer = await api.deleteRun(runId);
          if (answer.removed?.length) {
            removed.push(`${runId}: ${answer.removed.join(', ')}`);
          }
        } catch (error) {
          failed.push(`${runId}: ${describe(error)}`);
        }
      }
      if (removed.length) {
        Notification.info(`Removed from the cluster: ${removed.join('; ')}`);
      }
      if (failed.length) {
        Notification.error(
          `${failed.length} of ${runIds.length} runs could not be deleted: ${failed.join('; ')}`
        );
      }
      await runs.poll.refresh();
    }
  });
  app.commands.addCommand(CommandIDs.stopRun, {
    label: 'Stop distributed run',
    execute: async args => {
      const runId = runArg(args);
      try {
        options.onStop?.(runId);
        await api.stopRun(runId);
      } catch (error) {
        Notification.error(
          `Run ${runId} could not be stopped: ${describe(error)}`
        );
      }
      await runs.poll.refresh();
    }
  });
  app.commands.addCommand(CommandIDs.stopSweep, {
    label: 'Stop sweep',
    execute: async args => {
      const sweepId = String(args['sweepId'] ?? '');
      try {
        await api.stopSweep(sweepId);
      } catch (error) {
        Notification.error(
          `Sweep ${sweepId} could not be stopped: ${describe(error)}`
        );
      }
      await runs.poll.refresh();
    }
  });
  if (restorer) {
    for (const [kind, tracker] of Object.entries(trackers)) {
      void restorer.restore(tracker, {
        command: {
          logs: CommandIDs.openLogs,
          metrics: CommandIDs.openMetrics,
          tensorboard: CommandIDs.openTensorBoard
        }[kind]!,
        args: panel => ({ runId: panel.runId }),
        name: panel => panel.runId
      });
    }
  }
  return openPanel;
}
