import type { IProblem } from './request';

/*
 * The REST API's bodies. Each interface mirrors a pydantic model of
 * `jupyter_px/server/models/` (field names, optionality, primitive types);
 * `tests/test_rest_models.py` compares them, so a change on one side only fails
 * the tests. Change the model first, then this file.
 */

/** The run summary shared with `jupyter px runs --json` (models.RunSummary). */
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
  /** What a read found wrong with the run's owner; the keeper repairs it. */
  owner_problem?: string | null;
  /** How the replicas started: "warm (template pid N)" or "cold: <why>" (local backend). */
  launch?: string | null;
}

export type RunState =
  'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Stopped' | 'Lost';

/** models.Replica */
export interface IReplica {
  key: string;
  /** What the job calls it: `chief` for a TensorFlow master (the key stays `master-0`). */
  label?: string | null;
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
  /** Where its code raised (models.ReplicaFailure): what "Go to cell" opens. */
  failure?: IReplicaFailure | null;
  /** While it is shown Stalled (still Running, no step logged for a while): its last step's time. */
  stalled_since?: number | null;
  /** While Stalled: the quiet time (s) it passed, max(60 s, 10x its median step time). */
  stall_after_s?: number | null;
}

/** models.ReplicaFailure: the exception, and the notebook cell and line it was raised at. */
export interface IReplicaFailure {
  exception: string;
  label?: string | null;
  line?: number | null;
  function?: string | null;
  cell_id?: string | null;
  execution_count?: number | null;
  cell_index?: number | null;
  notebook?: string | null;
}

/** How the run's code runs (models.Code). */
export interface ICode {
  entrypoint: string;
  language: string;
  args: string[];
  source: string | null;
  pushed: string[];
  returns?: boolean;
}

/** One attempt of a run started again as a whole (models.Attempt). */
export interface IAttempt {
  attempt: number;
  started_at?: number | null;
  finished_at?: number | null;
  failed?: string | null;
  reason?: string | null;
  exit_code?: number | null;
  signal?: string | null;
  message?: string | null;
  step?: number | null;
  resumed_from?: number | null;
  retried?: boolean;
  log_offsets?: { [replica: string]: number };
}

/** A complete checkpoint in the run's outputs (models.Checkpoint). */
export interface ICheckpoint {
  scope: string;
  step: number;
  time: number;
  size: number;
}

/** models.RunDetail */
export interface IRunDetail extends IRunSummary {
  replicas: IReplica[];
  topology: { [key: string]: any };
  code: ICode;
  workdir: string | null;
  host: string | null;
  attempt?: number;
  max_attempts?: number;
  attempts?: IAttempt[];
  checkpoints?: ICheckpoint[];
}

/** models.Progress */
export interface IProgress {
  step: number | null;
  total_steps: number | null;
}

/** models.RunsPage */
export interface IRunsPage {
  runs: IRunSummary[];
  total: number;
  offset: number;
  limit: number;
  progress: { [runId: string]: IProgress };
}

/** models.Validation */
export interface IValidation {
  valid: boolean;
  topology?: { [key: string]: any };
  yaml?: string;
  summary?: string;
  message?: string;
  error?: string;
  problems?: IProblem[];
}

/**
 * models.Series: columns of equal length. A NaN or infinite value is null in `values`, and
 * `nonfinite` (present only then) names it by position: "NaN", "Infinity" or "-Infinity".
 */
export interface ISeries {
  steps: (number | null)[];
  values: (number | null)[];
  times: number[];
  nonfinite?: { [position: string]: 'NaN' | 'Infinity' | '-Infinity' } | null;
}

/** models.MetricsPage; `cursor` is opaque: send it back as `since`. */
export interface IMetricsUpdate {
  run_id: string;
  finished: boolean;
  series: { [replica: string]: { [metric: string]: ISeries } };
  cursor: string | null;
  progress: { [replica: string]: IProgress };
  history_pending: boolean;
}

/** models.LogChunk */
export interface ILogChunk {
  replica: string;
  text: string;
  offset: number;
  finished: boolean;
}

/** models.TensorBoardStarted */
export interface ITensorBoard {
  status: 'launched' | 'reused';
  url: string;
  port: number;
  key: string;
}

/** models.TensorBoardRequest: more runs to show in the same TensorBoard. */
export interface ITensorBoardRequest {
  also?: string[];
}

/** models.RunDeleted: the run whose directory was removed, and what it left that went first. */
export interface IRunDeleted {
  run_id: string;
  deleted: boolean;
  removed?: string[];
}

/** models.StacksSnapshot: every replica's Python stacks, grouped by identical main-thread stack. */
export interface IStacksSnapshot {
  run_id: string;
  taken_at: number;
  why: string;
  replicas: IStacksReplica[];
  groups: IStacksGroup[];
  text: string;
}

/** models.StacksReplica: one replica's threads (or why it gave none). */
export interface IStacksReplica {
  key: string;
  pid: number | null;
  error: string | null;
  threads: IStacksThread[];
}

/** models.StacksThread: one thread's frames, innermost first. */
export interface IStacksThread {
  ident: string;
  main: boolean;
  current: boolean;
  truncated: boolean;
  frames: IStackFrame[];
}

/** models.StackFrame: a frame, named by its notebook cell where the run's source map knows it. */
export interface IStackFrame {
  file: string;
  line: number | null;
  function: string;
  cell: string | null;
  cell_line: number | null;
  user: boolean;
  code: string | null;
}

/** models.StacksGroup: replicas with the same stack, and that stack in one line. */
export interface IStacksGroup {
  replicas: string[];
  summary: string;
}

/** models.SubmitRequest: the topology and one of notebook or script. */
export interface ISubmission {
  topology: { [key: string]: any } | string;
  notebook?: string;
  script?: string;
  cells?: 'all' | 'tagged';
  tag?: string;
  name?: string;
}

/** models.RenderRequest: a submission (code optional) and the backend. */
export interface IRenderRequest extends ISubmission {
  backend?: string;
}

/** models.RenderedObject */
export interface IRenderedObject {
  kind: string;
  name: string;
}

/** models.Rendered: the Kubernetes objects a run would create. */
export interface IRendered {
  backend: string;
  objects: IRenderedObject[];
  yaml: string;
}

/** models.CompareRequest: the runs to compare (ids, a name glob, a sweep) and how. */
export interface ICompareRequest {
  runs?: string[];
  pattern?: string | null;
  sweep?: string | null;
  metrics?: string[] | null;
  points?: number;
  optimization?: { [metric: string]: 'min' | 'max' } | null;
  all_params?: boolean;
  /** How the best run is chosen: among those that succeeded, at a common step, or all. */
  best?: 'succeeded' | 'common_step' | 'all';
}

/** models.CompareTensorBoardRequest */
export interface ICompareTensorBoardRequest {
  runs: string[];
}

/** models.ComparedRun */
export interface IComparedRun {
  run_id: string;
  name: string | null;
  state: string;
  created_at: number;
}

/** models.CompareCurve: a run's curve, downsampled on the server (finite values only). */
export interface ICompareCurve {
  run_id: string;
  replica: string;
  steps: number[];
  values: number[];
  /** Each point's wall time, seconds since the epoch. */
  times: number[];
  total: number;
}

/** models.ComparedMetric */
export interface IComparedMetric {
  name: string;
  optimization: 'min' | 'max';
  best_run: string | null;
  /** What "best" meant: "lowest final value among the 3 runs that succeeded". */
  best_rule: string;
  common_step: number | null;
  curves: ICompareCurve[];
}

/** models.ParamImportance */
export interface IParamImportance {
  param: string;
  importance: number;
  correlation: number | null;
  runs: number;
}

/** models.CompareRow */
export interface ICompareRow {
  run_id: string;
  name: string | null;
  state: string;
  params: { [name: string]: any };
  final: { [metric: string]: number | null };
  best: { [metric: string]: number | null };
  best_step: { [metric: string]: number | null };
}

/** models.Comparison */
export interface IComparison {
  runs: IComparedRun[];
  metrics: IComparedMetric[];
  params: string[];
  hidden_params: number;
  rows: ICompareRow[];
  points: number;
  /** The metric the params' view is about: a sweep's objective, else loss, else the first. */
  objective: string | null;
  importance: IParamImportance[];
}

export type SweepState =
  'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Stopped';
export type TrialState =
  'Pending' | 'Running' | 'Complete' | 'Pruned' | 'Failed' | 'Stopped';

/** models.SweepTrial */
export interface ISweepTrial {
  number: number;
  state: TrialState;
  run_id: string | null;
  params: { [name: string]: any };
  value: number | null;
  step: number | null;
  /** [step, value] pairs reported. */
  intermediate: (number | null)[][];
  reason: string | null;
  started_at: number | null;
  finished_at: number | null;
  /** Each objective's final value. */
  values?: { [name: string]: number | null } | null;
  /** A promoted Hyperband trial's runs, a rung each. */
  runs?: string[];
  /** A diverged trial's values that JSON cannot hold (null in their place), by where they were. */
  nonfinite?: { [where: string]: 'NaN' | 'Infinity' | '-Infinity' } | null;
}

/** models.SweepObjective */
export interface ISweepObjective {
  name: string;
  direction: string;
}

/** models.Sweep: `trials` only where asked for. */
export interface ISweep {
  sweep_id: string;
  name: string | null;
  state: SweepState;
  message: string | null;
  owner_problem: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  n_trials: number;
  concurrency: number;
  objective: string | null;
  direction: string | null;
  counts: { [state: string]: number };
  /** The best trial's number. */
  best: number | null;
  objectives?: ISweepObjective[];
  /** A multi-objective sweep's result: the trials on its Pareto front. */
  pareto?: number[] | null;
  trials?: ISweepTrial[] | null;
}

/** models.SweepsPage */
export interface ISweepsPage {
  sweeps: ISweep[];
}

/** view_models.ReplicaRowView: one row of a run's replica table. */
export interface IReplicaRowView {
  key: string;
  label: string;
  state: string;
  phase: string;
  restarts: number;
  exit_code: string;
  resources: string;
  step: string;
  reason: string;
  last_line: string;
  /** While shown stalled: when it logged its last step (seconds since the epoch). */
  stalled_since?: number | null;
  /** While shown stalled: the quiet time (s) it passed, max(60 s, 10x its median step). */
  stall_after_s?: number | null;
  /** The memory limit its backend enforces (declared, or a Slurm partition's default), MiB. */
  memory_limit_mib?: number | null;
}

/** view_models.PhaseCount: a segment of the replicas bar. */
export interface IPhaseCount {
  phase: string;
  state: string;
  count: number;
}

/** view_models.RankRate: a replica's pace. */
export interface IRankRate {
  replica: string;
  label: string;
  steps_per_s: number | null;
  lag_s: number | null;
  waiting: number | null;
}

/** view_models.Failure: why a failed run failed, and where (the cell, when recorded). */
export interface IFailure {
  replica: string;
  line: string;
  cell_id?: string | null;
  cell_line?: number | null;
}

/** view_models.ParamChange */
export interface IParamChange {
  name: string;
  before: string | null;
  after: string | null;
}

/** view_models.MetricChange */
export interface IMetricChange {
  name: string;
  before: number | null;
  after: number | null;
  better: boolean | null;
}

/** view_models.CellChanges: what changed since the previous run of the same cell. */
export interface ICellChanges {
  previous_run: string;
  previous_name: string | null;
  previous_state: string;
  code_diff: string;
  params: IParamChange[];
  metrics: IMetricChange[];
}

/** view_models.RunViewModel: one run as every front-end shows it (`GET runs/<ref>/view`). */
export interface IRunViewModel {
  run_id: string;
  name: string | null;
  backend: string;
  state: string;
  finished: boolean;
  reason: string | null;
  message: string | null;
  owner_problem: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  updated_at: number;
  replicas: IReplicaRowView[];
  replicas_total: number;
  phases: IPhaseCount[];
  counts: string;
  progress: string | null;
  progress_fraction: number | null;
  rates: IRankRate[];
  straggler: string | null;
  /** Replicas that log steps and have logged none for a while, and what shows where each rank is. */
  stalled?: string | null;
  failure: IFailure | null;
  changes: ICellChanges | null;
  /** How the replicas started: "warm (template pid N)" or "cold: <why>". */
  launch?: string | null;
  /** Once an attempt of a run started again as a whole failed: `attempt 2 of 3, from step 1,200`. */
  attempt?: string | null;
  /** Every attempt, once one failed (the plot marks where each began). */
  attempts?: IAttemptMark[];
}

/** view_models.AttemptMark: an attempt of a run started again as a whole. */
export interface IAttemptMark {
  attempt: number;
  /** When it started (seconds since the epoch). */
  started_at: number | null;
  /** The checkpoint step it resumed from; null: from the start. */
  resumed_from: number | null;
  /** How it ended (`worker-1 killed by SIGKILL at step 1,287`); empty while it runs. */
  ended: string;
}

/** models.WarmMemory: a process's memory in MiB (resident, its own, proportional). */
export interface IWarmMemory {
  rss_mib: number;
  uss_mib: number;
  pss_mib: number;
}

/** models.WarmTemplate: one warm template of the local backend (`jupyter px warm`). */
export interface IWarmTemplate {
  key: string;
  framework: string | null;
  state: string;
  running: boolean;
  pid: number | null;
  python: string | null;
  owner: string;
  memory: IWarmMemory | null;
  standby_memory: IWarmMemory | null;
  idle_s: number | null;
  stops_in_s: number | null;
  preload: string[];
  error: string | null;
  stop_reason: string | null;
}

/** models.WarmTemplates: `GET px/api/warm`. */
export interface IWarmTemplates {
  templates: IWarmTemplate[];
}

/** view_model.ObjectiveView: one objective of a sweep and which way is better. */
export interface ISweepObjectiveView {
  name: string;
  direction: 'minimize' | 'maximize';
}

/** view_model.HistoryPoint: a complete trial's value and the best so far. */
export interface ISweepHistoryPoint {
  trial: number;
  value: number;
  best: number;
}

/** view_model.History: one objective's optimization history, in trial order. */
export interface ISweepHistory {
  objective: string;
  direction: 'minimize' | 'maximize';
  points: ISweepHistoryPoint[];
}

/** view_model.Importance: each parameter's share of one objective's importance. */
export interface ISweepImportance {
  objective: string;
  evaluator: string;
  params: { [param: string]: number };
}

/** view_model.Axis: one axis of the parallel coordinates (a category's index when categorical). */
export interface ISweepAxis {
  name: string;
  role: 'param' | 'objective';
  categorical: boolean;
  categories: string[] | null;
  log: boolean;
  values: number[];
  range: [number, number] | null;
}

/** view_model.ParallelCoordinates: a line per complete trial. */
export interface ISweepParallel {
  trials: number[];
  axes: ISweepAxis[];
  color: string;
}

/** view_model.Slice: one parameter's value against the objective, per complete trial. */
export interface ISweepSlice {
  param: string;
  objective: string;
  categorical: boolean;
  categories: string[] | null;
  log: boolean;
  trials: number[];
  x: number[];
  y: number[];
}

/** view_model.Contour: two parameters, the trials' points and the objective on a grid. */
export interface ISweepContour {
  x_param: string;
  y_param: string;
  objective: string;
  x_log: boolean;
  y_log: boolean;
  x_categories: string[] | null;
  y_categories: string[] | null;
  trials: number[];
  x: number[];
  y: number[];
  z: number[];
  grid_x: number[];
  grid_y: number[];
  grid_z: number[][];
}

/** view_model.ParetoPoint: a complete trial's objectives, and whether it is on the front. */
export interface ISweepParetoPoint {
  trial: number;
  values: number[];
  on_front: boolean;
}

/** view_model.ParetoFront: a multi-objective sweep's trials and its front. */
export interface ISweepParetoFront {
  objectives: ISweepObjectiveView[];
  front: number[];
  points: ISweepParetoPoint[];
}

/** view_model.SweepViewModel (`GET sweeps/<ref>/view`): what a tuner looks at. */
export interface ISweepViewModel {
  sweep_id: string;
  name: string | null;
  state: string;
  algorithm: string;
  objectives: ISweepObjectiveView[];
  n_trials: number;
  counts: { [state: string]: number };
  best: number | null;
  complete: number;
  history: ISweepHistory[];
  importance: ISweepImportance[] | null;
  parallel: ISweepParallel | null;
  slices: ISweepSlice[];
  contour: ISweepContour | null;
  pareto: ISweepParetoFront | null;
  /** Why a view is missing or empty, by the view's name. */
  missing: { [view: string]: string };
  /** Said once above the views: how to declare an objective when there is none. */
  note: string | null;
  /** Without an objective: every metric the trials logged, a line per trial; else []. */
  metrics: ISweepMetricCurves[];
}

/** view_model.MetricCurves: one metric the trials logged, a line per trial by step. */
export interface ISweepMetricCurves {
  name: string;
  trials: ISweepTrialCurve[];
}

/** view_model.TrialCurve: one trial's points of a metric. */
export interface ISweepTrialCurve {
  trial: number;
  steps: number[];
  values: number[];
}
