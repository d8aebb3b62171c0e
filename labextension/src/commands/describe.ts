import { ApiError } from '../request';

/** A submission's failure as one message: the server's reason, and each topology problem. */
export function describe(error: unknown): string {
  if (error instanceof ApiError && error.problems.length) {
    return [
      error.message.split('\n')[0],
      ...error.problems.map(p => `  ${p.path}: ${p.message}`)
    ].join('\n');
  }
  return (error as Error).message ?? String(error);
}
