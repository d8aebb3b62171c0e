"""A native run's pods as rendered, kept for its next attempts (`termination.max_retries`).

A native run has no operator to make its pods again: when its follower starts the whole gang again
(`follower/gang_restart.py`), it creates the pods the submit rendered (`native/backend.py` keeps
them), from this file, each
labelled with its attempt and told it in its environment. JobSet does the same for its child Jobs
(jobset v0.8.0, pkg/controllers/jobset_controller.go: a failed Job with restarts left deletes
every child Job, and the next ones carry `jobset.sigs.k8s.io/restart-attempt`), Kubeflow's
PyTorchJob recreates a failed pod with its replica's template. Only runs that may be retried keep
the file: a pod is O(1) in size (the addresses are in the ConfigMap), the file O(replicas).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from ....runstore import atomic_write_json
from .names import LABEL_RUN

#: The run directory's file of the pods to create again for a next attempt.
PODS_FILE = "kubernetes-pods.json"
#: The label of a pod made for attempt N (absent on the first attempt's pods).
LABEL_ATTEMPT = "px.jupyter.org/attempt"
#: What a replica is told of its attempt (the local backend's `attempts.ATTEMPT_ENV`).
ATTEMPT_ENV = "PX_ATTEMPT"


def keep_pods(run_dir: Path, objects: list[dict[str, Any]]) -> None:
    """Keep the run's pods as rendered (before any create: a run is either retried from them or
    not retried at all)."""
    atomic_write_json(run_dir / PODS_FILE, [o for o in objects if o["kind"] == "Pod"])


def pods_for_attempt(run_dir: Path, attempt: int, env: dict[str, str]) -> list[dict[str, Any]]:
    """The run's pods for `attempt`: labelled with it, and with `env` (the attempt, the
    checkpoint step to resume at) in every container's environment."""
    pods = json.loads((run_dir / PODS_FILE).read_text())
    out = []
    for rendered in pods:
        pod = copy.deepcopy(rendered)
        labels = pod["metadata"].setdefault("labels", {})
        assert LABEL_RUN in labels, "a run's pod without the run's label"
        labels[LABEL_ATTEMPT] = str(attempt)
        for container in pod["spec"].get("containers", []):
            kept = [e for e in container.get("env", []) if e.get("name") not in env]
            container["env"] = kept + [{"name": name, "value": value} for name, value in env.items()]
        out.append(pod)
    return out
