"""A kubelet that runs pods for real: each container of a pod bound to its node is a local process.

What it does, and where the rule comes from (kubernetes v1.33.0 unless said otherwise):
- volumes: ConfigMap, Secret and emptyDir volumes are directories under the pod's folder; a
  ConfigMap becomes one file per key (or per `items` entry), mode `defaultMode` (0644)
  (pkg/volume/configmap/configmap.go); a missing ConfigMap keeps the pod in ContainerCreating with
  a FailedMount event (`MountVolume.SetUp failed for volume %q : configmap %q not found`);
- the image: the simulation's Python stands in for every image: a command that names `python`,
  `python3` or `pythonX.Y` (any directory) runs this interpreter; no command runs it too (the
  python images' CMD); other commands run as found on this machine;
- isolation: where `unshare -m -u` is permitted, each container runs in its own mount and UTS
  namespace (launch.py): the volumes bind-mounted at their mount paths, the pod's hostname set, a
  generated /etc/hosts over the real one; the pod's own name and every cluster DNS name resolve
  to the pods' loopback addresses (127.0.0.0/8, one per pod). Elsewhere volumes are mapped by
  rewriting mount paths in the command and arguments, and names do not resolve (`isolated` says
  which; tests that need names skip with that reason);
- env: the container's `env` (values, `fieldRef` to metadata.name/namespace/uid/labels,
  status.podIP, spec.nodeName, spec.serviceAccountName; `configMapKeyRef`), `envFrom`
  configMaps, and HOSTNAME (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables);
- states: waiting ContainerCreating -> running -> terminated with the exit code, reason
  `Completed` (0) or `Error` (pkg/kubelet/kuberuntime/helpers.go, containerd's reasons);
  restarts per restartPolicy (Always; OnFailure only after a non-zero exit), the first at once,
  then after a back-off of 10 s doubling to 300 s, shown as waiting `CrashLoopBackOff`
  (pkg/kubelet/kubelet.go backOffPeriod, MaxContainerBackOff); `lastState` the previous
  termination; init containers one after another before the others;
- phase (pkg/kubelet/kubelet_pods.go getPhase): Pending until the containers start, Running while
  one runs or will restart, Succeeded when all ended with 0 and none will restart, Failed when all
  ended, one did not succeed and none will restart;
- deletion (pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer): SIGTERM to the
  process group, SIGKILL after the grace period; the pod's final status (containers terminated
  143 / 137, phase Failed, or Succeeded when all exited 0) is written before the pod is removed
  (the status manager's grace-0 delete, pkg/kubelet/status/status_manager.go);
- sidecars (restartable init containers, KEP-753): started in turn, the next once it runs,
  restarted whenever they exit, stopped (SIGTERM, SIGKILL after the grace period) once the app
  containers are done; they do not decide the phase;
- memory: a container whose resident memory passes its limit is killed, `OOMKilled`, 137;
- logs: one file per container instance, CRI format `<RFC3339Nano> <stream> F <line>`
  (pkg/kubelet/kuberuntime/logs/logs.go), rotated at `log_max_bytes` (containerLogMaxSize, 10 Mi)
  keeping `log_max_files` (5); only the newest file is served.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import errors, quantity
from .apiserver import ApiServer, now
from .errors import ApiError
from .events import record

log = logging.getLogger(__name__)

LAUNCH = Path(__file__).resolve().parent / "launch.py"
PYTHON = re.compile(r"^(.*/)?python(\d(\.\d+)?)?$")


def namespaces_permitted() -> tuple[bool, str]:
    """Whether `unshare -m -u` works here (root, or a user namespace that allows it)."""
    if not shutil.which("unshare"):
        return False, "the `unshare` command is not installed"
    try:
        done = subprocess.run(
            ["unshare", "-m", "-u", "--propagation", "private", "true"], capture_output=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, f"unshare failed: {error}"
    if done.returncode != 0:
        return False, "unshare -m -u is not permitted here: " + done.stderr.decode(errors="replace").strip()
    return True, ""


def stamp(at: float | None = None) -> str:
    moment = dt.datetime.fromtimestamp(time.time() if at is None else at, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


def parse_stamp(text: str) -> float:
    text = text.rstrip("Z")
    whole, _, fraction = text.partition(".")
    base = dt.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.UTC).timestamp()
    return base + (float("0." + fraction[:6]) if fraction else 0.0)


@dataclass
class Instance:
    """One run of a container: its process, its log file, how it ended."""

    log_path: Path
    process: subprocess.Popen | None = None
    started: float = 0.0
    finished: float = 0.0
    exit_code: int | None = None
    reason: str = ""
    container_id: str = ""


@dataclass
class ContainerRun:
    name: str
    spec: dict[str, Any]
    init: bool = False
    instances: list[Instance] = field(default_factory=list)
    waiting_reason: str = "ContainerCreating"
    waiting_message: str = ""
    next_start: float = 0.0
    held: bool = False

    @property
    def sidecar(self) -> bool:
        """A restartable init container (KEP-753, on by default since v1.29)."""
        return self.init and self.spec.get("restartPolicy") == "Always"

    @property
    def current(self) -> Instance | None:
        return self.instances[-1] if self.instances else None

    @property
    def running(self) -> bool:
        return self.current is not None and self.current.exit_code is None

    @property
    def restart_count(self) -> int:
        return max(0, len(self.instances) - 1)


@dataclass
class PodRun:
    uid: str
    namespace: str
    name: str
    directory: Path
    ip: str
    pod: dict[str, Any]
    containers: list[ContainerRun]
    start_time: str = ""
    mounted: bool = False
    deleting_since: float = 0.0
    grace: float = 0.0
    done: bool = False
    last_status: dict[str, Any] | None = None
    hosts: Path | None = None
    #: when the app containers were done and the sidecars were told to stop
    sidecars_stopping: float = 0.0


class Kubelet:
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
    ):
        self.api = api
        self.node = node
        self.root = Path(root or tempfile.mkdtemp(prefix="kube-sim-kubelet-"))
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.log_max_bytes = log_max_bytes
        self.log_max_files = log_max_files
        permitted, why = namespaces_permitted() if isolate is not False else (False, "isolation turned off")
        self.isolated = permitted
        self.not_isolated_because = why
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
        self._pods = api.resource("", "v1", "pods")
        api.log_source = self.logs

    # ---- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
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
            for uid, pod in by_uid.items():
                run = self.pods.get(uid)
                if run is None:
                    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                        continue
                    run = self._admit(pod)
                run.pod = pod
                if run.done:
                    if pod["metadata"].get("deletionTimestamp"):
                        self.api.remove(self._pods, run.namespace, run.name, uid)
                    continue
                self._sync_pod(run)
            self._write_hosts()

    def _admit(self, pod: dict[str, Any]) -> PodRun:
        meta = pod["metadata"]
        uid = meta["uid"]
        ip = self._ips.get(uid)
        if ip is None:
            ip = f"127.0.{self._next_ip // 250}.{self._next_ip % 250 + 2}"
            self._next_ip += 1
            self._ips[uid] = ip
        directory = self.root / "pods" / uid
        directory.mkdir(parents=True, exist_ok=True)
        spec = pod["spec"]
        containers = [ContainerRun(c["name"], c, init=True) for c in spec.get("initContainers") or []]
        containers += [ContainerRun(c["name"], c) for c in spec.get("containers") or []]
        run = PodRun(uid, meta["namespace"], meta["name"], directory, ip, pod, containers, start_time=now())
        self.pods[uid] = run
        return run

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

    # ---- volumes -------------------------------------------------------------------------------

    def _mount_volumes(self, run: PodRun) -> bool:
        volumes_dir = run.directory / "volumes"
        configmaps = self.api.resource("", "v1", "configmaps")
        secrets = self.api.resource("", "v1", "secrets")
        for volume in run.pod["spec"].get("volumes") or []:
            target = volumes_dir / volume["name"]
            if "emptyDir" in volume:
                target.mkdir(parents=True, exist_ok=True)
            elif "configMap" in volume or "secret" in volume:
                source = volume.get("configMap") or volume.get("secret")
                is_secret = "secret" in volume
                name = source.get("name") if not is_secret else source.get("secretName")
                found = self.api.try_get(secrets if is_secret else configmaps, run.namespace, name or "")
                if found is None:
                    if source.get("optional"):
                        target.mkdir(parents=True, exist_ok=True)
                        continue
                    kind = "secret" if is_secret else "configmap"
                    record(
                        self.api,
                        run.pod,
                        "FailedMount",
                        f'MountVolume.SetUp failed for volume "{volume["name"]}" : {kind} "{name}" not found',
                        "Warning",
                        "kubelet",
                        self.node,
                    )
                    return False
                data = {k: v.encode() for k, v in (found.get("data") or {}).items()}
                if is_secret:
                    data = {k: base64.b64decode(v) for k, v in data.items()}
                data.update({k: base64.b64decode(v) for k, v in (found.get("binaryData") or {}).items()})
                target.mkdir(parents=True, exist_ok=True)
                items = source.get("items")
                chosen = (
                    [(i["key"], i["path"], i.get("mode")) for i in items] if items else [(k, k, None) for k in data]
                )
                default_mode = source.get("defaultMode", 0o644)
                for key, path, mode in chosen:
                    if key not in data:
                        continue
                    out = target / path
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(data[key])
                    out.chmod(mode if mode is not None else default_mode)
            elif "hostPath" in volume:
                continue
        return True

    def _mounts(self, run: PodRun, container: dict[str, Any]) -> list[tuple[str, str, bool]]:
        by_name = {v["name"]: v for v in run.pod["spec"].get("volumes") or []}
        out = []
        for mount in container.get("volumeMounts") or []:
            volume = by_name.get(mount["name"])
            if volume is None:
                continue
            if "hostPath" in volume:
                source = volume["hostPath"]["path"]
            else:
                source = str(run.directory / "volumes" / mount["name"])
            if mount.get("subPath"):
                source = os.path.join(source, mount["subPath"])
            out.append((source, mount["mountPath"], bool(mount.get("readOnly"))))
        return out

    # ---- containers ----------------------------------------------------------------------------

    def _env(self, run: PodRun, container: dict[str, Any]) -> dict[str, str]:
        pod = run.pod
        env = {
            "PATH": f"{self._shims()}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOSTNAME": pod["spec"].get("hostname") or run.name,
            "HOME": "/root",
            "LANG": "C.UTF-8",
        }
        configmaps = self.api.resource("", "v1", "configmaps")
        for source in container.get("envFrom") or []:
            ref = source.get("configMapRef")
            if ref:
                found = self.api.try_get(configmaps, run.namespace, ref.get("name", ""))
                for k, v in ((found or {}).get("data") or {}).items():
                    env[(source.get("prefix") or "") + k] = v
        for item in container.get("env") or []:
            if "value" in item:
                env[item["name"]] = _expand(item["value"], env)
                continue
            source = item.get("valueFrom") or {}
            if "fieldRef" in source:
                env[item["name"]] = self._field(run, source["fieldRef"]["fieldPath"])
            elif "configMapKeyRef" in source:
                ref = source["configMapKeyRef"]
                found = self.api.try_get(configmaps, run.namespace, ref.get("name", ""))
                value = ((found or {}).get("data") or {}).get(ref.get("key", ""))
                if value is not None:
                    env[item["name"]] = value
            else:
                env.setdefault(item["name"], "")
        return env

    def _shims(self) -> Path:
        """Commands the images have that this machine may not: `nslookup` (busybox's, in the
        training-operator's init container) answers from the pod's hosts file."""
        shims = self.root / "bin"
        if not shims.exists():
            shims.mkdir(parents=True)
            nslookup = shims / "nslookup"
            nslookup.write_text(
                f"#!{sys.executable} -I\n"
                "import socket, sys\n"
                "try:\n"
                "    print('Name:', sys.argv[-1]); print('Address:', socket.gethostbyname(sys.argv[-1]))\n"
                "except OSError:\n"
                '    print(f"** server can\'t find {sys.argv[-1]}: NXDOMAIN"); sys.exit(1)\n'
            )
            nslookup.chmod(0o755)
        return shims

    def _field(self, run: PodRun, path: str) -> str:
        # pkg/kubelet/kubelet_pods.go podFieldSelectorRuntimeValue + fieldpath.ExtractFieldPathAsString
        meta = run.pod["metadata"]
        match = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
        if match:
            return (meta.get(match.group(1)) or {}).get(match.group(2), "")
        return {
            "metadata.name": run.name,
            "metadata.namespace": run.namespace,
            "metadata.uid": run.uid,
            "status.podIP": run.ip,
            "status.hostIP": "127.0.0.1",
            "spec.nodeName": self.node,
            "spec.serviceAccountName": run.pod["spec"].get("serviceAccountName", ""),
        }.get(path, "")

    def _argv(self, run: PodRun, container: dict[str, Any], env: dict[str, str], mounts: list) -> list[str]:
        command = list(container.get("command") or [])
        args = list(container.get("args") or [])
        if not command:
            command = ["python3"]  # the python images' CMD
        argv = [_expand(a, env) for a in command + args]
        if PYTHON.match(argv[0]):
            argv[0] = sys.executable
        if not self.isolated:
            argv = [_map_paths(a, mounts) for a in argv]
        return argv

    def _start(self, run: PodRun, container: ContainerRun) -> None:
        spec = container.spec
        env = self._env(run, spec)
        mounts = self._mounts(run, spec)
        argv = self._argv(run, spec, env, mounts)
        logs = self.root / "logs" / f"{run.namespace}_{run.name}_{run.uid}" / container.name
        logs.mkdir(parents=True, exist_ok=True)
        instance = Instance(logs / f"{len(container.instances)}.log", started=time.time())
        instance.log_path.touch()
        instance.container_id = "containerd://" + os.urandom(32).hex()
        workdir = spec.get("workingDir") or ""
        if self.isolated:
            launch = run.directory / f"launch-{container.name}-{len(container.instances)}.json"
            launch.write_text(
                json.dumps(
                    {
                        "mounts": mounts,
                        "hosts": str(self._hosts_path(run)),
                        "hostname": run.pod["spec"].get("hostname") or run.name,
                        "workdir": workdir or "/",
                        "argv": argv,
                        "env": env,
                    }
                )
            )
            full = ["unshare", "-m", "-u", "--propagation", "private", sys.executable, "-I", str(LAUNCH), str(launch)]
            cwd = None
        else:
            full = argv
            cwd = _map_paths(workdir, mounts) if workdir else str(run.directory)
            if not os.path.isdir(cwd):
                cwd = str(run.directory)
        try:
            process = subprocess.Popen(
                full,
                env=env if not self.isolated else {"PATH": env["PATH"]},
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as error:
            instance.exit_code, instance.reason, instance.finished = 128, "StartError", time.time()
            self._append(instance, "stderr", f'exec: "{argv[0]}": {error.strerror}\n'.encode())
            container.instances.append(instance)
            return
        instance.process = process
        container.instances.append(instance)
        container.waiting_reason = ""
        for stream, pipe in (("stdout", process.stdout), ("stderr", process.stderr)):
            threading.Thread(target=self._pump, args=(instance, stream, pipe), daemon=True).start()
        record(self.api, run.pod, "Started", f"Started container {container.name}", "Normal", "kubelet", self.node)

    def _pump(self, instance: Instance, stream: str, pipe: Any) -> None:
        for line in iter(pipe.readline, b""):
            self._append(instance, stream, line)
        pipe.close()

    def _append(self, instance: Instance, stream: str, data: bytes) -> None:
        """One CRI log line; rotate the file past `log_max_bytes` (the container log manager,
        pkg/kubelet/logs/container_log_manager.go: the rotated file gets a timestamp suffix, the
        oldest beyond `log_max_files` goes)."""
        text = data.decode(errors="replace")
        tag = "F"
        if not text.endswith("\n"):
            text += "\n"
        with self._log_lock:
            with open(instance.log_path, "a") as handle:
                handle.write(f"{stamp()} {stream} {tag} {text}")
            if instance.log_path.stat().st_size > self.log_max_bytes:
                rotated = instance.log_path.with_name(
                    f"{instance.log_path.name}.{time.strftime('%Y%m%d-%H%M%S')}-{time.monotonic_ns()}"
                )
                instance.log_path.rename(rotated)
                instance.log_path.touch()
                old = sorted(instance.log_path.parent.glob(f"{instance.log_path.name}.*"))
                for gone in old[: max(0, len(old) - (self.log_max_files - 1))]:
                    gone.unlink(missing_ok=True)

    def _reap(self, run: PodRun, restart_policy: str) -> None:
        self._enforce_memory(run)
        for container in run.containers:
            instance = container.current
            if instance is None or instance.exit_code is not None or instance.process is None:
                continue
            code = instance.process.poll()
            if code is None:
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

    def _enforce_memory(self, run: PodRun) -> None:
        """A container over its memory limit is killed and reported `OOMKilled`, exit 137, as
        the kernel's cgroup OOM killer and containerd report it (here: its resident memory,
        read from /proc, checked on every sync)."""
        for container in run.containers:
            instance = container.current
            limit = ((container.spec.get("resources") or {}).get("limits") or {}).get("memory")
            if not limit or instance is None or instance.process is None or instance.exit_code is not None:
                continue
            if _rss(instance.process.pid) > quantity.parse(limit):
                instance.reason = "OOMKilled"
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

    def _signal(self, container: ContainerRun, sig: int) -> None:
        instance = container.current
        if instance and instance.process and instance.exit_code is None:
            try:
                os.killpg(instance.process.pid, sig)
            except ProcessLookupError:
                pass

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

    # ---- status --------------------------------------------------------------------------------

    def _container_status(self, run: PodRun, container: ContainerRun, restart_policy: str) -> dict[str, Any]:
        spec = container.spec
        status: dict[str, Any] = {
            "name": container.name,
            "image": spec.get("image", ""),
            "imageID": "",
            "restartCount": container.restart_count,
            "started": False,
            "ready": False,
        }
        instance = container.current
        terminated = lambda i: {  # noqa: E731
            "exitCode": i.exit_code,
            "reason": i.reason,
            "startedAt": _iso(i.started),
            "finishedAt": _iso(i.finished),
            "containerID": i.container_id,
        }
        if instance is None or (container.held and instance.exit_code is not None):
            waiting = {"reason": container.waiting_reason or "ContainerCreating"}
            if container.waiting_message:
                waiting["message"] = container.waiting_message
            status["state"] = {"waiting": waiting}
        elif instance.exit_code is None:
            status["state"] = {"running": {"startedAt": _iso(instance.started)}}
            status["started"] = status["ready"] = True
            status["containerID"] = instance.container_id
        elif self._will_restart(container, restart_policy) and not run.deleting_since:
            waiting = {"reason": container.waiting_reason or "ContainerCreating"}
            if container.waiting_message:
                waiting["message"] = container.waiting_message
            status["state"] = {"waiting": waiting}
            status["lastState"] = {"terminated": terminated(instance)}
        else:
            status["state"] = {"terminated": terminated(instance)}
            status["containerID"] = instance.container_id
        if instance is not None and "lastState" not in status and len(container.instances) > 1:
            status["lastState"] = {"terminated": terminated(container.instances[-2])}
        status.setdefault("lastState", {})
        return status

    def _phase(self, run: PodRun, restart_policy: str) -> str:
        """Sidecars do not decide the phase, but a pod is not terminal while one still runs
        (pkg/kubelet/kubelet_pods.go getPhase with restartable init containers)."""
        apps = [c for c in run.containers if not c.init]
        sidecars = [c for c in run.containers if c.sidecar]
        inits = [c for c in run.containers if c.init and not c.sidecar]
        if any(c.current is None for c in sidecars):
            return "Pending"
        if any(
            c.current and c.current.exit_code not in (None, 0) and not self._will_restart(c, restart_policy)
            for c in inits
        ):
            return "Failed"
        if any(not (c.current and c.current.exit_code == 0) for c in inits):
            return "Pending"
        if any(c.current is None for c in apps) and not run.deleting_since:
            return "Pending"
        if any(c.running for c in apps):
            return "Running"
        if any(self._will_restart(c, restart_policy) for c in apps) and not run.deleting_since:
            return "Running"
        if any(c.running for c in sidecars):
            return "Running"
        if all(c.current and c.current.exit_code == 0 for c in apps):
            return "Succeeded"
        return "Failed"

    def _write_status(self, run: PodRun) -> None:
        restart_policy = run.pod["spec"].get("restartPolicy", "Always")
        statuses = [self._container_status(run, c, restart_policy) for c in run.containers]
        phase = self._phase(run, restart_policy)
        apps = [s for s, c in zip(statuses, run.containers, strict=True) if not c.init]
        ready = all(s["ready"] for s in apps) and phase == "Running"
        old = run.pod.get("status") or {}
        conditions = {c["type"]: c for c in old.get("conditions") or []}

        def condition(kind: str, value: bool, reason: str = "") -> None:
            before = conditions.get(kind)
            text = "True" if value else "False"
            if before and before.get("status") == text:
                return
            new = {"type": kind, "status": text, "lastProbeTime": None, "lastTransitionTime": now()}
            if reason:
                new["reason"] = reason
            conditions[kind] = new

        initialized = all(c.current and c.current.exit_code == 0 for c in run.containers if c.init)
        condition("PodReadyToStartContainers", run.mounted)
        condition("Initialized", initialized, "" if initialized else "ContainersNotInitialized")
        condition(
            "Ready",
            ready,
            "" if ready else ("PodCompleted" if phase in ("Succeeded", "Failed") else "ContainersNotReady"),
        )
        condition(
            "ContainersReady",
            ready,
            "" if ready else ("PodCompleted" if phase in ("Succeeded", "Failed") else "ContainersNotReady"),
        )
        status = {
            **old,
            "phase": phase,
            "conditions": [
                conditions[k]
                for k in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
                if k in conditions
            ],
            "hostIP": "127.0.0.1",
            "hostIPs": [{"ip": "127.0.0.1"}],
            "podIP": run.ip,
            "podIPs": [{"ip": run.ip}],
            "startTime": run.start_time,
            "containerStatuses": [s for s, c in zip(statuses, run.containers, strict=True) if not c.init],
        }
        if any(c.init for c in run.containers):
            status["initContainerStatuses"] = [s for s, c in zip(statuses, run.containers, strict=True) if c.init]
        comparable = copy.deepcopy(status)
        if comparable == run.last_status:
            return
        try:
            self.api.update(self._pods, {"metadata": {"name": run.name}, "status": status}, run.namespace, "status")
            run.last_status = comparable
        except ApiError as error:
            if error.code != 404:
                raise

    # ---- names ---------------------------------------------------------------------------------

    def _hosts_path(self, run: PodRun) -> Path:
        path = run.directory / "etc-hosts"
        if not path.exists():
            path.write_text(self._hosts_for(run))
        return path

    def _hosts_for(self, run: PodRun) -> str:
        """The pod's /etc/hosts: localhost, its own name (pkg/kubelet/kubelet_pods.go
        managedHostsFileContent: `<ip> <hostname>.<subdomain>.<ns>.svc.<domain> <hostname>`), and
        - where the simulation stands in for cluster DNS - every name CoreDNS would answer in the
        namespace (cluster-addons dns specification): `<svc>.<ns>.svc.cluster.local` for a
        Service (a headless one: its selected pods' addresses), `<hostname>.<subdomain>.<ns>.svc`
        for a pod with a hostname and subdomain naming a headless Service, with the shorter
        forms the pod's search path (`<ns>.svc.cluster.local svc.cluster.local cluster.local`)
        would complete."""
        lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
        hostname = run.pod["spec"].get("hostname") or run.name
        subdomain = run.pod["spec"].get("subdomain")
        own = [hostname]
        if subdomain:
            own.insert(0, f"{hostname}.{subdomain}.{run.namespace}.svc.cluster.local")
        lines.append(f"{run.ip}\t{' '.join(own)}")
        for ip, names in self._cluster_names(run.namespace):
            lines.append(f"{ip}\t{' '.join(names)}")
        return "\n".join(lines) + "\n"

    def _cluster_names(self, namespace: str) -> list[tuple[str, list[str]]]:
        services = self.api.list(self.api.resource("", "v1", "services"), namespace)["items"]
        pods = [r for r in self.pods.values() if r.namespace == namespace and not r.done]
        out: list[tuple[str, list[str]]] = []

        def forms(name: str) -> list[str]:
            return [f"{name}.{namespace}.svc.cluster.local", f"{name}.{namespace}.svc", f"{name}.{namespace}", name]

        for service in services:
            selector = (service.get("spec") or {}).get("selector") or {}
            if not selector:
                continue
            name = service["metadata"]["name"]
            chosen = [
                r for r in pods if all((r.pod["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
            ]
            for r in chosen:
                out.append((r.ip, forms(name)))
                hostname, subdomain = r.pod["spec"].get("hostname"), r.pod["spec"].get("subdomain")
                if hostname and subdomain == name:
                    out.append((r.ip, forms(f"{hostname}.{name}")))
        return out

    def _write_hosts(self) -> None:
        for run in self.pods.values():
            path = run.directory / "etc-hosts"
            if not path.exists():
                continue
            text = self._hosts_for(run)
            if self._hosts_text.get(run.uid) != text:
                with open(path, "r+") as handle:  # in place: the bind mount follows the inode
                    handle.write(text)
                    handle.truncate()
                self._hosts_text[run.uid] = text

    # ---- logs ----------------------------------------------------------------------------------

    def logs(self, pod: dict[str, Any], container_name: str, query: dict[str, str]) -> Iterator[bytes]:
        """pkg/kubelet/kubelet_pods.go GetContainerLogs + validateContainerLogStatus: a 400
        `container %q in pod %q is waiting to start: %s` before the first start; `previous=true`
        reads the instance before the current one (400 `previous terminated container %q in pod
        %q not found` without one); then tailLines, sinceSeconds/sinceTime, timestamps,
        limitBytes; follow streams until that container instance exits."""
        with self._lock:
            run = self.pods.get(pod["metadata"]["uid"])
            container = next((c for c in run.containers if c.name == container_name), None) if run else None
        name = pod["metadata"]["name"]
        if container is None or not container.instances:
            reason = container.waiting_reason if container else "ContainerCreating"
            raise errors.bad_request(
                f'container "{container_name}" in pod "{name}" is waiting to start: {reason or "ContainerCreating"}'
            )
        previous = query.get("previous") in ("true", "1")
        instance = container.current
        if previous:
            current = container.current
            restart_policy = pod["spec"].get("restartPolicy", "Always")
            # a container in back-off: its last run already is "the previous one"
            waiting = current.exit_code is not None and self._will_restart(container, restart_policy)
            candidates = container.instances if waiting else container.instances[:-1]
            if not candidates:
                raise errors.bad_request(f'previous terminated container "{container_name}" in pod "{name}" not found')
            instance = candidates[-1]
        follow = query.get("follow") in ("true", "1") and not previous
        return self._read(instance, query, follow)

    def _read(self, instance: Instance, query: dict[str, str], follow: bool) -> Iterator[bytes]:
        since = None
        if query.get("sinceSeconds"):
            since = time.time() - int(query["sinceSeconds"])
        elif query.get("sinceTime"):
            since = parse_stamp(query["sinceTime"])
        timestamps = query.get("timestamps") in ("true", "1")
        tail = int(query["tailLines"]) if query.get("tailLines") not in (None, "") else None
        limit = int(query["limitBytes"]) if query.get("limitBytes") else None
        sent = 0

        def render(line: str) -> bytes | None:
            when, _, rest = line.partition(" ")
            _stream, _, rest = rest.partition(" ")
            _tag, _, content = rest.partition(" ")
            if since is not None and parse_stamp(when) < since:
                return None
            return ((when + " ") if timestamps else "").encode() + content.encode()

        def generate() -> Iterator[bytes]:
            nonlocal sent
            path = instance.log_path
            with self._log_lock:
                handle = open(path)  # noqa: SIM115 - kept open while following
                lines = handle.readlines()
                inode = os.fstat(handle.fileno()).st_ino
            if tail is not None:
                lines = lines[-tail:] if tail > 0 else []
            try:
                pending = ""
                for line in lines:
                    out = render(line)
                    if out is not None:
                        if limit is not None and sent + len(out) > limit:
                            yield out[: limit - sent]
                            return
                        sent += len(out)
                        yield out
                while follow:
                    chunk = handle.readline()
                    if chunk:
                        pending += chunk
                        if pending.endswith("\n"):
                            out = render(pending)
                            pending = ""
                            if out is not None:
                                sent += len(out)
                                yield out
                        continue
                    with self._log_lock:  # rotated: go on in the new file
                        if os.stat(path).st_ino != inode:
                            handle.close()
                            handle = open(path)  # noqa: SIM115
                            inode = os.fstat(handle.fileno()).st_ino
                            continue
                    if instance.exit_code is not None or self._stop.is_set() or self.api.closed:
                        rest = handle.read()
                        for line in rest.splitlines(keepends=True):
                            out = render(line)
                            if out is not None:
                                yield out
                        return
                    time.sleep(0.05)
            finally:
                handle.close()

        return generate()

    # ---- what tests may set that a process cannot produce ---------------------------------------

    def evict(self, namespace: str, pod: str, resource: str = "memory") -> None:
        """Node-pressure eviction (pkg/kubelet/eviction/eviction_manager.go evictPod, helpers.go):
        the pod's containers are killed, the pod Failed with reason `Evicted` and the message
        `The node was low on resource: <resource>. `, and (v1.26+ pod disruption conditions) a
        `DisruptionTarget` condition, reason `TerminationByKubelet`. The pod object stays."""
        with self._lock:
            run = next((r for r in self.pods.values() if (r.namespace, r.name) == (namespace, pod)), None)
            if run is None:
                raise KeyError(f"{namespace}/{pod} does not run on {self.node}")
            for container in run.containers:
                container.next_start = float("inf")
                self._signal(container, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while any(c.current and c.current.process and c.current.process.poll() is None for c in run.containers):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            self._reap(run, "Never")
            self._write_status(run)
            run.done = True
            status = self.api.get(self._pods, namespace, pod)["status"]
            message = f"The node was low on resource: {resource}. "
            status.update(phase="Failed", reason="Evicted", message=message)
            status["conditions"] = [c for c in status.get("conditions") or [] if c["type"] != "DisruptionTarget"] + [
                {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
                 "message": f"The node was low on resource: {resource}.", "lastProbeTime": None,
                 "lastTransitionTime": now()}]  # fmt: skip
            self.api.update(self._pods, {"metadata": {"name": pod}, "status": status}, namespace, "status")
        record(self.api, run.pod, "Evicted", message, "Warning", "kubelet", self.node)

    def lose_node(self) -> None:
        """The node goes away: its processes end without a word (the kubelet stops writing), and
        the node lifecycle controller (pkg/controller/nodelifecycle/node_lifecycle_controller.go)
        marks the node's Ready condition Unknown (`NodeStatusUnknown`, `Kubelet stopped posting
        node status.`) and its pods' Ready condition False. The pods stay, phase as last reported;
        a delete leaves them Terminating (no kubelet to finish it)."""
        self._stop.set()
        self._thread.join(timeout=10)
        with self._lock:
            for run in self.pods.values():
                for container in run.containers:
                    self._signal(container, signal.SIGKILL)
        nodes = self.api.resource("", "v1", "nodes")
        node = self.api.get(nodes, "", self.node)
        for condition in node["status"].get("conditions") or []:
            if condition["type"] == "Ready":
                condition.update(
                    status="Unknown",
                    reason="NodeStatusUnknown",
                    message="Kubelet stopped posting node status.",
                    lastTransitionTime=now(),
                )
        self.api.update(nodes, {"metadata": {"name": self.node}, "status": node["status"]}, "", "status")
        for pod in self.api.list(self._pods, "", field_selector=f"spec.nodeName={self.node}")["items"]:
            status = pod["status"]
            for condition in status.get("conditions") or []:
                if condition["type"] == "Ready":
                    condition.update(status="False", lastTransitionTime=now())
            self.api.update(
                self._pods,
                {"metadata": {"name": pod["metadata"]["name"]}, "status": status},
                pod["metadata"]["namespace"],
                "status",
            )

    def refuse_image(self, image: str, error: str = "not found") -> None:
        """The node cannot pull `image` (a registry that does not have it, no credentials):
        containers of it wait in ImagePullBackOff until `allow_image`."""
        self.unpullable[image] = error
        with self.api.cond:
            self.api.cond.notify_all()

    def allow_image(self, image: str) -> None:
        self.unpullable.pop(image, None)
        with self.api.cond:
            self.api.cond.notify_all()

    def set_waiting(self, namespace: str, pod: str, container: str, reason: str, message: str = "") -> None:
        """Hold a container in a waiting state a process cannot produce here (ImagePullBackOff,
        ErrImagePull, CreateContainerConfigError): it is not started while held."""
        with self._lock:
            for run in self.pods.values():
                if (run.namespace, run.name) == (namespace, pod):
                    for c in run.containers:
                        if c.name == container:
                            c.waiting_reason, c.waiting_message, c.held = reason, message, True
        with self.api.cond:
            self.api.cond.notify_all()


def _rss(pid: int) -> int:
    """Resident bytes of a process and its descendants."""
    total, todo, seen = 0, [pid], set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total


def _expand(text: str, env: dict[str, str]) -> str:
    """$(VAR) references to earlier variables (third_party/forked/golang/expansion); `$$` escapes."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))

    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", one, text)


def _map_paths(text: str, mounts: list[tuple[str, str, bool]]) -> str:
    for source, target, _ in sorted(mounts, key=lambda m: -len(m[1])):
        if text == target or text.startswith(target.rstrip("/") + "/"):
            return source + text[len(target.rstrip("/")) :]
    return text


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
