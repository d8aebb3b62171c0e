/**
 * The run's mimetype in a notebook output (`jupyter_px/widgets/run_mime.py` writes it): the run's
 * id and what was known of it when the output was written. Every output of the run monitor, live
 * and final, carries it beside the widget or the static view.
 */
export const RUN_MIMETYPE = 'application/vnd.jupyter-px.run+json';
/**
 * Preferred over the ipywidgets monitor in the same bundle (ipywidgets registers -10) and the
 * static HTML (50): in JupyterLab the run's live view is this extension's, kernel or not; the
 * widget serves front-ends without it.
 */
export const RUN_MIME_RANK = -20;

/** The payload, version 1. */
export interface IRunPayload {
  version: number;
  run_id: string;
  name: string | null;
  backend: string;
  created_at: number;
  state: string | null;
  finished: boolean;
  finished_at: number | null;
  replicas: { key: string; state: string }[];
  /** Written by the final view (the run had ended then). */
  final: boolean;
  /** The monitor had the run's TensorBoard open: the final view keeps it. */
  tensorboard: boolean;
}

const RUN_ID = /^[a-z0-9][a-z0-9-]*$/;

/** The payload, or a line saying why it cannot be read (a newer version, a damaged output). */
export function readPayload(data: unknown): IRunPayload | string {
  const payload = data as Partial<IRunPayload> | null;
  if (!payload || typeof payload !== 'object') {
    return 'this output holds no run';
  }
  if (payload.version !== 1) {
    return `this output was written by another version of jupyter-px (format ${String(payload.version)})`;
  }
  if (typeof payload.run_id !== 'string' || !RUN_ID.test(payload.run_id)) {
    return `this output names no valid run (run_id ${JSON.stringify(payload.run_id)})`;
  }
  return {
    version: 1,
    run_id: payload.run_id,
    name: payload.name ?? null,
    backend: payload.backend ?? '',
    created_at: payload.created_at ?? 0,
    state: payload.state ?? null,
    finished: payload.finished === true,
    finished_at: payload.finished_at ?? null,
    replicas: Array.isArray(payload.replicas) ? payload.replicas : [],
    final: payload.final === true,
    tensorboard: payload.tensorboard === true
  };
}
