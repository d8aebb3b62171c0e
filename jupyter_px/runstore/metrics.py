"""Reading a run's metrics back: for plots, the live monitor, the REST API and the CLI.

Two sources, both per replica:

* `metrics/<role>-<index>.jsonl`, written by `jupyter_px.tracking` (or by a backend that parsed
  `@px-metrics` lines out of a log stream, see `jupyter_px.runstore.log_metrics`);
* TensorBoard event files that the training code wrote itself under
  `tensorboard/<role>-<index>/` (a Keras `TensorBoard` callback, a torch `SummaryWriter`, ...).
  Scalars in a sub-directory get it as a prefix: Keras' `train/epoch_loss`. The event files
  written by `jupyter_px.tracking` are skipped: their points are in the JSONL. Event files are
  framed and decoded by `jupyter_px.runstore.event_records`.

A replica with several processes (`processes_per_replica > 1`) has one file per process
(`metrics/worker-0.rank1.jsonl`, see `runstore.layout`): each process is its own series, keyed
`worker-0.rank1` (process 0 keeps the replica's key), so a monitor plots one line per process
and its progress bar waits for the slowest process.

`MetricsReader.poll()` is called every second or so by monitors, so it only reads bytes appended
since the last poll: it keeps an offset per file, leaves an incomplete last line (or event
record) for the next poll, and lists a directory again only when its mtime changed. The first
read parses everything (about 2 µs a point, mostly json), so keep one reader per run for the life
of a process rather than a new one per request.

Those offsets are also how a client that polls over HTTP says what it has: `positions()` says
how far each file has been read, and `read_range()` reads a file's points again from a client's
offset (see `jupyter_px.runstore.metrics_cursor`). Times cannot serve: replicas flush on their
own timers, so a point stamped earlier may land after a later one was read.

Memory: points are held in columns (`runstore.series`: about 40 bytes a point), and files are
parsed in chunks (`runstore.jsonl_records`): reading 1,000,000 points never holds a file whole.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

from .errors import RunDamaged
from .event_records import read_scalar_events
from .jsonl_records import MAX_LINE_BYTES, LinesRead, decode_lines, line_start_after, read_lines
from .layout import EVENTS_FILE_SUFFIX, RunPaths, metrics_series_key
from .run_files import Listing, PlantedLink, list_run_dir, open_run_file
from .series import Series

__all__ = ["MetricsReader", "FilePosition", "Update"]

#: A directory whose mtime is younger than this is listed again on every poll, because an entry
#: added within the file system's timestamp granularity would not change the mtime we saw.
_FRESH_DIR_S = 2.0


#: What `poll()` returns: new points by (replica, metric name).
Update = dict[tuple[str, str], Series]


class FilePosition(NamedTuple):
    """How far a metrics file has been read: a byte offset at a line (or record) boundary, and
    the file's inode, so that a replaced file is not taken for the one the offset was in."""

    offset: int
    inode: int


@dataclass
class _FileState:
    replica: str = ""  # whose points the file holds
    prefix: str = ""  # event files: the sub-directory, prefixed to each tag
    events: bool = False  # a TensorBoard event file (else JSONL)
    offset: int = 0
    inode: int = 0
    bad_lines: int = 0
    long_lines: int = 0  # JSONL lines over MAX_LINE_BYTES, skipped (each counted and reported once)
    skipping: bool = False  # JSONL: `offset` is inside an over-long line, dropped up to its newline
    broken: bool = False  # an event file with a corrupt record: not read any further
    history_end: int = 0  # JSONL with a budget: bytes [0, history_end) are not read yet
    # event files only: plugin of each tag, learned from the first event that carries metadata
    plugins: dict[str, str] = field(default_factory=dict)


@dataclass
class _DirState:
    mtime_ns: int = -1
    listed_at: float = 0.0
    files: list[str] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)


class MetricsReader:
    """Incremental reader of one run directory's metrics.

        reader = MetricsReader(RunPaths(run_id))
        new = reader.poll()                # {("worker-0", "loss"): Series(...), ...}
        s = reader.series("worker-0", "loss")

    Not thread-safe: one reader per consumer (each keeps its own offsets).

    With `history_budget` (bytes), a live view stays responsive on a long run: the first poll
    reads only the newest part of each metrics file (its share of the budget), and each later
    poll prepends at most that many bytes of older history until `pending_history` is False.
    New points are always read in full. Without it (the default), the first poll reads all.
    """

    def __init__(self, run_paths: RunPaths, *, event_files: bool = True, history_budget: int | None = None):
        self.paths = run_paths
        self.event_files = event_files
        self.history_budget = history_budget
        self._data: dict[str, dict[str, Series]] = {}
        self._total_steps: dict[str, int] = {}
        self._files: dict[str, _FileState] = {}
        self._dirs: dict[str, _DirState] = {}
        self._params: dict[str, tuple[int, dict[str, Any]]] = {}
        #: Every file of the run is opened through here: never through a link (`run_files`).
        self._open = partial(open_run_file, run_paths.root)
        #: What was refused (a planted link): readers that serve a run report it (`check_planted`).
        self.planted: list[str] = []

    # -- reading --------------------------------------------------------------------------

    def poll(self) -> Update:
        """Read what was appended since the last poll (and, with a history budget, a chunk of
        older history); return only the points added, by (replica, metric)."""
        starts: dict[tuple[str, str], int] = {}
        files = [
            (metrics_series_key(name), str(self.paths.metrics_dir / name))
            for name in self._list(str(self.paths.metrics_dir), want_dirs=False).files
            if name.endswith(".jsonl")
        ]
        older = self._read_history(files) if self.history_budget else {}
        for replica, path in files:
            self._read_jsonl(replica, path, starts)
        if self.event_files:
            tb_root = str(self.paths.tensorboard_dir)
            for replica in self._list(tb_root, want_dirs=True).dirs:
                for path, prefix in self._event_files(os.path.join(tb_root, replica), ""):
                    self._read_events(replica, prefix, path, starts)
        update = {key: self._data[key[0]][key[1]].tail(start) for key, start in starts.items()}
        for key, points in older.items():
            update[key] = (
                points
                if key not in update
                else Series(
                    points.steps + update[key].steps,
                    points.values + update[key].values,
                    points.times + update[key].times,
                )
            )
        return update

    @property
    def pending_history(self) -> bool:
        """True while a budgeted reader has older points it has not read yet."""
        return any(state.history_end for state in self._files.values())

    def read_history(self) -> Update:
        """Read everything still pending (e.g. once a run has ended), whatever the budget."""
        budget, self.history_budget = self.history_budget, None
        try:
            files = [
                (replica, path)
                for path, state in self._files.items()
                if state.history_end
                for replica in [metrics_series_key(os.path.basename(path))]
            ]
            return self._read_history(files, limit=None)
        finally:
            self.history_budget = budget

    def _read_history(self, files: list[tuple[str, str]], limit: int | None | bool = True) -> Update:
        """First sight of a file: start at its tail. Later: prepend older chunks, within budget."""
        share = max(8192, (self.history_budget or 0) // max(1, len(files)))
        left = self.history_budget if limit is True else limit
        older: Update = {}
        for replica, path in files:
            state = self._files.get(path)
            if state is None:
                state = self._files[path] = _FileState(replica)
                size = self._grown_size(path, state)
                if size is not None and size > share:
                    tail = line_start_after(path, size - share, opener=self._open)
                    if tail < size:  # else one huge last line: read the file as a whole
                        state.offset = state.history_end = tail
                continue
            if not state.history_end or (left is not None and left <= 0):
                continue
            chunk = state.history_end if left is None else min(state.history_end, share, left)
            low = (
                line_start_after(path, state.history_end - chunk, opener=self._open) if chunk < state.history_end else 0
            )
            if low >= state.history_end:  # one line longer than the chunk: take the rest at once
                low = 0
            high, state.history_end = state.history_end, low
            if left is not None:
                left -= high - low
            scratch: dict[str, Series] = {}
            ingest = partial(
                self._ingest, replica, path=path, state=state, series_for=partial(_collect, scratch), latest=False
            )
            _report_long_lines(path, state, read_lines(path, low, high, ingest, opener=self._open))
            for name, points in scratch.items():
                series = self._series(replica, name, {})
                series.steps[:0], series.values[:0], series.times[:0] = points.steps, points.values, points.times
                older[(replica, name)] = points
        return older

    def check_planted(self) -> None:
        """RunDamaged naming what was refused, for readers that serve the run's metrics: a run
        holding a planted link is reported as such, not served in part."""
        if self.planted:
            raise RunDamaged(self.paths.run_id, "; ".join(self.planted))

    def _refused(self, link: PlantedLink) -> None:
        if str(link) not in self.planted:
            self.planted.append(str(link))

    def _series(self, replica: str, name: str, starts: dict[tuple[str, str], int]) -> Series:
        metrics = self._data.get(replica)
        if metrics is None:
            metrics = self._data[replica] = {}
        series = metrics.get(name)
        if series is None:
            series = metrics[name] = Series()
        key = (replica, name)
        if key not in starts:
            starts[key] = len(series)
        return series

    def _grown_size(self, path: str, state: _FileState) -> int | None:
        """The file's size if it grew past `state.offset`, else None. A replaced or truncated
        file is read again from the start."""
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        if st.st_ino != state.inode or st.st_size < state.offset:
            if state.inode:
                warnings.warn(
                    f"{path} was replaced or truncated; reading it again from the start", RuntimeWarning, stacklevel=2
                )
            state.offset, state.inode, state.plugins, state.skipping = 0, st.st_ino, {}, False
        return st.st_size if st.st_size > state.offset else None

    def _read_jsonl(self, replica: str, path: str, starts: dict[tuple[str, str], int]) -> None:
        state = self._files.get(path)
        if state is None:
            state = self._files[path] = _FileState(replica)
        size = self._grown_size(path, state)
        if size is None:
            return

        # An incomplete last line (still being written) is left for the next poll.
        def series_for(name: str) -> Series:
            return self._series(replica, name, starts)

        ingest = partial(self._ingest, replica, path=path, state=state, series_for=series_for)
        try:
            read = read_lines(path, state.offset, size, ingest, skipping=state.skipping, opener=self._open)
        except PlantedLink as link:
            self._refused(link)
            return
        state.offset, state.skipping = read.offset, read.skipping
        _report_long_lines(path, state, read)

    def _ingest(
        self,
        replica: str,
        chunk: bytes,
        path: str,
        state: _FileState,
        series_for: Callable[[str], Series],
        latest: bool | None = True,
    ) -> None:
        """Complete JSONL lines -> points appended to `series_for(name)`. `latest`: these are the
        newest lines, so their total_steps is the current one (older history must not undo it);
        None: lines read before, whose total_steps is already known."""
        # The hot loop of a first read: bound `append`s per metric instead of method calls.
        appenders: dict[str, tuple[Any, Any, Any]] = {}
        for record in decode_lines(chunk, partial(_bad_line, path, state)):
            if type(record) is not dict:
                state.bad_lines += 1
                continue
            step, when, total = record.get("step"), record.get("time"), record.get("total_steps")
            metrics = record.get("metrics")
            if not isinstance(metrics, dict) or type(when) is not float:
                if not isinstance(metrics, dict) or not isinstance(when, int):
                    state.bad_lines += 1
                    continue
                when = float(when)
            if (
                total is not None
                and type(total) is int
                and latest is not None
                and (latest or replica not in self._total_steps)
            ):
                self._total_steps[replica] = total
            if type(step) is not int:
                step = None
            for name, value in metrics.items():
                if type(value) is not float:
                    if type(value) is not int:
                        continue
                    value = float(value)
                append = appenders.get(name)
                if append is None:
                    series = series_for(name)
                    append = appenders[name] = (series.steps.append, series.values.append, series.times.append)
                append[0](step)
                append[1](value)
                append[2](when)

    def _list(self, directory: str, want_dirs: bool) -> _DirState:
        """A directory's entries, listed again only when its mtime moved (or is very recent)."""
        state = self._dirs.get(directory)
        if state is None:
            state = self._dirs[directory] = _DirState()
        try:
            mtime_ns = os.lstat(directory).st_mtime_ns
        except FileNotFoundError:
            state.mtime_ns, state.files, state.dirs = -1, [], []
            return state
        now = time.time()
        if mtime_ns == state.mtime_ns and state.listed_at - mtime_ns / 1e9 > _FRESH_DIR_S:
            return state
        try:
            listing = list_run_dir(self.paths.root, directory)
        except PlantedLink as link:
            self._refused(link)
            listing = Listing()
        for name in listing.refused:
            self._refused(PlantedLink(os.path.relpath(os.path.join(directory, name), self.paths.root), "is a link"))
        files = [name for name in listing.files if not name.startswith(".")]
        dirs = [name for name in listing.dirs if want_dirs and not name.startswith(".")]
        state.mtime_ns, state.listed_at, state.files, state.dirs = mtime_ns, now, sorted(files), sorted(dirs)
        return state

    def _event_files(self, directory: str, prefix: str) -> Iterator[tuple[str, str]]:
        """(path, metric-name prefix) of the user's event files under a replica's directory."""
        state = self._list(directory, want_dirs=True)
        for name in state.files:
            if "tfevents" in name and not name.endswith(EVENTS_FILE_SUFFIX):
                yield os.path.join(directory, name), prefix
        for sub in state.dirs:
            yield from self._event_files(os.path.join(directory, sub), f"{prefix}{sub}/")

    def _read_events(self, replica: str, prefix: str, path: str, starts: dict[tuple[str, str], int]) -> None:
        """Scalars from the complete event records appended since the last poll."""
        state = self._files.get(path)
        if state is None:
            state = self._files[path] = _FileState(replica, prefix, events=True)
        size = None if state.broken else self._grown_size(path, state)
        if size is None:
            return

        def emit(tag: str, step: int, value: float, when: float) -> None:
            self._series(replica, prefix + tag, starts).append(step, value, when)

        try:
            read = read_scalar_events(path, state.offset, size, state.plugins, emit, opener=self._open)
        except PlantedLink as link:
            self._refused(link)
            return
        state.offset, state.broken = read.offset, read.broken
        state.bad_lines += read.bad_records

    # -- positions ------------------------------------------------------------------------

    def positions(self) -> dict[str, FilePosition]:
        """How far each metrics file has been read, by its path relative to the run directory
        (`metrics/worker-0.jsonl`, `tensorboard/worker-0/train/events.out.tfevents...`)."""
        root = str(self.paths.root)
        return {
            os.path.relpath(path, root): FilePosition(state.offset, state.inode)
            for path, state in self._files.items()
            if state.inode
        }

    def read_range(self, name: str, start: int, *, limit: int | None = None) -> tuple[Update, int]:
        """The points in a file (`name` as `positions()` gives it) from byte `start` to where
        this reader has read it, read again from the file; with `limit`, about that many bytes
        (whole lines or records, at least one). Returns them by (replica, metric) and the offset
        they end at. Nothing the reader holds changes: any number of clients, each at its own
        offset, can be answered from one reader."""
        path = os.path.join(str(self.paths.root), name)
        state = self._files.get(path)
        if state is None:
            return {}, start  # not a file of this run (yet)
        if start >= state.offset:
            return {}, state.offset
        scratch: dict[str, Series] = {}
        if state.events:
            collect = partial(_collect, scratch)

            def emit(tag: str, step: int, value: float, when: float) -> None:
                collect(state.prefix + tag).append(step, value, when)

            end = read_scalar_events(
                path, start, state.offset, dict(state.plugins), emit, limit=limit, opener=self._open
            ).offset
        else:
            end = state.offset
            if limit is not None and start + limit < end:
                # bounded: a limit that lands in an over-long line does not scan to its end
                end = min(end, line_start_after(path, start + max(1, limit), scan=MAX_LINE_BYTES, opener=self._open))
            # bad_lines=1: the reader already warned about this file's bad lines, if any
            ingest = partial(
                self._ingest,
                state.replica,
                path=path,
                state=_FileState(bad_lines=1),
                series_for=partial(_collect, scratch),
                latest=None,
            )
            end = read_lines(path, start, end, ingest).offset  # the reader reported long lines
        return {(state.replica, metric): points for metric, points in scratch.items()}, end

    # -- accessors ------------------------------------------------------------------------

    def series(self, replica: str, name: str) -> Series:
        """All points read so far of one metric of one replica (empty if none)."""
        return self._data.get(replica, {}).get(name) or Series()

    @property
    def data(self) -> dict[str, dict[str, Series]]:
        """replica -> metric name -> Series, for everything read so far (do not mutate)."""
        return self._data

    def long_lines(self) -> dict[str, int]:
        """Metrics lines skipped for being over `MAX_LINE_BYTES`, by file (relative to the run
        directory), for files that had any."""
        root = str(self.paths.root)
        return {
            os.path.relpath(path, root): state.long_lines for path, state in self._files.items() if state.long_lines
        }

    def replicas(self) -> list[str]:
        return sorted(self._data)

    def metric_names(self) -> list[str]:
        """Every metric name seen in any replica, sorted."""
        return sorted({name for metrics in self._data.values() for name in metrics})

    def progress(self, replica: str) -> tuple[int | None, int | None]:
        """(last step logged, total_steps) of a replica, for a progress bar; None when unknown."""
        last = None
        for series in self._data.get(replica, {}).values():
            steps = [s for s in series.steps[-1:] if s is not None]
            if steps and (last is None or steps[0] > last):
                last = steps[0]
        return last, self._total_steps.get(replica)

    def params(self) -> dict[str, dict[str, Any]]:
        """replica -> the params it logged (files re-read only when they change)."""
        out: dict[str, dict[str, Any]] = {}
        directory = str(self.paths.params_dir)
        for name in self._list(directory, want_dirs=False).files:
            if not name.endswith(".json"):
                continue
            path = os.path.join(directory, name)
            try:
                mtime = os.lstat(path).st_mtime_ns
                cached = self._params.get(path)
                if cached is None or cached[0] != mtime:
                    with self._open(path) as f:
                        loaded = json.load(f)
                    cached = self._params[path] = (mtime, loaded if isinstance(loaded, dict) else {})
            except (OSError, ValueError) as error:
                if isinstance(error, PlantedLink):
                    self._refused(error)
                continue
            out[name[: -len(".json")]] = cached[1]
        return out


def _collect(scratch: dict[str, Series], name: str) -> Series:
    """Older history's points gather in `scratch` (prepended afterwards)."""
    return scratch.setdefault(name, Series())


def _report_long_lines(path: str, state: _FileState, read: LinesRead) -> None:
    """Count and warn about the over-long lines a read began skipping (once each)."""
    if read.long_lines:
        state.long_lines += read.long_lines
        warnings.warn(
            f"{path}: skipped {read.long_lines} line(s) longer than {MAX_LINE_BYTES:,} bytes "
            f"({state.long_lines} in this file so far)",
            RuntimeWarning,
            stacklevel=3,
        )


def _bad_line(path: str, state: _FileState, line: bytes) -> None:
    """Count a line that is not a JSON object; warn about a file's first one only."""
    state.bad_lines += 1
    if state.bad_lines == 1:
        warnings.warn(f"{path}: skipping a line that is not a JSON object: {line[:80]!r}", RuntimeWarning, stacklevel=2)
