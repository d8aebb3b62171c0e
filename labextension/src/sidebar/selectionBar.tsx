import * as React from 'react';

import type { IRunSummary } from '../types';
import type { ISidebarActions } from './actions';
import { confirmDelete } from './housekeeping';

/**
 * What can be done with the runs checked in the list: one TensorBoard for all of them, the
 * comparison view (when one is installed), delete (the finished ones), or clear the selection.
 */
export function SelectionBar(props: {
  selected: IRunSummary[];
  actions: ISidebarActions;
  clear: () => void;
}): JSX.Element | null {
  const { selected, actions, clear } = props;
  if (!selected.length) {
    return null;
  }
  const ids = selected.map(run => run.run_id);
  const finished = selected.filter(run => run.finished);
  const compare = actions.compareRuns;
  return (
    <div className="jp-px-selection" role="toolbar" aria-label="Selected runs">
      <span className="jp-px-selection-count">{selected.length} selected</span>
      <button
        className="jp-px-link jp-px-selection-tensorboard"
        title="One TensorBoard showing every selected run"
        onClick={() => actions.openTensorBoard(ids[0], ids.slice(1))}
      >
        TensorBoard
      </button>
      {compare && (
        <button
          className="jp-px-link jp-px-selection-compare"
          disabled={selected.length < 2}
          title={
            selected.length < 2
              ? 'Select two runs or more to compare them'
              : 'Compare the selected runs'
          }
          onClick={() => compare(ids)}
        >
          Compare
        </button>
      )}
      {finished.length > 0 && (
        <button
          className="jp-px-link jp-px-selection-delete jp-px-danger"
          title={
            finished.length < selected.length
              ? 'Delete the finished ones (a run still going is stopped first)'
              : 'Delete the selected runs'
          }
          onClick={() =>
            void confirmDelete(finished, actions).then(done => done && clear())
          }
        >
          Delete
          {finished.length < selected.length
            ? ` the ${finished.length} finished`
            : ''}
          …
        </button>
      )}
      <button
        className="jp-px-link jp-px-selection-clear"
        title="Clear the selection"
        onClick={clear}
      >
        ✕
      </button>
    </div>
  );
}
