"""`RunService`: the application layer every surface calls (magics, CLI, REST handlers, the run
monitor, the public Python API), bound to one run store.

It owns the verbs on runs: submit (with a typed code source), observe, list, logs, metrics,
stop, tensorboard, render. Surfaces parse their input and show the result; they never pick a
backend or touch its processes, so a rule about runs lives here once.

Reads never act. `observe`, `list`, `status`, `replicas`, the log and metric reads only read
the store (and look, without acting, whether the run's lifecycle owner is there: the local
supervisor, the Kubernetes follower); a missing owner is *reported* (`owner_problem`), never
repaired. Only explicit keepers act: `keep` (the one place that reconciles a run, else gives
its stored status) is called by `wait` (`Run.wait()`, `jupyter px run --wait`, `jupyter px
follow`); `stop` acts by design; the Jupyter server's periodic keeper is `keep_all`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..backends import Backend, BackendError, Observation, Rendered, RunLeftBehind, get_backend, host_followers
from ..backends import render as render_dry_run
from ..code.loading import LoadedCode, load_code
from ..code.sources import CodeSource
from ..runstore import RunDamaged, RunNotFound, RunPaths, RunRecord, RunStatus, RunStore, new_run_id
from ..runstore.sweeps import SweepStore
from ..topology import Topology, parse_topology, to_dict
from ..topology.values import declared_run
from .metrics_cache import MetricsCache
from .runs_index import RunsIndex, RunsPage
from .submission import Submission, pickle_pushed, refuse_sweep_section
from .views import RunView, run_replicas
from .waiting import keep_until_finished

if TYPE_CHECKING:  # (numpy and tsdownsample: imported on a comparison's first read, not by every command)
    from .digests import DigestCache

log = logging.getLogger(__name__)

#: What `log_tail` returns unless asked for more: the end of the log, where errors are.
LOGS_TAIL_BYTES = 1 << 20
#: How often `wait` looks at a run.
WAIT_POLL_S = 0.25
#: Free bytes under the run store below which an owner cannot write a run's status.
STATUS_WRITE_BYTES = 64 * 1024
#: What a read says of an unfinished run while the disk is full: its owner may have seen the
#: replicas end, but the status (still Running) cannot say so until space is freed.
DISK_FULL_PROBLEM = "cannot record the end: disk full (no space left under PX_HOME; the status is as last written)"


class RunActive(ValueError):
    """A run that has not finished cannot be deleted: its owner still writes into its directory."""


class RunService:
    """Every verb on the runs of one store. Cheap to create: it holds the store, and the caches a
    long-lived service keeps between reads are made on first use.

    `kubernetes`: settings for the runs this service submits to a Kubernetes backend, winning
    over the settings file and `PX_K8S_*` (a Jupyter server's configured namespace and image)."""

    def __init__(
        self,
        store: RunStore | None = None,
        *,
        home: str | Path | None = None,
        kubernetes: Mapping[str, Any] | None = None,
    ):
        self._store = store or RunStore(home)
        self.kubernetes = dict(kubernetes or {})

    # ---- where the runs are ------------------------------------------------------------------
    @property
    def home(self) -> Path:
        """The store's home (`PX_HOME`): its runs, sweeps and TensorBoard records are under it."""
        return self._store.home

    @property
    def sweep_store(self) -> SweepStore:
        """The sweeps beside this service's runs, in the same store (what `SweepService` keeps)."""
        return self._store.sweeps

    @property
    def root(self) -> Path:
        """The folder of the runs (what "no runs yet in ..." and "no space left" name)."""
        return self._store.root

    def paths(self, run_id: str) -> RunPaths:
        """The run's files (its outputs, logs, TensorBoard events): what a user opens."""
        return self._store.paths(run_id)

    # ---- finding runs ------------------------------------------------------------------------
    def resolve(self, ref: str) -> str:
        """The run id `ref` means: an id, a name (its newest run) or `last`; RunNotFound else."""
        return self._store.resolve(ref)

    def exists(self, run_id: str) -> bool:
        """Whether a run of this id has a record (a stat)."""
        return self._store.exists(run_id)

    def status_changed_at(self, run_id: str) -> float | None:
        """When the run's status was last written (a stat, no read; None before the first
        write): a poller reads the status again only when this changes."""
        try:
            return os.stat(self._store.paths(run_id).status).st_mtime
        except OSError:
            return None

    def readable(self, ref: str) -> str:
        """`resolve`, then the run's record and status read: RunDamaged (naming what) for a run
        whose files cannot be, so every surface reports a damaged run the same way."""
        run_id = self.resolve(ref)
        self._store.record(run_id)
        self._store.status(run_id)
        return run_id

    def record(self, run_id: str) -> RunRecord:
        return self._store.record(run_id)

    def backend_of(self, run_id: str) -> Backend:
        """The backend that runs `run_id` (BackendError when this installation cannot use it)."""
        return get_backend(self._store.record(run_id).backend, self._store)

    # ---- submit ------------------------------------------------------------------------------
    def check(self, topology: Topology) -> None:
        """Refuse, before anything is recorded, what the topology's backend cannot run (its
        resource check): BackendError/ResourceUnavailable say why. For a sweep's trials too."""
        get_backend(topology.backend_kind, self._store, self.kubernetes).check(topology)

    def submit(self, submission: Submission) -> str:
        """Validate, record and start a run; returns its id at once (the run goes on).

        The topology with the submission's overrides applied (or the overrides alone, without
        one). Nothing is left behind when validation, the code, the backend's resource check or
        the start fails: TopologyError, FileNotFoundError/ValueError (the code), PushError,
        BackendError/ResourceUnavailable say why."""
        run_id, chosen = self._record(submission)
        try:
            chosen.submit(run_id)
        except RunLeftBehind:  # the backend kept the run, Failed, to clean what may remain
            raise
        except BaseException:
            self._store.delete(run_id)
            raise
        return run_id

    def submit_array(self, submissions: Sequence[Submission], concurrency: int, label: str) -> list[str]:
        """Record runs of one shape and start them together, at most `concurrency` at once, as
        one job array of their backend (a sweep's trials); their ids. Nothing is left behind
        when one cannot be recorded or the backend refuses (BackendError: the caller submits them
        one by one instead)."""
        recorded: list[str] = []
        try:
            backends: list[Backend] = []
            for submission in submissions:  # of one shape: checked once (an array refuses two shapes)
                run_id, chosen = self._record(submission, check=not backends)
                recorded.append(run_id)
                backends.append(chosen)
            names = sorted({backend.name for backend in backends})
            if len(names) != 1:
                raise BackendError(f"one job array runs on one backend, not {names}")
            backends[0].submit_array(recorded, concurrency, label)  # the one that checked
        except BaseException:
            for run_id in recorded:
                self._store.delete(run_id)
            raise
        return recorded

    def _record(self, submission: Submission, check: bool = True) -> tuple[str, Backend]:
        """Validate the submission and record its run (not started yet): its id and backend.
        `check`: ask the backend whether it can run it (its resource check)."""
        topo = parse_topology(submission.topology) if submission.topology is not None else None
        overrides = submission.overrides
        if topo is None or overrides.any:
            topo = overrides.applied_to(topo)
        if submission.trial is None:  # a sweep's trial comes without the sweep section
            refuse_sweep_section(topo)
        code = load_code(submission.source, submission.language)
        args, push = list(submission.args), submission.push
        if submission.trial is None:  # a polyaxonfile's declarations and run.cmd (a trial comes with its own)
            entrypoint = code.entrypoint if code.from_script else None
            declared, args, push = declared_run(topo, entrypoint, args, push)
            topo = parse_topology(declared) if declared is not None else topo
        chosen = get_backend(topo.backend_kind, self._store, self.kubernetes)
        if check:
            chosen.check(topo)
        files: dict[str, bytes | str] = {code.entrypoint: code.text, **code.files}
        if push:
            files["pushed.pkl"] = pickle_pushed(push)
        run_id = new_run_id(submission.name)
        record = RunRecord(
            run_id=run_id,
            name=submission.name,
            backend=chosen.name,
            topology=to_dict(topo),
            code=code.spec(args, push),
            workdir=str(Path(submission.workdir or os.getcwd()).resolve()),
            submitted_from=submission.origin,
            sweep=submission.trial,
            cold=submission.cold,
        )
        self._store.create(record, files)
        return run_id, chosen

    def render(
        self,
        topology: Topology,
        source: CodeSource | LoadedCode | None,
        *,
        backend: str | None,
        name: str,
        **options: Any,
    ) -> Rendered:
        """What `topology`'s backend (or `backend`) would create for `source` (an empty
        `main.py` without one), by the backend's row: the Kubernetes manifests, the Slurm batch
        script, the ssh commands. What `jupyter px render` prints and the sidebar shows. Pure:
        nothing is contacted or written. BackendError/ValueError when the backend cannot express
        it or renders nothing."""
        code = load_code(source) if source is not None else None
        return render_dry_run(topology, code, name=name, backend=backend, **options)

    # ---- reads: they never act ---------------------------------------------------------------
    def status(self, run_id: str) -> RunStatus:
        """The stored status, as its owner last wrote it. Pure."""
        return self._store.status(run_id)

    def observe(self, run_id: str) -> Observation:
        """The stored status and a report on the run's owner (`Backend.observe`). Pure: nothing
        is written, started or killed, whatever is found."""
        status = self._store.status(run_id)
        if status.state.finished:
            return Observation(status)
        record = self._store.record(run_id)
        try:
            observation = get_backend(record.backend, self._store).observe(run_id)
        except BackendError as error:
            return Observation(status, f"its {record.backend} backend cannot be reached from here: {error}")
        if observation.owner_problem is None and not observation.status.state.finished and self._disk_full():
            return Observation(observation.status, DISK_FULL_PROBLEM)
        return observation

    def _disk_full(self) -> bool:
        """Whether the file system of the run store has no room left for a status write."""
        try:
            stats = os.statvfs(self._store.root)
        except OSError:
            return False
        return stats.f_bavail * stats.f_frsize < STATUS_WRITE_BYTES

    def view(self, run_id: str) -> RunView:
        """One run as a read sees it (`observe` with the record)."""
        observation = self.observe(run_id)
        return RunView(self._store.record(run_id), observation.status, observation.owner_problem)

    def list_runs(self, limit: int | None = None, offset: int = 0) -> list[RunView]:
        """Runs newest first, `limit` of them from `offset`; each observed (pure). Damaged runs
        are skipped."""
        end = None if limit is None else offset + limit
        views = []
        for record, status in self._store.list(limit=end)[offset:end]:
            problem = None
            if not status.state.finished:
                try:
                    observation = self.observe(record.run_id)
                    status, problem = observation.status, observation.owner_problem
                except (OSError, ValueError, RunNotFound):  # changed since it was listed: as listed
                    pass
            views.append(RunView(record, status, problem))
        return views

    # ---- cached reads: what a long-lived service (the Jupyter server's) keeps between reads -----
    @cached_property
    def _index(self) -> RunsIndex:
        return RunsIndex(self._store, self.observe)

    @cached_property
    def _metric_readers(self) -> MetricsCache:
        return MetricsCache(self._store)

    @cached_property
    def digests(self) -> DigestCache:
        """Each run read once for comparisons, kept while its files do not change (`digests`):
        one for the service's life (a Jupyter server's serves every request and its keeper)."""
        from .digests import DigestCache

        return DigestCache(self)

    def runs_page(self, offset: int = 0, limit: int | None = None) -> RunsPage:
        """A page of run summaries, newest first, and the ETag of the whole list: files are
        read again only where they changed since the last call (`runs_index`)."""
        return self._index.page(offset, limit)

    def runs_etag(self) -> str:
        """The list's ETag as it is now: a few stats, no JSON read."""
        return self._index.current_etag()

    def metric_points_since(self, run_id: str, cursor: str | None) -> dict[str, Any]:
        """The points a reader at `cursor` has not had, a bounded page, and the cursor to go on
        from (`metrics_cache`); MetricsCursorError for a cursor this service did not make."""
        return self._metric_readers.points_since(run_id, cursor)

    def metric_progress(self, run_id: str) -> dict[str, Any] | None:
        """The most advanced replica's {step, total_steps}, when training reports total_steps."""
        return self._metric_readers.progress(run_id)

    def replicas(self, run_id: str, status: RunStatus | None = None) -> list[tuple[str, int]]:
        """The run's replicas (`run_replicas`): the topology's, then any only the status names."""
        return run_replicas(self._store.record(run_id), status if status is not None else self._store.status(run_id))

    def read_log(
        self, run_id: str, role: str, index: int, offset: int = 0, limit: int | None = None
    ) -> tuple[str, int]:
        """Log text from byte `offset` (negative: the tail), bounded, and the offset to go on from."""
        if limit is None:
            return self._store.read_log(run_id, role, index, offset)
        return self._store.read_log(run_id, role, index, offset, limit)

    def iter_log(self, run_id: str, role: str, index: int, offset: int = 0, chunk_size: int | None = None):
        """(text, next offset) chunks of a log from `offset` to its current end (bounded memory)."""
        if chunk_size is None:
            return self._store.iter_log(run_id, role, index, offset)
        return self._store.iter_log(run_id, role, index, offset, chunk_size)

    def log_tail(self, run_id: str, role: str, index: int, tail: int | None = LOGS_TAIL_BYTES) -> str:
        """A replica's log text: the last `tail` bytes (whole characters); `tail=None`: all of it."""
        if tail is not None and tail <= 0:
            raise ValueError(f"tail must be a positive number of bytes or None, got {tail!r}")
        first, offset = self._store.read_log(run_id, role, index, offset=-tail if tail else 0)
        rest = (text for text, _ in self._store.iter_log(run_id, role, index, offset=offset))
        return first + "".join(rest)

    def log_size(self, run_id: str, role: str, index: int) -> int:
        """Bytes in a replica's log so far (0 before it wrote any)."""
        path = self._store.paths(run_id).log(role, index)
        return path.lstat().st_size if path.exists() else 0

    def metrics(self, run_id: str) -> Any:
        """All tracked metrics: {replica key: {metric: Series(steps, values, times)}}."""
        return self.metrics_reader(run_id).data

    def metrics_reader(self, run_id: str, polled: bool = True, **options: Any) -> Any:
        """A `MetricsReader` over the run's metrics (`options` go to it), polled once unless
        `polled=False` (poll it again for what was appended since)."""
        from ..runstore.metrics import MetricsReader

        reader = MetricsReader(self._store.paths(run_id), **options)
        if polled:
            reader.poll()
            reader.check_planted()
        return reader

    def log_ends(self, run_id: str, replicas: Sequence[tuple[str, int]]) -> Any:
        """A `LogEnds` over these replicas' logs: each poll, the end of every log that grew."""
        from ..runstore.log_readers import LogEnds

        return LogEnds(self._store, run_id, list(replicas))

    def log_follower(self, run_id: str, role: str, index: int, **options: Any) -> Any:
        """A `LogTail` of one replica's log (`options` go to it): each poll reads what was appended."""
        from ..runstore.log_readers import LogTail

        return LogTail(self._store, run_id, role, index, **options)

    def run_ids(self) -> list[str]:
        """Every run id, newest first (one stat per run, no read)."""
        return self._store.run_ids()

    def records(self) -> list[RunRecord]:
        """Every run's record (what was submitted; no status read), damaged ones skipped."""
        found = []
        for run_id in self._store.run_ids():
            try:
                found.append(self._store.record(run_id))
            except (RunNotFound, RunDamaged, OSError, ValueError):  # deleted or damaged meanwhile
                continue
        return found

    def code_text(self, run_id: str) -> str:
        """The code the run shipped (its entry point's text); "" when it cannot be read."""
        record = self._store.record(run_id)
        try:
            return (self._store.paths(run_id).code_dir / record.code.entrypoint).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return ""

    # ---- keepers and actions: explicit, never part of a read ---------------------------------
    def keep(self, run_id: str) -> RunStatus:
        """Reconcile the run (its backend brings the stored status in line with what it sees: a
        run whose supervisor is gone becomes Lost and its leftovers are killed; a Kubernetes run
        nobody follows gets a follower again), else, when the backend cannot (one this
        installation lacks, a full disk), the stored status. The only place a run is reconciled
        for a surface; only explicit keepers call it."""
        try:
            return self.backend_of(run_id).reconcile(run_id)
        except (BackendError, OSError):
            return self._store.status(run_id)

    def host_followers(self) -> Any:
        """Follow this store's Kubernetes runs in this process, on one watch per namespace, from
        now until `close()` on what it returns (which hands them back to followers of their own):
        a Jupyter server does, so that its keeper's passes (`keep_all`) hand it the runs. None
        when this process does already."""
        return host_followers(self._store)

    def keep_all(self) -> int:
        """One pass of the keeper over the store: `keep` every unfinished run. The Jupyter
        server extension calls it periodically, so runs are settled whether or not anyone looks.
        Returns how many runs were unfinished."""
        unfinished = 0
        for run_id in self._store.run_ids():  # statuses only: a finished run costs one small read
            try:
                if self._store.status(run_id).state.finished:
                    continue
                unfinished += 1
                self.keep(run_id)
            except (RunNotFound, ValueError, OSError) as error:  # deleted or damaged meanwhile
                log.debug("jupyter_px: cannot keep run %s: %s", run_id, error)
        return unfinished

    def wait(self, run_id: str, timeout: float | None = None, poll: float = WAIT_POLL_S) -> RunStatus:
        """Keep the run until it has finished and return its final status (TimeoutError after
        `timeout` seconds; the run goes on)."""
        return keep_until_finished(lambda: self.keep(run_id), f"run {run_id}", timeout, poll)

    def stop(self, run_id: str, force: bool = False) -> RunStatus:
        """Stop every replica (waits until they have ended) and return the status; a finished
        run is left as it is. BackendError when the backend cannot stop it. `force`: without the
        run's owner (a hung supervisor), as `jupyter px stop --force`."""
        backend = self.backend_of(run_id)
        if force:
            return backend.force_stop(run_id)
        backend.stop(run_id)
        return self._store.status(run_id)

    def stacks(self, run_id: str, take: bool = True) -> dict[str, Any]:
        """Every replica's Python stacks, grouped by identical stack, frames named by notebook cell
        (`jupyter_px.diagnostics`): taken now from a running run (`take`), else the newest snapshot
        kept in the run (taken on request, or when a stall was noticed). NoStacks when there is none;
        BackendError when the run's backend cannot take them."""
        from ..diagnostics import snapshots

        if take and not self._store.status(run_id).state.finished:
            return self.backend_of(run_id).stacks(run_id)
        kept = snapshots.latest(self._store.paths(run_id).root)
        if kept is None:
            raise snapshots.NoStacks(f"no stacks were taken of run {run_id} while it ran")
        return kept

    def kill(self, run_id: str, role: str, index: int, signum: int) -> str:
        """Send `signum` to one running replica of the run (to see recovery work: a gang restart
        with `termination.max_retries`); what was signalled. BackendError when it cannot be."""
        return self.backend_of(run_id).kill(run_id, role, index, signum)

    def clean(self, run_id: str) -> list[str]:
        """Remove what a finished run left outside the store (e.g. the pods and job a Kubernetes
        operator keeps) and say what (`Backend.clean`); the run itself stays. RunActive for a run
        that has not finished (`stop` it); BackendError when the backend cannot remove it."""
        status = self._store.status(run_id)
        if not status.state.finished:
            raise RunActive(f"run {run_id} is {status.state.value}: stop it first")
        return self.backend_of(run_id).clean(run_id)

    def delete(self, run_id: str) -> list[str]:
        """Remove a finished run: what it left outside the store (`clean`), then its directory
        (record, status, logs, metrics, outputs); what was removed outside the store.

        RunActive for a run that has not finished: stop it first (its supervisor or follower
        would keep writing into a directory that is gone). RunNotFound for an unknown run. A run
        whose record is damaged may be deleted (that is how one is got rid of) if its status says
        it finished; with no record to name its backend, nothing outside the store is removed.
        BackendError when what it left cannot be removed: the run is kept (its directory is how
        its objects are found), so a later delete tries again."""
        status = self._store.status(run_id, without_record=True)
        if not status.state.finished:
            raise RunActive(f"run {run_id} is {status.state.value}: stop it before deleting it")
        try:
            backend = self.backend_of(run_id)
        except RunDamaged:
            backend = None
        removed = backend.clean(run_id) if backend is not None else []
        self._store.delete(run_id)
        return removed

    def tensorboard(self, run_ids: Sequence[str], **options: Any) -> Any:
        """Start (or reuse) one TensorBoard for these runs; the typed start result (Launched,
        Reused or Failed). Blocks for seconds: call it off an event loop."""
        from .. import tensorboard

        options.setdefault("home", self._store.home)
        return tensorboard.start(list(run_ids), **options)
