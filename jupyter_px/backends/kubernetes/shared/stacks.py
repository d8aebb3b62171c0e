"""A Kubernetes run's stacks (`jupyter_px.diagnostics`): asked inside each running pod.

A pod's replica writes its stack dumps on the pod's own volume (its run directory is the read-only
ConfigMap; `PX_STACKS_DIR` in its environment says where: `payload.STACKS_DIR`), so they are asked
for where they are, as `kubectl exec POD -- python .../stack_request.py DIR` would: the exec
signals every armed process of the pod and prints what each dump added
(`diagnostics/stack_request.py`, by `pod_exec.py`). Every running pod of the run is asked at once
(a few threads). The answers become one snapshot, kept in the
run directory, with the frames the pods saw under their mounted run directory read as the run's
own code here (`taking.keep_snapshot`). Asked for by `jupyter px stacks`
(`KubernetesBackend.stacks`) and by the follower when a stall begins.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubernetes import client

from ....diagnostics import taking
from ....diagnostics.dump_collect import WAIT_S
from ....diagnostics.stall_stacks import Take
from .client import Cluster
from .handle import RunHandle
from .payload import RUN_DIR, STACKS_DIR
from .pod_exec import ExecFailed, run_program, running_pods

#: The asking program, as shipped in the run's ConfigMap (`payload.py`).
STACK_REQUEST = "diagnostics/stack_request.py"
#: An exec that has not answered by then (the dumps' own wait, plus the exec's start) is given up.
EXEC_TIMEOUT_S = WAIT_S + 20.0


def _ask(configuration: client.Configuration, namespace: str, pod: dict[str, Any]) -> dict[str, Any]:
    """One pod's answer (`stack_request.py`'s JSON), or `{"failed": why}`."""
    try:
        out, err, code = run_program(configuration, namespace, pod, STACK_REQUEST, STACKS_DIR, timeout=EXEC_TIMEOUT_S)
    except ExecFailed as error:  # that pod's answer
        return {"failed": str(error)}
    try:
        return json.loads(out)
    except ValueError:
        said = (err or out or "").strip().splitlines()
        name = pod["metadata"]["name"]
        return {"failed": f"pod {name} gave no stacks (exit {code}): {said[-1] if said else 'no output'}"}


def take_stacks(
    cluster: Cluster,
    handle: RunHandle,
    run_dir: Path,
    run_id: str,
    targets: Mapping[str, int | None],
    why: str = "on request",
) -> dict[str, Any]:
    """Ask every running pod of the run for its replicas' stacks; the snapshot of `targets`
    (replica key -> pid, as the status knows it), kept in the run directory."""
    taken_at = time.time()
    texts, errors = taking.ask_all(
        running_pods(cluster, handle),
        lambda pod: _ask(cluster.api.configuration, handle.namespace, pod),
        targets,
        "no stack: no running pod of the run answered for it",
    )
    return taking.keep_snapshot(
        run_dir.resolve(), run_id, targets, texts, errors, why=why, taken_at=taken_at, moved_from=RUN_DIR
    )


def stacks_taker(cluster: Cluster, handle: RunHandle, run_dir: Path, run_id: str) -> Take:
    """`take_stacks` for this run, as its follower takes them when a stall begins."""
    return lambda targets, why: take_stacks(cluster, handle, run_dir, run_id, targets, why)
