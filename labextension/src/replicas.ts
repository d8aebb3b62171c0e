/** Pure presentation of a run's replicas: which one to read, how its tab is labelled. */
import { masterName } from './roles';
import type { IReplica } from './types';

/** States of a replica that failed (the one to read). */
const FAILED = new Set(['Failed', 'Lost']);

/**
 * A replica as the job calls it, one name everywhere: "worker-1", "chief" (the CLI, the
 * notebook, the run view, the logs' tabs and the failure line alike; never also "worker 1").
 * The server's `label` when it sent one, else the rule from the topology (`master` is "chief"
 * in a TensorFlow job unless its topology asks for `master`).
 */
export function replicaName(
  replica: IReplica,
  topology: { [key: string]: any } = {}
): string {
  if (replica.label) {
    return replica.label;
  }
  if (replica.role === 'master' && masterName(topology) === 'chief') {
    return replica.index === 0 ? 'chief' : `chief-${replica.index}`;
  }
  return `${replica.role}-${replica.index}`;
}

/** A replica's tab label: "worker 1 · Failed", "chief · Running". */
export function replicaTabLabel(
  replica: IReplica,
  topology: { [key: string]: any } = {}
): string {
  return `${replicaName(replica, topology)} · ${replica.state}`;
}

/**
 * The replica a run's Logs open on: the first failed one (the one to read when a run fails),
 * else the first that exited with an error without being stopped, else the first replica. A
 * replica the run stopped because another failed (SIGTERM, exit 143) is not the one to read.
 */
export function replicaToOpen(replicas: IReplica[]): number {
  const failed = replicas.findIndex(replica => FAILED.has(replica.state));
  if (failed >= 0) {
    return failed;
  }
  const errored = replicas.findIndex(
    replica =>
      replica.state !== 'Stopped' &&
      replica.exit_code !== null &&
      replica.exit_code !== 0
  );
  return Math.max(0, errored);
}
