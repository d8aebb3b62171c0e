"""The Kubernetes backends: `native` (pods), `kubeflow` (v1 jobs), `kubeflow-trainer` (TrainJob).

One class does the work; the three differ only in how manifests are rendered (see render.py).
`submit` renders, checks the cluster (preflight), creates every object or none, records where
they are (`kubernetes.json`) and starts the run's detached follower, which from then on is the
only writer of the run's status, logs and metrics. `status` reads the store. `stop` deletes every
object of the run by label and lets the follower (or, if it is gone, `stop` itself) write the
final status.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from ...runstore import RunState, RunStatus, atomic_write_bytes, atomic_write_json
from ...runstore.models import Reason
from ...topology import Topology
from ..base import Backend, BackendError, Observation, SubmitHandle
from .client import Cluster, connect
from .create import create_all, delete_objects
from .handle import FOLLOWER_LOG, FOLLOWER_PID, STOP_FILE, RunHandle
from .names import LABEL_RUN, base_name
from .payload import read_code_dir
from .preflight import preflight
from .render import render_manifests
from .resources import KINDS
from .settings import KubernetesSettings, load_settings

FOLLOWER_MODULE = "jupyter_px.backends.kubernetes.follower"
STOP_WAIT_S = 30.0
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])


def _follower_alive(pid: int | None, run_dir: Path) -> bool:
    """Is `pid` this run's follower? (Not a zombie, not a reused pid.)"""
    if not pid:
        return False
    child = True
    try:
        if os.waitpid(pid, os.WNOHANG)[0]:  # our child, and it has exited (reaped now)
            return False
    except ChildProcessError:
        child = False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    if stat.rpartition(")")[2].split()[0] in ("Z", "X"):
        return False
    if child and (not cmdline or cmdline == Path("/proc/self/cmdline").read_bytes()):
        # Our child, started a moment ago: still our copy (fork, before exec) or inside execve,
        # whose new argv is installed after the parent has already been told the exec happened
        # (an empty cmdline; on a loaded machine that window lasts long enough to be seen).
        return True
    argv = cmdline.split(b"\0")
    return FOLLOWER_MODULE.encode() in argv and str(run_dir).encode() in argv


def running_follower(status: RunStatus, run_dir: Path) -> int | None:
    """The pid of the run's live follower, if any: the one the status names, or the one last
    started (`follower.pid`), which writes no status while it is still starting up; a few
    seconds, a minute on a loaded machine. Without the second, every look at a new run in that
    window (`Run.wait` looks 4 times a second) would start another follower."""
    run_dir = run_dir.resolve()
    if _follower_alive(status.supervisor_pid, run_dir):
        return status.supervisor_pid
    try:
        started = int((run_dir / FOLLOWER_PID).read_text())
    except (OSError, ValueError):
        return None
    return started if _follower_alive(started, run_dir) else None


class KubernetesBackend(Backend):
    """Plain pods + one headless Service per run (the topology's `backend: native`)."""

    name = "native"
    render_as = "native"

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

    def _render(self, topology: Topology, run_id: str, code: dict, files: dict[str, bytes], namespace: str) -> list:
        return render_manifests(self.render_as, topology, run_id, code, files, self.settings, namespace)

    def check(self, topology: Topology) -> None:
        """What can be known before the run exists: the manifests render, the cluster takes them."""
        placeholder = self._render(topology, "check", {"entrypoint": "main.py"}, {"main.py": b""}, "default")
        cluster = connect(self.settings)
        try:
            preflight(cluster, placeholder, self.render_as, self._runtime(topology))
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
            objects = self._render(topology, run_id, code, read_code_dir(paths.code_dir), cluster.namespace)
            preflight(cluster, objects, self.render_as, self._runtime(topology))
            job_kind = next((o["kind"] for o in objects if not KINDS[o["kind"]].core), None)
            handle = RunHandle(self.name, cluster.namespace, base_name(run_id), cluster.context, cluster.host, job_kind)
            created = create_all(cluster, objects, self.settings.create_parallelism)
            try:
                handle.save(paths.root)
                self.store.write_status(RunStatus.initial(run_id, [(s.role, s.index) for s in topology.replicas()]))
                pid = self._start_follower(paths.root)
            except BaseException:
                delete_objects(cluster, created, self.settings.create_parallelism)
                raise
        finally:
            cluster.close()
        return SubmitHandle(
            run_id,
            self.name,
            {"namespace": handle.namespace, "name": handle.base, "objects": len(created), "follower_pid": pid},
        )

    def _start_follower(self, run_dir: Path) -> int:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_PARENT, env.get("PYTHONPATH")]))
        env["PX_HOME"] = str(self.store.home)
        with open(run_dir / FOLLOWER_LOG, "ab") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", FOLLOWER_MODULE, str(run_dir.resolve())],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=str(run_dir),
                env=env,
                start_new_session=True,
            )
        atomic_write_bytes(run_dir / FOLLOWER_PID, str(process.pid).encode())
        return process.pid

    def follow(self, run_id: str) -> int | None:
        """Start the run's follower again if it is gone and the run is not finished (idempotent:
        a second follower of the same run exits at once). Its pid, or None if none was needed."""
        status = self.store.status(run_id)
        if status.state.finished or running_follower(status, self.store.paths(run_id).root):
            return None
        return self._start_follower(self.store.paths(run_id).root)

    def observe(self, run_id: str) -> Observation:
        """The stored status and whether a follower keeps it: reported, never acted on."""
        status = self.store.status(run_id)
        if status.state.finished or running_follower(status, self.store.paths(run_id).root):
            return Observation(status)
        return Observation(status, "nobody is following this run (its follower is not running)")

    def reconcile(self, run_id: str) -> RunStatus:
        """The cluster is watched by the run's follower, which writes the store; reconciling
        means making sure it still runs (a reboot or a kill ends it) and reading what it wrote."""
        self.follow(run_id)
        return self.store.status(run_id)

    def stop(self, run_id: str, timeout: float = STOP_WAIT_S) -> None:
        status = self.store.status(run_id)
        if status.state.finished:
            return
        root = self.store.paths(run_id).root
        handle = RunHandle.load(root)
        atomic_write_json(root / STOP_FILE, {"requested_at": time.time(), "by_pid": os.getpid()})
        settings = load_settings(namespace=handle.namespace, context=handle.context)
        cluster = connect(settings)
        try:
            delete_run(cluster, handle)
        finally:
            cluster.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.store.status(run_id)
            if status.state.finished:
                return
            if not running_follower(status, root):
                break
            time.sleep(0.05)
        status = self.store.status(run_id)
        if not status.state.finished:  # no follower (or a stuck one): the status is ours to finish
            _mark_stopped(status)
            self.store.write_status(status)


def _mark_stopped(status: RunStatus) -> None:
    now = time.time()
    status.state, status.reason, status.message = RunState.STOPPED, Reason.STOPPED_BY_USER, "stopped on request"
    status.finished_at, status.supervisor_pid = now, None
    for replica in status.replicas:
        if replica.state.value not in ("Succeeded", "Failed", "Lost", "Stopped"):
            replica.state, replica.finished_at = replica.state.__class__("Stopped"), now


def delete_run(cluster: Cluster, handle: RunHandle) -> None:
    """Delete every object of a run: by label (pods, services, configmaps) and the job by name."""
    from kubernetes.client.exceptions import ApiException

    from .client import api_reason

    selector = f"{LABEL_RUN}={handle.base}"
    problems = []
    if handle.job_kind:
        problems += delete_objects(cluster, [{"kind": handle.job_kind, "metadata": {"name": handle.base}}])
    for kind in ("Pod", "Service", "ConfigMap"):
        try:
            KINDS[kind].delete_by_label(cluster, selector)
        except ApiException as error:
            if error.status != 404:
                problems.append(f"{kind}: {api_reason(error)}")
    if problems:
        raise BackendError(f"stopping run {handle.base} left objects behind: {'; '.join(problems)}")


class KubeflowBackend(KubernetesBackend):
    """Kubeflow training operator v1 jobs: TFJob, PyTorchJob, MXJob, MPIJob."""

    name = "kubeflow"
    render_as = "kubeflow"


class KubeflowTrainerBackend(KubernetesBackend):
    """Kubeflow Trainer v2: one TrainJob on a ClusterTrainingRuntime."""

    name = "kubeflow-trainer"
    render_as = "kubeflow-trainer"

    def _runtime(self, topology: Topology) -> str | None:
        return self.settings.trainer_mpi_runtime if topology.is_mpi else self.settings.trainer_runtime
