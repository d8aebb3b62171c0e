"""`jupyter px kill RUN worker-1` on Kubernetes: one replica ended on purpose, as a crash would.

An exec in the replica's pod runs `processes/replica_kill.py`, which signals the replica's process
(found by the pid it wrote beside its stack dumps, as `jupyter px stacks` finds it). The pod entry
keeps the runner off pid 1 (`pod/entry.stay_first`), so the signal takes, and the container ends
as it would on that crash: exit code 128 + the signal, its reason the kubelet's. What follows is
the run's: the follower records the failure, the operator applies its restart policy.

The pod asked first is the one whose labels say it is the replica (`replica_pods.py`); a replica
that lives elsewhere (an MPI rank on a worker pod) is found by asking the others in turn.

Where the replica's process is not its container's (an elastic PyTorchJob: torchrun's agent is,
and starts its training again in the same container), nothing the kubelet reports says which
replica failed; each kill is kept in the run's `kills.jsonl` (`record_kill`), which the follower
reads to name it (`follower/elastic_rounds.py`).
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

from ....processes.replica_kill import answer_of
from ....topology import Topology
from ...base import BackendError
from .client import Cluster
from .handle import RunHandle
from .payload import STACKS_DIR
from .pod_exec import ExecFailed, run_program, running_pods
from .replica_pods import replica_pods

#: The killing program, as shipped in the run's ConfigMap (`payload.py`).
REPLICA_KILL = "processes/replica_kill.py"
#: The kills of a run's replicas on request, one JSON line each (`{"time", "replica", "signal"}`).
KILLS_FILE = "kills.jsonl"
#: An exec that has not answered by then is given up.
EXEC_TIMEOUT_S = 30.0


def kill_replica(
    cluster: Cluster, handle: RunHandle, topology: Topology, run_id: str, role: str, index: int, signum: int
) -> str:
    """Signal replica `role`-`index` in its pod; what was done, in words. BackendError when no
    running pod has it or it cannot be signalled."""
    key = f"{role}-{index}"
    mapping = replica_pods(handle.backend)
    pods = sorted(running_pods(cluster, handle), key=lambda pod: mapping.replica_of(pod, topology) != (role, index))
    problems = []
    for pod in pods:
        name = pod["metadata"]["name"]
        try:
            out, err, code = run_program(
                cluster.api.configuration,
                handle.namespace,
                pod,
                REPLICA_KILL,
                STACKS_DIR,
                key,
                str(signum),
                timeout=EXEC_TIMEOUT_S,
            )
        except ExecFailed as error:
            problems.append(str(error))
            continue
        answer = answer_of(out)  # a kill that ends the container may end its exec too: said before
        if answer is None:
            said = (err or out or "").strip().splitlines()
            problems.append(f"pod {name}: exit {code}: {said[-1] if said else 'no answer'}")
        elif "failed" in answer:
            raise BackendError(f"{answer['failed']} (pod {name})")
        elif "pid" in answer:
            sent = answer.get("signal") or signal.Signals(signum).name
            return f"sent {sent} to {key} of run {run_id} (pod {name}, pid {answer['pid']})"
    if not pods:
        raise BackendError(f"run {run_id} has no running pod")
    raise BackendError(f"no running pod of run {run_id} has {key}" + (f": {'; '.join(problems)}" if problems else ""))


def record_kill(run_dir: Path, role: str, index: int, signum: int) -> None:
    """Keep that replica `role`-`index` was sent `signum` now, in the run's `kills.jsonl`."""
    line = {"time": time.time(), "replica": f"{role}-{index}", "signal": signal.Signals(signum).name}
    with open(run_dir / KILLS_FILE, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")


def kills_between(run_dir: Path, after: float | None, before: float) -> list[dict[str, Any]]:
    """The kills `record_kill` kept from `after` (None: any time) to `before`, oldest first."""
    try:
        lines = (run_dir / KILLS_FILE).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    kills = []
    for line in lines:
        try:
            kill = json.loads(line)
            when = float(kill["time"])
        except (ValueError, KeyError, TypeError):
            continue
        if (after is None or when >= after) and when <= before:
            kills.append(kill)
    return kills
