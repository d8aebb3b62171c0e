import { Button, UseSignal } from '@jupyterlab/ui-components';
import * as React from 'react';

import type { TopologyModel } from '../topologyModel';
import type { ISidebarActions } from './actions';

/** The Submit section: the active notebook, a run name, which cells, and Run distributed. */
export function SubmitForm(props: {
  model: TopologyModel;
  actions: ISidebarActions;
}): JSX.Element {
  const { model, actions } = props;
  const [name, setName] = React.useState('');
  const [cells, setCells] = React.useState<'all' | 'tagged'>('all');
  const [busy, setBusy] = React.useState(false);
  const [error, setError] = React.useState<string | null>(null);
  const [done, setDone] = React.useState<string | null>(null);

  const submit = async () => {
    setBusy(true);
    setError(null);
    setDone(null);
    try {
      await actions.submitActive({ name, cells });
      setName(''); // the next run gets a name of its own (or the default)
      setDone('submitted: see Runs below');
    } catch (error) {
      setError((error as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <UseSignal signal={model.changed}>
      {() => {
        const notebook = actions.activeNotebook();
        // The accent button when it can run; JupyterLab's disabled look only when it cannot.
        const canRun = !busy && notebook !== null && model.valid;
        return (
          <div className="jp-px-submit">
            <div className="jp-px-field">
              <span>Notebook</span>
              <code className="jp-px-notebook">
                {notebook ?? 'open a notebook'}
              </code>
            </div>
            <label className="jp-px-field">
              <span>Run name</span>
              <input
                className="jp-mod-styled jp-px-run-name-input"
                value={name}
                placeholder="optional"
                onChange={event => setName(event.target.value)}
              />
            </label>
            <label className="jp-px-field">
              <span>Cells</span>
              <select
                className="jp-mod-styled jp-px-cells"
                value={cells}
                onChange={event =>
                  setCells(event.target.value as 'all' | 'tagged')
                }
              >
                <option value="all">all code cells</option>
                <option value="tagged">cells tagged px</option>
              </select>
            </label>
            <Button
              className={
                'jp-mod-styled jp-px-submit-button' +
                (canRun ? ' jp-mod-accept' : '')
              }
              disabled={!canRun}
              onClick={() => void submit()}
              title={
                model.valid
                  ? 'Run the notebook as a distributed job'
                  : 'The topology has problems'
              }
            >
              {busy ? 'Starting…' : 'Run distributed'}
            </Button>
            {error && (
              <pre className="jp-px-error jp-px-submit-error">{error}</pre>
            )}
            {done && <div className="jp-px-note">{done}</div>}
          </div>
        );
      }}
    </UseSignal>
  );
}
