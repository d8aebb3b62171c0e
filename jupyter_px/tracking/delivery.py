"""Delivery: a process's queue of points, the thread that writes it, and the hooks that flush it
before the process ends (exit, SIGTERM, a multiprocessing child finishing, fork).

The knobs (`FLUSH_INTERVAL_S`, `MAX_QUEUED_POINTS`, `WRITE_BATCH`) stay attributes of the
`jupyter_px.tracking` package, where tests and tools set them; the package hands itself over
with `configure`, and the tracker reads them from there each time, as it always did.
"""

from __future__ import annotations

import atexit
import collections
import json
import os
import signal
import sys
import threading
import types
from collections.abc import Mapping
from typing import Protocol

# The layout module is standard library only (and the runstore package imports nothing heavy
# on its own), so replicas do not load pydantic for it.
from ..runstore import ledger as _ledger
from ..runstore.event_writer import ScalarEventWriter
from ..runstore.layout import METRICS_LOG_PREFIX, process_file
from .fd_writes import PartialWrite, ends_mid_line, flush_stdout, write_counted
from .lines import json_line
from .notices import say, say_once

#: A queued point's step, wall time and total steps (its values are queued beside it).
Stamp = tuple[int | None, float, int | None]
#: A point as it is written: its stamp and its values.
Point = tuple[int | None, float, int | None, dict[str, float]]


class Settings(Protocol):
    """The package's knobs, read when they are used (see the package's docstring)."""

    FLUSH_INTERVAL_S: float
    MAX_QUEUED_POINTS: int
    WRITE_BATCH: int


_settings: Settings | None = None


def configure(settings: Settings) -> None:
    """Where the knobs are read from: the `jupyter_px.tracking` package, once, at its import."""
    global _settings
    _settings = settings


def _knobs() -> Settings:
    assert _settings is not None, "jupyter_px.tracking configures its delivery at import"
    return _settings


def process_index(env: Mapping[str, str]) -> int:
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


class Tracker:
    """State of one process: the queue, the writers, the flush thread. Replaced after fork."""

    def __init__(self) -> None:
        env = os.environ
        self.run_id = env.get("PX_RUN_ID") or None
        # Each process of a replica writes its own files (see runstore.layout.process_file).
        process = process_index(env)
        metrics_path = env.get("PX_METRICS_PATH") or None
        params_path = env.get("PX_PARAMS_PATH") or None
        tb = env.get("PX_TENSORBOARD_PATH") or None
        self.metrics_path = process_file(metrics_path, process) if metrics_path else None
        self.params_path = process_file(params_path, process) if params_path else None
        if tb and process:
            tb = os.path.join(tb, f"rank{process}")
        # A queued point is its stamp (step, wall time, total steps) in `queue` and its values in
        # `queued_values`: `log_metrics` appends the values first, then the stamp, and a flush
        # takes as many points as there are stamps, from both heads together. Kept apart so
        # that a stamp holds only atoms: CPython's collector untracks such a tuple at its first
        # collection, while a tuple holding the values' dict stays tracked and every collection
        # walks it again (0.4 µs of a 1 µs call, measured).
        self.queue: collections.deque[Stamp] = collections.deque()
        self.queued_values: collections.deque[dict[str, float]] = collections.deque()
        self.max_queued = _knobs().MAX_QUEUED_POINTS
        self.dropped = 0
        self.tensorboard_path = tb if self.run_id else None
        self.tensorboard_anchor = os.path.dirname(env["PX_TENSORBOARD_PATH"]) if tb else None
        # The counts the run's owner reads after this process is gone (runstore.ledger); a
        # process-local stand-in where there is no metrics file, or in a forked child (which
        # would otherwise share its parent's ledger).
        self.counts = memoryview(bytearray(8 * len(_ledger.SLOTS))).cast("q")
        self.ledger: _ledger.LedgerWriter | None = None
        #: The run's metrics directory is gone (the run was deleted): nothing is recorded any more.
        self.gone = False
        if self.run_id and self.metrics_path and not _forked:
            try:
                self.ledger = _ledger.LedgerWriter(self.metrics_path)
                self.counts = self.ledger.counts
            except FileNotFoundError:
                self._run_gone()
            except OSError as exc:
                say_once("ledger", f"cannot keep the metrics ledger beside {self.metrics_path} ({exc!r})")
        self.counts[_ledger.TB_END] = -1  # until this process has a TensorBoard file
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
                self.events = ScalarEventWriter(
                    self.tensorboard_path, source="jupyter_px.tracking", anchor=self.tensorboard_anchor
                )
            thread = threading.Thread(target=self._loop, name="px-tracking-flush", daemon=True)
            self.thread = thread
            thread.start()
            _install_exit_hooks()

    def _loop(self) -> None:
        counts = self.counts
        while True:
            self.wake.wait(_knobs().FLUSH_INTERVAL_S)
            self.wake.clear()
            # Whether a SIGTERM would flush and end this process (tracking's handler), or runs
            # someone else's (a checkpoint on SIGTERM): the owner waits out the whole grace then.
            counts[_ledger.SIGTERM_FLUSHES] = signal.getsignal(signal.SIGTERM) is _on_sigterm
            try:
                self.flush()
            except Exception as exc:  # keep the thread alive (the points stay queued); say so once
                say_once(
                    f"flush-{type(exc).__name__}",
                    f"could not write metrics to {self.metrics_path or 'stdout'} ({exc!r}); "
                    f"{len(self.queue)} points are kept in memory and retried every {_knobs().FLUSH_INTERVAL_S:g} s",
                )

    def drop(self) -> None:
        """A point that did not fit in the queue (called instead of queueing it)."""
        self.dropped += 1
        self.counts[_ledger.DROPPED] += 1
        if self.dropped == 1:
            say(
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

    def _run_gone(self) -> None:
        """The run's metrics directory no longer exists (the run was deleted): say so once, and
        record nothing from now on. Nothing is created in its place: a run's files live only
        under the directory its submission made."""
        self.gone = True
        say_once(
            "run-gone",
            f"the run's metrics directory {os.path.dirname(self.metrics_path or '')} no longer exists "
            "(was the run deleted?); metrics are not recorded",
        )

    def _drain_and_write(self) -> None:
        """Write what is queued now, oldest first, in batches of WRITE_BATCH. A batch leaves the
        queue while it is written and goes back to its head, in order, when the write fails (less
        the whole lines that got there): a failed write raises with the rest still queued.
        Points queued meanwhile wait for the next flush (a flood cannot keep one flush going)."""
        queue = self.queue
        todo = len(queue)  # a point whose stamp is not queued yet waits for the next flush
        if self.gone:
            self._take(todo)
            return
        while todo > 0:
            batch = self._take(min(todo, _knobs().WRITE_BATCH))
            try:
                self._write_lines(batch)
            except PartialWrite as failed:
                self._put_back(batch[failed.written :])
                self._commit(batch[: failed.written])
                raise failed.error from None
            except BaseException:
                self._put_back(batch)
                raise
            self._commit(batch)
            todo -= len(batch)

    def _write_lines(self, batch: list[Point]) -> None:
        """The batch's JSON lines to the metrics file (or stdout, as marker lines); on failure a
        PartialWrite whose `written` is the number of whole lines that got there."""
        if self.metrics_path:
            prefix = ""
            if self.metrics_fd is None:
                try:  # in the directory the submission made: never re-created (see _run_gone)
                    self.metrics_fd = os.open(self.metrics_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
                except FileNotFoundError:
                    self._run_gone()
                    raise PartialWrite(0, FileNotFoundError(2, "the run's metrics directory is gone")) from None
                self.mid_line = ends_mid_line(self.metrics_fd)
                end = os.fstat(self.metrics_fd).st_size
                self.counts[_ledger.JSONL_END] = end
                if self.tensorboard_path:
                    self.counts[_ledger.TB_END] = end
            fd = self.metrics_fd
        else:
            prefix, fd = METRICS_LOG_PREFIX, 1
            flush_stdout()
        data = "".join([f"{prefix}{json_line(*item)}\n" for item in batch]).encode()
        lead = b"\n" if self.mid_line else b""  # end the fragment a failed write left (readers skip it)
        base = os.fstat(fd).st_size + len(lead) if not prefix else 0  # where this batch's lines start
        try:
            write_counted(fd, lead + data if lead else data)
        except PartialWrite as failed:
            written = max(0, failed.written - len(lead))  # bytes of this batch's lines in the file
            if failed.written:  # the file now ends where the write stopped
                self.mid_line = written > 0 and data[written - 1] != ord("\n")
            failed.written = data.count(b"\n", 0, written)
            if not prefix and failed.written:
                self.counts[_ledger.JSONL_END] = base + data.rfind(b"\n", 0, written) + 1
            raise
        self.mid_line = False
        if not prefix:
            self.counts[_ledger.JSONL_END] = base + len(data)

    def _take(self, count: int) -> list[Point]:
        """The `count` oldest points, taken off the queue. Popped one by one (each `popleft` is
        atomic), not read through an iterator: the training loop appends meanwhile, and a
        deque's iterator raises "mutated during iteration" when that happens between its steps."""
        stamps, values = self.queue.popleft, self.queued_values.popleft
        return [(*stamps(), values()) for _ in range(count)]

    def _put_back(self, points: list[Point]) -> None:
        """Points taken but not written, at the head of the queue again, in their order."""
        self.queued_values.extendleft([point[3] for point in reversed(points)])
        self.queue.extendleft([(point[0], point[1], point[2]) for point in reversed(points)])

    def _commit(self, written: list[Point]) -> None:
        """Count `written` (the oldest points, taken off the queue) and add them to TensorBoard's file.

        The JSONL is written first; the ledger says how far TensorBoard's file has caught up
        with it, so that a process killed between the two writes leaves a gap its run's owner
        closes (`runstore.settle`): the two never disagree about what was written."""
        counts = self.counts
        counts[_ledger.WRITTEN] += len(written)
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
            say_once(f"events-{type(exc).__name__}", f"could not write TensorBoard events: {exc!r}")
            return
        if self.metrics_path:
            counts[_ledger.TB_FILE_END] = self.events.size
            counts[_ledger.TB_END] = counts[_ledger.JSONL_END]
            counts[_ledger.TB_CALLS] = self.calls


_START_LOCK = threading.Lock()
#: This process's tracker, made at the first call that needs it (`current()`), None after fork.
tracker: Tracker | None = None
_hooks_installed = False
#: This process was forked from a run's process, which may have a tracker (its ledger is the
#: parent's); not a replica forked from a warm template (`_reset_after_fork`).
_forked = False


def current() -> Tracker:
    """This process's tracker, made on first use."""
    global tracker
    made = tracker
    if made is None:
        with _START_LOCK:
            if tracker is None:
                tracker = Tracker()
            made = tracker
    return made


def flush_current() -> None:
    """Write everything this process has queued, if it is inside a run (the public `flush`)."""
    made = tracker
    if made is not None and made.run_id is not None:
        made.flush()


# ---------------------------------------------------------------------------------------------
# Exit, signal and fork hooks.


def _die_by(signum: int) -> None:
    """Do what the default disposition of `signum` would have done."""
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _on_sigterm(signum: int, frame: types.FrameType | None) -> None:
    made = tracker
    if made is not None:
        if threading.get_ident() in made.flushing:
            # The main thread was interrupted inside flush(): let that flush finish, then die.
            made.pending_signal = signum
            return
        try:
            made.flush()
        except Exception as exc:
            say(f"could not write {len(made.queue)} metric points before exiting on SIGTERM: {exc!r}")
        _report_dropped(made)
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

        util.Finalize(None, flush_current, exitpriority=100)


def _flush_at_exit() -> None:
    made = tracker
    if made is not None:
        try:
            made.flush()
        except Exception as exc:
            say(f"could not write {len(made.queue)} metric points at exit: {exc!r}")
        _report_dropped(made)


def _report_dropped(made: Tracker) -> None:
    if made.dropped:
        say(f"{made.dropped} metric points were dropped in all: they were logged while the queue was full")


def _reset_after_fork() -> None:
    """In a forked child: forget the parent's queue, thread, locks and open files.

    A child of a run's process (a DataLoader worker) leaves the metrics ledger to its parent,
    whose file it is. A replica forked from a warm template keeps one of its own, as a cold one
    does: the template is no run's process (its environment has no `PX_RUN_ID`; the replica takes
    its run's after the fork), and without a ledger its owner could neither count the points a
    kill lost nor see that it had written them all (a stop then waited out the whole grace)."""
    global tracker, _START_LOCK, _forked
    _START_LOCK = threading.Lock()
    tracker = None
    _forked = _forked or bool(os.environ.get("PX_RUN_ID"))
    # The atexit hook and the SIGTERM handler are inherited and act on the new tracker; a
    # multiprocessing finalizer is registered again when the child starts logging.


os.register_at_fork(after_in_child=_reset_after_fork)
