import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStateDB } from '@jupyterlab/statedb';

import { CommandIDs } from './commands/ids';
import { addRunPanelCommands } from './commands/runPanels';
import { addSidebarCommands } from './commands/sidebar';
import { addSubmitCommands } from './commands/submit';
import { addSweepPanelCommand } from './commands/sweepPanel';
import { addRunOutputs } from './output/plugin';
import { addCompareCommand } from './panels/compareCommand';
import { RunNotices } from './runNotifications';
import { RunsModel } from './runsModel';
import { loadSettings, PLUGIN_ID } from './settings';
import type { ISidebarActions } from './sidebar/actions';
import { PxSidebar } from './sidebar/panel';
import { TopologyModel } from './topologyModel';
import { tensorBoardKey } from './panels/tensorBoardView';

export { CommandIDs };

/**
 * The plugin's wiring: settings, the two models (topology, runs), the commands (in `commands/`),
 * the sidebar and what it asks of them, end-of-run notifications, the run's outputs in notebooks.
 */
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
    const { settings, loaded } = await loadSettings(registry);

    const topology = new TopologyModel(state, settings.defaultBackend);
    let sidebar: PxSidebar | null = null;
    const runs = new RunsModel({
      interval: settings.refreshInterval,
      isVisible: () => sidebar?.isVisible ?? false
    });
    loaded?.changed.connect(() => {
      Object.assign(settings, loaded.composite);
      runs.interval = settings.refreshInterval;
    });

    let notices: RunNotices | null = null;
    const openPanel = addRunPanelCommands(app, {
      settings,
      runs,
      restorer,
      onStop: runId => notices?.stopping(runId)
    });
    notices = new RunNotices(openPanel);
    notices.follow(runs);
    const { submitActive, activeNotebook } = addSubmitCommands(app, {
      notebooks,
      fileBrowser,
      topology,
      runs,
      settings,
      notices
    });
    addSidebarCommands(app, palette);
    addCompareCommand(app, restorer);
    addSweepPanelCommand(app, {
      interval: settings.refreshInterval,
      restorer
    });
    addRunOutputs(app, notebooks, settings);

    const actions: ISidebarActions = {
      submitActive,
      activeNotebook,
      activeKernel: () =>
        notebooks.currentWidget?.sessionContext.session?.kernel ?? null,
      openLogs: runId => openPanel('logs', runId),
      openMetrics: runId => openPanel('metrics', runId),
      openTensorBoard: (runId, also = []) =>
        openPanel('tensorboard', tensorBoardKey([runId, ...also])),
      stopRun: runId =>
        app.commands.execute(CommandIDs.stopRun, { runId }) as Promise<void>,
      openSweep: sweepId =>
        void app.commands.execute(CommandIDs.openSweep, { sweepId }),
      stopSweep: sweepId =>
        app.commands.execute(CommandIDs.stopSweep, {
          sweepId
        }) as Promise<void>,
      deleteRuns: runIds =>
        app.commands.execute(CommandIDs.deleteRuns, {
          runIds
        }) as Promise<void>,
      // Asked at each render: the comparison view may register its command after this plugin.
      get compareRuns() {
        return app.commands.hasCommand(CommandIDs.compareRuns)
          ? (runIds: string[]) =>
              void app.commands.execute(CommandIDs.compareRuns, { runIds })
          : null;
      }
    };
    sidebar = new PxSidebar(topology, runs, actions);
    app.shell.add(sidebar, 'left', { rank: 210 });
    restorer?.add(sidebar, sidebar.id);
    // The form follows the active notebook, once its cells are loaded (its %%px_topology).
    const followNotebook = async () => {
      const panel = notebooks.currentWidget;
      await panel?.context.ready;
      if (panel !== notebooks.currentWidget) {
        return;
      }
      await topology.setNotebook(activeNotebook(), cellSources(panel));
    };
    notebooks.currentChanged.connect(() => void followNotebook());
    sidebar.disposed.connect(() => {
      runs.dispose();
      topology.dispose();
    });

    void topology.load().then(followNotebook);
    runs.start();
  }
};

/** Every cell's text, as the notebook holds it now (null for markdown and raw cells). */
function cellSources(panel: NotebookPanel | null): (string | null)[] {
  const cells = panel?.content.model?.cells;
  const sources: (string | null)[] = [];
  for (let i = 0; i < (cells?.length ?? 0); i++) {
    const cell = cells!.get(i);
    sources.push(cell.type === 'code' ? cell.sharedModel.getSource() : null);
  }
  return sources;
}

export default plugin;
