"""What the three Kubernetes backends share: `KubernetesBackend`, the base of the backend classes
of `native/`, `kubeflow/` and `trainer/`.

The work is the same for all three; they differ in their manifests (each folder's
`manifests.py`, named by its `Flavour`) and in what they complete from the cluster before
rendering (the MPIJob or TrainJob version it serves, the runtime preflight checks).

`submit` renders, checks the cluster (preflight), creates every object or none, records where
they are (`kubernetes.json`) and starts the run's detached follower (`jupyter_px.detached`: its
identity, pid and creation time, is recorded as the run's owner in status.json before it may
run), which from then on is the only writer of the run's status, logs and metrics. `status` and
`observe` read the store (`observe` also reports "nobody is following this run"); `reconcile`,
the explicit keeper's step, starts a follower again. `stop` deletes every object of the run by
label and lets the follower (or, if it is gone, `stop` itself) write the final status; on a
finished run it deletes what the operator left (finished pods, the job).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ... import detached
from ...runstore import RunState, RunStatus, atomic_write_json
from ...runstore.models import Reason, RunOwner
from ...topology import Topology
from ..base import Backend, BackendError, Observation, RunLeftBehind, SubmitHandle
from .cleanup import delete_run, remove_run
from .client import Cluster, connect
from .create import CreateFailed, create_all, roll_back
from .handle import FOLLOWER_DIR, FOLLOWER_LOG, HANDLE_FILE, STOP_FILE, RunHandle
from .names import LABEL_RUN, base_name
from .payload import read_code_dir
from .preflight import preflight
from .resources import KINDS
from .run_objects import Flavour, run_objects
from .settings import KubernetesSettings, load_settings

FOLLOWER_MODULE = "jupyter_px.backends.kubernetes.follower"
STOP_WAIT_S = 30.0


def follower_owner(identity: detached.ProcessIdentity) -> RunOwner:
    return RunOwner(kind="follower", pid=identity.pid, started_at=identity.started_at)


def follower_alive(status: RunStatus) -> bool:
    """Does the follower the status names as its owner still run? By identity (pid and creation
    time, recorded by its starter before it could run): a follower forked a moment ago, still in
    exec, is already itself; a later process with the same pid is not."""
    owner = status.owner
    return owner is not None and detached.ProcessIdentity(owner.pid, owner.started_at).alive()


@contextlib.contextmanager
def _starting(run_dir: Path) -> Iterator[None]:
    """One starter of a run's follower at a time (two keepers looking at once start one)."""
    (run_dir / FOLLOWER_DIR).mkdir(exist_ok=True)
    with open(run_dir / FOLLOWER_DIR / ".start.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


class KubernetesBackend(Backend):
    """The behaviour every Kubernetes backend shares; a subclass names its `flavour` (its
    manifests) and may complete the settings from the cluster (`_cluster_settings`)."""

    #: the backend's pure half: its render functions (`<flavour>/manifests.py`)
    flavour: Flavour

    def __init__(self, store=None, settings: KubernetesSettings | None = None):
        super().__init__(store)
        self._settings = settings

    @property
    def settings(self) -> KubernetesSettings:
        if self._settings is None:
            self._settings = load_settings()
        return self._settings

    def _runtime(self, topology: Topology) -> str | None:
        return None

    def _cluster_settings(self, cluster: Cluster, topology: Topology) -> KubernetesSettings:
        """The settings to render with, completed from what this cluster serves."""
        return self.settings

    def _render(
        self,
        topology: Topology,
        run_id: str,
        code: dict,
        files: dict[str, bytes],
        namespace: str,
        settings: KubernetesSettings | None = None,
    ) -> list:
        settings = settings or self.settings
        return run_objects(self.flavour, topology, run_id, code, files, settings, namespace)

    def check(self, topology: Topology) -> None:
        """What can be known before the run exists: the manifests render, the cluster takes them."""
        args = (topology, "check", {"entrypoint": "main.py"}, {"main.py": b""}, "default")
        placeholder = self._render(*args)
        cluster = connect(self.settings)
        try:
            settings = self._cluster_settings(cluster, topology)
            if settings != self.settings:
                placeholder = self._render(*args, settings)
            preflight(cluster, placeholder, self.name, self._runtime(topology))
        finally:
            cluster.close()

    def submit(self, run_id: str) -> SubmitHandle:
        record = self.store.record(run_id)
        paths = self.store.paths(run_id)
        from ...topology import parse_topology

        topology = parse_topology(record.topology)
        code = record.code.model_dump(mode="json", include={"entrypoint", "language", "args"})
        cluster = connect(self.settings)
        try:
            objects = self._render(
                topology,
                run_id,
                code,
                read_code_dir(paths.code_dir),
                cluster.namespace,
                self._cluster_settings(cluster, topology),
            )
            preflight(cluster, objects, self.name, self._runtime(topology))
            job = next((o for o in objects if not KINDS[o["kind"]].core), None)
            handle = RunHandle(
                self.name,
                cluster.namespace,
                base_name(run_id),
                cluster.context,
                cluster.host,
                job["kind"] if job else None,
                job["apiVersion"] if job else None,
            )
            handle.save(paths.root)  # before any create: `stop` finds the run's objects by it
            initial = RunStatus.initial(run_id, [(s.role, s.index) for s in topology.replicas()])
            try:
                created = create_all(cluster, objects, self.settings.create_parallelism)
            except CreateFailed as error:
                if error.left_behind:
                    self._left_behind(initial, str(error))
                raise
            try:
                self.store.write_status(initial)
                with _starting(paths.root):
                    pid = self._start_follower(paths.root)
            except BaseException as error:
                problems = roll_back(cluster, objects, created, self.settings.create_parallelism)
                if problems:
                    self._left_behind(
                        initial,
                        f"starting the run failed ({error}); deleting its objects could not be confirmed: "
                        f"{'; '.join(problems[:3])}",
                    )
                raise
        finally:
            cluster.close()
        return SubmitHandle(
            run_id,
            self.name,
            {"namespace": handle.namespace, "name": handle.base, "objects": len(created), "follower_pid": pid},
        )

    def _left_behind(self, status: RunStatus, message: str) -> None:
        """A start that failed and may have left objects on the cluster: the run is kept, Failed,
        marked for `stop` to delete its objects by label; RunLeftBehind tells the caller to keep
        its record."""
        now = time.time()
        status.state, status.reason, status.finished_at = RunState.FAILED, ROLLBACK_UNCONFIRMED, now
        status.message = f"{message}. `jupyter px stop {status.run_id}` tries the deletion again."
        root = self.store.paths(status.run_id).root
        atomic_write_json(root / LEFT_BEHIND_FILE, {"at": now, "message": message})
        self.store.write_status(status)
        raise RunLeftBehind(status.message)

    def _start_follower(self, run_dir: Path) -> int:
        """Start the run's follower and record it as the run's owner before it may run. The caller
        holds `_starting(run_dir)`."""
        env = detached.importable_environ()
        env["PX_HOME"] = str(self.store.home)
        run_dir = run_dir.resolve()
        with detached.start(
            FOLLOWER_MODULE, [str(run_dir)], log_path=run_dir / FOLLOWER_LOG, cwd=run_dir, env=env
        ) as follower:  # it waits for "go": never a follower nobody knows about
            status = self.store.status(run_dir.name)
            status.owner = follower_owner(follower.identity)
            self.store.write_status(status)
            follower.go()
        return follower.pid

    def observe(self, run_id: str) -> Observation:
        """The stored status, and "nobody is following this run" when an unfinished run's follower
        is gone (given up on an unreachable API server, killed, its machine rebooted). A pure read:
        nothing is started (`reconcile` does that)."""
        status = self.store.status(run_id)
        if status.state.finished or follower_alive(status):
            return Observation(status)
        status = self.store.status(run_id)  # it may have written its final status just before exiting
        if status.state.finished:
            return Observation(status)
        return Observation(status, "nobody is following this run")

    def follow(self, run_id: str) -> int | None:
        """Start the run's follower again if it is gone and the run is not finished (idempotent:
        a second follower of the same run exits at once). Its pid, or None if none was needed."""
        root = self.store.paths(run_id).root
        with _starting(root):
            if self.observe(run_id).owner_problem is None:
                return None
            return self._start_follower(root)

    def reconcile(self, run_id: str) -> RunStatus:
        """The cluster is watched by the run's follower, which writes the store; reconciling (the
        explicit keeper's step, never a read's) means making sure it still runs (a reboot or a
        kill ends it) and reading what it wrote."""
        self.follow(run_id)
        return self.store.status(run_id)

    def stop(self, run_id: str, timeout: float = STOP_WAIT_S) -> None:
        status = self.store.status(run_id)
        root = self.store.paths(run_id).root
        if (root / LEFT_BEHIND_FILE).exists() or status.state.finished:
            self.clean(run_id)  # what a failed start or a finished run left
            return
        handle = RunHandle.load(root)
        atomic_write_json(root / STOP_FILE, {"requested_at": time.time(), "by_pid": os.getpid()})
        # The follower stores what each replica logged so far, then deletes the run, reads the
        # logs to their ends and writes the final status; a pod deleted first would take the log
        # of a replica nobody streams (runs over 16 replicas) with it.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.store.status(run_id)
            if status.state.finished or not follower_alive(status):
                break
            time.sleep(0.05)
        settings = load_settings(namespace=handle.namespace, context=handle.context)
        cluster = connect(settings)
        try:
            delete_run(cluster, handle)  # what the follower deleted is gone: this deletes nothing then
        finally:
            cluster.close()
        status = self.store.status(run_id)
        if not status.state.finished:  # no follower (or a stuck one): the status is ours to finish
            _mark_stopped(status)
            self.store.write_status(status)

    def clean(self, run_id: str) -> list[str]:
        """A finished run: delete what the operator kept (cleanPodPolicy None or Running keeps
        finished pods; the job stays; a TrainJob keeps its JobSet) and say what it was. Its status
        stays as the follower wrote it; its logs are in the run store already."""
        root = self.store.paths(run_id).root
        if (root / LEFT_BEHIND_FILE).exists():  # a failed start whose objects may remain
            return self._delete_left_behind(run_id, root)
        if not (root / HANDLE_FILE).exists():
            return []  # never reached the cluster
        handle = RunHandle.load(root)
        try:
            cluster = connect(load_settings(namespace=handle.namespace, context=handle.context))
        except BackendError as error:
            raise BackendError(
                f"run {run_id} is finished; its cluster cannot be reached to delete what it left: {error}"
            ) from None
        try:
            return remove_run(cluster, handle)
        except (HTTPError, OSError, ApiException) as error:
            raise BackendError(
                f"run {run_id} is finished; deleting what it left on the cluster ({handle.host}) failed: {error}"
            ) from None
        finally:
            cluster.close()

    def _delete_left_behind(self, run_id: str, root: Path) -> list[str]:
        """Delete by label what a failed start may have left; forget the mark once confirmed."""
        handle = RunHandle.load(root)
        cluster = connect(load_settings(namespace=handle.namespace, context=handle.context))
        try:
            removed = remove_run(cluster, handle)
            kinds = [KINDS["Pod"], KINDS["Service"], KINDS["ConfigMap"], *filter(None, [handle.job()])]
            left = [
                f"{kind.kind} {name}"
                for kind in kinds
                for name in kind.names_by_label(cluster, f"{LABEL_RUN}={handle.base}")
            ]
        finally:
            cluster.close()
        if left:
            raise BackendError(f"run {run_id}: still on the cluster after deleting: {', '.join(left[:5])}")
        (root / LEFT_BEHIND_FILE).unlink(missing_ok=True)
        status = self.store.status(run_id)
        status.message = f"{status.message} Deleted since: nothing of the run is left on the cluster."
        self.store.write_status(status)
        return removed


#: A run whose failed start may have left objects on the cluster (`stop` deletes them).
LEFT_BEHIND_FILE = "left-behind.json"
#: The reason of such a run (a string reason: statuses keep reasons the enum does not list).
ROLLBACK_UNCONFIRMED = "RollbackUnconfirmed"


def _mark_stopped(status: RunStatus) -> None:
    now = time.time()
    status.state, status.reason, status.message = RunState.STOPPED, Reason.STOPPED_BY_USER, "stopped on request"
    status.finished_at, status.owner = now, None
    for replica in status.replicas:
        if replica.state.value not in ("Succeeded", "Failed", "Lost", "Stopped"):
            replica.state, replica.finished_at = replica.state.__class__("Stopped"), now
