"""The API that training code calls from inside a replica.

    from jupyter_px import tracking
    tracking.log_metrics(step=i, total_steps=n, loss=loss.item(), acc=acc)
    tracking.log_params(lr=1e-3, batch_size=64)
    ckpt_dir = tracking.get_outputs_path()
    tracking.save_checkpoint(state, step)    # atomic, per rank, the last 3 kept
    ckpt = tracking.load_checkpoint()        # the newest (after a restart, a promoted trial), or None
    info = tracking.get_task_info()          # run_id, role, index, is_master, cluster

Why it is built this way:

* A training loop calls `log_metrics` once per step, so the call must be far cheaper than a
  TensorBoard writer's `add_scalar`. It only checks the values and appends one tuple to an
  in-memory queue. A daemon thread turns the queue into JSON lines (for the run store) and
  TensorBoard scalar events every `FLUSH_INTERVAL_S`, so a running job shows up in plots and
  in TensorBoard within about a second.
* Writes go in batches of `WRITE_BATCH` points, oldest first, and a point leaves the queue only
  once its line is written: a SIGKILL keeps every batch already written, and a failed write (a
  full disk) keeps the points for the next flush and says so on stderr. The queue holds at most
  `MAX_QUEUED_POINTS`; a loop that logs faster than that can be written loses the newest points,
  and stderr says so once (and how many at exit).
* Each process of a replica (`processes_per_replica > 1`: `LOCAL_RANK`, or the MPI ranks of one
  worker) writes its own metrics and params files (`runstore.layout.process_file`), so processes
  neither interleave series nor lose each other's params.
* Nothing logged may be lost when a replica ends normally: the queue is flushed by `flush()`,
  at interpreter exit, when a multiprocessing child finishes, and on SIGTERM (the local backend
  stops replicas with SIGTERM before SIGKILL; Kubernetes does the same). The SIGTERM handler is
  only installed where nobody else has one, and after flushing it lets the default action kill
  the process, so the exit status stays "killed by SIGTERM". A runner that ends the process with
  `os._exit` must call `flush()` first.
* Where the replica shares a disk with the run store (`PX_METRICS_PATH` set), metrics are
  appended to that JSONL file. Where it does not (Kubernetes), each call becomes one stdout line
  `@px-metrics {json}` that the backend parses back from the log stream
  (`jupyter_px.runstore.log_metrics`).
* Event files are written by `jupyter_px.runstore.event_writer` (the Kubernetes follower's
  writer too): TensorBoard's own record framing and protos, not `EventFileWriter`, which
  imports all of TensorFlow where it is installed (2 s and a GB of memory in every replica).
  Our files end with `EVENTS_FILE_SUFFIX` so readers of the run store can tell them from event
  files the user's own code writes into the same directory.
* Outside a run (no `PX_RUN_ID`) every function works and warns once, so training code can be
  tried in the notebook before it is distributed.

This package holds the public API and its knobs; `values.py` checks what a call passes,
`lines.py` encodes a point as its JSON line, `delivery.py` queues, writes and flushes (the
thread and the exit, signal and fork hooks) through `fd_writes.py`, `notices.py` says what
happened on stderr or as a warning, and `checkpoints.py` saves and loads checkpoints (the
convention a run resumes by, after a gang restart or in a continued sweep trial). All of it is standard library only.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

# The layout module is standard library only (and the runstore package imports nothing heavy
# on its own), so replicas do not load pydantic for it.
from ..runstore.layout import EVENTS_FILE_SUFFIX, METRICS_LOG_PREFIX, PARAMS_LOG_PREFIX
from ..runstore.ledger import ACCEPTED as _ACCEPTED
from . import delivery as _delivery
from .checkpoints import Checkpoint, checkpoint_requested, get_attempt, load_checkpoint, save_checkpoint
from .fd_writes import print_line as _print_line
from .notices import warn_once as _warn_once
from .notices import warn_outside_run as _warn_outside_run
from .values import MAX_STEP as _MAX_STEP
from .values import coerce_count as _coerce_count
from .values import coerce_value as _coerce_value

__all__ = [
    "TaskInfo",
    "log_metrics",
    "log_params",
    "get_outputs_path",
    "get_resume_step",
    "save_checkpoint",
    "load_checkpoint",
    "checkpoint_requested",
    "Checkpoint",
    "get_attempt",
    "get_tensorboard_path",
    "get_task_info",
    "get_params",
    "flush",
    "EVENTS_FILE_SUFFIX",
    "METRICS_LOG_PREFIX",
    "PARAMS_LOG_PREFIX",
]

#: Seconds between background flushes. Tests and tools may change it before the first call.
FLUSH_INTERVAL_S = 0.5

#: Most points held in memory waiting for the writer (a tuple and the call's dict each, about
#: 300 bytes for one metric: 30 MB). A loop that logs faster than the points can be written
#: fills it; further points are then dropped, and stderr says so once.
MAX_QUEUED_POINTS = 100_000

#: Points per write: a flush writes the oldest first, in batches, so what was written before a
#: SIGKILL or a failed write stays written, and a failed batch stays queued for the next flush.
WRITE_BATCH = 8192

# The delivery thread reads the knobs above from this module, whenever it uses them.
_delivery.configure(cast(_delivery.Settings, sys.modules[__name__]))

_FALLBACK_MASTER_ROLE = "worker"


@dataclass(frozen=True)
class TaskInfo:
    """Who this replica is. Outside a run: run_id None, a lone master with an empty cluster."""

    run_id: str | None
    role: str
    index: int
    is_master: bool
    cluster: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)


# ---------------------------------------------------------------------------------------------
# Public API.


def log_metrics(step: int | None = None, total_steps: int | None = None, **values: Any) -> None:
    """Record scalar metrics for `step` (e.g. `log_metrics(step=i, loss=0.31, acc=0.9)`).

    `total_steps`, when given, lets monitors show progress. Values must be real numbers
    (one-element tensors are accepted); a TypeError/ValueError names the offending metric.
    The call only queues the values; they reach the run store and TensorBoard within about
    `FLUSH_INTERVAL_S`, and at the latest when `flush()` runs or the process exits.
    """
    if not values:
        raise ValueError("log_metrics() needs at least one metric, e.g. log_metrics(step=1, loss=0.5)")
    for name in values:
        value = values[name]
        if type(value) is not float:
            values[name] = _coerce_value(name, value)
        if not name:
            raise ValueError("log_metrics: metric names must not be empty")
    if step is not None and (type(step) is not int or not 0 <= step < _MAX_STEP):
        step = _coerce_count("step", step, 0)
    if total_steps is not None:
        total_steps = _coerce_count("total_steps", total_steps, 1)
    tracker = _delivery.tracker or _delivery.current()
    if tracker.run_id is None:
        _warn_outside_run()
        return
    queue = tracker.queue
    if len(queue) < tracker.max_queued:
        tracker.queued_values.append(values)  # first: a flush takes only points with a stamp
        queue.append((step, time.time(), total_steps))
        tracker.counts[_ACCEPTED] += 1  # the ledger: a memory write that survives a SIGKILL
    else:
        tracker.drop()
    if tracker.thread is None:
        tracker.ensure_started()


def log_params(**params: Any) -> None:
    """Record hyper-parameters (JSON values: numbers, strings, booleans, None, lists, dicts).

    Calls merge: a later value replaces an earlier one of the same name. Written at once.
    """
    for name, value in params.items():
        try:
            json.dumps(value, allow_nan=True)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"log_params: param {name!r} must be JSON-serialisable, got {type(value).__name__} {value!r:.80}"
            ) from exc
    tracker = _delivery.current()
    if tracker.run_id is None:
        _warn_outside_run()
        return
    if not params:
        return
    if not tracker.params_path:
        _print_line(f"{PARAMS_LOG_PREFIX}{json.dumps(params, separators=(',', ':'))}\n")
        return
    path = Path(tracker.params_path)
    with tracker.params_lock:
        merged: dict[str, Any] = {}
        try:
            merged = json.loads(path.read_text())
        except FileNotFoundError:
            pass
        except ValueError:
            _warn_once("params-corrupt", f"jupyter_px.tracking: replacing unreadable params file {path}")
        merged.update(params)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".params-", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(merged, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise


_scratch: dict[str, str] = {}


def _path_from_env(var: str, scratch_name: str) -> str:
    path = os.environ.get(var)
    if not path or not os.environ.get("PX_RUN_ID"):
        if os.environ.get("PX_RUN_ID"):
            _warn_once(f"missing-{var}", f"jupyter_px.tracking: {var} is not set; using a temporary directory")
        else:
            _warn_outside_run()
        if scratch_name not in _scratch:
            _scratch[scratch_name] = tempfile.mkdtemp(prefix=f"px-{scratch_name}-")
        return _scratch[scratch_name]
    try:  # made under the run's directory, never in place of it (a deleted run stays deleted)
        os.mkdir(path)
    except FileExistsError:
        pass
    except FileNotFoundError:
        raise FileNotFoundError(
            2, f"{var} is under a folder that no longer exists (was the run deleted?)", path
        ) from None
    return path


def get_outputs_path() -> str:
    """Directory for this run's outputs (checkpoints, exports); created if missing.

    In a run that continues another (a trial a Hyperband sweep with `resume: true` keeps for its
    next rung), the directory holds, on first use, a copy of what the run it continues left in
    its own: save checkpoints here and load them back when `get_resume_step()` says to."""
    path = _path_from_env("PX_OUTPUTS_PATH", "outputs")
    source = os.environ.get("PX_RESUME_FROM")
    if source and os.environ.get("PX_RUN_ID"):
        _resume_outputs(source, path)
    return path


def get_resume_step() -> int | float | None:
    """Where this run starts from: None for a fresh run; in a run that continues a sweep trial
    (Hyperband with `resume: true`, a trial kept for its next rung with more resource), the
    resource the trial's last run reached, its checkpoint's step. The convention is the one of
    every resumed run (`load_checkpoint` finds the last run's checkpoint, copied here):

        ckpt = tracking.load_checkpoint()                  # saved at step `start`, or None
        start = ckpt.step if ckpt else 0
        for step in range(start + 1, num_steps + 1): ...   # num_steps: this rung's resource
        tracking.save_checkpoint(state, num_steps)         # for the next rung
    """
    raw = os.environ.get("PX_RESUME_STEP")
    if not raw:
        return None
    value = float(raw)
    return int(value) if value.is_integer() else value


def _resume_outputs(source: str, target: str) -> None:
    """Copy `source` (the continued run's outputs) into `target` once per run, whichever of the
    run's processes asks first; the others wait for the copy under the same lock."""
    import shutil
    from pathlib import Path

    from ..processes.file_lock import locked

    done = os.path.join(target, ".px-resumed")
    if os.path.exists(done):
        return
    with locked(Path(target, ".px-resume.lock")):
        if os.path.exists(done):
            return
        if not os.path.isdir(source):
            _warn_once("resume-missing", f"jupyter_px.tracking: {source} (the outputs to resume from) is gone")
        else:
            ignore = shutil.ignore_patterns(".px-resume*", ".px-resumed")
            shutil.copytree(source, target, dirs_exist_ok=True, ignore=ignore)
        with open(done, "w") as marker:
            marker.write(source)


def get_tensorboard_path() -> str:
    """This replica's TensorBoard log directory, for a Keras callback or a SummaryWriter."""
    return _path_from_env("PX_TENSORBOARD_PATH", "tensorboard")


def get_params() -> dict[str, Any]:
    """This trial's hyperparameter values when the run is a trial of a sweep (`PX_PARAMS`, JSON,
    the same in every replica), else `{}`. The code cell also has them as globals."""
    raw = os.environ.get("PX_PARAMS")
    if not raw:
        return {}
    values = json.loads(raw)
    if not isinstance(values, dict):
        raise ValueError(f"PX_PARAMS must be a JSON object of name -> value, got {raw!r:.200}")
    return values


def get_task_info() -> TaskInfo:
    """This replica's identity, from the environment every backend sets."""
    env = os.environ
    run_id = env.get("PX_RUN_ID") or None
    if run_id is None:
        _warn_outside_run()
        return TaskInfo(run_id=None, role="master", index=0, is_master=True, cluster=types.MappingProxyType({}))
    role = env.get("PX_TASK_TYPE", "")
    if not role:
        raise ValueError("PX_TASK_TYPE is not set although PX_RUN_ID is")
    raw_index = env.get("PX_TASK_INDEX", "0")
    try:
        index = int(raw_index)
    except ValueError:
        raise ValueError(f"PX_TASK_INDEX must be an integer, got {raw_index!r}") from None
    raw_cluster = env.get("PX_CLUSTER") or "{}"
    try:
        parsed = json.loads(raw_cluster)
        if not isinstance(parsed, dict):
            raise ValueError("not an object")
        cluster = {str(r): tuple(str(a) for a in addrs) for r, addrs in parsed.items()}
    except (ValueError, TypeError) as exc:
        raise ValueError(
            f"PX_CLUSTER must be a JSON object of role -> [host:port, ...], got {raw_cluster!r:.200}"
        ) from exc
    has_master = bool(cluster.get("master"))
    is_master = role == "master" or (role == _FALLBACK_MASTER_ROLE and index == 0 and not has_master)
    return TaskInfo(run_id=run_id, role=role, index=index, is_master=is_master, cluster=types.MappingProxyType(cluster))


def flush() -> None:
    """Write everything queued so far, now. Safe from any thread; cheap when nothing is queued."""
    _delivery.flush_current()
