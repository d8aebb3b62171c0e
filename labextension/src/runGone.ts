import { ApiError } from './request';

/**
 * What a panel about a run says when the server no longer knows the run (404): typically a
 * panel the layout restored after the run was deleted. null for any other error.
 */
export function runGoneMessage(runId: string, error: unknown): string | null {
  if (error instanceof ApiError && error.status === 404) {
    return `Run ${runId} no longer exists: it was deleted, or its directory removed.`;
  }
  return null;
}
