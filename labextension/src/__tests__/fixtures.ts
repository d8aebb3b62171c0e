import type { IRunSummary } from '../types';

/** A run summary as the server sends it, with `overrides`. */
export function summary(overrides: Partial<IRunSummary> = {}): IRunSummary {
  return {
    run_id: 'run-1',
    name: null,
    state: 'Running',
    finished: false,
    reason: null,
    message: null,
    backend: 'local',
    framework: 'pytorch',
    submitted_from: 'sidebar',
    user: 'me',
    created_at: 1000,
    started_at: 1001,
    finished_at: null,
    updated_at: 1002,
    replicas_total: 3,
    replica_counts: { Running: 2, Pending: 1 },
    ...overrides
  };
}
