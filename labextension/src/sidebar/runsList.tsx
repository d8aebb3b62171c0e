import { UseSignal } from '@jupyterlab/ui-components';
import * as React from 'react';

import { progressFraction } from '../runs';
import type { RunsModel } from '../runsModel';
import type { ISidebarActions } from './actions';
import { RunRow } from './runRow';

/** The Runs section: the runs model's page of runs, newest first, and Show more. */
export function RunsList(props: {
  model: RunsModel;
  actions: ISidebarActions;
}): JSX.Element {
  const { model, actions } = props;
  return (
    <UseSignal signal={model.changed}>
      {() => (
        <div className="jp-px-runs">
          {model.error && (
            <div className="jp-px-error">runs: {model.error} (retrying)</div>
          )}
          {model.runs.length === 0 && !model.error && (
            <div className="jp-px-note">
              No runs yet: submit a notebook, or run %%px_distributed.
            </div>
          )}
          <ul className="jp-px-run-list">
            {model.runs.map(run => (
              <RunRow
                key={run.run_id}
                run={run}
                progress={progressFraction(model.progress[run.run_id])}
                actions={actions}
              />
            ))}
          </ul>
          {model.total > model.runs.length && (
            <button
              className="jp-px-link jp-px-more"
              onClick={() => void model.showMore()}
            >
              Show more ({model.runs.length} of {model.total})
            </button>
          )}
        </div>
      )}
    </UseSignal>
  );
}
