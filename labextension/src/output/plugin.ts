import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import * as api from '../api';
import { CommandIDs } from '../commands/ids';
import type { ISettings } from '../settings';
import { COMPARE_RUNS } from '../panels/compareCommand';
import { tensorBoardKey } from '../panels/tensorBoardView';
import { compareOutputFactory } from './compareOutput';
import { runOutputFactory } from './runOutput';
import { RUN_MIME_RANK } from './runMime';
import { sweepOutputFactory } from './sweepOutput';

/**
 * Make the notebook's cell `cellId` active, bring it into view and, given the failing `line`
 * (from 1, in the cell as written), put the cursor on that line and scroll it into view (a
 * failure's "Go to cell").
 */
export async function goToCell(
  panel: NotebookPanel,
  cellId: string,
  line: number | null = null
): Promise<boolean> {
  const notebook = panel.content;
  const index = notebook.widgets.findIndex(cell => cell.model.id === cellId);
  if (index < 0) {
    return false;
  }
  notebook.activeCellIndex = index;
  notebook.mode = 'command';
  await notebook.scrollToItem(index, 'start');
  const cell = notebook.widgets[index];
  if (line !== null && line > 0) {
    await cell.ready;
    const editor = cell.editor;
    if (editor) {
      const position = {
        line: Math.min(line, editor.lineCount) - 1,
        column: 0
      };
      editor.setCursorPosition(position);
      editor.revealPosition(position);
      // the line itself, not only its cell: a long cell's line may be below the fold
      const lines = cell.node.querySelectorAll('.cm-line');
      lines[position.line]?.scrollIntoView({ block: 'center' });
    }
  }
  return true;
}

/**
 * The run's, the sweep's and the comparison's mimetypes are rendered in every notebook: its renderer is added to each notebook's own
 * rendermime (as ipywidgets adds its own), so its "Go to cell" finds the notebook's cells, and
 * its buttons open the sidebar's panels with the extension's commands.
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
            void app.commands.execute(CommandIDs.openLogs, { runId }),
          openMetrics: runId =>
            void app.commands.execute(CommandIDs.openMetrics, { runId }),
          stopRun: async runId => {
            await api.stopRun(runId);
          },
          killReplica: async (runId, replica, signal) =>
            (await api.killReplica(runId, replica, { signal })).said,
          goToCell: (cellId, line) => void goToCell(panel, cellId, line)
        },
        createHtmlRenderer: () =>
          rendermime.getFactory('text/html')
            ? rendermime.createRenderer('text/html')
            : null
      }),
      RUN_MIME_RANK
    );
    rendermime.addFactory(
      sweepOutputFactory({
        interval: settings.refreshInterval,
        actions: {
          compareRuns: runIds =>
            void app.commands.execute(COMPARE_RUNS, { runIds }),
          stopSweep: async sweepId => {
            await api.stopSweep(sweepId);
          }
        }
      }),
      RUN_MIME_RANK
    );
    rendermime.addFactory(
      compareOutputFactory(
        runIds =>
          void app.commands.execute(CommandIDs.openTensorBoard, {
            runId: tensorBoardKey(runIds)
          })
      ),
      RUN_MIME_RANK
    );
  };
  notebooks.forEach(register);
  notebooks.widgetAdded.connect((_, panel) => register(panel));
}
