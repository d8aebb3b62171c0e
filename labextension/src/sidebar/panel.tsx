import { ReactWidget, UseSignal } from '@jupyterlab/ui-components';
import { PanelLayout, Widget } from '@lumino/widgets';
import * as React from 'react';

import { notebookRunName } from '../commands/submit';
import { pxIcon } from '../icons';
import type { RunsModel } from '../runsModel';
import type { TopologyModel } from '../topologyModel';
import type { ISidebarActions } from './actions';
import { enterInFields } from './formKeys';
import { RunsList } from './runsList';
import { SubmitOutcome } from './submitForm';
import { SubmitState } from './submitState';
import { RunButton, TopologyForm } from './topologyForm';
import { TopologyVerdict } from './topologyVerdict';

/**
 * What runs and the Run button, together and always in view: the notebook, which cells, the
 * run's name (the notebook's, unless given), Run distributed and its outcome; the topology in
 * one line under it (its headline and whether it is valid) that opens the form.
 */
export function RunBar(props: {
  model: TopologyModel;
  submit: SubmitState;
  actions: ISidebarActions;
  formOpen: boolean;
  onForm: (open: boolean) => void;
}): JSX.Element {
  const { model, submit, actions, formOpen, onForm } = props;
  return (
    <UseSignal signal={model.changed}>
      {() => (
        <UseSignal signal={submit.changed}>
          {() => {
            const notebook = actions.activeNotebook();
            const validation = model.validation;
            const headline = validation?.valid
              ? (validation.summary ?? '').split('\n')[0]
              : validation
                ? `${(validation.problems ?? []).length || 'has'} problem${(validation.problems ?? []).length === 1 ? '' : 's'}`
                : 'checking…';
            return (
              <div className="jp-px-run-bar jp-px-section-submit">
                <div className="jp-px-run-what">
                  <span className="jp-px-run-what-label">Run</span>
                  <code
                    className="jp-px-notebook"
                    title={notebook ?? 'no notebook open'}
                  >
                    {notebook ? notebook.split('/').pop() : 'no notebook open'}
                  </code>
                  <select
                    className="jp-mod-styled jp-px-cells"
                    aria-label="Which cells"
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
                </div>
                <div className="jp-px-run-go">
                  <input
                    className="jp-mod-styled jp-px-run-name-input"
                    aria-label="Run name"
                    value={submit.name}
                    title={
                      submit.name ||
                      (notebook
                        ? `the run's name (default: ${notebookRunName(notebook)})`
                        : "the run's name")
                    }
                    placeholder={
                      notebook
                        ? `name: ${notebookRunName(notebook)}`
                        : 'run name'
                    }
                    onChange={event =>
                      submit.update({ name: event.target.value })
                    }
                    onKeyDown={event =>
                      enterInFields(event, () => {
                        if (notebook !== null) {
                          void submit.run(); // the server checks the topology first
                        }
                      })
                    }
                  />
                  <RunButton model={model} actions={actions} submit={submit} />
                </div>
                <SubmitOutcome submit={submit} />
                <button
                  className={`jp-px-topology-summary${validation && !validation.valid ? ' jp-mod-invalid' : ''}`}
                  aria-expanded={formOpen}
                  title={
                    formOpen ? 'Hide the topology form' : 'Edit the topology'
                  }
                  onClick={() => onForm(!formOpen)}
                >
                  <span className="jp-px-topology-caret">
                    {formOpen ? '▾' : '▸'}
                  </span>
                  <span className="jp-px-topology-word">Topology</span>
                  <span
                    className={`jp-px-topology-headline ${validation?.valid ? 'jp-px-valid' : validation ? 'jp-px-invalid' : ''}`}
                  >
                    {validation?.valid ? '✓ ' : validation ? '✕ ' : ''}
                    {headline}
                  </span>
                </button>
              </div>
            );
          }}
        </UseSignal>
      )}
    </UseSignal>
  );
}

/** The sidebar's content: the run bar, the topology form when open, the runs list below. */
function SidebarBody(props: {
  topology: TopologyModel;
  runs: RunsModel;
  actions: ISidebarActions;
  submit: SubmitState;
}): JSX.Element {
  const { topology, runs, actions, submit } = props;
  const [formOpen, setFormOpen] = React.useState(false);
  return (
    <div className="jp-px-sidebar-body">
      <RunBar
        model={topology}
        submit={submit}
        actions={actions}
        formOpen={formOpen}
        onForm={setFormOpen}
      />
      {formOpen && (
        // The verdict sits above the form's scrolling section, drawn whole: a long problem
        // list was clipped inside that nested scroll.
        <div className="jp-px-section-verdict">
          <UseSignal signal={topology.changed}>
            {() => <TopologyVerdict model={topology} />}
          </UseSignal>
        </div>
      )}
      {formOpen && (
        <div className="jp-px-section-topology">
          <TopologyForm
            model={topology}
            actions={actions}
            submit={submit}
            verdict={false}
          />
        </div>
      )}
      <div className="jp-px-section-runs">
        <div className="jp-px-section-title">Runs</div>
        <RunsList model={runs} actions={actions} />
      </div>
    </div>
  );
}

/**
 * The left-sidebar panel, laid out around the user's path: what will run and the Run button at
 * the top, always visible; the topology in one line that opens its form; the runs list taking
 * the remaining height, one scroll container with a sticky selection bar (as JupyterLab's
 * running-sessions and extension manager panes).
 */
export class PxSidebar extends Widget {
  constructor(
    topology: TopologyModel,
    runs: RunsModel,
    actions: ISidebarActions
  ) {
    super();
    this.id = 'jupyter-px-sidebar';
    this.addClass('jp-px-sidebar');
    this.title.icon = pxIcon;
    this.title.caption = 'Distributed runs';
    const submit = new SubmitState(actions);
    const layout = (this.layout = new PanelLayout());
    const body = ReactWidget.create(
      <SidebarBody
        topology={topology}
        runs={runs}
        actions={actions}
        submit={submit}
      />
    );
    body.addClass('jp-px-sidebar-content');
    layout.addWidget(body);
  }
}
