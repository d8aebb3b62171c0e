"""What the three Kubernetes backends share: `KubernetesBackend`, the base of the backend classes
of `native/`, `kubeflow/` and `trainer/`.

The work is the same for all three; they differ in their manifests (each folder's
`manifests.py`, named by its `Flavour`) and in what they complete from the cluster before
rendering (the MPIJob or TrainJob version it serves, the runtime preflight checks).

A run owned by a detached follower (`backends/followed.py`: the owner, `observe`, `reconcile` and
the stop request are the shape every such backend shares). What is Kubernetes' own: `submit`
renders, checks the cluster (preflight), creates every object or none, records where they are
(`kubernetes.json`) and starts the follower, from then on the only writer of the run's status,
logs and metrics. `stop` asks the follower, which stores every replica's log so far and deletes
the run's objects; then `stop` deletes by label whatever is left, and writes the final status
itself if no follower could; on a finished run it deletes what the operator left (finished
pods, the job).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ...runstore import ReplicaState, RunState, RunStatus, atomic_write_json
from ...topology import Topology
from ..base import BackendError, RunLeftBehind, SubmitHandle, replica_to_kill
from ..followed import FollowedBackend, mark_stopped
from .follower.host import active_host
from .shared.cleanup import delete_run, remove_run
from .shared.client import Cluster, connect
from .shared.create import CreateFailed, create_all, roll_back
from .shared.handle import FOLLOWER, HANDLE_FILE, RunHandle
from .shared.names import LABEL_RUN, base_name
from .shared.payload import read_code_dir
from .shared.preflight import preflight
from .shared.resources import KINDS
from .shared.run_objects import Flavour, run_objects
from .shared.settings import KubernetesSettings, load_settings

STOP_WAIT_S = 30.0


class KubernetesBackend(FollowedBackend[KubernetesSettings]):
    """The behaviour every Kubernetes backend shares; a subclass names its `flavour` (its
    manifests) and may complete the settings from the cluster (`_cluster_settings`)."""

    #: the backend's pure half: its render functions (`<flavour>/manifests.py`)
    flavour: Flavour
    follower = FOLLOWER

    def _load_settings(self) -> KubernetesSettings:
        return load_settings()

    def _runtime(self, topology: Topology) -> str | None:
        return None

    def start_follower(self, run_dir: Path) -> int:
        """In a process that hosts this store's followers (a Jupyter server: `follower/host.py`),
        the run is followed there, on its namespace's watch; else by a follower of its own. The
        owner's pid; the caller holds the run's start lock."""
        host = active_host(self.store.home)
        if host is not None and host.take(run_dir.name):
            return host.owner.pid
        return super().start_follower(run_dir)

    def reconcile(self, run_id: str) -> RunStatus:
        """The keeper's step: make sure the run is followed (see `FollowedBackend.reconcile`); in
        a process that hosts followers, by its host, which also takes over a run its own follower
        follows (one watch per namespace instead of one per run)."""
        host = active_host(self.store.home)
        if host is None:
            return super().reconcile(run_id)
        host.keep(run_id)
        return self.store.status(run_id)

    def _cluster_settings(self, cluster: Cluster, topology: Topology) -> KubernetesSettings:
        """The settings to render with, completed from what this cluster serves."""
        return self.settings

    def _keep(self, run_dir: Path, topology: Topology, objects: list[dict[str, Any]]) -> None:
        """What a flavour keeps of the rendered objects in the run directory before they are
        created (native: its pods, for the run's next attempts)."""

    def _render(
        self,
        topology: Topology,
        run_id: str,
        code: dict,
        files: dict[str, bytes],
        namespace: str,
        settings: KubernetesSettings | None = None,
        result_key: str | None = None,
    ) -> list:
        settings = settings or self.settings
        return run_objects(self.flavour, topology, run_id, code, files, settings, namespace, result_key)

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
                _result_key(paths.result_key),
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
            # Under the run's start lock from the handle on: a keeper looking meanwhile (it sees the
            # handle, and no owner yet) waits until the run's objects exist and it has its owner,
            # rather than follow a job not yet created or have its owner overwritten by `initial`.
            with self.starting(paths.root):
                handle.save(paths.root)  # before any create: `stop` finds the run's objects by it
                self._keep(paths.root, topology, objects)
                initial = RunStatus.initial(run_id, [(s.role, s.index) for s in topology.replicas()])
                try:
                    created = create_all(cluster, objects, self.settings.create_parallelism)
                except CreateFailed as error:
                    if error.left_behind:
                        self._left_behind(initial, str(error))
                    raise
                try:
                    self.store.write_status(initial)
                    pid = self.start_follower(paths.root)
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

    def stop(self, run_id: str, timeout: float = STOP_WAIT_S) -> None:
        status = self.store.status(run_id)
        root = self.store.paths(run_id).root
        if (root / LEFT_BEHIND_FILE).exists() or status.state.finished:
            self.clean(run_id)  # what a failed start or a finished run left
            return
        handle = RunHandle.load(root)
        self.request_stop(run_id)
        # The follower stores what each replica logged so far, then deletes the run, reads the
        # logs to their ends and writes the final status; a pod deleted first would take the log
        # of a replica nobody streams (runs over 16 replicas) with it.
        self.await_owner(run_id, time.monotonic() + timeout)
        settings = load_settings(namespace=handle.namespace, context=handle.context)
        cluster = connect(settings)
        try:
            delete_run(cluster, handle)  # what the follower deleted is gone: this deletes nothing then
        finally:
            cluster.close()
        status = self.store.status(run_id)
        if not status.state.finished:  # no follower (or a stuck one): the status is ours to finish
            mark_stopped(status)
            self.store.write_status(status)

    def stacks(self, run_id: str) -> dict[str, Any]:
        """Every running replica's stacks, asked for in its pod (`shared/stacks.py`)."""
        from .shared.stacks import take_stacks

        root = self.store.paths(run_id).root
        try:
            handle = RunHandle.load(root)
        except (OSError, ValueError) as error:
            raise BackendError(f"run {run_id} has no pods to ask: {error}") from None
        status = self.store.status(run_id)
        targets = {r.key: r.pid for r in status.replicas if r.state == ReplicaState.RUNNING}
        cluster = connect(load_settings(namespace=handle.namespace, context=handle.context))
        try:
            return take_stacks(cluster, handle, root, run_id, targets)
        except (HTTPError, OSError, ApiException) as error:
            raise BackendError(f"run {run_id}: asking its pods for their stacks failed: {error}") from None
        finally:
            cluster.close()

    def kill(self, run_id: str, role: str, index: int, signum: int) -> str:
        """One running replica ended on purpose in its pod (`shared/chaos.py`, an exec); the
        follower and the operator then do what the run's policies say."""
        from ...topology import parse_topology
        from .shared.chaos import kill_replica, record_kill

        root = self.store.paths(run_id).root
        replica_to_kill(self.store.status(run_id), role, index)
        try:
            handle = RunHandle.load(root)
        except (OSError, ValueError) as error:
            raise BackendError(f"run {run_id} has no pods to ask: {error}") from None
        topology = parse_topology(self.store.record(run_id).topology)
        cluster = connect(load_settings(namespace=handle.namespace, context=handle.context))
        try:
            done = kill_replica(cluster, handle, topology, run_id, role, index, signum)
            record_kill(root, role, index, signum)
            return done
        except (HTTPError, OSError, ApiException) as error:
            raise BackendError(f"run {run_id}: asking its pods to kill {role}-{index} failed: {error}") from None
        finally:
            cluster.close()

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


def _result_key(path: Path) -> str | None:
    """The run's result secret, for the pods' runner (a run made before results were signed has none)."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return None
