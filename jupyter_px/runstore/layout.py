"""Where things live in a run directory.

One module owns the on-disk layout so that the backends (which write), the training code's
tracking API (which writes metrics from inside a replica) and every reader (magics, widgets,
REST API, CLI) agree on paths without importing each other.

    $PX_HOME/runs/<run-id>/
        record.json                 what was submitted: topology, code, backend, who/when, versions
        result.key                  the secret that authenticates the replicas' results (0600)
        status.json                 overall state + one entry per replica
        code/                       the code that every replica runs
        logs/<role>-<index>.log     stdout+stderr of a replica, appended across restarts
        metrics/<role>-<index>.jsonl   one JSON object per log_metrics call
        metrics/<role>-<index>.rank<k>.jsonl   the same, from process k > 0 of the replica
        params/<role>-<index>.json  log_params values (params/<role>-<index>.rank<k>.json likewise)
        outputs/                    PX_OUTPUTS_PATH
        tensorboard/<role>-<index>/ PX_TENSORBOARD_PATH (event files; one TensorBoard "run" per replica)
        tensorboard/<role>-<index>/rank<k>/   tracking's event files of process k > 0
        rounds.jsonl                the groups torchrun formed in an elastic PyTorchJob's pods
        kills.jsonl                 replicas `jupyter px kill` signalled in their pods (Kubernetes)

A replica with `processes_per_replica > 1` runs several processes that share the replica's
PX_METRICS_PATH and PX_PARAMS_PATH. Appending to one file from several processes would
interleave their series, and params are a read-modify-write, so each process writes its own
files: process 0 the replica's, process k the `.rank<k>` siblings (`process_file`). Readers show
each process as its own series, keyed `<role>-<index>.rank<k>`.

This module is imported inside every replica (by `jupyter_px.tracking`): standard library only.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

#: Environment variable that moves the whole store (tests and multi-user machines set it).
PX_HOME_ENV = "PX_HOME"

#: Run ids are used in paths, URLs and Kubernetes names: lowercase DNS-label-ish, no dots or slashes.
RUN_ID_PATTERN = re.compile(r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$")

#: Role names that may appear in file names.
ROLE_PATTERN = re.compile(r"^[a-z]{1,16}$")

#: Suffix of the event files written by `jupyter_px.tracking` (TensorBoard reads any name
#: containing "tfevents"); the metrics reader skips these because the same points are in the JSONL.
EVENTS_FILE_SUFFIX = ".px"

#: Log-stream markers used where there is no shared disk (one JSON object after the marker).
METRICS_LOG_PREFIX = "@px-metrics "
PARAMS_LOG_PREFIX = "@px-params "
#: A replica's failure records (`code/source_map.py`: what its code raised, and where), one file
#: per process under the run directory.
FAILURES_DIR = "failures"
#: A failure record that could not be written to the store (a pod's read-only run directory)
#: travels in the log after this marker.
FAILURE_LOG_PREFIX = "@px-failure "
#: Rank 0 of a group torchrun's elastic agents formed says the group's start after this marker
#: (`{"time", "nodes", "world"}`, `runner._say_round`); each becomes a line of the run's `rounds`.
ROUND_LOG_PREFIX = "@px-round "

#: A run's record: written once, at creation; its mtime orders runs (`RunStore.run_ids`).
RECORD_FILE = "record.json"

#: The run's secret (64 hex digits, mode 0600), written at creation: the replicas' runner signs
#: every result it keeps with it and the submitter verifies them (`jupyter_px.code.function_calls`).
RESULT_KEY_FILE = "result.key"

#: `worker-0.rank1.jsonl`: the infix of a replica's process k > 0 in metrics and params names.
PROCESS_INFIX = ".rank"
#: `worker-0.system.jsonl`: the replica's system metrics (`system/...`), written by whoever owns the
#: replica (the local supervisor), beside the file its own tracking writes; read as the same replica.
SYSTEM_INFIX = ".system"
#: The names of those metrics begin so: sampled by the replica's owner, not logged by its code.
SYSTEM_METRICS = "system/"


def logged_by_the_code(metric: str) -> bool:
    """Whether the training code logged `metric` (not one of the `system/` metrics its owner
    samples): what "every metric" means where a user's metrics are drawn (a sweep's per-trial
    charts, the live plot, `%px_plot`, a cell's changes) and what a replica's pace is read from."""
    return not metric.startswith(SYSTEM_METRICS)


def metrics_series_key(file_name: str) -> str:
    """The series key of a metrics file: `worker-0.rank1` for `worker-0.rank1.jsonl`, and the
    replica's own key for its system metrics (`worker-0.system.jsonl` -> `worker-0`)."""
    stem = file_name[: -len(".jsonl")] if file_name.endswith(".jsonl") else file_name
    return stem.removesuffix(SYSTEM_INFIX)


class InvalidRunId(ValueError):
    """A run id that could escape the store or break a URL or a Kubernetes name."""


def px_home() -> Path:
    """The store's root: `$PX_HOME`, else `~/.jupyter_px`."""
    return Path(os.environ.get(PX_HOME_ENV) or Path.home() / ".jupyter_px").expanduser()


def runs_root(home: Path | None = None) -> Path:
    return (home or px_home()) / "runs"


def validate_run_id(run_id: str) -> str:
    """Return `run_id` if it is safe to use as a directory name, URL segment and k8s name."""
    if not isinstance(run_id, str) or not RUN_ID_PATTERN.match(run_id):
        raise InvalidRunId(
            f"run id {run_id!r} is not valid: use 1-40 lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return run_id


def replica_key(role: str, index: int) -> str:
    """`worker-1`: the name of a replica's log, metrics and tensorboard entries."""
    if not ROLE_PATTERN.match(role) or not isinstance(index, int) or index < 0:
        raise ValueError(f"bad replica {role!r}/{index!r}")
    return f"{role}-{index}"


def process_file(path: str, process: int) -> str:
    """The file that process `process` of a replica writes instead of the replica's `path`:
    `path` itself for process 0, `.../worker-0.rank2.jsonl` for process 2."""
    if process <= 0:
        return path
    head, dot, ext = path.rpartition(".")
    if not dot or "/" in ext:
        return f"{path}{PROCESS_INFIX}{process}"
    return f"{head}{PROCESS_INFIX}{process}.{ext}"


class _InRun:
    """A fixed entry of a run directory, read as an attribute: `paths.status` is `<root>/status.json`."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, paths: RunPaths, owner: type | None = None) -> Path:
        return paths.root / self.name


class RunPaths:
    """The paths of one run directory. Pure: creates nothing."""

    def __init__(self, run_id: str, home: Path | None = None):
        self.run_id = validate_run_id(run_id)
        self.root = runs_root(home) / run_id

    record = _InRun(RECORD_FILE)
    result_key = _InRun(RESULT_KEY_FILE)
    status = _InRun("status.json")
    code_dir = _InRun("code")
    logs_dir = _InRun("logs")
    metrics_dir = _InRun("metrics")
    params_dir = _InRun("params")
    outputs_dir = _InRun("outputs")
    tensorboard_dir = _InRun("tensorboard")
    #: the groups torchrun formed in an elastic PyTorchJob's pods, one JSON line each, oldest first
    rounds = _InRun("rounds.jsonl")

    def log(self, role: str, index: int) -> Path:
        return self.logs_dir / f"{replica_key(role, index)}.log"

    def metrics(self, role: str, index: int) -> Path:
        return self.metrics_dir / f"{replica_key(role, index)}.jsonl"

    def params(self, role: str, index: int) -> Path:
        return self.params_dir / f"{replica_key(role, index)}.json"

    def tensorboard(self, role: str, index: int) -> Path:
        return self.tensorboard_dir / replica_key(role, index)
