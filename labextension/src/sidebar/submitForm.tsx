import { UseSignal } from '@jupyterlab/ui-components';
import * as React from 'react';

import type { TopologyModel } from '../topologyModel';
import type { ISidebarActions } from './actions';
import { enterInFields } from './formKeys';
import type { SubmitState } from './submitState';

/**
 * The Submit section: the active notebook, the run's name and which cells; the Run button is on
 * the topology card above (with the verdict it depends on), and reads these. Enter in the name
 * runs too.
 */
export function SubmitForm(props: {
  submit: SubmitState;
  /** Changes when the active notebook does (the form follows it): the notebook line too. */
  model: TopologyModel;
  actions: ISidebarActions;
}): JSX.Element {
  const { submit, model, actions } = props;
  return (
    <UseSignal signal={model.changed}>
      {() => (
        <UseSignal signal={submit.changed}>
          {() => {
            const notebook = actions.activeNotebook();
            return (
              <div className="jp-px-submit">
                <div className="jp-px-field">
                  <span>Notebook</span>
                  <code className="jp-px-notebook" title={notebook ?? ''}>
                    {notebook ?? 'open a notebook'}
                  </code>
                </div>
                <label className="jp-px-field">
                  <span>Run name</span>
                  <input
                    className="jp-mod-styled jp-px-run-name-input"
                    value={submit.name}
                    placeholder="optional"
                    onChange={event =>
                      submit.update({ name: event.target.value })
                    }
                    onKeyDown={event =>
                      enterInFields(event, () => {
                        if (notebook !== null) {
                          void submit.run(); // the topology is validated first
                        }
                      })
                    }
                  />
                </label>
                <label className="jp-px-field">
                  <span>Cells</span>
                  <select
                    className="jp-mod-styled jp-px-cells"
                    value={submit.cells}
                    onChange={event =>
                      submit.update({
                        cells: event.target.value as 'all' | 'tagged'
                      })
                    }
                  >
                    <option value="all">all code cells</option>
                    <option value="tagged">cells tagged px</option>
                  </select>
                </label>
              </div>
            );
          }}
        </UseSignal>
      )}
    </UseSignal>
  );
}

/** The outcome of the last Run, under the button. */
export function SubmitOutcome(props: { submit: SubmitState }): JSX.Element {
  const { submit } = props;
  return (
    <UseSignal signal={submit.changed}>
      {() => (
        <>
          {submit.error && (
            <pre className="jp-px-error jp-px-submit-error">{submit.error}</pre>
          )}
          {submit.done && <div className="jp-px-note">{submit.done}</div>}
        </>
      )}
    </UseSignal>
  );
}
