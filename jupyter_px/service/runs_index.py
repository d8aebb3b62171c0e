"""The runs list the sidebar polls: cheap when nothing changed, incremental when something did.

The sidebar asks for the list every couple of seconds while it is visible, with 1,000 runs in
the store. Re-reading and re-validating 2,000 JSON files per poll would cost tens of
milliseconds of server CPU for a list that rarely changes, so:

* a fingerprint of the store (each run's id and its status file's mtime, size and inode: a
  record never changes after submission, a status is replaced atomically by whoever writes
  it) is a few `stat` calls and gives the list's ETag; a poll whose `If-None-Match` matches is
  answered 304 without reading any JSON;
* each run's summary is cached with the fingerprint it was built from, so a poll after one run
  changed re-reads that one run, not all of them.

Summaries are `views.run_summary`, the shape `jupyter px runs --json` prints.
The list only reads: runs that are not finished are observed through the run service, and a
run whose owner is gone (its supervisor died, nobody follows it) is listed as recorded with its
`owner_problem`; the problems are part of the ETag, so a poll sees one appear. Bringing such a
run up to date is the server's keeper's job (`RunService.keep_all`), never a poll's.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..backends import Observation
from ..runstore import RunNotFound, RunPaths, RunStore
from .views import run_summary

log = logging.getLogger(__name__)

Stamp = tuple[int, int, int]  # status file: mtime_ns, size, inode


@dataclass(frozen=True)
class RunsPage:
    """One page of the list and the ETag of the whole list."""

    etag: str
    total: int
    runs: list[dict[str, Any]]


class RunsIndex:
    """Summaries of every run in one store, newest first, rebuilt only where files changed.

    Thread-safe: the handlers call it from the executor, several requests at once.
    """

    def __init__(self, store: RunStore, observe: Callable[[str], Observation]):
        """`observe`: the run service's pure read of an unfinished run's owner."""
        self.observe = observe
        self.store = store
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[Stamp, dict[str, Any]]] = {}
        # Plain strings, not RunPaths: building 1,000 pathlib paths per poll cost more than the stats.
        self._root = str(store.root)
        self._status_name = RunPaths("x", store.home).status.name

    def _stamp(self, run_id: str) -> Stamp | None:
        """The status file's identity; run ids come from `store.run_ids()`, which validated them."""
        try:
            stat = os.stat(os.path.join(self._root, run_id, self._status_name))
        except OSError:
            return None
        return (stat.st_mtime_ns, stat.st_size, stat.st_ino)

    def _owner_problems(self, run_ids: list[str]) -> dict[str, str]:
        """{run_id: owner problem} of those runs (observed: a pure read) that have one."""
        problems = {}
        for run_id in run_ids:
            try:
                problem = self.observe(run_id).owner_problem
            except (RunNotFound, OSError, ValueError) as error:  # damaged or half-deleted
                log.debug("jupyter_px: cannot observe %s: %s", run_id, error)
                continue
            if problem:
                problems[run_id] = problem
        return problems

    def _unfinished(self, stamps: dict[str, Stamp]) -> list[str]:
        """Runs whose owner a read looks at: those the cache holds unfinished (a run the cache
        has not seen yet changes the stamps, hence the ETag, anyway)."""
        return [run_id for run_id in stamps if run_id in self._cache and not self._cache[run_id][1]["finished"]]

    def stamps(self) -> dict[str, Stamp]:
        """{run_id: stamp} of every readable run; what the ETag is made of."""
        out = {}
        for run_id in self.store.run_ids():
            stamp = self._stamp(run_id)
            if stamp is not None:
                out[run_id] = stamp
        return out

    @staticmethod
    def etag_of(stamps: dict[str, Stamp], problems: dict[str, str] | None = None) -> str:
        digest = hashlib.blake2b(digest_size=12)
        for run_id in sorted(stamps):
            digest.update(f"{run_id}:{stamps[run_id]};".encode())
        for run_id in sorted(problems or {}):
            digest.update(f"{run_id}!{(problems or {})[run_id]};".encode())
        return f'"{digest.hexdigest()}"'

    def current_etag(self) -> str:
        """The list's ETag now: its status files' stamps and its runs' owner problems (reads)."""
        with self._lock:
            stamps = self.stamps()
            return self.etag_of(stamps, self._owner_problems(self._unfinished(stamps)))

    def page(self, offset: int = 0, limit: int | None = None) -> RunsPage:
        """Summaries newest first (by submission time), `limit` of them from `offset`."""
        with self._lock:
            stamps = self.stamps()
            for run_id in set(self._cache) - set(stamps):
                del self._cache[run_id]
            for run_id, stamp in stamps.items():
                cached = self._cache.get(run_id)
                if cached is not None and cached[0] == stamp:
                    continue
                try:
                    record, status = self.store.record(run_id), self.store.status(run_id)
                except (OSError, ValueError, RunNotFound) as error:  # damaged or half-deleted: skip it
                    log.debug("jupyter_px: skipping run %s in the list: %s", run_id, error)
                    self._cache.pop(run_id, None)
                    continue
                self._cache[run_id] = (stamp, run_summary(record, status))
            problems = self._owner_problems(self._unfinished(stamps))
            for run_id in self._unfinished(stamps):  # an owner found gone (or back) since the summary
                stamp, summary = self._cache[run_id]
                if summary["owner_problem"] != problems.get(run_id):
                    self._cache[run_id] = (stamp, {**summary, "owner_problem": problems.get(run_id)})
            ordered = sorted(
                (summary for _, summary in self._cache.values()),
                key=lambda summary: (summary["created_at"], summary["run_id"]),
                reverse=True,
            )
            etag = self.etag_of(stamps, problems)
        end = None if limit is None else offset + limit
        return RunsPage(etag=etag, total=len(ordered), runs=ordered[offset:end])
