import { Clipboard, Dialog, showDialog } from '@jupyterlab/apputils';
import type { Kernel } from '@jupyterlab/services';
import { Button, FormComponent, UseSignal } from '@jupyterlab/ui-components';
import type { ReadonlyJSONObject } from '@lumino/coreutils';
import { customizeValidator } from '@rjsf/validator-ajv8';
import * as React from 'react';

import { listNamed, NAME_PATTERN, saveNamed } from '../kernelTopologies';
import { formUiSchema } from '../topology';
import type { TopologyModel } from '../topologyModel';
import type { ISidebarActions } from './actions';
import { ignoreEnterInFields } from './formKeys';
import { importYaml } from './importYaml';
import { TextBody } from './textBody';
import { TopologyVerdict } from './topologyVerdict';

const validator = customizeValidator<ReadonlyJSONObject>();

/**
 * The Topology section: the form generated from the server's schema, YAML import and export, and
 * the topologies named in the active notebook's kernel (`%%px_topology NAME`).
 */
export function TopologyForm(props: {
  model: TopologyModel;
  actions: ISidebarActions;
}): JSX.Element {
  const { model, actions } = props;
  const [named, setNamed] = React.useState<{ [name: string]: any } | null>(
    null
  );
  const [note, setNote] = React.useState<string>('');

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
        <div className="jp-px-topology" onKeyDownCapture={ignoreEnterInFields}>
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
          {note && <div className="jp-px-note">{note}</div>}
          {model.loadError && (
            <div className="jp-px-error">{model.loadError}</div>
          )}
          {model.loadedFrom && (
            <div className="jp-px-loaded-from" title={model.loadedFrom}>
              Topology {model.loadedFrom}
            </div>
          )}
          {model.schema && (
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
                schema={model.schema as any}
                uiSchema={formUiSchema()}
                formData={model.formData as ReadonlyJSONObject}
                extraErrors={model.errorSchema as any}
                validator={validator}
                compact={true}
                showModifiedFromDefault={false}
                showErrorList={false}
                liveValidate={false}
                onChange={event =>
                  model.setFormData((event.formData ?? {}) as any)
                }
              />
            </div>
          )}
          <TopologyVerdict model={model} />
        </div>
      )}
    </UseSignal>
  );
}
