import { Clipboard, Dialog, showDialog } from '@jupyterlab/apputils';
import type { Kernel } from '@jupyterlab/services';
import { Button, FormComponent, UseSignal } from '@jupyterlab/ui-components';
import type { ReadonlyJSONObject } from '@lumino/coreutils';
import { customizeValidator } from '@rjsf/validator-ajv8';
import * as React from 'react';

import { listNamed, NAME_PATTERN, saveNamed } from '../kernelTopologies';
import { advancedSchema, seedNewOverrides, setIn } from '../roles';
import { formUiSchema } from '../topology';
import type { TopologyModel } from '../topologyModel';
import type { ISidebarActions } from './actions';
import { enterInFields } from './formKeys';
import { importYaml } from './importYaml';
import { KeyValues } from './keyValues';
import type { SubmitState } from './submitState';
import { TextBody } from './textBody';
import { TopologyCard } from './topologyCard';
import { TopologyVerdict } from './topologyVerdict';

const validator = customizeValidator<ReadonlyJSONObject>();

/** Run distributed: the accent button when it can run, JupyterLab's disabled look otherwise. */
export function RunButton(props: {
  model: TopologyModel;
  actions: ISidebarActions;
  submit: SubmitState;
}): JSX.Element {
  const { model, actions, submit } = props;
  const notebook = actions.activeNotebook();
  const canRun = !submit.busy && notebook !== null && model.valid;
  return (
    <Button
      className={
        'jp-mod-styled jp-px-submit-button' + (canRun ? ' jp-mod-accept' : '')
      }
      disabled={!canRun}
      onClick={() => void submit.run()}
      title={
        notebook === null
          ? 'Open a notebook to run it'
          : model.valid
            ? `Run ${notebook} as a distributed job`
            : 'The topology has problems'
      }
    >
      {submit.busy ? 'Starting…' : 'Run distributed'}
    </Button>
  );
}

/**
 * Enter in a field of the topology form runs, as Enter submits a form, but only a valid one with
 * a notebook to run: the verdict is on the value just typed (a pending check is done first), and
 * an invalid form stays as it is with its problems beside the fields.
 */
export async function runIfValid(
  model: TopologyModel,
  actions: ISidebarActions,
  submit: SubmitState
): Promise<void> {
  if (submit.busy || actions.activeNotebook() === null) {
    return;
  }
  const verdict = await model.verdict();
  if (verdict?.valid) {
    await submit.run();
  }
}

/**
 * The Topology form (the sidebar opens it from its one-line summary): a short card (replica
 * counts, a requests/limits grid) and the verdict, then the rest of the form generated from the server's schema in a
 * collapsible section, YAML import and export, and the topologies named in the active
 * notebook's kernel (`%%px_topology NAME`).
 */
export function TopologyForm(props: {
  model: TopologyModel;
  actions: ISidebarActions;
  /** The run bar's state (the run's name and cells): Enter in a field of a valid form runs. */
  submit?: SubmitState;
  /** Draw the verdict inside the form (false: the sidebar draws it above the form's scroll). */
  verdict?: boolean;
}): JSX.Element {
  const { model, actions, submit, verdict = true } = props;
  const [named, setNamed] = React.useState<{ [name: string]: any } | null>(
    null
  );
  // A note is about the notebook it was said for: another notebook active does not show it.
  const [said, setSaid] = React.useState<{
    text: string;
    notebook: string | null;
  }>({ text: '', notebook: null });
  const setNote = (text: string) => setSaid({ text, notebook: model.notebook });

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
        <div
          className="jp-px-topology"
          onKeyDownCapture={event =>
            enterInFields(
              event,
              submit && (() => void runIfValid(model, actions, submit))
            )
          }
        >
          {model.loadedFrom && (
            <div className="jp-px-loaded-from" title={model.loadedFrom}>
              {model.loadedFrom.charAt(0).toUpperCase() +
                model.loadedFrom.slice(1)}
            </div>
          )}
          {model.schema && <TopologyCard model={model} />}
          {verdict && <TopologyVerdict model={model} />}
          <div className="jp-px-toolbar">
            <Button
              small
              className="jp-px-import"
              onClick={() => void importYaml(model)}
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
          {said.text && said.notebook === model.notebook && (
            <div className="jp-px-note">{said.text}</div>
          )}
          {model.loadError && (
            <div className="jp-px-error">{model.loadError}</div>
          )}
          {model.schema && (
            <details className="jp-px-env-settings">
              <summary>Environment variables, node selectors</summary>
              <KeyValues
                id="px_env"
                label="Environment variables (every replica)"
                placeholder="NCCL_DEBUG=INFO"
                value={model.formData.environment?.env}
                onChange={pairs => {
                  model.markEdited();
                  model.setFormData(
                    setIn(model.formData, ['environment', 'env'], pairs)
                  );
                }}
              />
              <KeyValues
                id="px_node_selector"
                label="Node selector (Kubernetes)"
                placeholder="cloud.google.com/gke-accelerator=nvidia-l4"
                value={model.formData.environment?.node_selector}
                onChange={pairs => {
                  model.markEdited();
                  model.setFormData(
                    setIn(
                      model.formData,
                      ['environment', 'node_selector'],
                      pairs
                    )
                  );
                }}
              />
            </details>
          )}
          {model.schema && (
            <details
              className="jp-px-more-settings"
              open={model.advancedOpen}
              onToggle={event =>
                model.setAdvancedOpen(
                  (event.currentTarget as HTMLDetailsElement).open
                )
              }
            >
              <summary>Overrides, images, processes</summary>
              <div
                className="jp-px-form"
                onChangeCapture={() => model.markEdited()}
                onClickCapture={event => {
                  if ((event.target as HTMLElement).closest('button')) {
                    model.markEdited();
                  }
                }}
              >
                <FormComponent
                  schema={advancedSchema(model.schema, model.formData) as any}
                  uiSchema={formUiSchema()}
                  formData={model.formData as ReadonlyJSONObject}
                  extraErrors={model.errorSchema as any}
                  validator={validator}
                  compact={true}
                  showModifiedFromDefault={false}
                  showErrorList={false}
                  liveValidate={false}
                  onChange={event =>
                    model.setFormData(
                      seedNewOverrides(
                        model.formData,
                        (event.formData ?? {}) as any
                      )
                    )
                  }
                />
              </div>
            </details>
          )}
        </div>
      )}
    </UseSignal>
  );
}
