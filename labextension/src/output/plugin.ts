import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { CommandIDs } from '../commands/ids';
import type { ISettings } from '../settings';
import { runOutputFactory } from './runOutput';
import { RUN_MIME_RANK, WIDGET_MIMETYPE } from './runMime';

/**
 * The run's mimetype is rendered in every notebook: its renderer is added to each notebook's own
 * rendermime (as ipywidgets adds its own), so it can ask that notebook's kernel whether the live
 * widget is still there, and open the sidebar's panels with the extension's commands.
 */
export function addRunOutputs(
  app: JupyterFrontEnd,
  notebooks: INotebookTracker,
  settings: ISettings
): void {
  const register = (panel: NotebookPanel) => {
    const rendermime = panel.content.rendermime;
    rendermime.addFactory(
      runOutputFactory({
        interval: settings.refreshInterval,
        actions: {
          openTensorBoard: runId =>
            void app.commands.execute(CommandIDs.openTensorBoard, { runId }),
          openLogs: runId =>
            void app.commands.execute(CommandIDs.openLogs, { runId })
        },
        widgetLive: modelId =>
          panel.sessionContext.session?.kernel?.hasComm(modelId) ?? false,
        createWidgetRenderer: () =>
          rendermime.getFactory(WIDGET_MIMETYPE)
            ? rendermime.createRenderer(WIDGET_MIMETYPE)
            : null,
        createHtmlRenderer: () =>
          rendermime.getFactory('text/html')
            ? rendermime.createRenderer('text/html')
            : null
      }),
      RUN_MIME_RANK
    );
  };
  notebooks.forEach(register);
  notebooks.widgetAdded.connect((_, panel) => register(panel));
}
