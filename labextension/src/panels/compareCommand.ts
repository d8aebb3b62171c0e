import type { ILayoutRestorer, JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';

import { pxIcon } from '../icons';
import { CommandIDs } from '../commands/ids';
import { CompareView } from './compareView';
import { tensorBoardKey } from './tensorBoardView';

/**
 * Opens the comparison of runs: `execute(COMPARE_RUNS, { runIds: [...] })`; `points` (optional)
 * bounds each curve (default `COMPARE_POINTS`).
 */
export const COMPARE_RUNS = 'jupyter-px:compare-runs';

/** The main-area panel of one comparison; restored with the layout by its runs. */
export class ComparePanel extends MainAreaWidget<CompareView> {
  constructor(
    readonly runIds: string[],
    points?: number,
    openTensorBoard: ((runIds: string[]) => void) | null = null
  ) {
    super({
      content: new CompareView(runIds, points, {}, openTensorBoard)
    });
    this.id = `jupyter-px-compare-${hash(runIds.join(' '))}`;
    this.title.label =
      runIds.length <= 3
        ? `Compare: ${runIds.join(', ')}`
        : `Compare: ${runIds.length} runs`;
    this.title.caption = runIds.join('\n');
    this.title.icon = pxIcon;
    this.title.closable = true;
    this.addClass('jp-px-panel-compare');
  }
}

/**
 * The command `jupyter-px:compare-runs` `{runIds: string[]}` (the runs list's multi-select calls
 * it): one panel per set of runs, brought forward when it is open already.
 */
export function addCompareCommand(
  app: JupyterFrontEnd,
  restorer: ILayoutRestorer | null
): void {
  const tracker = new WidgetTracker<ComparePanel>({
    namespace: 'jupyter-px-compare'
  });
  app.commands.addCommand(COMPARE_RUNS, {
    label: 'Compare distributed runs',
    caption:
      'Overlay the runs’ metric curves and tabulate their final and best values',
    execute: args => {
      const runIds = Array.isArray(args.runIds)
        ? (args.runIds as unknown[]).map(String).filter(Boolean)
        : [];
      if (runIds.length === 0) {
        throw new Error(`${COMPARE_RUNS}: runIds must name at least one run`);
      }
      const points =
        typeof args.points === 'number' ? (args.points as number) : undefined;
      const key = runIds.join(' ');
      const existing = tracker.find(panel => panel.runIds.join(' ') === key);
      if (existing && points === undefined) {
        app.shell.activateById(existing.id);
        return existing;
      }
      existing?.dispose();
      const panel = new ComparePanel(
        runIds,
        points,
        ids =>
          void app.commands.execute(CommandIDs.openTensorBoard, {
            runId: tensorBoardKey(ids)
          })
      );
      void tracker.add(panel);
      app.shell.add(panel, 'main');
      app.shell.activateById(panel.id);
      return panel;
    }
  });
  if (restorer) {
    void restorer.restore(tracker, {
      command: COMPARE_RUNS,
      args: panel => ({ runIds: panel.runIds }),
      name: panel => panel.runIds.join(' ')
    });
  }
}

/** A short stable id for a set of runs (DOM ids must stay short with 200 runs). */
function hash(text: string): string {
  let h = 5381;
  for (let i = 0; i < text.length; i++) {
    h = ((h * 33) ^ text.charCodeAt(i)) >>> 0;
  }
  return h.toString(36);
}
