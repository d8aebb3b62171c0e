import { requestAPI } from './request';
import type {
  ICompareRequest,
  ICompareTensorBoardRequest,
  IComparison,
  IKillRequest,
  ILogChunk,
  IMetricsUpdate,
  IRenderRequest,
  IRendered,
  IReplicaKilled,
  IRunDeleted,
  IRunDetail,
  IRunsPage,
  IRunViewModel,
  IStacksSnapshot,
  ISubmission,
  ISweep,
  ISweepsPage,
  ISweepView,
  ITensorBoard,
  ITensorBoardRequest,
  IValidation
} from './types';

/** Typed calls to `px/api/...`; every UI part goes through these. */

const json = (body: unknown): RequestInit => ({
  method: 'POST',
  body: JSON.stringify(body),
  headers: { 'Content-Type': 'application/json' }
});

const run = (runId: string, ...rest: string[]): string =>
  ['runs', encodeURIComponent(runId), ...rest].join('/');

export async function topologySchema(): Promise<{ [key: string]: any }> {
  return (await requestAPI<{ [key: string]: any }>('topology/schema')).data!;
}

export async function validateTopology(
  topology: { [key: string]: any } | string
): Promise<IValidation> {
  return (
    await requestAPI<IValidation>('topology/validate', json({ topology }))
  ).data!;
}

/** The Kubernetes objects a run would create (nothing is contacted). */
export async function renderTopology(body: IRenderRequest): Promise<IRendered> {
  return (await requestAPI<IRendered>('topology/render', json(body))).data!;
}

/**
 * One page of the runs list; `null` when the server says nothing changed since `etag`.
 */
export async function listRuns(
  limit: number,
  etag: string | null,
  offset = 0
): Promise<{ page: IRunsPage; etag: string | null } | null> {
  const init: RequestInit = etag ? { headers: { 'If-None-Match': etag } } : {};
  const response = await requestAPI<IRunsPage>(
    `runs?limit=${limit}&offset=${offset}`,
    init
  );
  if (response.status === 304) {
    return null;
  }
  return { page: response.data!, etag: response.etag };
}

/**
 * Submit the code with a topology: the server starts one run, or a sweep when the topology has a
 * sweep section (`hptuning:` or `matrix:`), and answers with what it started.
 */
export async function submitRun(
  body: ISubmission
): Promise<IRunDetail | ISweep> {
  return (await requestAPI<IRunDetail | ISweep>('runs', json(body))).data!;
}

/** Whether a submission started a sweep (its topology had a sweep section). */
export function isSweep(started: IRunDetail | ISweep): started is ISweep {
  return !('run_id' in started);
}

export async function getRun(runId: string): Promise<IRunDetail> {
  return (await requestAPI<IRunDetail>(run(runId))).data!;
}

/** The run as every view shows it: states, replicas, progress, pace, failure, changes. */
export async function getRunView(runId: string): Promise<IRunViewModel> {
  return (await requestAPI<IRunViewModel>(run(runId, 'view'))).data!;
}

/** The newest stacks snapshot kept in the run (taken on request or on a stall); 404 when none. */
export async function getStacks(runId: string): Promise<IStacksSnapshot> {
  return (await requestAPI<IStacksSnapshot>(run(runId, 'stacks'))).data!;
}

/** Every live replica's stacks, taken now and kept (a finished run answers its newest kept). */
export async function takeStacks(runId: string): Promise<IStacksSnapshot> {
  return (
    await requestAPI<IStacksSnapshot>(run(runId, 'stacks'), { method: 'POST' })
  ).data!;
}

/** End one running replica on purpose, as a crash would (`jupyter px kill`); what was signalled. */
export async function killReplica(
  runId: string,
  replica: string,
  body: IKillRequest
): Promise<IReplicaKilled> {
  return (
    await requestAPI<IReplicaKilled>(
      run(runId, 'replicas', encodeURIComponent(replica), 'kill'),
      json(body)
    )
  ).data!;
}

export async function stopRun(runId: string): Promise<IRunDetail> {
  return (await requestAPI<IRunDetail>(run(runId), { method: 'DELETE' })).data!;
}

export async function readLog(
  runId: string,
  role: string,
  index: number,
  offset: number
): Promise<ILogChunk> {
  const query = `?role=${encodeURIComponent(role)}&index=${index}&offset=${offset}`;
  return (await requestAPI<ILogChunk>(run(runId, 'logs') + query)).data!;
}

/** Points after `since`: the `cursor` of the last answer, sent back as it came (null: all). */
export async function readMetrics(
  runId: string,
  since: string | null
): Promise<IMetricsUpdate> {
  const query = since === null ? '' : `?since=${encodeURIComponent(since)}`;
  return (await requestAPI<IMetricsUpdate>(run(runId, 'metrics') + query))
    .data!;
}

/** One TensorBoard for `runId` and the runs of `body.also` (started, or reused). */
export async function startTensorBoard(
  runId: string,
  body: ITensorBoardRequest = {}
): Promise<ITensorBoard> {
  return (await requestAPI<ITensorBoard>(run(runId, 'tensorboard'), json(body)))
    .data!;
}

/** Remove a finished run's directory (409 while it runs: stop it first). */
export async function deleteRun(runId: string): Promise<IRunDeleted> {
  return (
    await requestAPI<IRunDeleted>(run(runId, 'directory'), {
      method: 'DELETE'
    })
  ).data!;
}

/** Runs side by side: downsampled curves per metric and the table (`POST compare`). */
export async function compareRuns(body: ICompareRequest): Promise<IComparison> {
  return (await requestAPI<IComparison>('compare', json(body))).data!;
}

/** One TensorBoard over several runs (`POST compare/tensorboard`). */
export async function startCompareTensorBoard(
  body: ICompareTensorBoardRequest
): Promise<ITensorBoard> {
  return (await requestAPI<ITensorBoard>('compare/tensorboard', json(body)))
    .data!;
}

/** The sweeps, newest first, each with its trials (the runs list groups trials under them). */
export async function listSweeps(): Promise<ISweepsPage> {
  return (await requestAPI<ISweepsPage>('sweeps?trials=true')).data!;
}

/** One sweep with its trials (`GET sweeps/<ref>`). */
export async function getSweep(sweepId: string): Promise<ISweep> {
  return (await requestAPI<ISweep>(`sweeps/${encodeURIComponent(sweepId)}`))
    .data!;
}

/** What a tuner looks at (`GET sweeps/<ref>/view`): history, importance, parallel coordinates,
 * slices, a contour, the Pareto front, and why any of them is missing. */
export async function getSweepView(sweepId: string): Promise<ISweepView> {
  return (
    await requestAPI<ISweepView>(`sweeps/${encodeURIComponent(sweepId)}/view`)
  ).data!;
}

/** Stop a sweep: its running trials (each whole run), then its controller. */
export async function stopSweep(sweepId: string): Promise<ISweep> {
  return (
    await requestAPI<ISweep>(`sweeps/${encodeURIComponent(sweepId)}`, {
      method: 'DELETE'
    })
  ).data!;
}
