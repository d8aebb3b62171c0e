import * as React from 'react';

import {
  frameworkRoles,
  getIn,
  RESOURCE_KINDS,
  ROLE_RESOURCES,
  setIn,
  withFramework
} from '../roles';
import type { TopologyModel } from '../topologyModel';

type JSONObject = { [key: string]: any };

const REPLICAS = ['environment', 'replicas'];

/** The problems the server reported at `path` (the model's error schema), joined. */
function errorsAt(errors: JSONObject, path: string[]): string {
  const node = getIn(errors, path);
  return (node?.__errors ?? []).join('; ');
}

/** The counts the card draws for a framework, in its order (the master is a checkbox). */
function countKeys(data: JSONObject): string[] {
  const roles = frameworkRoles(data);
  return [
    'n_workers',
    ...(roles.ps ? ['n_ps'] : []),
    ...(roles.evaluator ? ['n_evaluators'] : [])
  ];
}

/** Every path of a role's requests/limits grid a problem can sit at. */
function resourcePaths(role: string): string[][] {
  const base = ROLE_RESOURCES[role];
  return [
    base,
    ...RESOURCE_KINDS.flatMap(({ kind }) => [
      [...base, kind],
      [...base, kind, 'requests'],
      [...base, kind, 'limits']
    ])
  ];
}

/**
 * The error-schema paths whose problems the card prints beside its fields (the framework, the
 * replica counts, every role's resources): the verdict leaves these out, so a problem is said
 * once, where it is.
 */
export function cardErrorPaths(data: JSONObject): string[][] {
  return [
    ['framework'],
    ...['n_masters', ...countKeys(data)].map(key => [...REPLICAS, key]),
    ...frameworkRoles(data).resources.flatMap(({ role }) => resourcePaths(role))
  ];
}

/** A role's resource problems, joined (the grid shows one role; the others are named). */
function resourceErrors(errors: JSONObject, role: string): string {
  return resourcePaths(role)
    .map(path => errorsAt(errors, path))
    .filter(Boolean)
    .join('; ');
}

/** A field's problems under it, with the id the form's fields use (`<id>__error`). */
function FieldError(props: { id: string; text: string }): JSX.Element | null {
  return props.text ? (
    <div id={`${props.id}__error`} className="jp-px-field-error">
      {props.text}
    </div>
  ) : null;
}

/**
 * The topology card pinned at the top of the Topology section: framework and backend, the
 * replica counts (parameter servers and evaluators only where the framework has them; the
 * master named as the job calls it, `chief` for TensorFlow), and one requests/limits grid per
 * role, like the notebook's widget form. Everything else is in the collapsible sections below.
 */
export function TopologyCard(props: { model: TopologyModel }): JSX.Element {
  const { model } = props;
  const data = model.formData;
  const errors = model.errorSchema ?? {};
  const roles = frameworkRoles(data);
  const [role, setRole] = React.useState('master');
  const shownRole = roles.resources.some(r => r.role === role)
    ? role
    : 'master';
  const change = (path: string[], value: unknown) => {
    model.markEdited();
    model.setFormData(setIn(data, path, value));
  };
  const number = (text: string): number | string =>
    text.trim() === '' || isNaN(Number(text)) ? text : Number(text);
  const enumOf = (name: string): string[] => {
    const node = model.schema?.properties?.[name];
    return node?.enum ?? [];
  };
  const counts: { key: string; label: string; title: string }[] = [
    {
      key: 'n_workers',
      label: 'Workers',
      title: 'How many workers (0 or more)'
    },
    ...(roles.ps
      ? [
          {
            key: 'n_ps',
            label: 'Parameter servers',
            title: 'How many parameter servers'
          }
        ]
      : []),
    ...(roles.evaluator
      ? [
          {
            key: 'n_evaluators',
            label: 'Evaluators',
            title: 'How many evaluators (TensorFlow)'
          }
        ]
      : [])
  ];
  const resourcePath = ROLE_RESOURCES[shownRole];
  return (
    <div className="jp-px-card">
      <div className="jp-px-card-row">
        <label className="jp-px-card-field">
          <span>Framework</span>
          <select
            id="root_framework"
            className="jp-mod-styled"
            value={data.framework ?? ''}
            onChange={event => {
              model.markEdited();
              model.setFormData(withFramework(data, event.target.value));
            }}
          >
            {!data.framework && <option value="">(none)</option>}
            {enumOf('framework').map(name => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label className="jp-px-card-field">
          <span>Backend</span>
          <select
            id="root_backend"
            className="jp-mod-styled"
            value={data.backend ?? 'local'}
            onChange={event => change(['backend'], event.target.value)}
          >
            {enumOf('backend').map(name => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
      </div>
      <FieldError id="root_framework" text={errorsAt(errors, ['framework'])} />
      <div className="jp-px-card-row">
        <label
          className="jp-px-card-field jp-px-card-master"
          title={roles.masterTitle}
        >
          <span>{roles.master}</span>
          <input
            id="root_environment_replicas_n_masters"
            type="checkbox"
            checked={(getIn(data, [...REPLICAS, 'n_masters']) ?? 1) !== 0}
            onChange={event =>
              change([...REPLICAS, 'n_masters'], event.target.checked ? 1 : 0)
            }
          />
        </label>
        {counts.map(count => (
          <label
            key={count.key}
            className="jp-px-card-field"
            title={count.title}
          >
            <span>{count.label}</span>
            <input
              id={`root_environment_replicas_${count.key}`}
              // text, not number: a number field empties itself on "abc" (read as 0 workers and
              // a green check); the text stays as typed and the server says what is wrong
              className={
                'jp-mod-styled' +
                (errorsAt(errors, [...REPLICAS, count.key])
                  ? ' jp-px-invalid'
                  : '')
              }
              type="text"
              inputMode="numeric"
              aria-invalid={!!errorsAt(errors, [...REPLICAS, count.key])}
              value={getIn(data, [...REPLICAS, count.key]) ?? ''}
              onChange={event =>
                change([...REPLICAS, count.key], number(event.target.value))
              }
            />
          </label>
        ))}
      </div>
      {['n_masters', ...counts.map(count => count.key)].map(key => (
        <FieldError
          key={key}
          id={`root_environment_replicas_${key}`}
          text={errorsAt(errors, [...REPLICAS, key])}
        />
      ))}
      <div className="jp-px-card-resources" role="group" aria-label="Resources">
        <div className="jp-px-card-roles" role="tablist">
          <span className="jp-px-card-caption">Resources</span>
          {roles.resources.map(({ role: name, label }) => (
            <button
              key={name}
              role="tab"
              aria-selected={name === shownRole}
              className={
                'jp-px-card-role' + (name === shownRole ? ' jp-mod-active' : '')
              }
              data-role={name}
              onClick={() => setRole(name)}
            >
              {label}
            </button>
          ))}
        </div>
        <table className="jp-px-grid" data-role={shownRole}>
          <thead>
            <tr>
              <th />
              <th>requests</th>
              <th>limits</th>
            </tr>
          </thead>
          <tbody>
            {RESOURCE_KINDS.map(({ kind, placeholder }) => (
              <tr key={kind}>
                <th scope="row">{kind}</th>
                {['requests', 'limits'].map(bound => {
                  const path = [...resourcePath, kind, bound];
                  const id = `px_card_${shownRole}_${kind}_${bound}`;
                  return (
                    <td key={bound}>
                      <input
                        id={id}
                        className={
                          'jp-mod-styled' +
                          (errorsAt(errors, path) ||
                          errorsAt(errors, [...resourcePath, kind])
                            ? ' jp-px-invalid'
                            : '')
                        }
                        aria-invalid={!!errorsAt(errors, path)}
                        aria-label={`${shownRole} ${kind} ${bound}`}
                        // Empty is "not set": the example only shows in the tooltip, never as
                        // grey text that reads as a value already there.
                        placeholder="not set"
                        title={`${kind} ${bound}, ${placeholder}`}
                        value={String(getIn(data, path) ?? '')}
                        onChange={event =>
                          change(
                            path,
                            kind === 'gpu'
                              ? number(event.target.value)
                              : event.target.value
                          )
                        }
                      />
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
        <FieldError
          id={`px_card_${shownRole}_resources`}
          text={roles.resources
            .map(({ role: name, label }) => {
              const text = resourceErrors(errors, name);
              return text && name !== shownRole ? `${label}: ${text}` : text;
            })
            .filter(Boolean)
            .join('; ')}
        />
      </div>
    </div>
  );
}
