"""The first thing every pod runs: `python /px/app/lib/px_entry.py /px/app/run`.

Shipped in the run's ConfigMap next to `jupyter_px/runner.py` and `jupyter_px/tracking/`, so
the image needs Python and the framework, not jupyter_px. Standard library only.

It completes the environment contract, then hands over to the runner:

* The cluster (`run/cluster.json`, written once per run into the ConfigMap by `cluster_file.py`):
  every replica's address, described by pattern (`<prefix><index><suffix>` per role), so a pod
  carries O(1) bytes whatever the worker count (TF_CONFIG and PX_CLUSTER hold every address: in
  the pod template they made a 1,000-worker pod 60-110 KB, and Linux refuses one environment
  string over 128 KiB). On `native` (`"contract": "full"`) the whole contract (TF_CONFIG,
  MASTER_ADDR/RANK/WORLD_SIZE, DMLC_*, PX_*) is built here by `jupyter_px/cluster.py`, the code
  the local backend runs; on the operators' backends (`"px"`) only PX_CLUSTER: the operator
  writes the framework's variables. They are set in this process, which then runs the runner
  (no exec), so their size is not limited here; a process started from here with this
  environment inherits them, and Linux refuses that exec when one is over 128 KiB (PX_CLUSTER of
  a run of some 4,000 replicas): the runner's local ranks (processes_per_replica > 1) are one.

Where it is its container's first process (pid 1, in every real container), it stays first and
runs the runner as its child (`stay_first`): a first process ignores the signals it has no handler
for when they come from inside its container, so the runner must not be it.

Where the pod template cannot say it, because one template is shared by many replicas (Kubeflow
replica specs, Trainer v2 nodes):

* Trainer v2 (`PX_NODE_ROLES` set): the node's rank (`PET_NODE_RANK`, else the Indexed Job's
  `JOB_COMPLETION_INDEX`) says which of our replicas this pod is; PyTorch gets
  MASTER_ADDR/MASTER_PORT/WORLD_SIZE/RANK from the PET_* variables the runtime sets.
* An MPI rank started by the launcher's `mpirun` (`OMPI_COMM_WORLD_RANK` set): it is worker
  `rank // slots`, so its log lines and metrics are its own.
* A shared volume (`PX_SHARED_RUN_DIR`): the replica's metrics, params, TensorBoard and outputs
  paths under it, so tracking writes files there instead of `@px-metrics` log lines.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

#: The cluster description's file in the run directory (ConfigMap key `run.cluster.json`).
CLUSTER_FILE = "cluster.json"


def _node_identity(env: dict[str, str]) -> None:
    roles = json.loads(env["PX_NODE_ROLES"])  # [[role, count], ...] in rank order
    rank = int(env.get("PET_NODE_RANK") or env.get("JOB_COMPLETION_INDEX") or 0)
    left = rank
    for role, count in roles:
        if left < count:
            env["PX_TASK_TYPE"], env["PX_TASK_INDEX"] = role, str(left)
            break
        left -= count
    if env.get("PX_FRAMEWORK") == "pytorch":
        nodes = sum(count for _, count in roles)
        env.setdefault("RANK", str(rank))
        env.setdefault("WORLD_SIZE", env.get("PET_NNODES") or str(nodes))
        if env.get("PET_MASTER_ADDR"):
            env.setdefault("MASTER_ADDR", env["PET_MASTER_ADDR"])
        if env.get("PET_MASTER_PORT"):
            env.setdefault("MASTER_PORT", env["PET_MASTER_PORT"])


def _mpi_rank_identity(env: dict[str, str]) -> None:
    slots = max(1, int(env.get("PX_MPI_SLOTS") or 1))
    env["PX_TASK_TYPE"] = "worker"
    env["PX_TASK_INDEX"] = str(int(env["OMPI_COMM_WORLD_RANK"]) // slots)


def _shared_paths(env: dict[str, str]) -> None:
    root = env["PX_SHARED_RUN_DIR"]
    key = f"{env.get('PX_TASK_TYPE', 'master')}-{env.get('PX_TASK_INDEX', '0')}"
    env.setdefault("PX_METRICS_PATH", os.path.join(root, "metrics", f"{key}.jsonl"))
    env.setdefault("PX_PARAMS_PATH", os.path.join(root, "params", f"{key}.json"))
    env.setdefault("PX_TENSORBOARD_PATH", os.path.join(root, "tensorboard", key))
    env.setdefault("PX_OUTPUTS_PATH", os.path.join(root, "outputs"))
    for directory in ("metrics", "params", "tensorboard", "outputs"):
        os.makedirs(os.path.join(root, directory), exist_ok=True)


def expand_addresses(description: dict[str, Any]) -> dict[str, list[str]]:
    """{role: ["host:port", ...]} from the description's roles, in their order (PX_CLUSTER's)."""
    out: dict[str, list[str]] = {}
    for entry in description["roles"]:
        if "addresses" in entry:
            out[entry["role"]] = list(entry["addresses"])
        else:
            prefix, first, suffix = entry["prefix"], entry["first"], entry["suffix"]
            out[entry["role"]] = [f"{prefix}{first + i}{suffix}" for i in range(entry["count"])]
    return out


class _Attributes:
    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)


class ClusterShape:
    """The part of a Topology that `cluster.ClusterEnv` reads, from the cluster description (the
    pod has no pydantic and no topology package). The replicas' own `env` is already in the pod's
    environment, so `replica(...).env` is empty here."""

    def __init__(self, description: dict[str, Any]) -> None:
        self.framework = description["framework"]
        self._counts = {entry["role"]: entry["count"] for entry in description["roles"]}
        self.environment = _Attributes(
            tf_master_type=description["tf_master_type"],
            processes_per_replica=description["processes_per_replica"],
        )
        self.replicas_section = _Attributes(n_masters=self._counts.get("master", 0))

    def counts(self) -> dict[str, int]:
        return dict(self._counts)

    def total_replicas(self) -> int:
        return sum(self._counts.values())

    def replica(self, role: str, index: int) -> _Attributes:
        return _Attributes(env={})


def cluster_contract(description: dict[str, Any], env: dict[str, str]) -> dict[str, str]:
    """The variables this replica gets from the cluster description (see the module's docstring)."""
    addresses = expand_addresses(description)
    if description["contract"] != "full":
        return {"PX_CLUSTER": json.dumps(addresses, separators=(",", ":"))}
    from jupyter_px.cluster import ClusterEnv

    shape: Any = ClusterShape(description)
    role, index = env["PX_TASK_TYPE"], int(env["PX_TASK_INDEX"])
    return ClusterEnv(shape, description["run_id"], addresses).for_replica(role, index)


def _cluster(env: dict[str, str], run_dir: str) -> None:
    path = os.path.join(run_dir, CLUSTER_FILE)
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as file:
        description = json.load(file)
    env.update(cluster_contract(description, env))


def prepare(env: dict[str, str], run_dir: str | None = None) -> dict[str, str]:
    """Complete `env` in place (and return it): the cluster, the replica's identity and paths.
    `run_dir`: the mounted run directory holding `cluster.json` (none: no cluster variables)."""
    if env.get("PX_TASK_INDEX_OFFSET"):  # a replica spec holding a role's later indices (kubeflow)
        env["PX_TASK_INDEX"] = str(int(env.get("PX_TASK_INDEX") or 0) + int(env.pop("PX_TASK_INDEX_OFFSET")))
    if env.get("PX_NODE_ROLES"):
        _node_identity(env)
    if env.get("OMPI_COMM_WORLD_RANK") is not None and env.get("PX_FRAMEWORK") in ("horovod", "mpi"):
        _mpi_rank_identity(env)
    if run_dir is not None:
        _cluster(env, run_dir)
    if env.get("PX_SHARED_RUN_DIR"):
        _shared_paths(env)
    return env


#: What the first process of a container passes on to the runner (the kubelet's stop is SIGTERM).
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def stay_first() -> None:
    """Where this is its container's first process (pid 1), stay so, as tini does, and return in
    a child that goes on to run the runner. A container's first process ignores every signal it
    has no handler for when it comes from inside the container, SIGKILL included (pid_namespaces(7)),
    so a replica that were pid 1 could not be ended by `jupyter px kill` (an exec in the pod) nor
    answer a SIGSEGV as a crash. The first process passes the usual signals on, reaps every orphan,
    and ends as the runner did: its exit code, or 128 + the signal that ended it, as a shell does,
    which the runtime reports as it would the runner's own. Elsewhere (an MPI rank, a test) this
    does nothing."""
    if os.getpid() != 1:
        return
    child = os.fork()
    if child == 0:
        return
    for signum in FORWARDED:
        signal.signal(signum, lambda s, _f: os.kill(child, s))
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(1)
        if pid == child:
            break
    sys.stdout.flush()
    os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status))


def main() -> None:
    lib = os.path.dirname(os.path.abspath(__file__))
    if lib not in sys.path:
        sys.path.insert(0, lib)
    prepare(os.environ, sys.argv[1] if len(sys.argv) > 1 else None)  # type: ignore[arg-type]
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [lib, os.environ.get("PYTHONPATH")]))
    stay_first()
    from jupyter_px import runner

    runner.main(sys.argv[1:])


if __name__ == "__main__":
    main()
