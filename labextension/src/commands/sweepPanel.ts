import type { ILayoutRestorer, JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';

import * as api from '../api';
import { pxIcon } from '../icons';
import { SweepOutput } from '../output/sweepOutput';
import { CommandIDs } from './ids';

/** The main-area panel of one sweep: the notebook output's view (what a tuner looks at). */
export class SweepPanel extends MainAreaWidget<SweepOutput> {
  constructor(
    readonly sweepId: string,
    content: SweepOutput
  ) {
    super({ content });
    this.id = `jupyter-px-sweep-${sweepId}`;
    this.title.label = `Sweep: ${sweepId}`;
    this.title.icon = pxIcon;
    this.title.closable = true;
    this.addClass('jp-px-panel-sweep');
    content.showSweep({
      version: 1,
      sweep_id: sweepId,
      name: null,
      state: null
    });
  }
}

/**
 * The command `jupyter-px:open-sweep` `{sweepId}` (the sidebar's sweep menu): the sweep's view in
 * the main area, one panel per sweep, restored with the layout.
 */
export function addSweepPanelCommand(
  app: JupyterFrontEnd,
  options: { interval: number; restorer: ILayoutRestorer | null }
): void {
  const tracker = new WidgetTracker<SweepPanel>({
    namespace: 'jupyter-px-sweep'
  });
  app.commands.addCommand(CommandIDs.openSweep, {
    label: 'Distributed sweep: tuning views',
    execute: args => {
      const sweepId = String(args.sweepId ?? '');
      const existing = tracker.find(panel => panel.sweepId === sweepId);
      if (existing) {
        app.shell.activateById(existing.id);
        return existing;
      }
      const content = new SweepOutput({
        interval: options.interval,
        actions: {
          compareRuns: runIds =>
            void app.commands.execute(CommandIDs.compareRuns, { runIds }),
          stopSweep: async id => {
            await api.stopSweep(id);
          }
        }
      });
      const panel = new SweepPanel(sweepId, content);
      void tracker.add(panel);
      app.shell.add(panel, 'main');
      app.shell.activateById(panel.id);
      return panel;
    }
  });
  if (options.restorer) {
    void options.restorer.restore(tracker, {
      command: CommandIDs.openSweep,
      args: panel => ({ sweepId: panel.sweepId }),
      name: panel => panel.sweepId
    });
  }
}
