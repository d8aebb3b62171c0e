import { Dialog, showDialog } from '@jupyterlab/apputils';

import { runLabel } from '../runs';
import type { IRunSummary } from '../types';
import type { ISidebarActions } from './actions';

/** How many run names the confirmation lists before "and N more". */
const NAMED = 8;

/**
 * Ask before removing runs' directories (their logs, metrics and outputs go with them), then
 * delete them. Runs that have not finished are never offered: the server refuses them (409).
 * Resolves true when the user confirmed.
 */
export async function confirmDelete(
  runs: IRunSummary[],
  actions: ISidebarActions,
  title?: string
): Promise<boolean> {
  const finished = runs.filter(run => run.finished);
  if (!finished.length) {
    return false;
  }
  const names = finished.slice(0, NAMED).map(run => runLabel(run));
  const more = finished.length - names.length;
  const body =
    `Delete ${names.join(', ')}${more ? ` and ${more} more` : ''}? ` +
    'Their logs, metrics and outputs are removed from disk; this cannot be undone.';
  const answer = await showDialog({
    title:
      title ??
      (finished.length === 1
        ? 'Delete run?'
        : `Delete ${finished.length} runs?`),
    body,
    buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Delete' })]
  });
  if (!answer.button.accept) {
    return false;
  }
  await actions.deleteRuns(finished.map(run => run.run_id));
  return true;
}
