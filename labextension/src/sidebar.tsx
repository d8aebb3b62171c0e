import { Clipboard, Dialog, showDialog } from '@jupyterlab/apputils';
import type { Kernel } from '@jupyterlab/services';
import {
  Button,
  FormComponent,
  ReactWidget,
  SidePanel,
  UseSignal
} from '@jupyterlab/ui-components';
import type { ReadonlyJSONObject } from '@lumino/coreutils';
import type { Message } from '@lumino/messaging';
import { AccordionPanel, Widget } from '@lumino/widgets';
import { customizeValidator } from '@rjsf/validator-ajv8';
import * as React from 'react';

import { pxIcon } from './icons';
import { listNamed, NAME_PATTERN, saveNamed } from './kernelTopologies';
import {
  formatAge,
  progressFraction,
  replicaText,
  runLabel,
  stateBadge
} from './runs';
import { RunsModel } from './runsModel';
import { formUiSchema } from './topology';
import { TopologyModel } from './topologyModel';
import type { IRunSummary } from './types';

const validator = customizeValidator<ReadonlyJSONObject>();

/** What the sidebar asks of the rest of the extension (commands, the active notebook). */
export interface ISidebarActions {
  submitActive(options: {
    name: string;
    cells: 'all' | 'tagged';
  }): Promise<void>;
  activeNotebook(): string | null;
  activeKernel(): Kernel.IKernelConnection | null;
  openLogs(runId: string): void;
  openMetrics(runId: string): void;
  openTensorBoard(runId: string): void;
  stopRun(runId: string): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Text dialogs (YAML import / export)

class TextBody extends Widget implements Dialog.IBodyWidget<string> {
  constructor(value: string, readOnly: boolean, placeholder = '') {
    const area = document.createElement('textarea');
    area.className = 'jp-px-yaml';
    area.value = value;
    area.readOnly = readOnly;
    area.placeholder = placeholder;
    area.rows = 18;
    area.spellcheck = false;
    super({ node: area });
  }

  getValue(): string {
    return (this.node as HTMLTextAreaElement).value;
  }
}

// ---------------------------------------------------------------------------------------------
// Topology

function TopologyForm(props: {
  model: TopologyModel;
  actions: ISidebarActions;
}): JSX.Element {
  const { model, actions } = props;
  const [named, setNamed] = React.useState<{ [name: string]: any } | null>(
    null
  );
  const [note, setNote] = React.useState<string>('');

  const importYaml = async () => {
    const result = await showDialog({
      title: 'Import a polyaxonfile',
      body: new TextBody(
        '',
        false,
        'framework: pytorch\nenvironment:\n  replicas:\n    n_workers: 2'
      ),
      buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Import' })]
    });
    if (!result.button.accept || !result.value) {
      return;
    }
    const answer = await model.importTopology(result.value);
    if (!answer.valid) {
      await showDialog({
        title: 'The topology does not validate',
        body:
          (answer.problems ?? [])
            .map(p => `${p.path}: ${p.message}`)
            .join('\n') || answer.message,
        buttons: [Dialog.okButton()]
      });
    }
  };

  const exportYaml = async () => {
    const answer = await model.validate();
    if (!answer?.valid || !answer.yaml) {
      setNote('fix the problems first: only a valid topology is exported');
      return;
    }
    const result = await showDialog({
      title: 'Topology as a polyaxonfile',
      body: new TextBody(answer.yaml, true),
      buttons: [
        Dialog.cancelButton({ label: 'Close' }),
        Dialog.okButton({ label: 'Copy' })
      ]
    });
    if (result.button.accept) {
      Clipboard.copyToSystem(answer.yaml);
    }
  };

  const kernelOrNote = (): Kernel.IKernelConnection | null => {
    const kernel = actions.activeKernel();
    if (!kernel) {
      setNote(
        'open a notebook with a running kernel to share topologies with %%px_topology'
      );
    }
    return kernel;
  };

  const loadNamed = async () => {
    const kernel = kernelOrNote();
    if (!kernel) {
      return;
    }
    try {
      const found = await listNamed(kernel);
      setNamed(found);
      setNote(
        Object.keys(found).length
          ? ''
          : 'no named topologies in this kernel yet (%%px_topology NAME)'
      );
    } catch (error) {
      setNote(
        `the kernel could not list its topologies: ${(error as Error).message}`
      );
    }
  };

  const saveToKernel = async () => {
    const kernel = kernelOrNote();
    if (!kernel) {
      return;
    }
    const answer = await model.validate();
    if (!answer?.valid || !answer.topology) {
      setNote('fix the problems first: only a valid topology is saved');
      return;
    }
    const result = await showDialog({
      title: 'Save in the kernel as',
      body: new TextBody('', false, 'name, e.g. big'),
      buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Save' })]
    });
    const name = (result.value ?? '').trim();
    if (!result.button.accept || !name) {
      return;
    }
    if (!NAME_PATTERN.test(name)) {
      setNote(
        `topology name ${JSON.stringify(name)} is not valid: letters, digits, _ - . starting with a letter`
      );
      return;
    }
    try {
      await saveNamed(kernel, name, answer.topology);
      setNote(`saved as ${name}: %%px_distributed -t ${name} uses it`);
      await loadNamed();
    } catch (error) {
      setNote((error as Error).message);
    }
  };

  return (
    <UseSignal signal={model.changed}>
      {() => (
        <div className="jp-px-topology">
          <div className="jp-px-toolbar">
            <Button
              small
              className="jp-px-import"
              onClick={() => void importYaml()}
              title="Paste a polyaxonfile"
            >
              Import YAML
            </Button>
            <Button
              small
              className="jp-px-export"
              onClick={() => void exportYaml()}
              title="The topology as YAML"
            >
              Export YAML
            </Button>
            <Button
              small
              className="jp-px-kernel-list"
              onClick={() => void loadNamed()}
              title="Topologies named with %%px_topology NAME in the notebook's kernel"
            >
              Kernel…
            </Button>
            <Button
              small
              className="jp-px-kernel-save"
              onClick={() => void saveToKernel()}
              title="Save under a name in the notebook's kernel"
            >
              Save as…
            </Button>
          </div>
          {named && Object.keys(named).length > 0 && (
            <div className="jp-px-named">
              {Object.entries(named).map(([name, topology]) => (
                <button
                  key={name}
                  className="jp-px-link"
                  onClick={() => void model.importTopology(topology)}
                  title={`use the kernel's topology ${name}`}
                >
                  {name}
                </button>
              ))}
            </div>
          )}
          {note && <div className="jp-px-note">{note}</div>}
          {model.loadError && (
            <div className="jp-px-error">{model.loadError}</div>
          )}
          {model.schema && (
            <FormComponent
              schema={model.schema as any}
              uiSchema={formUiSchema()}
              formData={model.formData as ReadonlyJSONObject}
              extraErrors={model.errorSchema as any}
              validator={validator}
              compact={true}
              showModifiedFromDefault={false}
              liveValidate={false}
              onChange={event =>
                model.setFormData((event.formData ?? {}) as any)
              }
            />
          )}
          <TopologyVerdict model={model} />
        </div>
      )}
    </UseSignal>
  );
}

function TopologyVerdict(props: { model: TopologyModel }): JSX.Element | null {
  const validation = props.model.validation;
  if (!validation) {
    return null;
  }
  if (validation.valid) {
    const headline = (validation.summary ?? '').split('\n')[0];
    return <div className="jp-px-verdict jp-px-valid">✓ {headline}</div>;
  }
  const problems = validation.problems ?? [];
  return (
    <div className="jp-px-verdict jp-px-invalid">
      {problems.length
        ? `${problems.length} problem${problems.length === 1 ? '' : 's'}: ` +
          problems
            .map(p => (p.path ? `${p.path}: ${p.message}` : p.message))
            .join('; ')
        : validation.message}
    </div>
  );
}

// ---------------------------------------------------------------------------------------------
// Submit

function SubmitForm(props: {
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
              className="jp-px-submit-button"
              disabled={busy || !notebook || !model.valid}
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

// ---------------------------------------------------------------------------------------------
// Runs

function RunRow(props: {
  run: IRunSummary;
  progress: number | null;
  actions: ISidebarActions;
}): JSX.Element {
  const { run, progress, actions } = props;
  const badge = stateBadge(run.state);
  const stop = async () => {
    const answer = await showDialog({
      title: 'Stop run?',
      body: `Stop ${runLabel(run)} (${run.run_id})? Every replica is stopped.`,
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Stop' })]
    });
    if (answer.button.accept) {
      await actions.stopRun(run.run_id);
    }
  };
  return (
    <li className="jp-px-run" data-run-id={run.run_id} data-state={run.state}>
      <div className="jp-px-run-head">
        <span className="jp-px-run-name" title={run.run_id}>
          {runLabel(run)}
        </span>
        <span className={badge.className}>{badge.label}</span>
      </div>
      <div className="jp-px-run-meta">
        <span className="jp-px-replicas">{replicaText(run)}</span>
        <span
          className="jp-px-age"
          title={new Date(run.created_at * 1000).toLocaleString()}
        >
          {formatAge(run.created_at)}
        </span>
        {run.submitted_from && (
          <span className="jp-px-from">{run.submitted_from}</span>
        )}
      </div>
      {progress !== null && (
        <div
          className="jp-px-progress"
          title={`${Math.round(progress * 100)}%`}
        >
          <div style={{ width: `${progress * 100}%` }} />
        </div>
      )}
      {run.message && run.state !== 'Succeeded' && (
        <div className="jp-px-run-message">{run.message}</div>
      )}
      <div className="jp-px-run-actions">
        <button
          className="jp-px-link jp-px-action-logs"
          onClick={() => actions.openLogs(run.run_id)}
        >
          Logs
        </button>
        <button
          className="jp-px-link jp-px-action-metrics"
          onClick={() => actions.openMetrics(run.run_id)}
        >
          Metrics
        </button>
        <button
          className="jp-px-link jp-px-action-tensorboard"
          onClick={() => actions.openTensorBoard(run.run_id)}
        >
          TensorBoard
        </button>
        {!run.finished && (
          <button
            className="jp-px-link jp-px-action-stop"
            onClick={() => void stop()}
          >
            Stop
          </button>
        )}
        <button
          className="jp-px-link jp-px-action-copy"
          onClick={() => Clipboard.copyToSystem(run.run_id)}
          title="Copy the run id"
        >
          Copy id
        </button>
      </div>
    </li>
  );
}

function RunsList(props: {
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

// ---------------------------------------------------------------------------------------------
// The panel

/** The left-sidebar panel: Topology, Submit, Runs sections. */
export class PxSidebar extends SidePanel {
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

    const form = ReactWidget.create(
      <TopologyForm model={topology} actions={actions} />
    );
    form.title.label = 'Topology';
    form.addClass('jp-px-section-topology');
    const submit = ReactWidget.create(
      <SubmitForm model={topology} actions={actions} />
    );
    submit.title.label = 'Submit';
    submit.addClass('jp-px-section-submit');
    const list = ReactWidget.create(
      <RunsList model={runs} actions={actions} />
    );
    list.title.label = 'Runs';
    list.addClass('jp-px-section-runs');
    this.addWidget(form);
    this.addWidget(submit);
    this.addWidget(list);
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    // The form needs the room; Submit is a few lines.
    (this.content as AccordionPanel).setRelativeSizes([5, 2, 4]);
  }
}
