import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type { IProblem } from './types';

/**
 * A failed call to the jupyter-px REST API: the HTTP status, the server's one-line reason and,
 * for an invalid topology, every problem with its field path.
 */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly body: any = null
  ) {
    super(message);
    this.name = 'ApiError';
  }

  get problems(): IProblem[] {
    return Array.isArray(this.body?.problems) ? this.body.problems : [];
  }
}

// One thing wrong with a topology (models.Problem, generated in types.ts); exported here too, where
// ApiError carries it.
export type { IProblem };

export interface IApiResponse<T> {
  status: number;
  data: T | null;
  etag: string | null;
}

/**
 * The one request helper: `<base_url>px/api/<endPoint>` with the server's credentials and XSRF
 * token (ServerConnection adds both), JSON in and out, errors as ApiError with the reason.
 */
export async function requestAPI<T>(
  endPoint: string,
  init: RequestInit = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<IApiResponse<T>> {
  const url = URLExt.join(settings.baseUrl, 'px', 'api', endPoint);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ApiError(`cannot reach the Jupyter server: ${String(error)}`, 0);
  }
  const text = await response.text();
  let data: any = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (response.status === 304) {
    return { status: 304, data: null, etag: response.headers.get('Etag') };
  }
  if (!response.ok) {
    const reason =
      (data && typeof data === 'object' && (data.message || data.reason)) ||
      (typeof data === 'string' && data) ||
      response.statusText;
    throw new ApiError(String(reason), response.status, data);
  }
  return {
    status: response.status,
    data: data as T,
    etag: response.headers.get('Etag')
  };
}
