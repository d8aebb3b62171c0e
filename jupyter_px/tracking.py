"""The API that training code calls from inside a replica.

    from jupyter_px import tracking
    tracking.log_metrics(step=i, total_steps=n, loss=loss.item(), acc=acc)
    tracking.log_params(lr=1e-3, batch_size=64)
    ckpt_dir = tracking.get_outputs_path()
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
"""

from __future__ import annotations

import atexit
import collections
import itertools
import json
import os
import signal
import sys
import tempfile
import threading
import time
import types
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The layout module is standard library only (and the runstore package imports nothing heavy
# on its own), so replicas do not load pydantic for it.
from .runstore.event_writer import ScalarEventWriter
from .runstore.layout import EVENTS_FILE_SUFFIX, METRICS_LOG_PREFIX, PARAMS_LOG_PREFIX, process_file

__all__ = [
    "TaskInfo",
    "log_metrics",
    "log_params",
    "get_outputs_path",
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

_FALLBACK_MASTER_ROLE = "worker"
_JSON = json.JSONEncoder(separators=(",", ":"))


@dataclass(frozen=True)
class TaskInfo:
    """Who this replica is. Outside a run: run_id None, a lone master with an empty cluster."""

    run_id: str | None
    role: str
    index: int
    is_master: bool
    cluster: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)


# ---------------------------------------------------------------------------------------------
# Value checks: run on every call, so the common case (a float or an int) is a type test.


def _coerce_value(name: str, value: Any) -> float:
    """Turn a metric value into a float or raise an error naming the metric and the value.

    Accepts ints, floats, numpy scalars and one-element tensors/arrays (anything `float()`
    converts that is not text, a bool or a complex number). NaN and infinities are kept: a
    diverging loss is exactly what one wants to see.
    """
    if type(value) is float:
        return value
    if isinstance(value, (bool, str, bytes, complex)) or value is None:
        raise TypeError(f"log_metrics: metric {name!r} must be a real number, got {type(value).__name__} {value!r:.80}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"log_metrics: metric {name!r} is too large for a float: {value!r:.80}") from None
    except (TypeError, ValueError, RuntimeError):
        pass
    try:  # numpy >= 2 refuses float() of a shape-(1,) array; .item() takes any one-element one
        return float(value.item())
    except (AttributeError, TypeError, ValueError, RuntimeError) as exc:
        shape = getattr(value, "shape", None)
        what = f"{type(value).__name__} of shape {tuple(shape)}" if shape is not None else type(value).__name__
        raise TypeError(
            f"log_metrics: metric {name!r} must be a single real number, got {what}: {value!r:.80}"
            " (log a scalar, e.g. loss.item())"
        ) from exc


_MAX_STEP = 1 << 63  # TensorBoard steps are int64


def _coerce_count(what: str, value: Any, minimum: int) -> int:
    try:
        if isinstance(value, bool):
            raise TypeError
        number = value.__index__()
    except (AttributeError, TypeError):
        raise TypeError(f"log_metrics: {what} must be an integer, got {type(value).__name__} {value!r}") from None
    if number < minimum:
        raise ValueError(f"log_metrics: {what} must be >= {minimum}, got {number}")
    if number >= _MAX_STEP:
        raise ValueError(f"log_metrics: {what} must be < 2**63, got {number}")
    return number


# ---------------------------------------------------------------------------------------------
# Writers (run in the background thread, or in whoever calls flush()).


_JSON_NAMES: dict[str, str] = {}


def _json_line(step: int | None, wall_time: float, total_steps: int | None, values: dict[str, float]) -> str:
    """One metrics record as compact JSON, formatted by hand (twice as fast as json.dumps).

    Non-finite values take json's path, which spells them NaN / Infinity as Python reads them.
    """
    parts = []
    for name, value in values.items():
        quoted = _JSON_NAMES.get(name)
        if quoted is None:
            quoted = _JSON_NAMES[name] = json.dumps(name)
        if value - value != 0.0:  # nan or +-inf
            return _JSON.encode(_record(step, wall_time, total_steps, values))
        parts.append("%s:%r" % (quoted, value))
    line = '{"step":%s,"time":%r,"metrics":{%s}' % ("null" if step is None else step, wall_time, ",".join(parts))
    return line + ("}" if total_steps is None else ',"total_steps":%d}' % total_steps)


def _record(step: int | None, wall_time: float, total_steps: int | None, values: dict[str, float]) -> dict[str, Any]:
    record: dict[str, Any] = {"step": step, "time": wall_time, "metrics": values}
    if total_steps is not None:
        record["total_steps"] = total_steps
    return record


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _ends_mid_line(fd: int) -> bool:
    """Whether the file ends inside a line: a SIGKILL can cut a large write short at a page
    boundary, and a restarted replica appends to the same file, so its first line must start
    on a line of its own (readers skip the fragment)."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


class _PartialWrite(OSError):
    """A write that failed after `written` bytes of its data had reached the file."""

    def __init__(self, written: int, error: OSError):
        super().__init__(error.errno, error.strerror)
        self.written = written
        self.error = error


def _write_counted(fd: int, data: bytes) -> None:
    """`_write_all`, but a failure says how much was written (a _PartialWrite)."""
    done = 0
    try:
        while done < len(data):
            done += os.write(fd, data[done:] if done else data)
    except OSError as error:
        raise _PartialWrite(done, error) from error


def _print_line(line: str) -> None:
    """One whole line on the process's stdout, after whatever Python has buffered there."""
    _flush_stdout()
    _write_all(1, line.encode("utf-8", "backslashreplace"))


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except Exception:  # a replaced or closed sys.stdout must not break training
        pass


def _say(message: str) -> None:
    """A line on stderr (the replica's log): what happened to the user's metrics must be seen
    even where warnings are filtered."""
    try:
        sys.stderr.write(f"jupyter_px.tracking: {message}\n")
        sys.stderr.flush()
    except Exception:
        pass


def _process_index(env: Mapping[str, str]) -> int:
    """Which process of its replica this is (0 for the only one).

    PyTorch replicas with `processes_per_replica > 1` run torchrun-style local ranks
    (`LOCAL_RANK`); MPI replicas get several consecutive ranks of `mpirun` (`PX_MPI_RANK`, the
    ranks of worker i being i*n .. i*n+n-1 with n = world size / workers)."""
    try:
        if env.get("LOCAL_RANK"):
            return max(0, int(env["LOCAL_RANK"]))
        if env.get("PX_MPI_RANK") and env.get("PX_MPI_WORLD_SIZE"):
            workers = len(json.loads(env.get("PX_CLUSTER") or "{}").get("worker") or ()) or 1
            per_worker = max(1, int(env["PX_MPI_WORLD_SIZE"]) // workers)
            local = int(env["PX_MPI_RANK"]) - int(env.get("PX_TASK_INDEX") or 0) * per_worker
            return local if 0 <= local < per_worker else 0
    except (ValueError, TypeError, AttributeError):
        pass
    return 0


# ---------------------------------------------------------------------------------------------
# The per-process tracker.


class _Tracker:
    """State of one process: the queue, the writers, the flush thread. Replaced after fork."""

    def __init__(self) -> None:
        env = os.environ
        self.run_id = env.get("PX_RUN_ID") or None
        # Each process of a replica writes its own files (see runstore.layout.process_file).
        process = _process_index(env)
        metrics_path = env.get("PX_METRICS_PATH") or None
        params_path = env.get("PX_PARAMS_PATH") or None
        tb = env.get("PX_TENSORBOARD_PATH") or None
        self.metrics_path = process_file(metrics_path, process) if metrics_path else None
        self.params_path = process_file(params_path, process) if params_path else None
        if tb and process:
            tb = os.path.join(tb, f"rank{process}")
        self.queue: collections.deque[tuple[int | None, float, int | None, dict[str, float]]] = collections.deque()
        self.max_queued = MAX_QUEUED_POINTS
        self.dropped = 0
        self.tensorboard_path = tb if self.run_id else None
        self.events: ScalarEventWriter | None = None
        self.write_lock = threading.Lock()
        self.flushing: set[int] = set()  # idents of threads inside flush()
        self.params_lock = threading.Lock()
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None
        self.calls = 0  # TensorBoard step for calls without one
        self.metrics_fd: int | None = None
        self.mid_line = False  # a failed write left part of a line at the end of the file
        self.pending_signal: int | None = None

    # -- the background thread ---------------------------------------------------------------

    def ensure_started(self) -> None:
        if self.thread is not None or not self.run_id:
            return
        with _START_LOCK:
            if self.thread is not None:
                return
            if self.tensorboard_path:
                self.events = ScalarEventWriter(self.tensorboard_path, source="jupyter_px.tracking")
            thread = threading.Thread(target=self._loop, name="px-tracking-flush", daemon=True)
            self.thread = thread
            thread.start()
            _install_exit_hooks()

    def _loop(self) -> None:
        while True:
            self.wake.wait(FLUSH_INTERVAL_S)
            self.wake.clear()
            try:
                self.flush()
            except Exception as exc:  # keep the thread alive (the points stay queued); say so once
                _say_once(
                    f"flush-{type(exc).__name__}",
                    f"could not write metrics to {self.metrics_path or 'stdout'} ({exc!r}); "
                    f"{len(self.queue)} points are kept in memory and retried every {FLUSH_INTERVAL_S:g} s",
                )

    def drop(self) -> None:
        """A point that did not fit in the queue (called instead of queueing it)."""
        self.dropped += 1
        if self.dropped == 1:
            _say(
                f"{len(self.queue)} metric points are waiting to be written (MAX_QUEUED_POINTS); points "
                "logged from now until the writer catches up are dropped (log less often to keep them all)"
            )

    # -- flushing ----------------------------------------------------------------------------

    def flush(self) -> None:
        me = threading.get_ident()
        if me in self.flushing:  # re-entered from a signal handler while this thread flushes
            return
        self.flushing.add(me)
        try:
            with self.write_lock:
                self._drain_and_write()
        finally:
            self.flushing.discard(me)
        if self.pending_signal is not None and threading.current_thread() is threading.main_thread():
            signum, self.pending_signal = self.pending_signal, None
            _die_by(signum)

    def _drain_and_write(self) -> None:
        """Write what is queued now, oldest first, in batches of WRITE_BATCH. A point leaves the
        queue only once its line is written; a failed write raises with the rest still queued.
        Points queued meanwhile wait for the next flush (a flood cannot keep one flush going)."""
        queue = self.queue
        todo = len(queue)
        while todo > 0:
            batch = list(itertools.islice(queue, min(todo, WRITE_BATCH)))
            try:
                self._write_lines(batch)
            except _PartialWrite as failed:
                self._commit(batch[: failed.written])
                raise failed.error from None
            self._commit(batch)
            todo -= len(batch)

    def _write_lines(self, batch: list[tuple[int | None, float, int | None, dict[str, float]]]) -> None:
        """The batch's JSON lines to the metrics file (or stdout, as marker lines); on failure a
        _PartialWrite whose `written` is the number of whole lines that got there."""
        if self.metrics_path:
            prefix = ""
            if self.metrics_fd is None:
                Path(self.metrics_path).parent.mkdir(parents=True, exist_ok=True)
                self.metrics_fd = os.open(self.metrics_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
                self.mid_line = _ends_mid_line(self.metrics_fd)
            fd = self.metrics_fd
        else:
            prefix, fd = METRICS_LOG_PREFIX, 1
            _flush_stdout()
        data = "".join([f"{prefix}{_json_line(*item)}\n" for item in batch]).encode()
        lead = b"\n" if self.mid_line else b""  # end the fragment a failed write left (readers skip it)
        try:
            _write_counted(fd, lead + data if lead else data)
        except _PartialWrite as failed:
            written = max(0, failed.written - len(lead))  # bytes of this batch's lines in the file
            if failed.written:  # the file now ends where the write stopped
                self.mid_line = written > 0 and data[written - 1] != ord("\n")
            failed.written = data.count(b"\n", 0, written)
            raise
        self.mid_line = False

    def _commit(self, written: list[tuple[int | None, float, int | None, dict[str, float]]]) -> None:
        """Take `written` (the oldest points) off the queue and add them to TensorBoard's file."""
        popleft = self.queue.popleft
        for _ in written:
            popleft()
        if self.events is None:
            self.calls += len(written)
            return
        records = []
        for step, wall_time, _total, values in written:
            self.calls += 1
            records.append((self.calls - 1 if step is None else step, wall_time, values))
        try:
            self.events.write(records)
        except Exception as exc:  # the points are in the run store's JSONL; TensorBoard misses them
            _say_once(f"events-{type(exc).__name__}", f"could not write TensorBoard events: {exc!r}")


_START_LOCK = threading.Lock()
_tracker: _Tracker | None = None
_warned: set[str] = set()
_hooks_installed = False


def _get() -> _Tracker:
    global _tracker
    tracker = _tracker
    if tracker is None:
        with _START_LOCK:
            if _tracker is None:
                _tracker = _Tracker()
            tracker = _tracker
    return tracker


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def _say_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        _say(message)


def _warn_outside_run() -> None:
    _warn_once(
        "outside-run",
        "jupyter_px.tracking: not inside a jupyter-px run (PX_RUN_ID is not set); metrics and "
        "params are checked but not recorded, and paths point to a temporary directory",
    )


# ---------------------------------------------------------------------------------------------
# Exit, signal and fork hooks.


def _die_by(signum: int) -> None:
    """Do what the default disposition of `signum` would have done."""
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _on_sigterm(signum: int, frame: types.FrameType | None) -> None:
    tracker = _tracker
    if tracker is not None:
        if threading.get_ident() in tracker.flushing:
            # The main thread was interrupted inside flush(): let that flush finish, then die.
            tracker.pending_signal = signum
            return
        try:
            tracker.flush()
        except Exception as exc:
            _say(f"could not write {len(tracker.queue)} metric points before exiting on SIGTERM: {exc!r}")
        _report_dropped(tracker)
    _die_by(signum)


def _install_exit_hooks() -> None:
    """atexit always; SIGTERM only if the handler is still the default (and we are able to)."""
    global _hooks_installed
    if _hooks_installed:
        _register_multiprocessing_finalizer()
        return
    _hooks_installed = True
    atexit.register(_flush_at_exit)
    _register_multiprocessing_finalizer()
    if threading.current_thread() is threading.main_thread():
        try:
            if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
                signal.signal(signal.SIGTERM, _on_sigterm)
        except (ValueError, OSError):  # not the main interpreter, or signals unavailable
            pass


def _register_multiprocessing_finalizer() -> None:
    """multiprocessing children end with os._exit (no atexit); its finalizers still run."""
    if "multiprocessing.util" in sys.modules:
        from multiprocessing import util

        util.Finalize(None, flush, exitpriority=100)


def _flush_at_exit() -> None:
    tracker = _tracker
    if tracker is not None:
        try:
            tracker.flush()
        except Exception as exc:
            _say(f"could not write {len(tracker.queue)} metric points at exit: {exc!r}")
        _report_dropped(tracker)


def _report_dropped(tracker: _Tracker) -> None:
    if tracker.dropped:
        _say(f"{tracker.dropped} metric points were dropped in all: they were logged while the queue was full")


def _reset_after_fork() -> None:
    """In a forked child: forget the parent's queue, thread, locks and open files."""
    global _tracker, _START_LOCK
    _START_LOCK = threading.Lock()
    _tracker = None
    # The atexit hook and the SIGTERM handler are inherited and act on the new tracker; a
    # multiprocessing finalizer is registered again when the child starts logging.


os.register_at_fork(after_in_child=_reset_after_fork)


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
    tracker = _tracker or _get()
    if tracker.run_id is None:
        _warn_outside_run()
        return
    queue = tracker.queue
    if len(queue) < tracker.max_queued:
        queue.append((step, time.time(), total_steps, values))
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
    tracker = _get()
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
    os.makedirs(path, exist_ok=True)
    return path


def get_outputs_path() -> str:
    """Directory for this run's outputs (checkpoints, exports); created if missing."""
    return _path_from_env("PX_OUTPUTS_PATH", "outputs")


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
    tracker = _tracker
    if tracker is not None and tracker.run_id is not None:
        tracker.flush()
