"""What a comparison needs of one run, read once and kept while the run's files do not change.

Reading a run's metrics parses every point (about 2 µs each): 200 runs of 100,000 points is
20,000,000 points, far from a 300 ms answer. But a comparison needs, per run and metric, only a
few hundred chosen points and four numbers (final, lowest, highest and their steps). So each run
is read once into a `RunDigest` and kept in a `DigestCache`, keyed by the run and a cheap
signature of its files (name, size, mtime of everything under `metrics/`, `params/` and
`tensorboard/`: a few stats a run), so a run that is still writing is read again and a finished
one never is. The run service keeps one cache for its life (`RunService.digests`): a Jupyter
server's serves every request. A finished run's digest is also written under
`$PX_HOME/cache/compare/` with its signature, so a server started later, or a notebook, does not
read every point of a finished run again (the first read of a 100,000-point run is the only slow
one). Outside the run's directory: reading a run never writes into it.

A run's curve for a metric is its chief's series (master, chief or worker 0, see
`params.chief_first`): the one replica that reports for the job; the table says which replica.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from ...runstore import RunDamaged, RunNotFound, RunPaths, RunRecord, RunState, RunStatus
from ...runstore.metrics import MetricsReader
from ...runstore.series import Series
from .downsample import DEFAULT_POINTS, downsample_indices
from .params import canonical, chief_first, run_params
from .values import SeriesValues, series_values

__all__ = ["Curve", "RunDigest", "DigestCache", "encode_points", "read_digest", "signature"]

log = logging.getLogger(__name__)


class RunReads(Protocol):
    """What the cache reads of the runs: the run service's reads (`RunService` owns its cache,
    `RunService.digests`, and is what the cache reads)."""

    @property
    def home(self) -> Path: ...

    def paths(self, run_id: str) -> RunPaths: ...

    def record(self, run_id: str) -> RunRecord: ...

    def status(self, run_id: str) -> RunStatus: ...

    def run_ids(self) -> list[str]: ...


#: The kept digests' format (in their file names): 2 added each curve's wall times, 3 whether it ends in NaN.
DIGEST_FORMAT = 3


@dataclass(frozen=True)
class Curve:
    """One metric of one run, downsampled, with the values of the whole series.

    `steps_json` and `values_json` are the chosen points already encoded as JSON arrays (values
    exactly, steps as integers where they are): encoded once when the run is
    read, so a server answering a comparison of 200 runs again splices text instead of
    formatting 200,000 floats per request."""

    replica: str
    steps: np.ndarray  # x of the chosen points: the step, or the position where a point had none
    values: np.ndarray
    total: int  # points in the whole series
    summary: SeriesValues
    steps_json: str = "[]"
    values_json: str = "[]"
    times: np.ndarray = field(default_factory=lambda: np.empty(0))  # wall time of each chosen point
    times_json: str = "[]"
    #: The series' last point is NaN or infinite (the chosen points are finite: this says it ended so).
    ends_non_finite: bool = False


def encode_points(steps: np.ndarray, values: np.ndarray) -> tuple[str, str]:
    """(steps, values) as compact JSON arrays: integral steps as integers, values as the shortest
    text that reads back the same float, so a line drawn from them reaches exactly the final and
    best values the table beside it shows (a plot rounded to 7 digits showed a best value its
    table did not). Values are finite (`downsample_indices` chooses finite points only)."""
    if len(steps) and np.all(np.mod(steps, 1) == 0) and np.all(np.abs(steps) < 2**53):
        steps_text = json.dumps(steps.astype(np.int64).tolist(), separators=(",", ":"))
    else:
        steps_text = json.dumps(steps.tolist(), separators=(",", ":"))
    values_text = "[" + ",".join(map(repr, values.tolist())) + "]"
    return steps_text, values_text


@dataclass(frozen=True)
class RunDigest:
    run_id: str
    name: str | None
    state: str
    created_at: float
    params: dict[str, object]
    curves: dict[str, Curve] = field(default_factory=dict)
    #: Each param's value as compared (`params.canonical`), made once with the digest.
    canonical_params: dict[str, str] = field(default_factory=dict)


def _tree_stats(root: str, out: list[tuple[str, int, int]]) -> None:
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                _tree_stats(entry.path, out)
            else:
                stat = entry.stat()
                out.append((entry.path, stat.st_size, stat.st_mtime_ns))
        except OSError:
            continue


def signature(runs: RunReads, run_id: str) -> tuple:
    """What changes when a run's points, params or state change: stats of its files."""
    paths = runs.paths(run_id)
    stats: list[tuple[str, int, int]] = []
    for directory in (paths.metrics_dir, paths.params_dir, paths.tensorboard_dir):
        _tree_stats(str(directory), stats)
    try:
        status = os.stat(paths.status)
        stats.append(("status", status.st_size, status.st_mtime_ns))
    except OSError:
        pass
    return tuple(sorted(stats))


def encode_times(times: np.ndarray) -> str:
    """Wall times (seconds since the epoch) to the millisecond, as a JSON array."""
    return "[" + ",".join(f"{value:.3f}" for value in times.tolist()) + "]"


def _xy(series: Series) -> tuple[np.ndarray, np.ndarray]:
    values = np.asarray(series.values, dtype=np.float64)
    steps = series.steps
    if steps and None not in steps:
        x = np.asarray(steps, dtype=np.float64)
    else:
        x = np.arange(len(values), dtype=np.float64)
    return x, values


def read_digest(runs: RunReads, run_id: str, points: int) -> RunDigest:
    """Read one run whole and keep what a comparison shows of it."""
    record = runs.record(run_id)
    status = runs.status(run_id)
    reader = MetricsReader(runs.paths(run_id))
    reader.poll()
    logged_params = reader.params()
    reader.check_planted()
    curves: dict[str, Curve] = {}
    order = chief_first(reader.replicas())
    for metric in reader.metric_names():
        replica = next(key for key in order if metric in reader.data[key])
        x, y = _xy(reader.data[replica][metric])
        chosen = downsample_indices(x, y, points)
        steps, values = x[chosen], y[chosen]
        times = np.asarray(reader.data[replica][metric].times, dtype=np.float64)[chosen]
        curves[metric] = Curve(
            replica,
            steps,
            values,
            len(y),
            series_values(x, y),
            *encode_points(steps, values),
            times=times,
            times_json=encode_times(times),
            ends_non_finite=bool(len(y)) and not bool(np.isfinite(y[-1])),
        )
    params = run_params(logged_params, record.topology, record.backend, record.sweep.params if record.sweep else None)
    return RunDigest(
        run_id=run_id,
        name=record.name,
        state=status.state.value,
        created_at=record.created_at,
        params=params,
        curves=curves,
        canonical_params={name: canonical(value) for name, value in params.items()},
    )


class DigestCache:
    """Digests by (run, points), each valid while the run's `signature` is unchanged; at most
    `size` kept in memory (least recently used go first), finished runs' also on disk (see the
    module docstring). Thread-safe: a server's read threads share it."""

    def __init__(self, runs: RunReads, size: int = 4096):
        self.runs = runs
        self.size = size
        self.folder = runs.home / "cache" / "compare"
        self._lock = threading.Lock()
        self._digests: OrderedDict[tuple[str, int], tuple[tuple, RunDigest]] = OrderedDict()
        self.reads = 0  # runs read whole (for tests and benchmarks: a warm comparison reads none)

    def _file(self, run_id: str, points: int) -> Path:
        """Where a finished run's digest is kept; the format's version in the name, so a digest
        written by an older version (curves without times) is read again, not half-used."""
        return self.folder / f"{run_id}.{points}.v{DIGEST_FORMAT}.pickle"

    def _kept(self, run_id: str, points: int, seen: tuple) -> RunDigest | None:
        """The digest written for this signature, if any (a damaged or stale file is ignored)."""
        try:
            with open(self._file(run_id, points), "rb") as file:
                kept_signature, digest = pickle.load(file)
        except Exception:  # missing, cut short, or from another version: read the run instead
            return None
        return digest if kept_signature == seen and isinstance(digest, RunDigest) else None

    def _keep(self, run_id: str, points: int, seen: tuple, digest: RunDigest) -> None:
        """Write a finished run's digest (atomically; a cache: failing to write is no error)."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            with os.fdopen(fd, "wb") as file:
                pickle.dump((seen, digest), file, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, self._file(run_id, points))
        except OSError:
            pass

    def digest(self, run_id: str, points: int) -> RunDigest:
        key = (run_id, points)
        seen = signature(self.runs, run_id)
        with self._lock:
            held = self._digests.get(key)
            if held is not None and held[0] == seen:
                self._digests.move_to_end(key)
                return held[1]
        digest = self._kept(run_id, points, seen)
        if digest is None:
            digest = read_digest(self.runs, run_id, points)
            with self._lock:
                self.reads += 1
            if RunState(digest.state).finished:
                self._keep(run_id, points, seen, digest)
        with self._lock:
            self._digests[key] = (seen, digest)
            self._digests.move_to_end(key)
            while len(self._digests) > self.size:
                self._digests.popitem(last=False)
        return digest

    def keep_finished(self, points: int = DEFAULT_POINTS) -> list[str]:
        """Digest every finished run that has none kept yet (the Jupyter server's keeper calls
        this each pass), so even the first comparison of runs that ended while it ran answers
        without reading every point. Returns the runs read. A run that cannot be read now is
        left for the next pass: a digest is only ever a shortcut."""
        read = []
        for run_id in self.runs.run_ids():
            if self._file(run_id, points).exists():
                continue
            try:
                if self.runs.status(run_id).state.finished:
                    self.digest(run_id, points)
                    read.append(run_id)
            except (RunNotFound, RunDamaged, OSError, ValueError) as error:
                log.debug("no digest of run %s yet: %s", run_id, error)
        return read

    def digests(self, run_ids: Iterable[str], points: int) -> list[RunDigest]:
        return [self.digest(run_id, points) for run_id in run_ids]
