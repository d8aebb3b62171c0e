/**
 * Which replica roles a framework has and what the job calls them (pure), for the sidebar's
 * topology card and its advanced form: parameter servers only where the framework has them,
 * evaluators only for TensorFlow, the master written `chief` for TensorFlow (as TF_CONFIG does
 * unless the topology asks for `master`).
 */
type JSONObject = { [key: string]: any };

/** Frameworks with parameter servers (TensorFlow's ps, MXNet's servers). */
const WITH_PS = new Set(['tensorflow', 'mxnet']);
/** Frameworks with evaluators. */
const WITH_EVALUATORS = new Set(['tensorflow']);

/** Where each role's resources are in the form's data. */
export const ROLE_RESOURCES: { [role: string]: string[] } = {
  master: ['environment', 'resources'],
  worker: ['environment', 'replicas', 'default_worker', 'resources'],
  ps: ['environment', 'replicas', 'default_ps', 'resources']
};

/** The rows of a requests/limits grid, with what a field takes. */
export const RESOURCE_KINDS = [
  { kind: 'cpu', placeholder: 'e.g. 2 or 500m' },
  { kind: 'memory', placeholder: 'e.g. 1Gi' },
  { kind: 'gpu', placeholder: 'e.g. 1' }
];

export interface IFrameworkRoles {
  /** The master as the job calls it. */
  master: string;
  masterTitle: string;
  ps: boolean;
  evaluator: boolean;
  /** Roles whose resources the card edits, with their labels. */
  resources: { role: string; label: string }[];
}

/** The master's name in a framework's job (what its replicas and logs are called). */
export function masterName(topology: JSONObject): string {
  if (topology.framework !== 'tensorflow') {
    return 'master';
  }
  return (topology.environment?.tf_master_type ?? 'chief') === 'master'
    ? 'master'
    : 'chief';
}

const MASTER_TITLES: { [framework: string]: string } = {
  tensorflow: "TensorFlow's chief (TF_CONFIG task type)",
  pytorch: 'Rank 0: MASTER_ADDR points at it',
  mxnet: "MXNet's scheduler",
  horovod: 'The launcher: runs mpirun',
  mpi: 'The launcher: runs mpirun'
};

export function frameworkRoles(topology: JSONObject): IFrameworkRoles {
  const framework = topology.framework ?? '';
  const ps = WITH_PS.has(framework);
  const master = masterName(topology);
  return {
    master,
    masterTitle: MASTER_TITLES[framework] ?? 'One master replica (0 or 1)',
    ps,
    evaluator: WITH_EVALUATORS.has(framework),
    resources: [
      { role: 'master', label: master },
      { role: 'worker', label: 'worker' },
      ...(ps ? [{ role: 'ps', label: 'ps' }] : [])
    ]
  };
}

export function getIn(data: JSONObject, path: string[]): any {
  let node: any = data;
  for (const part of path) {
    if (node === null || node === undefined) {
      return undefined;
    }
    node = node[part];
  }
  return node;
}

/** `data` with `value` at `path` (copied along the path; an empty value removes the key). */
export function setIn(
  data: JSONObject,
  path: string[],
  value: unknown
): JSONObject {
  const [head, ...rest] = path;
  const out: JSONObject = { ...(data ?? {}) };
  if (!rest.length) {
    if (value === '' || value === undefined || value === null) {
      delete out[head];
    } else {
      out[head] = value;
    }
    return out;
  }
  out[head] = setIn(out[head] ?? {}, rest, value);
  return out;
}

/**
 * The data with another framework: the roles it lacks are dropped (counts, defaults and
 * overrides of parameter servers, evaluators), since they are hidden and would only come back
 * as problems the user cannot see.
 */
export function withFramework(data: JSONObject, framework: string): JSONObject {
  let out = setIn(data, ['framework'], framework);
  const roles = frameworkRoles(out);
  const replicas = ['environment', 'replicas'];
  if (!roles.ps) {
    for (const key of ['n_ps', 'default_ps', 'ps']) {
      if (getIn(out, [...replicas, key]) !== undefined) {
        out = setIn(out, [...replicas, key], undefined);
      }
    }
  }
  if (
    !roles.evaluator &&
    getIn(out, [...replicas, 'n_evaluators']) !== undefined
  ) {
    out = setIn(out, [...replicas, 'n_evaluators'], undefined);
  }
  return out;
}

/** What the card edits: left out of the collapsible form below it. */
const CARD_FIELDS: string[][] = [
  ['framework'],
  ['backend'],
  ['environment', 'resources'],
  ['environment', 'replicas', 'n_masters'],
  ['environment', 'replicas', 'n_workers'],
  ['environment', 'replicas', 'n_ps'],
  ['environment', 'replicas', 'n_evaluators'],
  ['environment', 'replicas', 'default_worker', 'resources'],
  ['environment', 'replicas', 'default_ps', 'resources']
];

function without(schema: JSONObject, path: string[]): JSONObject {
  const [head, ...rest] = path;
  if (!schema?.properties || !(head in schema.properties)) {
    return schema;
  }
  const properties = { ...schema.properties };
  if (rest.length) {
    properties[head] = without(properties[head], rest);
  } else {
    delete properties[head];
  }
  return { ...schema, properties };
}

/**
 * The form schema of the collapsible sections under the card: per-index overrides, images,
 * processes, restarts; what the card shows and the roles the framework lacks are left out.
 */
export function advancedSchema(
  schema: JSONObject,
  topology: JSONObject
): JSONObject {
  let out = schema;
  for (const path of CARD_FIELDS) {
    out = without(out, path);
  }
  if (!frameworkRoles(topology).ps) {
    out = without(out, ['environment', 'replicas', 'default_ps']);
    out = without(out, ['environment', 'replicas', 'ps']);
  }
  return out;
}

/**
 * `after` (the form's data once the user pressed an overrides list's Add) with each new, empty
 * override filled in like the notebook's widget does: the first index of the role not taken
 * yet, and a copy of the role's default resources, since an override replaces the whole
 * resources block (polyaxon's rule) and starting empty would drop what the default gives.
 */
export function seedNewOverrides(
  before: JSONObject,
  after: JSONObject
): JSONObject {
  let out = after;
  for (const role of ['worker', 'ps']) {
    const path = ['environment', 'replicas', role];
    const old: JSONObject[] = getIn(before, path) ?? [];
    const now: JSONObject[] = getIn(after, path) ?? [];
    if (now.length !== old.length + 1) {
      continue;
    }
    const added = now[now.length - 1] ?? {};
    const hasIndex = added.index !== undefined && added.index !== '';
    const hasResources =
      added.resources && Object.keys(added.resources).length > 0;
    if (hasIndex || hasResources) {
      continue; // not a fresh one (the schema's own defaults do not count)
    }
    const taken = new Set(now.slice(0, -1).map(item => item?.index));
    let index = 0;
    while (taken.has(index)) {
      index++;
    }
    const defaults = getIn(after, [
      'environment',
      'replicas',
      `default_${role}`,
      'resources'
    ]);
    const seeded: JSONObject = { ...added, index };
    if (defaults && Object.keys(defaults).length) {
      seeded.resources = JSON.parse(JSON.stringify(defaults));
    }
    out = setIn(out, path, [...now.slice(0, -1), seeded]);
  }
  return out;
}
