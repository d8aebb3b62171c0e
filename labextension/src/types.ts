import type { IProblem } from './request';

/** The run summary shape shared with `jupyter px runs --json` (presentation/run_json.py). */
export interface IRunSummary {
  run_id: string;
  name: string | null;
  state: RunState;
  finished: boolean;
  reason: string | null;
  message: string | null;
  backend: string;
  framework: string | null;
  submitted_from: string | null;
  user: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  updated_at: number;
  replicas_total: number;
  replica_counts: { [state: string]: number };
}

export type RunState =
  'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Stopped' | 'Lost';

export interface IReplica {
  key: string;
  role: string;
  index: number;
  state: string;
  exit_code: number | null;
  signal: string | null;
  restarts: number;
  reason: string | null;
  message: string | null;
  started_at: number | null;
  finished_at: number | null;
  address: string | null;
}

export interface IRunDetail extends IRunSummary {
  replicas: IReplica[];
  topology: { [key: string]: any };
  code: { entrypoint: string; language: string; source: string | null };
  workdir: string | null;
  host: string | null;
}

export interface IProgress {
  step: number | null;
  total_steps: number | null;
}

export interface IRunsPage {
  runs: IRunSummary[];
  total: number;
  offset: number;
  limit: number;
  progress: { [runId: string]: IProgress };
}

export interface IValidation {
  valid: boolean;
  topology?: { [key: string]: any };
  yaml?: string;
  summary?: string;
  message?: string;
  problems?: IProblem[];
}

export interface ISeries {
  steps: (number | null)[];
  values: number[];
  times: number[];
}

export interface IMetricsUpdate {
  run_id: string;
  finished: boolean;
  series: { [replica: string]: { [metric: string]: ISeries } };
  cursor: number | null;
  progress: { [replica: string]: IProgress };
}

export interface ILogChunk {
  replica: string;
  text: string;
  offset: number;
  finished: boolean;
}

export interface ITensorBoard {
  status: 'launched' | 'reused';
  url: string;
  port: number;
}

export interface ISubmission {
  topology: { [key: string]: any };
  notebook?: string;
  script?: string;
  cells?: 'all' | 'tagged';
  tag?: string;
  name?: string;
}
