import { Dialog, showDialog } from '@jupyterlab/apputils';

import { runLabel } from '../runs';
import type { RunsModel } from '../runsModel';
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

/**
 * Clear finished: every finished run in the store, also those beyond the page the list shows,
 * after the confirmation (which counts them all). A store that cannot be read says so.
 */
export async function clearFinished(
  model: RunsModel,
  actions: ISidebarActions
): Promise<boolean> {
  let finished: IRunSummary[];
  try {
    finished = await model.allFinished();
  } catch (error) {
    await showDialog({
      title: 'The runs could not be read',
      body: (error as Error).message,
      buttons: [Dialog.okButton()]
    });
    return false;
  }
  if (!finished.length) {
    await showDialog({
      title: 'No finished runs',
      body: 'Every run in the store is still running or pending.',
      buttons: [Dialog.okButton()]
    });
    return false;
  }
  return confirmDelete(
    finished,
    actions,
    `Clear ${finished.length} finished run${finished.length === 1 ? '' : 's'}?`
  );
}
