"""The first thing every pod runs: `python /px/app/lib/px_entry.py /px/app/run`.

Shipped in the run's ConfigMap next to `jupyter_px/runner.py` and `jupyter_px/tracking.py`, so
the image needs Python and the framework, not jupyter_px. Standard library only.

It completes the environment contract where the pod template cannot, because one template is
shared by many replicas (Kubeflow replica specs, Trainer v2 nodes), then hands over to the runner:

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
import sys


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


def prepare(env: dict[str, str]) -> dict[str, str]:
    """Complete `env` in place (and return it): the replica's identity and paths."""
    if env.get("PX_TASK_INDEX_OFFSET"):  # a replica spec holding a role's later indices (kubeflow)
        env["PX_TASK_INDEX"] = str(int(env.get("PX_TASK_INDEX") or 0) + int(env.pop("PX_TASK_INDEX_OFFSET")))
    if env.get("PX_NODE_ROLES"):
        _node_identity(env)
    if env.get("OMPI_COMM_WORLD_RANK") is not None and env.get("PX_FRAMEWORK") in ("horovod", "mpi"):
        _mpi_rank_identity(env)
    if env.get("PX_SHARED_RUN_DIR"):
        _shared_paths(env)
    return env


def main() -> None:
    lib = os.path.dirname(os.path.abspath(__file__))
    if lib not in sys.path:
        sys.path.insert(0, lib)
    prepare(os.environ)  # type: ignore[arg-type]
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [lib, os.environ.get("PYTHONPATH")]))
    from jupyter_px import runner

    runner.main(sys.argv[1:])


if __name__ == "__main__":
    main()
