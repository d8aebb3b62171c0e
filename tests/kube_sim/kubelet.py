"""A kubelet that runs pods for real: each container of a pod bound to its node is a local process.

This module is the sync loop (kubernetes v1.33.0 unless said otherwise); its parts each have a
module: processes (`kubelet_processes.py`: image, isolation, env, signals, memory), logs
(`kubelet_logs.py`: CRI files, rotation, serving), volumes and hosts (`kubelet_volumes.py`),
status (`kubelet_status.py`: container states, phase, conditions), the API for states no
process produces (`kubelet_state_api.py`), what it knows of each pod (`kubelet_pods.py`), and,
where the machine permits it, a network namespace and bridge address per pod (`kubelet_network.py`).

- states: waiting ContainerCreating -> running -> terminated with the exit code, reason
  `Completed` (0) or `Error` (pkg/kubelet/kuberuntime/helpers.go, containerd's reasons);
  restarts per restartPolicy (Always; OnFailure only after a non-zero exit), the first at once,
  then after a back-off of 10 s doubling to 300 s, shown as waiting `CrashLoopBackOff`
  (pkg/kubelet/kubelet.go backOffPeriod, MaxContainerBackOff); `lastState` the previous
  termination; init containers one after another before the others; an exited process is
  terminated once its output is in its log (containerd 2, main at 03320ca: the CRI marks a
  container exited after deleting its task, which waits for the task's IO:
  internal/cri/server/events.go handleContainerExit, client/task.go Delete), at most
  `OUTPUT_WAIT_S` later;
- images: one the node cannot pull (`refuse_image`) keeps its container waiting ImagePullBackOff
  (pkg/kubelet/images/image_manager.go), tried again on later syncs;
- deletion (pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer): SIGTERM to the
  process group, SIGKILL after the grace period; the pod's final status (containers terminated
  143 / 137, phase Failed, or Succeeded when all exited 0) is written before the pod is removed
  (the status manager's grace-0 delete, pkg/kubelet/status/status_manager.go);
- sidecars (restartable init containers, KEP-753): started in turn, the next once it runs,
  restarted whenever they exit, stopped (SIGTERM, SIGKILL after the grace period) once the app
  containers are done; they do not decide the phase.
"""

from __future__ import annotations

import logging
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from .apiserver import ApiServer, now
from .events import record
from .images import DEFAULT_IMAGES, Image
from .kubelet_api_access import ApiAccess
from .kubelet_logs import ContainerLogs
from .kubelet_network import PodNetwork, PodNetworkUnavailable
from .kubelet_pods import ContainerRun, Instance, PodRun
from .kubelet_processes import Processes, namespaces_permitted
from .kubelet_state_api import StateApi
from .kubelet_status import StatusWriter
from .kubelet_streams import Streams
from .kubelet_volumes import VolumesAndHosts

log = logging.getLogger(__name__)

#: How long an exited container's output may still be copied before its exit is reported anyway.
OUTPUT_WAIT_S = 10.0


class Kubelet(StateApi, StatusWriter, Processes, ContainerLogs, VolumesAndHosts, Streams, ApiAccess):
    """The node agent: the sync loop (admit pods, start containers in order, restart them per
    policy with back-off, stop sidecars, terminate deleted pods) over its parts: processes,
    logs, volumes and hosts, status, and the API for states no process produces."""

    def __init__(
        self,
        api: ApiServer,
        node: str = "node-1",
        root: Path | None = None,
        backoff_base: float = 10.0,
        backoff_max: float = 300.0,
        log_max_bytes: int = 10 * 1024 * 1024,
        log_max_files: int = 5,
        isolate: bool | None = None,
        pod_network: bool | None = None,
        images: dict[str, Image] | None = None,
        claims: dict[str, str] | None = None,
        warm: bool = True,
    ):
        permitted, why = namespaces_permitted() if isolate is not False else (False, "isolation turned off")
        self.isolated = permitted
        self.not_isolated_because = why
        #: each pod in its own network namespace with an address on a bridge (kubelet_network.py);
        #: None: pods share this machine's network namespace, on 127.0.x.y addresses
        self.network: PodNetwork | None = None
        #: why pods share this machine's network ("" when they have their own)
        self.no_pod_network_because = "turned off (pod_network=False)"
        if pod_network:
            if not permitted:
                raise PodNetworkUnavailable(f"pod_network=True needs pods in their own mount namespaces: {why}")
            self.network = PodNetwork()
        elif pod_network is None:  # where the machine permits it
            if not permitted:
                self.no_pod_network_because = f"pods are not isolated here: {why}"
            else:
                try:
                    self.network = PodNetwork()
                except PodNetworkUnavailable as unavailable:
                    self.no_pod_network_because = str(unavailable)
        if self.network is not None:
            self.no_pod_network_because = ""
        self.api = api
        self.node = node
        self.root = Path(root or tempfile.mkdtemp(prefix="kube-sim-kubelet-"))
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        #: Python containers forked from a warm interpreter (zygotes.py) where they can be
        self.warm = warm
        #: A test's knob: while set, no container that ended is started again, whatever its
        #: back-off (a node away for a while: its pods come back when the test clears it).
        self.restarts_held = False
        self.log_max_bytes = log_max_bytes
        self.log_max_files = log_max_files
        self.pods: dict[str, PodRun] = {}
        self._ips: dict[str, str] = {}
        self._next_ip = 2
        self._lock = threading.RLock()
        self._log_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"kube-sim-kubelet-{node}", daemon=True)
        self._hosts_text: dict[str, str] = {}
        #: images this node cannot pull (`refuse_image`), with the registry's error
        self.unpullable: dict[str, str] = {}
        self.pulled_images: set[str] = set()
        #: the API server's HTTPS address on this machine, for pods (kubelet_api_access.py); set by
        #: the Cluster
        self.apiserver: tuple[str, int] | None = None
        self._relay = None
        #: repository patterns -> what they are here (images.py); the given ones before the defaults
        self.images = tuple((images or {}).items()) + DEFAULT_IMAGES
        #: PersistentVolumeClaims and the host directories their volumes are (kubelet_volumes.py)
        self.claims = {name: str(path) for name, path in (claims or {}).items()}
        self._pods = api.resource("", "v1", "pods")
        api.log_source = self.logs
        api.streamer = self

    # ---- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        if self.network is not None:
            self.network.start()
            self._start_relay()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self.api.cond:
            self.api.cond.notify_all()
        self._thread.join(timeout=10)
        with self._lock:
            for run in self.pods.values():
                for container in run.containers:
                    self._signal(container, signal.SIGKILL)
            for run in self.pods.values():
                for container in run.containers:
                    if container.current and container.current.process:
                        try:
                            container.current.process.wait(timeout=10)
                        except subprocess.TimeoutExpired:
                            pass
        self._stop_relay()
        if self.network is not None:
            self.network.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def _loop(self) -> None:
        seen = -1
        while not self._stop.is_set():
            seen = self.api.wait_for_change(seen, 0.1)
            if self._stop.is_set():
                return
            try:
                self.sync()
            except Exception:
                log.exception("kubelet sync")

    # ---- the sync loop -------------------------------------------------------------------------

    def sync(self) -> None:
        """One pass: admit new pods, start/restart/stop containers, write statuses, hosts files."""
        listed = self.api.list(self._pods, "", field_selector=f"spec.nodeName={self.node}")["items"]
        by_uid = {p["metadata"]["uid"]: p for p in listed}
        with self._lock:
            for uid, run in list(self.pods.items()):
                if uid not in by_uid:  # removed from the API (a forced delete): stop at once
                    for container in run.containers:
                        self._signal(container, signal.SIGKILL)
                    if not any(c.running for c in run.containers):
                        del self.pods[uid]
                        self._release_sandbox(run)
            # every new pod's sandbox (address, names) first, then containers: a pod that starts
            # in this pass already finds the others admitted with it in its hosts file (as the
            # pod sandboxes exist before any container starts)
            for uid, pod in by_uid.items():
                if uid not in self.pods and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                    self._admit(pod)
            for uid, pod in by_uid.items():
                run = self.pods.get(uid)
                if run is None:
                    continue
                run.pod = pod
                if run.done:
                    if pod["metadata"].get("deletionTimestamp"):
                        self.api.remove(self._pods, run.namespace, run.name, uid)
                    continue
                self._sync_pod(run)
                if run.done or (run.last_status or {}).get("phase") in ("Succeeded", "Failed"):
                    self._release_sandbox(run)
            self._write_hosts()

    def _admit(self, pod: dict[str, Any]) -> PodRun:
        meta = pod["metadata"]
        uid = meta["uid"]
        netns = ""
        if self.network is not None:
            sandbox = self.network.attach(uid)
            ip, netns = sandbox.ip, sandbox.netns
        else:
            ip = self._ips.get(uid) or ""
            if not ip:
                ip = f"127.0.{self._next_ip // 250}.{self._next_ip % 250 + 2}"
                self._next_ip += 1
                self._ips[uid] = ip
        directory = self.root / "pods" / uid
        directory.mkdir(parents=True, exist_ok=True)
        spec = pod["spec"]
        containers = [ContainerRun(c["name"], c, init=True) for c in spec.get("initContainers") or []]
        containers += [ContainerRun(c["name"], c) for c in spec.get("containers") or []]
        run = PodRun(
            uid, meta["namespace"], meta["name"], directory, ip, pod, containers, start_time=now(), netns=netns
        )
        self.pods[uid] = run
        return run

    def _release_sandbox(self, run: PodRun) -> None:
        """A pod that has ended for good gives back its network (the kubelet's KillPod ->
        StopPodSandbox -> CNI DEL); its status keeps the address it had."""
        if self.network is None or not run.netns or any(c.running for c in run.containers):
            return
        self.network.detach(run.uid)
        run.netns = ""

    def _sync_pod(self, run: PodRun) -> None:
        pod = run.pod
        restart_policy = pod["spec"].get("restartPolicy", "Always")
        if pod["metadata"].get("deletionTimestamp"):
            self._terminate(run)
        else:
            if not run.mounted:
                run.mounted = self._mount_volumes(run)
            if run.mounted:
                self._reap(run, restart_policy)
                self._start_due(run, restart_policy)
                self._stop_sidecars(run, restart_policy)
        self._write_status(run)
        if run.deleting_since and not any(c.running for c in run.containers):
            run.done = True
            self.api.remove(self._pods, run.namespace, run.name, run.uid)

    # ---- containers: order, restarts, termination ----------------------------------------------

    def _copying_output(self, instance: Instance) -> bool:
        """Is the exited process's output still being copied into its log? Its exit is then not
        reported yet: containerd's CRI reports a container exited once its task is deleted, and
        that waits for the container's IO ("let IO finish before closing ... otherwise we might
        lose data from the container": client/task.go Delete, internal/cri/server/events.go
        handleContainerExit, containerd 2 at 03320ca), so a log read that ends at the exit has
        every line. At most `OUTPUT_WAIT_S` (the CRI's handleEventTimeout, after which it tries
        the event again later): a process left behind holding the pipes does not keep the
        container running."""
        if not any(pump.is_alive() for pump in instance.pumps):
            return False
        instance.output_wait_since = instance.output_wait_since or time.monotonic()
        return time.monotonic() - instance.output_wait_since < OUTPUT_WAIT_S

    def _reap(self, run: PodRun, restart_policy: str) -> None:
        self._enforce_memory(run)
        for container in run.containers:
            instance = container.current
            if instance is None or instance.exit_code is not None or instance.process is None:
                continue
            code = instance.process.poll()
            if code is None or self._copying_output(instance):
                continue
            if code < 0:
                code = 128 - code  # killed by signal N: 128 + N, as containerd reports it
            instance.exit_code = code
            instance.finished = time.time()
            instance.reason = instance.reason or ("Completed" if code == 0 else "Error")
            if self._will_restart(container, restart_policy):
                delay = (
                    0.0
                    if container.restart_count == 0
                    else min(self.backoff_max, self.backoff_base * (2 ** (container.restart_count - 1)))
                )
                container.next_start = time.monotonic() + delay
                if delay:
                    container.waiting_reason = "CrashLoopBackOff"
                    container.waiting_message = (
                        f"back-off {int(delay)}s restarting failed container={container.name} "
                        f"pod={run.name}_{run.namespace}({run.uid})"
                    )
                    record(
                        self.api,
                        run.pod,
                        "BackOff",
                        "Back-off restarting failed container "
                        f"{container.name} in pod {run.name}_{run.namespace}({run.uid})",
                        "Warning",
                        "kubelet",
                        self.node,
                    )

    def _stop_sidecars(self, run: PodRun, restart_policy: str) -> None:
        """Once every app container has ended for good, the sidecars are stopped (SIGTERM, then
        SIGKILL after the grace period), in reverse order (KEP-753)."""
        apps = [c for c in run.containers if not c.init]
        sidecars = [c for c in run.containers if c.sidecar]
        if not sidecars or run.deleting_since:
            return
        done = all(
            c.current and c.current.exit_code is not None and not self._will_restart(c, restart_policy) for c in apps
        )
        if not done:
            return
        if not run.sidecars_stopping:
            run.sidecars_stopping = time.monotonic()
            for container in reversed(sidecars):
                container.next_start = float("inf")
                self._signal(container, signal.SIGTERM)
        grace = float(run.pod["spec"].get("terminationGracePeriodSeconds", 30))
        if time.monotonic() - run.sidecars_stopping >= grace:
            for container in sidecars:
                self._signal(container, signal.SIGKILL)

    def _will_restart(self, container: ContainerRun, restart_policy: str) -> bool:
        instance = container.current
        if instance is None or instance.exit_code is None:
            return False
        if container.sidecar:
            return container.next_start != float("inf")  # until the pod's app containers are done
        if container.init:
            return instance.exit_code != 0 and restart_policy != "Never"
        return restart_policy == "Always" or (restart_policy == "OnFailure" and instance.exit_code != 0)

    def _start_due(self, run: PodRun, restart_policy: str) -> None:
        for container in run.containers:
            if container.held:
                return
            if container.sidecar:
                # pkg/kubelet/kuberuntime/kuberuntime_manager.go computeInitContainerActions: a
                # sidecar starts in its turn, the next init container once it runs; it is
                # restarted whenever it exits, whatever the pod's restartPolicy
                if self._due(container, restart_policy) and self._pulled(run, container):
                    self._start(run, container)
                if not container.running:
                    return
                continue
            if container.init:
                if container.current and container.current.exit_code == 0:
                    continue
                if self._due(container, restart_policy) and self._pulled(run, container):
                    self._start(run, container)
                return  # init containers one at a time, the app containers after them
        for container in run.containers:
            if container.init:
                continue
            if self._due(container, restart_policy) and self._pulled(run, container):
                self._start(run, container)

    def _due(self, container: ContainerRun, restart_policy: str) -> bool:
        """Never started, or ended, to be restarted, and its back-off is over."""
        return container.current is None or (
            container.current.exit_code is not None
            and self._will_restart(container, restart_policy)
            and time.monotonic() >= container.next_start
            and not self.restarts_held
        )

    def _pulled(self, run: PodRun, container: ContainerRun) -> bool:
        """Whether the container's image is on the node. One this node cannot pull (`refuse_image`)
        keeps the container waiting `ImagePullBackOff`, `Back-off pulling image "<image>"`
        (pkg/kubelet/images/image_manager.go EnsureImageExists, the BackOff event), and the
        kubelet tries again on later syncs: once the image can be pulled it starts."""
        image = container.spec.get("image", "")
        if image not in self.unpullable:
            if container.waiting_reason == "ImagePullBackOff":
                container.waiting_reason, container.waiting_message = "ContainerCreating", ""
            return True
        if container.waiting_reason != "ImagePullBackOff":
            container.waiting_reason = "ImagePullBackOff"
            container.waiting_message = f'Back-off pulling image "{image}": ErrImagePull: {self.unpullable[image]}'
            record(self.api, run.pod, "BackOff", f'Back-off pulling image "{image}"', "Normal", "kubelet", self.node)
        return False

    def _terminate(self, run: PodRun) -> None:
        if not run.deleting_since:
            run.deleting_since = time.monotonic()
            run.grace = float(run.pod["metadata"].get("deletionGracePeriodSeconds") or 0)
            for container in run.containers:
                if container.running:
                    record(
                        self.api,
                        run.pod,
                        "Killing",
                        f"Stopping container {container.name}",
                        "Normal",
                        "kubelet",
                        self.node,
                    )
                    self._signal(container, signal.SIGTERM)
        grace = float(run.pod["metadata"].get("deletionGracePeriodSeconds") or 0)
        if time.monotonic() - run.deleting_since >= min(grace, run.grace):
            for container in run.containers:
                self._signal(container, signal.SIGKILL)
        deadline = time.monotonic() + 2
        while any(
            c.running and c.current.process.poll() is None for c in run.containers if c.current and c.current.process
        ):
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
        self._reap(run, "Never")
        for container in run.containers:
            container.next_start = float("inf")
