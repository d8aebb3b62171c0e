/**
 * Pure logic between the topology model's JSON Schema (from the server), the form's data and
 * the topology the server validates. The server's model is the single source of truth: the form
 * is generated from its schema and every value is validated by it; this module only reshapes.
 */
import { problemMessage } from './problemWords';
import type { IProblem } from './request';

type JSONObject = { [key: string]: any };

/** Fields of the model the sidebar form shows (the rest is kept in the data, not shown). */
const SHOWN: { [definition: string]: string[] } = {
  root: ['framework', 'backend', 'environment'],
  Environment: ['resources', 'replicas', 'processes_per_replica', 'image'],
  Replicas: [
    'n_masters',
    'n_workers',
    'min_workers',
    'n_ps',
    'n_evaluators',
    'default_worker',
    'default_ps',
    'worker',
    'ps'
  ],
  ReplicaSettings: ['resources', 'image', 'restart_policy', 'max_restarts'],
  ReplicaOverride: [
    'index',
    'resources',
    'image',
    'restart_policy',
    'max_restarts'
  ]
};

const TITLES: { [name: string]: string } = {
  framework: 'Framework',
  backend: 'Backend',
  environment: 'Environment',
  'Environment.resources': 'Master resources',
  resources: 'Resources',
  replicas: 'Replicas',
  n_masters: 'Masters (0 or 1)',
  n_workers: 'Workers',
  min_workers: 'Fewest workers (elastic, PyTorch)',
  n_ps: 'Parameter servers',
  n_evaluators: 'Evaluators',
  default_worker: 'Every worker',
  default_ps: 'Every parameter server',
  worker: 'Per-worker overrides',
  ps: 'Per-parameter-server overrides',
  processes_per_replica: 'Processes per replica',
  cpu: 'CPU (cores)',
  memory: 'Memory (MiB or 1Gi)',
  gpu: 'GPU',
  requests: 'Requests',
  limits: 'Limits',
  index: 'Index',
  image: 'Image',
  restart_policy: 'Restart policy',
  max_restarts: 'Max restarts'
};

/** Quantity fields accept a number or a Kubernetes quantity: a text field in the form. */
const QUANTITY = /(^|\.)(cpu|memory)\.(requests|limits)$/;

function resolveRef(root: JSONObject, ref: string): JSONObject {
  const name = ref.replace(/^#\/(\$defs|definitions)\//, '');
  const found = (root.$defs || root.definitions || {})[name];
  if (!found) {
    throw new Error(`the topology schema has no definition ${ref}`);
  }
  return { ...found, __name: name };
}

/** `anyOf: [X, {type: null}]` -> X; `anyOf: [number, string, null]` -> string. */
function collapse(root: JSONObject, schema: JSONObject): JSONObject {
  let node = schema;
  if (node.$ref) {
    node = { ...resolveRef(root, node.$ref), ...omit(node, ['$ref']) };
  }
  if (Array.isArray(node.anyOf)) {
    const options = node.anyOf.filter(
      (option: JSONObject) => option.type !== 'null'
    );
    const rest = omit(node, ['anyOf']);
    if (options.length === 1) {
      node = { ...collapse(root, options[0]), ...rest };
    } else if (
      options.every((o: JSONObject) =>
        ['number', 'string', 'integer'].includes(o.type)
      )
    ) {
      node = { ...rest, type: 'string' };
    } else {
      node = { ...collapse(root, options[0]), ...rest };
    }
  }
  if (node.default === null) {
    node = omit(node, ['default']);
  }
  return node;
}

function omit(object: JSONObject, keys: string[]): JSONObject {
  const out: JSONObject = {};
  for (const [key, value] of Object.entries(object)) {
    if (!keys.includes(key)) {
      out[key] = value;
    }
  }
  return out;
}

/**
 * The JSON Schema the form renders, derived from the model's schema: references inlined, the
 * nullable `anyOf`s collapsed (rjsf would render them as option pickers), quantities as text,
 * only the fields the sidebar shows, no `additionalProperties: false` (data imported from YAML
 * may carry fields the form does not show; the server validates everything).
 */
export function formSchema(modelSchema: JSONObject): JSONObject {
  const walk = (
    schema: JSONObject,
    definition: string,
    name: string
  ): JSONObject => {
    const node = collapse(modelSchema, schema);
    const out: JSONObject = omit(node, [
      '__name',
      'additionalProperties',
      '$schema',
      '$defs'
    ]);
    if (TITLES[name]) {
      out.title = TITLES[name];
    }
    if (node.type === 'object') {
      delete out.description; // the model's docstrings: written for Python readers
    }
    if (node.type === 'object' && node.properties) {
      const kind = node.__name || definition;
      const shown = SHOWN[kind];
      const properties: JSONObject = {};
      for (const [key, value] of Object.entries(
        node.properties as JSONObject
      )) {
        if (!shown || shown.includes(key)) {
          properties[key] = walk(value as JSONObject, kind, key);
        }
      }
      out.properties = properties;
      if (out.required) {
        out.required = out.required.filter((key: string) => key in properties);
      }
    }
    if (node.type === 'array' && node.items) {
      out.items = { ...walk(node.items, '', ''), title: 'Override' };
    }
    return out;
  };
  const schema = walk(modelSchema, 'root', '');
  delete schema.title; // the sidebar section is titled already
  return schema;
}

/** UI hints: compact override tables, the backend's default, nothing else. */
export function formUiSchema(): JSONObject {
  const resources = {
    'ui:options': { compact: true }
  };
  return {
    'ui:order': ['framework', 'backend', 'environment'],
    environment: {
      'ui:order': ['replicas', 'resources', '*'],
      replicas: {
        'ui:order': [
          'n_masters',
          'n_workers',
          'min_workers',
          'n_ps',
          'n_evaluators',
          '*'
        ],
        worker: { items: { 'ui:order': ['index', '*'], resources } },
        ps: { items: { 'ui:order': ['index', '*'], resources } }
      }
    }
  };
}

function isEmpty(value: unknown): boolean {
  return (
    value === undefined ||
    value === null ||
    value === '' ||
    (typeof value === 'object' &&
      !Array.isArray(value) &&
      Object.keys(value as object).length === 0)
  );
}

/**
 * Form data -> the topology sent to the server: empty fields dropped (so the model's defaults
 * apply), numeric quantity texts as numbers ("2" -> 2, "500m" stays), whitespace trimmed.
 */
export function toTopology(formData: JSONObject): JSONObject {
  const clean = (value: any, path: string): any => {
    if (Array.isArray(value)) {
      return value.map((item, i) => clean(item, `${path}[${i}]`) ?? {});
    }
    if (value && typeof value === 'object') {
      const out: JSONObject = {};
      for (const [key, item] of Object.entries(value)) {
        const cleaned = clean(item, path ? `${path}.${key}` : key);
        if (!isEmpty(cleaned)) {
          out[key] = cleaned;
        }
      }
      return out;
    }
    if (typeof value === 'string') {
      const text = value.trim();
      if (QUANTITY.test(path) && text !== '' && !isNaN(Number(text))) {
        return Number(text);
      }
      return text;
    }
    return value;
  };
  return clean(formData, '') ?? {};
}

/** A (normalized) topology -> form data: quantities as text, everything else as is. */
export function fromTopology(topology: JSONObject): JSONObject {
  const convert = (value: any, path: string): any => {
    if (Array.isArray(value)) {
      return value.map((item, i) => convert(item, `${path}[${i}]`));
    }
    if (value && typeof value === 'object') {
      const out: JSONObject = {};
      for (const [key, item] of Object.entries(value)) {
        out[key] = convert(item, path ? `${path}.${key}` : key);
      }
      return out;
    }
    if (typeof value === 'number' && QUANTITY.test(path)) {
      return String(value);
    }
    return value;
  };
  return convert(topology, '');
}

/** `environment.replicas.worker[3].index` -> ['environment', 'replicas', 'worker', '3', 'index']. */
export function parsePath(path: string): string[] {
  const parts: string[] = [];
  for (const piece of path.split('.')) {
    const match = piece.match(/^([^[\]]*)((\[\d+\])*)$/);
    if (!match) {
      parts.push(piece);
      continue;
    }
    if (match[1]) {
      parts.push(match[1]);
    }
    for (const index of match[2].matchAll(/\[(\d+)\]/g)) {
      parts.push(index[1]);
    }
  }
  return parts;
}

/**
 * The server's problems -> rjsf's `extraErrors` (an ErrorSchema), so each message shows beside
 * its field; a problem whose field the form does not show goes to the nearest shown ancestor.
 */
export function problemsToErrorSchema(
  problems: IProblem[],
  schema?: JSONObject
): JSONObject {
  const errors: JSONObject = {};
  for (const problem of problems) {
    const full = problem.path ? parsePath(problem.path) : [];
    const parts = schema ? shownPrefix(schema, full) : full;
    let node = errors;
    for (const part of parts) {
      node = node[part] = node[part] || {};
    }
    // Beside its shown ancestor, a hidden field is named below it: "node selector zone: ...".
    const hidden = full
      .slice(parts.length)
      .map(part => part.replace(/_/g, ' '))
      .join(' ');
    const said = problemMessage(problem.message);
    const message = hidden ? `${hidden}: ${said}` : said;
    node.__errors = [...(node.__errors || []), message];
  }
  return errors;
}

/** The longest start of `parts` that is a field of `schema`: where the form shows its problem. */
export function shownPrefix(schema: JSONObject, parts: string[]): string[] {
  const out: string[] = [];
  let node: JSONObject | undefined = schema;
  for (const part of parts) {
    if (!node) {
      break;
    }
    if (node.type === 'array' && /^\d+$/.test(part)) {
      out.push(part);
      node = node.items;
    } else if (node.properties && part in node.properties) {
      out.push(part);
      node = node.properties[part];
    } else {
      break;
    }
  }
  return out;
}

/** A new topology's form data: the configured default backend, one master, one worker. */
export function initialTopology(backend: string): JSONObject {
  return {
    framework: 'pytorch',
    backend,
    environment: { replicas: { n_workers: 1 } }
  };
}

/** The image setting fills in a Kubernetes topology's image when it names none. */
export function withDefaults(topology: JSONObject, image: string): JSONObject {
  if (!image || !topology.backend || topology.backend === 'local') {
    return topology;
  }
  const environment = topology.environment || {};
  if (environment.image) {
    return topology;
  }
  return { ...topology, environment: { ...environment, image } };
}
