import type { JupyterFrontEnd } from '@jupyterlab/application';
import { Dialog, showDialog } from '@jupyterlab/apputils';
import type { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import type { INotebookTracker } from '@jupyterlab/notebook';

import * as api from '../api';
import { pxIcon } from '../icons';
import { problemLines } from '../problemText';
import type { RunNotices } from '../runNotifications';
import type { RunsModel } from '../runsModel';
import type { ISettings } from '../settings';
import type { ISidebarActions } from '../sidebar/actions';
import { withDefaults } from '../topology';
import type { TopologyModel } from '../topologyModel';
import type { ISubmission } from '../types';
import { describe } from './describe';
import { CommandIDs } from './ids';
import { askRunFile } from './runFileDialog';

/**
 * A run's name when none is given: its notebook's, without the extension (`ux.ipynb` runs as
 * `ux`), so a run is found by what it ran, not as `run-261127-778a90`.
 */
export function notebookRunName(path: string): string {
  const base = path.split('/').pop() ?? path;
  return base.replace(/\.ipynb$/i, '') || 'notebook';
}

/**
 * The submit commands (the notebook toolbar's and palette's Run distributed, the file browser's
 * for a notebook or a script), all with the sidebar's topology. Returns what the sidebar's Submit
 * section calls: submit the active notebook, and which notebook that is.
 */
export function addSubmitCommands(
  app: JupyterFrontEnd,
  options: {
    notebooks: INotebookTracker;
    fileBrowser: IDefaultFileBrowser | null;
    topology: TopologyModel;
    runs: RunsModel;
    settings: ISettings;
    notices: RunNotices;
  }
): Pick<ISidebarActions, 'submitActive' | 'activeNotebook'> {
  const { notebooks, fileBrowser, topology, runs, settings, notices } = options;
  /** The sidebar's topology, validated; throws naming its problems (and shows the sidebar). */
  const validTopology = async () => {
    const answer = await topology.validate();
    if (!answer?.valid) {
      app.shell.activateById('jupyter-px-sidebar');
      const problems = problemLines(
        answer?.problems ?? [],
        topology.formData
      ).join('\n');
      throw new Error(
        `the topology has problems:\n${problems || answer?.message}`
      );
    }
    return answer;
  };
  const submit = async (body: Omit<ISubmission, 'topology'>): Promise<void> => {
    await validTopology();
    const started = await api.submitRun({
      topology: withDefaults(topology.topology, settings.kubernetesImage),
      tag: settings.cellTag,
      ...body
    });
    if (api.isSweep(started)) {
      notices.sweepStarted(started); // its trials appear in the runs list, grouped under it
    } else {
      runs.watched.add(started.run_id);
      notices.submitted(started);
    }
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
      name: options.name || notebookRunName(panel.context.path)
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
          // Asked first: the name (the file's stem) and the topology it runs with.
          const answer = await validTopology();
          const name = await askRunFile(model.path, answer.summary ?? '');
          if (name !== null) {
            await submit({ script: model.path, name: name || undefined });
          }
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
  return { submitActive, activeNotebook };
}
