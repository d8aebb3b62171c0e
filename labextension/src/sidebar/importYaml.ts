import { Dialog, showDialog } from '@jupyterlab/apputils';

import { problemLines } from '../problemText';
import type { TopologyModel } from '../topologyModel';
import { TextBody } from './textBody';

const EXAMPLE =
  'framework: pytorch\nenvironment:\n  replicas:\n    n_workers: 2';

/**
 * Import YAML: paste a polyaxonfile; when it does not validate, the same dialog comes back with
 * the problems above the pasted text, so it can be fixed rather than pasted again. Resolves
 * true when a topology was imported, false when the user cancelled.
 */
export async function importYaml(model: TopologyModel): Promise<boolean> {
  let text = '';
  let problems: string[] = [];
  for (;;) {
    const result = await showDialog({
      title: problems.length
        ? 'The topology does not validate'
        : 'Import a polyaxonfile',
      body: new TextBody(text, false, EXAMPLE, problems),
      buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Import' })]
    });
    if (!result.button.accept || !result.value?.trim()) {
      return false;
    }
    text = result.value;
    const answer = await model.importTopology(text);
    if (answer.valid) {
      return true;
    }
    problems = problemLines(answer.problems ?? []);
    if (!problems.length) {
      problems = [
        answer.message ?? answer.error ?? 'the topology is not valid'
      ];
    }
  }
}
