/**
 * The server's topology problems in the words the sidebar shows: a per-worker override is
 * "worker 1" (the worker it applies to, its `index`), not the array position the server's
 * path carries (`environment.replicas.worker[0]`, `worker.0` in rjsf's list); a field is
 * named by the title the form gives it.
 */
import type { IProblem } from './request';
import { problemMessage } from './problemWords';
import { parsePath } from './topology';

type JSONObject = { [key: string]: any };

const ROLES: { [key: string]: string } = {
  worker: 'worker',
  ps: 'parameter server',
  evaluator: 'evaluator'
};

const DEFAULTS: { [key: string]: string } = {
  default_worker: 'every worker',
  default_ps: 'every parameter server',
  default_evaluator: 'every evaluator'
};

const FIELDS: { [key: string]: string } = {
  framework: 'Framework',
  backend: 'Backend',
  n_masters: 'Masters',
  n_workers: 'Workers',
  n_ps: 'Parameter servers',
  n_evaluators: 'Evaluators',
  processes_per_replica: 'Processes per replica',
  image: 'image',
  restart_policy: 'restart policy',
  max_restarts: 'max restarts'
};

/** Where a problem is, as the user reads it: "worker 1 memory requests", "Workers". */
export function problemPlace(path: string, formData?: JSONObject): string {
  let parts = parsePath(path);
  let who = '';
  if (parts[0] === 'environment') {
    parts = parts.slice(1);
    if (parts[0] === 'replicas') {
      parts = parts.slice(1);
      const [field, position] = parts;
      if (ROLES[field] && position !== undefined && /^\d+$/.test(position)) {
        const override =
          formData?.environment?.replicas?.[field]?.[Number(position)];
        const index = override?.index;
        who =
          typeof index === 'number' || /^\d+$/.test(String(index ?? ''))
            ? `${ROLES[field]} ${index}`
            : `${ROLES[field]} override ${Number(position) + 1}`;
        parts = parts.slice(2);
      } else if (DEFAULTS[field]) {
        who = DEFAULTS[field];
        parts = parts.slice(1);
      }
    } else if (parts[0] === 'resources') {
      who = 'master';
    }
  }
  const rest = parts
    .filter(part => part !== 'resources')
    .map(part => FIELDS[part] ?? part.replace(/_/g, ' '));
  return [who, ...rest].filter(Boolean).join(' ');
}

/** One line per problem, "worker 1 index: must be below Workers (1)", each line once. */
export function problemLines(
  problems: IProblem[],
  formData?: JSONObject
): string[] {
  const lines = problems.map(problem => {
    const place = problem.path ? problemPlace(problem.path, formData) : '';
    const message = problemMessage(problem.message);
    return place ? `${place}: ${message}` : message;
  });
  return Array.from(new Set(lines));
}
