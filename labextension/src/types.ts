/*
 * Generated from the REST models (jupyter_px/server/models/, TYPESCRIPT_NAMES): do not edit.
 * python -m jupyter_px.server.models.schema labextension/src/types.schema.json writes their
 * JSON Schema, and jlpm build:types (run by jlpm build) this file from it.
 */

/**
 * Any body the REST API receives or sends: one of the interfaces below.
 */
export type RestBody =
  | ISubmission
  | IRenderRequest
  | IValidation
  | IProblem
  | IRendered
  | IRenderedObject
  | IRunSummary
  | IReplica
  | IReplicaFailure
  | ICollective
  | ICode
  | IAttempt
  | ICheckpoint
  | IRunDetail
  | IProgress
  | IRunsPage
  | ILogChunk
  | ISeries
  | IMetricsUpdate
  | ITensorBoard
  | ITensorBoardRequest
  | IRunDeleted
  | IKillRequest
  | IReplicaKilled
  | IStacksSnapshot
  | IStacksReplica
  | IStacksThread
  | IStackFrame
  | IStacksGroup
  | ICompareRequest
  | ICompareTensorBoardRequest
  | IComparedRun
  | ICompareCurve
  | IComparedMetric
  | ICompareRow
  | IComparison
  | IParamImportance
  | IComparisonFigures
  | IRunViewModel
  | IReplicaRowView
  | IAttemptMark
  | IPhaseCount
  | IRankRate
  | IFailure
  | ICellChanges
  | IParamChange
  | IMetricChange
  | ISweepTrial
  | ISweepObjective
  | ISweep
  | ISweepsPage
  | IWarmMemory
  | IWarmTemplate
  | IWarmTemplates
  | ISweepViewModel
  | ISweepView
  | ISweepFigures
  | IPlotlyFigure
  | ISweepObjectiveView
  | ISweepHistory
  | ISweepHistoryPoint
  | ISweepImportance
  | ISweepParallel
  | ISweepAxis
  | ISweepSlice
  | ISweepContour
  | ISweepParetoFront
  | ISweepParetoPoint
  | ISweepMetricCurves
  | ISweepTrialCurve;
/**
 * `POST topology/render`: a submission's fields (code optional), and the backend to render for.
 *
 * `jupyter_px.server.models.requests.RenderRequest`
 */
export type IRenderRequest = ISubmission & {
  backend?: string | null;
};
export type RunState =
  'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Stopped' | 'Lost';
/**
 * `GET runs/<ref>`, and the answer to a submission or a stop.
 *
 * `jupyter_px.server.models.replies.RunDetail`
 */
export type IRunDetail = IRunSummary & {
  replicas: IReplica[];
  topology: {
    [k: string]: any;
  };
  code: ICode;
  workdir: string | null;
  host: string | null;
  /**
   * which attempt runs (or ran last), from 1
   */
  attempt?: number;
  /**
   * how many attempts it may take (`termination.max_retries` + 1)
   */
  max_attempts?: number;
  /**
   * every attempt, once one failed
   */
  attempts?: IAttempt[];
  checkpoints?: ICheckpoint[];
};
export type TrialState =
  'Pending' | 'Running' | 'Complete' | 'Pruned' | 'Failed' | 'Stopped';
export type SweepState =
  'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Stopped';
/**
 * The sweep's view-model and its figures: what `GET px/api/sweeps/<ref>/view` answers.
 *
 * `jupyter_px.presentation.sweep_figures.SweepView`
 */
export type ISweepView = ISweepViewModel & {
  figures: ISweepFigures;
};

/**
 * `POST runs`: the topology and exactly one of a notebook or a script in the server's root.
 *
 * `jupyter_px.server.models.requests.SubmitRequest`
 */
export interface ISubmission {
  topology:
    | {
        [k: string]: any;
      }
    | string;
  notebook?: string | null;
  script?: string | null;
  cells?: 'all' | 'tagged';
  tag?: string;
  name?: string | null;
}
/**
 * `POST topology/validate`: the normalized topology, or every problem (`valid: false`).
 *
 * `jupyter_px.server.models.replies.Validation`
 */
export interface IValidation {
  valid: boolean;
  topology?: {
    [k: string]: any;
  } | null;
  yaml?: string | null;
  summary?: string | null;
  message?: string | null;
  error?: string | null;
  problems?: IProblem[] | null;
}
/**
 * One thing wrong with a topology: the dotted field path (`a.b[2].c`) and what.
 *
 * `jupyter_px.server.models.replies.Problem`
 */
export interface IProblem {
  path: string;
  message: string;
}
/**
 * `POST topology/render`: what a Kubernetes backend would create.
 *
 * `jupyter_px.server.models.replies.Rendered`
 */
export interface IRendered {
  backend: string;
  objects: IRenderedObject[];
  yaml: string;
}
/**
 * `jupyter_px.server.models.replies.RenderedObject`
 */
export interface IRenderedObject {
  kind: string;
  name: string;
}
/**
 * A row of the runs list: `service.views.run_summary`, as `jupyter px runs --json`.
 *
 * `jupyter_px.server.models.replies.RunSummary`
 */
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
  replica_counts: {
    [k: string]: number;
  };
  /**
   * what a read found wrong with the run's owner; the keeper, not the read, repairs it
   */
  owner_problem?: string | null;
  /**
   * how the replicas started: "warm (template pid N)" or "cold: <why>" (local and SSH backends)
   */
  launch?: string | null;
}
/**
 * `jupyter_px.server.models.replies.Replica`
 */
export interface IReplica {
  /**
   * the store's key (`master-0`: its log and metrics are named by it)
   */
  key: string;
  /**
   * what the job calls it (`chief` for a TensorFlow master; else the key); always sent
   */
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
  /**
   * where its code raised: what "Go to cell" opens
   */
  failure?: IReplicaFailure | null;
  /**
   * while it is shown Stalled (a badge, not a state; still Running): when it logged its last step
   */
  stalled_since?: number | null;
  /**
   * while Stalled: the quiet time (s) it passed, max(60 s, 10x its median step time)
   */
  stall_after_s?: number | null;
}
/**
 * Where a replica's code raised: what "Go to cell" opens (`cell_id`, else the cell whose
 * `execution_count` it is, else the `cell_index`-th cell of `notebook`), at `line`.
 *
 * `jupyter_px.server.models.replies.ReplicaFailure`
 */
export interface IReplicaFailure {
  exception: string;
  label?: string | null;
  line?: number | null;
  function?: string | null;
  cell_id?: string | null;
  execution_count?: number | null;
  cell_index?: number | null;
  notebook?: string | null;
  /**
   * for a collective's timeout: its process group's last collectives, newest last
   */
  collectives?: ICollective[] | null;
}
/**
 * One collective of a process group, as PyTorch's flight recorder saw it.
 *
 * `jupyter_px.server.models.replies.Collective`
 */
export interface ICollective {
  /**
   * `all_reduce`, `barrier`, ...
   */
  op: string;
  /**
   * its number in the group's sequence, from 1
   */
  seq?: number | null;
  /**
   * the process group's name (`default_pg`)
   */
  group?: string | null;
  state?: string | null;
}
/**
 * How the run's code runs (the run record's `code`).
 *
 * `jupyter_px.server.models.replies.Code`
 */
export interface ICode {
  entrypoint: string;
  language: string;
  args: string[];
  source: string | null;
  pushed: string[];
  /**
   * its last expression is each replica's result (`run.results()`)
   */
  returns?: boolean;
}
/**
 * One attempt of a run started again as a whole (`termination`): see runstore's AttemptRecord.
 *
 * `jupyter_px.server.models.replies.Attempt`
 */
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
  log_offsets?: {
    [k: string]: number;
  };
  /**
   * elastic workers: how many took part
   */
  workers?: number | null;
  /**
   * elastic workers: the workers that came back, which ended it
   */
  returned?: string | null;
}
/**
 * A complete checkpoint in the run's outputs (`tracking.save_checkpoint`).
 *
 * `jupyter_px.server.models.replies.Checkpoint`
 */
export interface ICheckpoint {
  scope: string;
  step: number;
  time: number;
  size: number;
}
/**
 * How far training is: the last step logged, of how many (when the code logs `total_steps`).
 *
 * `jupyter_px.server.models.replies.Progress`
 */
export interface IProgress {
  step: number | null;
  total_steps: number | null;
}
/**
 * `GET runs?offset=&limit=`: run summaries newest first, and each unfinished run's progress.
 *
 * `jupyter_px.server.models.replies.RunsPage`
 */
export interface IRunsPage {
  runs: IRunSummary[];
  total: number;
  offset: number;
  limit: number;
  progress: {
    [k: string]: IProgress;
  };
}
/**
 * `GET runs/<ref>/logs?role=&index=&offset=`: text from `offset`, and where to continue.
 *
 * `jupyter_px.server.models.replies.LogChunk`
 */
export interface ILogChunk {
  replica: string;
  text: string;
  offset: number;
  finished: boolean;
}
/**
 * One metric of one replica: columns of equal length. A value that was NaN or infinite is
 * null in `values`, and `nonfinite` (only present then) says which it was, by position.
 *
 * `jupyter_px.server.models.replies.Series`
 */
export interface ISeries {
  steps: (number | null)[];
  values: (number | null)[];
  times: number[];
  nonfinite?: {
    [k: string]: 'NaN' | 'Infinity' | '-Infinity';
  } | null;
}
/**
 * `GET runs/<ref>/metrics?since=CURSOR`: the points after the cursor, and the next cursor.
 *
 * `cursor` is opaque: send back exactly what the last answer held (null: from the start).
 *
 * `jupyter_px.server.models.replies.MetricsPage`
 */
export interface IMetricsUpdate {
  run_id: string;
  finished: boolean;
  series: {
    [k: string]: {
      [k: string]: ISeries;
    };
  };
  cursor: string | null;
  progress: {
    [k: string]: IProgress;
  };
  /**
   * older points are still being read: ask again
   */
  history_pending: boolean;
}
/**
 * `POST runs/<ref>/tensorboard`: the TensorBoard serving the run, through this server.
 *
 * `jupyter_px.server.models.replies.TensorBoardStarted`
 */
export interface ITensorBoard {
  status: 'launched' | 'reused';
  url: string;
  port: number;
  key: string;
}
/**
 * `POST runs/<ref>/tensorboard` `{"also"?: [run ids]}`: one TensorBoard for the run and the
 * runs of `also` (the sidebar's multi-select), each run a folder in its list of runs.
 *
 * `jupyter_px.server.models.requests.TensorBoardRequest`
 */
export interface ITensorBoardRequest {
  /**
   * @maxItems 50
   */
  also?: string[];
}
/**
 * `DELETE runs/<id>/directory`: the run whose directory was removed, and what it had left
 * outside the store that was removed first (a Kubernetes run's job, pods, Services, ConfigMap).
 *
 * `jupyter_px.server.models.replies.RunDeleted`
 */
export interface IRunDeleted {
  run_id: string;
  deleted: boolean;
  removed?: string[];
}
/**
 * `POST runs/<ref>/replicas/<key>/kill` `{"signal"?: "KILL"}`: end one running replica on
 * purpose, as a crash would (`jupyter px kill`), to see the run's recovery work.
 *
 * `jupyter_px.server.models.requests.KillRequest`
 */
export interface IKillRequest {
  /**
   * the signal sent, by its name without SIG
   */
  signal?: 'KILL' | 'TERM' | 'INT' | 'SEGV' | 'ABRT';
}
/**
 * `POST runs/<ref>/replicas/<key>/kill`: what was signalled, in words (`sent SIGKILL to
 * worker-1 of run exp-1a2b (pid 4242)`).
 *
 * `jupyter_px.server.models.replies.ReplicaKilled`
 */
export interface IReplicaKilled {
  run_id: string;
  replica: string;
  said: string;
}
/**
 * `POST runs/<ref>/stacks` (taken now) and `GET runs/<ref>/stacks` (the newest kept).
 *
 * `jupyter_px.server.models.stack_replies.StacksSnapshot`
 */
export interface IStacksSnapshot {
  run_id: string;
  taken_at: number;
  /**
   * `on request`, or the stall that made the supervisor take it
   */
  why: string;
  replicas: IStacksReplica[];
  groups: IStacksGroup[];
  /**
   * the groups as text, one line each
   */
  text: string;
}
/**
 * One replica's threads, or why it gave none.
 *
 * `jupyter_px.server.models.stack_replies.StacksReplica`
 */
export interface IStacksReplica {
  key: string;
  pid: number | null;
  /**
   * why it gave no stacks (gone, or no answer in time)
   */
  error: string | null;
  threads: IStacksThread[];
}
/**
 * One thread of a replica: its frames, innermost first.
 *
 * `jupyter_px.server.models.stack_replies.StacksThread`
 */
export interface IStacksThread {
  ident: string;
  /**
   * the interpreter's main thread (the one training runs in)
   */
  main: boolean;
  /**
   * the thread the signal was delivered to
   */
  current: boolean;
  truncated: boolean;
  frames: IStackFrame[];
}
/**
 * One frame of a replica's thread (`jupyter_px.diagnostics.snapshots`), innermost first.
 *
 * `jupyter_px.server.models.stack_replies.StackFrame`
 */
export interface IStackFrame {
  file: string;
  line: number | null;
  function: string;
  /**
   * the notebook cell it came from (`cell [4]`), where the source map knows
   */
  cell: string | null;
  /**
   * its line in that cell
   */
  cell_line: number | null;
  /**
   * whether it is the run's own code (shipped)
   */
  user: boolean;
  /**
   * then its line's source
   */
  code: string | null;
}
/**
 * Replicas whose main threads have the same stack, and that stack in one line.
 *
 * `jupyter_px.server.models.stack_replies.StacksGroup`
 */
export interface IStacksGroup {
  replicas: string[];
  summary: string;
}
/**
 * `POST compare`: the runs to compare (references, a name glob, a sweep: any together) and how.
 *
 * `jupyter_px.server.models.requests.CompareRequest`
 */
export interface ICompareRequest {
  /**
   * @maxItems 1000
   */
  runs?: string[];
  pattern?: string | null;
  sweep?: string | null;
  metrics?: string[] | null;
  points?: number;
  /**
   * which way is better, per metric (`optimisation`, its first spelling, is still read)
   */
  optimization?: {
    [k: string]: 'min' | 'max';
  } | null;
  /**
   * every param a column, not only those that differ
   */
  all_params?: boolean;
  /**
   * how the best run is chosen: among those that succeeded, at a common step, or among all
   */
  best?: 'succeeded' | 'common_step' | 'all';
}
/**
 * `POST compare/tensorboard`: one TensorBoard over these runs.
 *
 * `jupyter_px.server.models.requests.CompareTensorBoardRequest`
 */
export interface ICompareTensorBoardRequest {
  /**
   * @minItems 1
   * @maxItems 1000
   */
  runs: string[];
}
/**
 * `jupyter_px.server.models.replies.ComparedRun`
 */
export interface IComparedRun {
  run_id: string;
  name: string | null;
  state: string;
  created_at: number;
}
/**
 * One run's curve of a metric: at most `points` points chosen by MinMaxLTTB from `total`
 * (finite values only), from its chief replica's series.
 *
 * `jupyter_px.server.models.replies.CompareCurve`
 */
export interface ICompareCurve {
  run_id: string;
  replica: string;
  steps: number[];
  values: number[];
  /**
   * each point's wall time (seconds since the epoch)
   */
  times: number[];
  total: number;
}
/**
 * One metric of a comparison: each run's curve, and which run is best and by what rule.
 *
 * `jupyter_px.server.models.replies.ComparedMetric`
 */
export interface IComparedMetric {
  name: string;
  optimization: 'min' | 'max';
  best_run: string | null;
  /**
   * what "best" meant: "lowest among the 3 runs that succeeded"
   */
  best_rule: string;
  /**
   * the step every run was compared at (best=common_step)
   */
  common_step: number | null;
  curves: ICompareCurve[];
}
/**
 * A run's row of the table: the params shown, and per metric its final and best value.
 *
 * `jupyter_px.server.models.replies.CompareRow`
 */
export interface ICompareRow {
  run_id: string;
  name: string | null;
  state: string;
  params: {
    [k: string]: any;
  };
  final: {
    [k: string]: number | null;
  };
  best: {
    [k: string]: number | null;
  };
  best_step: {
    [k: string]: number | null;
  };
}
/**
 * `POST compare`: downsampled curves per metric (the best run named), and the table.
 *
 * `jupyter_px.server.models.replies.Comparison`
 */
export interface IComparison {
  runs: IComparedRun[];
  metrics: IComparedMetric[];
  /**
   * the param columns: those that differ between runs, or all
   */
  params: string[];
  /**
   * params left out because every run has the same value
   */
  hidden_params: number;
  rows: ICompareRow[];
  points: number;
  /**
   * the metric the params' view is about (a sweep's objective, else loss)
   */
  objective: string | null;
  /**
   * the params that matter for `objective`
   */
  importance: IParamImportance[];
  figures: IComparisonFigures;
}
/**
 * How much a param accounts for the first metric across the runs (`compare.importance`).
 *
 * `jupyter_px.server.models.replies.ParamImportance`
 */
export interface IParamImportance {
  param: string;
  importance: number;
  correlation: number | null;
  runs: number;
}
/**
 * The params' view of a comparison: each figure None where it has nothing to draw.
 *
 * `jupyter_px.compare.figures.ComparisonFigures`
 */
export interface IComparisonFigures {
  parallel: IPlotlyFigure | null;
  importance: IPlotlyFigure | null;
}
/**
 * A figure as plotly.js draws it (`Plotly.react(div, data, layout)`), and as plotly's
 * mimetype carries it.
 *
 * `jupyter_px.presentation.figures.PlotlyFigure`
 */
export interface IPlotlyFigure {
  data: {
    [k: string]: any;
  }[];
  layout: {
    [k: string]: any;
  };
}
/**
 * One run as every front-end shows it (see the module docstring).
 *
 * `jupyter_px.presentation.view_models.RunViewModel`
 */
export interface IRunViewModel {
  run_id: string;
  name: string | null;
  backend: string;
  state: string;
  finished: boolean;
  reason: string | null;
  /**
   * the run's message; for a Pending run, why it waits
   */
  message: string | null;
  owner_problem: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  updated_at: number;
  replicas: IReplicaRowView[];
  replicas_total: number;
  phases: IPhaseCount[];
  /**
   * `2 running, 1 starting of 3`
   */
  counts: string;
  /**
   * `step 120/400 (slowest: worker-1)` when training logs total_steps
   */
  progress: string | null;
  progress_fraction: number | null;
  rates: IRankRate[];
  /**
   * `worker-3 is 1.8x slower than the median rank`, or None
   */
  straggler: string | null;
  /**
   * `Stalled: worker-1 (no step for 75 s) ...`: replicas that log steps and have logged none for a while, and what shows where each rank is; or None
   */
  stalled?: string | null;
  failure: IFailure | null;
  changes: ICellChanges | null;
  /**
   * how the replicas started: "warm (template pid N)", or "cold: <why>"
   */
  launch?: string | null;
  /**
   * for a run started again as a whole once an attempt failed: `attempt 2 of 3, from step 1,200`
   */
  attempt?: string | null;
  /**
   * every attempt, once one failed
   */
  attempts?: IAttemptMark[];
}
/**
 * One row of the replica table (`monitor.ReplicaRow` as JSON).
 *
 * `jupyter_px.presentation.view_models.ReplicaRowView`
 */
export interface IReplicaRowView {
  /**
   * role-index, as the store keys it
   */
  key: string;
  /**
   * what the job calls it: worker-1, chief
   */
  label: string;
  /**
   * the replica's state (Pending, Running, ...)
   */
  state: string;
  /**
   * what the user reads: the state, starting, stopped when the run succeeded
   */
  phase: string;
  restarts: number;
  exit_code: string;
  resources: string;
  /**
   * `12/400` or `step 12`; empty before the first metric
   */
  step: string;
  reason: string;
  last_line: string;
  /**
   * while shown stalled: when it logged its last step (seconds since the epoch)
   */
  stalled_since?: number | null;
  /**
   * while shown stalled: the quiet time it passed, max(60 s, 10x its median step)
   */
  stall_after_s?: number | null;
  /**
   * the memory limit its backend enforces (declared, or a Slurm partition's default), MiB
   */
  memory_limit_mib?: number | null;
}
/**
 * How many replicas are in one phase, for the replicas bar (one segment per phase).
 *
 * `jupyter_px.presentation.view_models.PhaseCount`
 */
export interface IPhaseCount {
  phase: string;
  /**
   * the state whose color the segment takes
   */
  state: string;
  count: number;
}
/**
 * One replica's pace over the recent steps it logged (`rates.rank_rates`).
 *
 * `jupyter_px.presentation.view_models.RankRate`
 */
export interface IRankRate {
  replica: string;
  label: string;
  steps_per_s: number | null;
  /**
   * how much later than the median rank it reaches a step
   */
  lag_s: number | null;
  /**
   * share of each step spent waiting for the last rank to get there
   */
  waiting: number | null;
}
/**
 * Why a failed run failed, in one line, and where: the failing replica and, when the run
 * records it, the notebook cell (`cell_id`, `cell_line`) a "Go to cell" button opens.
 *
 * `jupyter_px.presentation.view_models.Failure`
 */
export interface IFailure {
  replica: string;
  line: string;
  cell_id?: string | null;
  cell_line?: number | null;
}
/**
 * What changed since the previous run of the same notebook cell.
 *
 * `jupyter_px.presentation.view_models.CellChanges`
 */
export interface ICellChanges {
  previous_run: string;
  previous_name: string | null;
  previous_state: string;
  /**
   * a unified diff of the code; empty when the code is the same
   */
  code_diff: string;
  params: IParamChange[];
  metrics: IMetricChange[];
}
/**
 * `jupyter_px.presentation.view_models.ParamChange`
 */
export interface IParamChange {
  name: string;
  before: string | null;
  after: string | null;
}
/**
 * `jupyter_px.presentation.view_models.MetricChange`
 */
export interface IMetricChange {
  name: string;
  before: number | null;
  after: number | null;
  /**
   * whether the change is an improvement (None: no direction or no change)
   */
  better: boolean | null;
}
/**
 * An attempt of a run started again as a whole (`termination`), where the plot marks it.
 *
 * `jupyter_px.presentation.view_models.AttemptMark`
 */
export interface IAttemptMark {
  attempt: number;
  /**
   * when it started (seconds since the epoch)
   */
  started_at: number | null;
  /**
   * the checkpoint step it resumed from; None: from the start
   */
  resumed_from: number | null;
  /**
   * how it ended: `worker-1 killed by SIGKILL at step 1,287`; empty while it runs
   */
  ended: string;
}
/**
 * One trial of a sweep (`runstore.sweeps.TrialRow`): its run, values and objective.
 *
 * `jupyter_px.server.models.replies.SweepTrial`
 */
export interface ISweepTrial {
  number: number;
  state: TrialState;
  run_id: string | null;
  params: {
    [k: string]: any;
  };
  value: number | null;
  step: number | null;
  /**
   * [step, value] pairs reported
   */
  intermediate: (number | null)[][];
  reason: string | null;
  started_at: number | null;
  finished_at: number | null;
  /**
   * each objective's final value
   */
  values?: {
    [k: string]: number | null;
  } | null;
  /**
   * a promoted Hyperband trial's runs, a rung each
   */
  runs?: string[];
  /**
   * a diverged trial's values that JSON cannot hold (null in their place), by where they were: value, values.<objective>, intermediate.<position>
   */
  nonfinite?: {
    [k: string]: 'NaN' | 'Infinity' | '-Infinity';
  } | null;
}
/**
 * One objective of a sweep: a metric and which way is better.
 *
 * `jupyter_px.server.models.replies.SweepObjective`
 */
export interface ISweepObjective {
  name: string;
  direction: string;
}
/**
 * A sweep (`sweeps.view.sweep_json`, as `jupyter px sweep status --json`); `trials` only
 * where asked for (one sweep, or the list with `?trials=true`).
 *
 * `jupyter_px.server.models.replies.Sweep`
 */
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
  counts: {
    [k: string]: number;
  };
  /**
   * the best trial's number
   */
  best: number | null;
  objectives?: ISweepObjective[];
  /**
   * a multi-objective sweep's result: the trials on its Pareto front
   */
  pareto?: number[] | null;
  trials?: ISweepTrial[] | null;
}
/**
 * `GET sweeps?limit=&trials=`: the sweeps, newest first.
 *
 * `jupyter_px.server.models.replies.SweepsPage`
 */
export interface ISweepsPage {
  sweeps: ISweep[];
}
/**
 * A process's memory in MiB: resident, its own (freed when it stops), proportional.
 *
 * `jupyter_px.server.models.replies.WarmMemory`
 */
export interface IWarmMemory {
  rss_mib: number;
  uss_mib: number;
  pss_mib: number;
}
/**
 * One warm template of the local backend (`jupyter px warm`).
 *
 * `jupyter_px.server.models.replies.WarmTemplate`
 */
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
/**
 * `GET px/api/warm`: every template, newest first.
 *
 * `jupyter_px.server.models.replies.WarmTemplates`
 */
export interface IWarmTemplates {
  templates: IWarmTemplate[];
}
/**
 * Everything a sweep's tuning views draw, in one answer.
 *
 * `jupyter_px.sweeps.view_model.SweepViewModel`
 */
export interface ISweepViewModel {
  sweep_id: string;
  name: string | null;
  state: string;
  algorithm: string;
  objectives: ISweepObjectiveView[];
  n_trials: number;
  counts: {
    [k: string]: number;
  };
  best: number | null;
  /**
   * complete trials: the ones the views below are made of
   */
  complete: number;
  history: ISweepHistory[];
  importance: ISweepImportance[] | null;
  parallel: ISweepParallel | null;
  slices: ISweepSlice[];
  contour: ISweepContour | null;
  pareto: ISweepParetoFront | null;
  /**
   * why a view is missing or empty (too few trials, one parameter), by the view's name
   */
  missing: {
    [k: string]: string;
  };
  /**
   * said once above the views: how to declare an objective when there is none
   */
  note: string | null;
  /**
   * without an objective: every metric the trials logged, a line per trial; else []
   */
  metrics: ISweepMetricCurves[];
}
/**
 * An objective of the sweep and which way is better.
 *
 * `jupyter_px.sweeps.view_model.ObjectiveView`
 */
export interface ISweepObjectiveView {
  name: string;
  direction: 'minimize' | 'maximize';
}
/**
 * The optimization history: each complete trial's value and the running best (Optuna's plot).
 *
 * `jupyter_px.sweeps.view_model.History`
 */
export interface ISweepHistory {
  objective: string;
  direction: 'minimize' | 'maximize';
  points: ISweepHistoryPoint[];
}
/**
 * One complete trial's objective value, in trial order, with the best so far.
 *
 * `jupyter_px.sweeps.view_model.HistoryPoint`
 */
export interface ISweepHistoryPoint {
  trial: number;
  value: number;
  /**
   * the best value of this objective among the trials so far
   */
  best: number;
}
/**
 * How much each parameter matters to one objective (eta squared of its final values).
 *
 * `jupyter_px.sweeps.view_model.Importance`
 */
export interface ISweepImportance {
  objective: string;
  evaluator: string;
  /**
   * each parameter's eta squared (0..1, most important first): the share of the objective's variance its values alone explain; read each on its own, they need not add up to 1
   */
  params: {
    [k: string]: number;
  };
}
/**
 * A line per complete trial across its parameters and the objective (the axes below).
 *
 * `jupyter_px.sweeps.view_model.ParallelCoordinates`
 */
export interface ISweepParallel {
  trials: number[];
  axes: ISweepAxis[];
  /**
   * the objective the lines are colored by
   */
  color: string;
}
/**
 * One axis of the parallel coordinates: a parameter's or an objective's value per trial.
 *
 * `jupyter_px.sweeps.view_model.Axis`
 */
export interface ISweepAxis {
  name: string;
  role: 'param' | 'objective';
  categorical: boolean;
  /**
   * a categorical axis' labels; values index them
   */
  categories: string[] | null;
  log: boolean;
  /**
   * one per trial of `ParallelCoordinates.trials`
   */
  values: number[];
  range: [number, number] | null;
}
/**
 * One parameter against the objective: a point per complete trial.
 *
 * `jupyter_px.sweeps.view_model.Slice`
 */
export interface ISweepSlice {
  param: string;
  objective: string;
  categorical: boolean;
  categories: string[] | null;
  log: boolean;
  trials: number[];
  /**
   * the parameter's value (a category's index when categorical)
   */
  x: number[];
  /**
   * the objective's value
   */
  y: number[];
}
/**
 * Two parameters against the objective: the trials as points and the objective interpolated on a grid.
 *
 * `jupyter_px.sweeps.view_model.Contour`
 */
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
  /**
   * 24 positions along x (log-spaced on a log axis); a categorical axis: its categories' indices
   */
  grid_x: number[];
  grid_y: number[];
  /**
   * the objective interpolated at (grid_x[j], grid_y[i]): z[i][j]
   */
  grid_z: number[][];
}
/**
 * The trials no other trial beats on every objective, among all complete ones.
 *
 * `jupyter_px.sweeps.view_model.ParetoFront`
 */
export interface ISweepParetoFront {
  objectives: ISweepObjectiveView[];
  /**
   * the trials on the front
   */
  front: number[];
  /**
   * every complete trial
   */
  points: ISweepParetoPoint[];
}
/**
 * One complete trial of a sweep with several objectives, and whether nothing beats it on all.
 *
 * `jupyter_px.sweeps.view_model.ParetoPoint`
 */
export interface ISweepParetoPoint {
  trial: number;
  /**
   * one per objective, in the order of `objectives`
   */
  values: number[];
  on_front: boolean;
}
/**
 * One metric the trials logged: a line per trial by step (the chief's points).
 *
 * `jupyter_px.sweeps.view_model.MetricCurves`
 */
export interface ISweepMetricCurves {
  name: string;
  trials: ISweepTrialCurve[];
}
/**
 * One trial's points of a metric, by step (its chief's).
 *
 * `jupyter_px.sweeps.view_model.TrialCurve`
 */
export interface ISweepTrialCurve {
  trial: number;
  steps: number[];
  values: number[];
}
/**
 * Every tuning view's figure, by view (`SweepViewModel.missing` says why one is absent).
 *
 * `jupyter_px.presentation.sweep_figures.SweepFigures`
 */
export interface ISweepFigures {
  pareto: IPlotlyFigure | null;
  /**
   * one per objective
   */
  history: IPlotlyFigure[];
  /**
   * one per objective
   */
  importance: IPlotlyFigure[];
  parallel: IPlotlyFigure | null;
  contour: IPlotlyFigure | null;
  slices: IPlotlyFigure | null;
  /**
   * a sweep without an objective: one per logged metric, a line per trial
   */
  metrics: IPlotlyFigure[];
}
