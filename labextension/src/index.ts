import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  Dialog,
  ICommandPalette,
  Notification,
  showDialog,
  WidgetTracker
} from '@jupyterlab/apputils';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStateDB } from '@jupyterlab/statedb';
import { Widget } from '@lumino/widgets';

import * as api from './api';
import { pxIcon } from './icons';
import { LogsView } from './panels/logsView';
import { MetricsView } from './panels/metricsView';
import { RunPanel } from './panels/runPanel';
import { TensorBoardView } from './panels/tensorBoardView';
import { ApiError } from './request';
import { runLabel } from './runs';
import { RunsModel } from './runsModel';
import type { ISidebarActions } from './sidebar/actions';
import { PxSidebar } from './sidebar/panel';
import { withDefaults } from './topology';
import { TopologyModel } from './topologyModel';
import type { ISubmission } from './types';

const PLUGIN_ID = 'jupyter-px:plugin';

export namespace CommandIDs {
  export const openSidebar = 'jupyter-px:open-sidebar';
  export const submitNotebook = 'jupyter-px:submit-notebook';
  export const submitFile = 'jupyter-px:submit-file';
  export const openLogs = 'jupyter-px:open-logs';
  export const openMetrics = 'jupyter-px:open-metrics';
  export const openTensorBoard = 'jupyter-px:open-tensorboard';
  export const stopRun = 'jupyter-px:stop-run';
}

interface ISettings {
  defaultBackend: string;
  kubernetesImage: string;
  refreshInterval: number;
  cellTag: string;
}

const DEFAULTS: ISettings = {
  defaultBackend: 'local',
  kubernetesImage: '',
  refreshInterval: 2,
  cellTag: 'px'
};

/** A submission's failure as one message: the server's reason, and each topology problem. */
function describe(error: unknown): string {
  if (error instanceof ApiError && error.problems.length) {
    return [
      error.message.split('\n')[0],
      ...error.problems.map(p => `  ${p.path}: ${p.message}`)
    ].join('\n');
  }
  return (error as Error).message ?? String(error);
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'Define a distributed-training topology, submit notebooks and follow runs.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [
    ILayoutRestorer,
    ISettingRegistry,
    IStateDB,
    ICommandPalette,
    IDefaultFileBrowser
  ],
  activate: async (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker,
    restorer: ILayoutRestorer | null,
    registry: ISettingRegistry | null,
    state: IStateDB | null,
    palette: ICommandPalette | null,
    fileBrowser: IDefaultFileBrowser | null
  ) => {
    const settings: ISettings = { ...DEFAULTS };
    let loaded: ISettingRegistry.ISettings | null = null;
    if (registry) {
      try {
        loaded = await registry.load(PLUGIN_ID);
        Object.assign(settings, loaded.composite);
      } catch (error) {
        console.warn('jupyter-px: settings could not be loaded', error);
      }
    }

    const topology = new TopologyModel(state, settings.defaultBackend);
    let sidebar: PxSidebar | null = null;
    const runs = new RunsModel({
      interval: settings.refreshInterval,
      isVisible: () => sidebar?.isVisible ?? false
    });
    loaded?.changed.connect(() => {
      Object.assign(settings, loaded!.composite);
      runs.interval = settings.refreshInterval;
    });

    // ---- main-area panels, one per run and kind, restored with the layout
    const trackers = {
      logs: new WidgetTracker<RunPanel>({ namespace: 'jupyter-px-logs' }),
      metrics: new WidgetTracker<RunPanel>({ namespace: 'jupyter-px-metrics' }),
      tensorboard: new WidgetTracker<RunPanel>({
        namespace: 'jupyter-px-tensorboard'
      })
    };
    const openPanel = (
      kind: 'logs' | 'metrics' | 'tensorboard',
      runId: string
    ): RunPanel => {
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
    app.commands.addCommand(CommandIDs.stopRun, {
      label: 'Stop distributed run',
      execute: async args => {
        const runId = runArg(args);
        try {
          await api.stopRun(runId);
        } catch (error) {
          Notification.error(
            `Run ${runId} could not be stopped: ${describe(error)}`
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

    // ---- submitting
    const submit = async (
      body: Omit<ISubmission, 'topology'>
    ): Promise<void> => {
      const answer = await topology.validate();
      if (!answer?.valid) {
        app.shell.activateById('jupyter-px-sidebar');
        const problems = (answer?.problems ?? [])
          .map(p => `${p.path}: ${p.message}`)
          .join('\n');
        throw new Error(
          `the topology has problems:\n${problems || answer?.message}`
        );
      }
      const run = await api.submitRun({
        topology: withDefaults(topology.topology, settings.kubernetesImage),
        tag: settings.cellTag,
        ...body
      });
      runs.watched.add(run.run_id);
      Notification.info(
        `Submitted ${runLabel(run)} (${run.replicas_total} replicas)`,
        { autoClose: 3000 }
      );
      await runs.poll.refresh();
    };
    const activeNotebook = (): string | null =>
      notebooks.currentWidget?.context.path ?? null;
    const submitActive = async (options: {
      name: string;
      cells: 'all' | 'tagged';
    }) => {
      const panel = notebooks.currentWidget;
      if (!panel) {
        throw new Error('no notebook is open');
      }
      if (panel.context.model.dirty) {
        await panel.context.save(); // the server reads the file: ship what the user sees
      }
      await submit({
        notebook: panel.context.path,
        cells: options.cells,
        name: options.name || undefined
      });
    };
    const reportFailure = async (error: unknown) => {
      await showDialog({
        title: 'The run could not start',
        body: describe(error),
        buttons: [Dialog.okButton()]
      });
    };

    app.commands.addCommand(CommandIDs.submitNotebook, {
      label: 'Run distributed',
      caption:
        "Run this notebook as a distributed job with the sidebar's topology",
      icon: pxIcon,
      isEnabled: () => notebooks.currentWidget !== null,
      execute: async () => {
        try {
          await submitActive({ name: '', cells: 'all' });
        } catch (error) {
          await reportFailure(error);
        }
      }
    });
    app.commands.addCommand(CommandIDs.submitFile, {
      label: 'Run distributed',
      caption:
        "Run this notebook or script as a distributed job with the sidebar's topology",
      icon: pxIcon,
      execute: async () => {
        const item = fileBrowser?.selectedItems().next();
        const model = item && !item.done ? item.value : null;
        if (!model) {
          return;
        }
        try {
          if (model.path.endsWith('.ipynb')) {
            await submit({ notebook: model.path, cells: 'all' });
          } else if (model.path.endsWith('.py')) {
            await submit({ script: model.path });
          } else {
            throw new Error(
              `${model.path} is neither a notebook nor a Python script`
            );
          }
        } catch (error) {
          await reportFailure(error);
        }
      }
    });
    app.commands.addCommand(CommandIDs.openSidebar, {
      label: 'Distributed runs: open the sidebar',
      icon: pxIcon,
      execute: () => app.shell.activateById('jupyter-px-sidebar')
    });
    if (palette) {
      const category = 'Distributed runs';
      palette.addItem({ command: CommandIDs.submitNotebook, category });
      palette.addItem({ command: CommandIDs.openSidebar, category });
    }

    // ---- the sidebar
    const actions: ISidebarActions = {
      submitActive,
      activeNotebook,
      activeKernel: () =>
        notebooks.currentWidget?.sessionContext.session?.kernel ?? null,
      openLogs: runId => openPanel('logs', runId),
      openMetrics: runId => openPanel('metrics', runId),
      openTensorBoard: runId => openPanel('tensorboard', runId),
      stopRun: runId =>
        app.commands.execute(CommandIDs.stopRun, { runId }) as Promise<void>
    };
    sidebar = new PxSidebar(topology, runs, actions);
    app.shell.add(sidebar, 'left', { rank: 210 });
    restorer?.add(sidebar, sidebar.id);
    notebooks.currentChanged.connect(
      () => void topology.setNotebook(activeNotebook())
    );
    sidebar.disposed.connect(() => {
      runs.dispose();
      topology.dispose();
    });

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

    void topology.load().then(() => topology.setNotebook(activeNotebook()));
    runs.start();
  }
};

export default plugin;
