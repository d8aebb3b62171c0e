"""The kubelet's process runner: one container instance as a local process, and what a runtime
does around it.

- the image: mapped to what this machine has (images.py: a Python image is the test
  environment's Python with its bin/ on PATH, a shell image this machine's shell), the command
  run as written (`command` / `args` over the image's entrypoint and CMD);
- isolation: where `unshare -m -u` is permitted, each container runs in its own mount and UTS
  namespace (launch.py): the volumes bind-mounted at their mount paths, the pod's hostname set, a
  generated /etc/hosts over the real one; on a pod network (kubelet_network.py) it first joins
  the pod's network namespace (`nsenter --net`), as a runtime starts containers in the sandbox's
  namespaces. Elsewhere volumes are mapped by rewriting mount paths in
  the command and arguments, and names do not resolve (`isolated` says which);
- env: the container's `env` (values, `fieldRef` to metadata.name/namespace/uid/labels,
  status.podIP, spec.nodeName, spec.serviceAccountName; `configMapKeyRef`), `envFrom`
  configMaps, and HOSTNAME (kubernetes v1.33.0 pkg/kubelet/kubelet_pods.go
  makeEnvironmentVariables);
- signals to the container's process group; memory: a container whose resident memory passes
  its limit is killed, `OOMKilled`, 137.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from . import images, quantity
from .events import record
from .kubelet_api_access import MOUNT_PATH
from .kubelet_logs import append
from .kubelet_parts import KubeletPart
from .kubelet_pods import ContainerRun, Instance, PodRun
from .zygotes import ZYGOTES

LAUNCH = Path(__file__).resolve().parent / "launch.py"


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


class Processes(KubeletPart):
    """Starting, signalling and watching the memory of container processes (a Kubelet part)."""

    #: the images this node has pulled (`_pull`)
    pulled_images: set[str]
    #: what each image is on this machine (images.py)
    images: tuple[tuple[str, images.Image], ...]
    #: whether Python containers may be forked from a warm interpreter (`_zygote_for`)
    warm: bool

    def _env(self, run: PodRun, container: dict[str, Any]) -> dict[str, str]:
        pod = run.pod
        image = images.resolve(container.get("image", ""), self.images)
        env = {
            "PATH": f"{self._shims()}:{images.path_of(image)}",
            "HOSTNAME": pod["spec"].get("hostname") or run.name,
            "HOME": "/root",
            "LANG": "C.UTF-8",
            **images.environment(image),
            **self._service_env(),  # type: ignore[attr-defined]
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
        return images.open_mpi_names(image, env)

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
        command = [_expand(a, env) for a in container.get("command") or []]
        args = [_expand(a, env) for a in container.get("args") or []]
        argv = images.argv(images.resolve(container.get("image", ""), self.images), command, args)
        if not self.isolated:
            argv = [_map_paths(a, mounts) for a in argv]
        return argv

    def _pull(self, run: PodRun, container: ContainerRun) -> None:
        """The image pull before each start, as its events tell it (kubernetes v1.33.0
        pkg/kubelet/images/image_manager.go EnsureImageExists): `IfNotPresent` / `Never` with the
        image on the node: Pulled `Container image "<image>" already present on machine`; else
        (`Always`, or not yet on the node) Pulling `Pulling image "<image>"`, then Pulled
        `Successfully pulled image "<image>" in <d> (<d> including waiting). Image size: <n>
        bytes.` Here nothing is downloaded: the image is what `images` maps it to."""
        image = container.spec.get("image", "")
        policy = container.spec.get("imagePullPolicy", "IfNotPresent")
        if policy != "Always" and image in self.pulled_images:
            record(self.api, run.pod, "Pulled", f'Container image "{image}" already present on machine',
                   "Normal", "kubelet", self.node)  # fmt: skip
            return
        began = time.monotonic()
        record(self.api, run.pod, "Pulling", f'Pulling image "{image}"', "Normal", "kubelet", self.node)
        self.pulled_images.add(image)
        took = f"{time.monotonic() - began:.3f}s"
        size = os.stat(sys.executable).st_size
        record(self.api, run.pod, "Pulled",
               f'Successfully pulled image "{image}" in {took} ({took} including waiting). Image size: {size} bytes.',
               "Normal", "kubelet", self.node)  # fmt: skip

    def _start(self, run: PodRun, container: ContainerRun) -> None:
        spec = container.spec
        self._pull(run, container)
        env = self._env(run, spec)
        mounts = self._mounts(run, spec)
        if not any(target == MOUNT_PATH for _, target, _ in mounts):
            mounts += self._account_mount(run)  # type: ignore[attr-defined]
        image = images.resolve(spec.get("image", ""), self.images)
        mounts += self._image_files(run, image)
        argv = self._argv(run, spec, env, mounts)
        logs = self.root / "logs" / f"{run.namespace}_{run.name}_{run.uid}" / container.name
        logs.mkdir(parents=True, exist_ok=True)
        instance = Instance(logs / f"{len(container.instances)}.log", started=time.time())
        instance.log_path.touch()
        instance.container_id = "containerd://" + os.urandom(32).hex()
        workdir = spec.get("workingDir") or ""
        warm_pid_file = None
        if self.isolated:
            resolv = self._resolv_path(run)  # type: ignore[attr-defined]
            launch = run.directory / f"launch-{container.name}-{len(container.instances)}.json"
            warm_pid_file = launch.with_suffix(".warm")
            launch.write_text(
                json.dumps(
                    {
                        "mounts": mounts,
                        "hosts": str(self._hosts_path(run)),
                        "resolv": str(resolv or ""),
                        "hostname": run.pod["spec"].get("hostname") or run.name,
                        "workdir": workdir or "/",
                        "argv": argv,
                        "env": env,
                        "dirs": list(image.dirs),
                        # a Python container's program forked from a warm interpreter (zygotes.py)
                        "zygote": self._zygote_for(spec, env),
                        "python": os.path.realpath(sys.executable),
                        "warm_pid": str(warm_pid_file),
                    }
                )
            )
            full = ["unshare", "-m", "-u", "--propagation", "private", sys.executable, "-I", str(LAUNCH), str(launch)]
            if run.netns:  # on a pod network: join the pod's network namespace first
                full = ["nsenter", f"--net={run.netns}", *full]
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
            append(self, instance, "stderr", f'exec: "{argv[0]}": {error.strerror}\n'.encode())
            container.instances.append(instance)
            return
        instance.process = process
        instance.warm_pid_file = warm_pid_file
        container.instances.append(instance)
        container.waiting_reason = ""
        for stream, pipe in (("stdout", process.stdout), ("stderr", process.stderr)):
            pump = threading.Thread(target=self._pump, args=(instance, stream, pipe), daemon=True)
            instance.pumps.append(pump)
            pump.start()
        # kuberuntime_container.go startContainer (v1.33.0): Created, then Started
        record(self.api, run.pod, "Created", f"Created container: {container.name}", "Normal", "kubelet", self.node)
        record(self.api, run.pod, "Started", f"Started container {container.name}", "Normal", "kubelet", self.node)

    def _zygote_for(self, spec: dict[str, Any], env: dict[str, str]) -> str:
        """The socket of the warm interpreter for this container, or "": none for a container
        with a memory limit (a fork's resident memory counts the pages it shares with its
        zygote), none yet for the first of its environment, none where the kubelet is cold."""
        limits = (spec.get("resources") or {}).get("limits") or {}
        if not self.warm or "memory" in limits:
            return ""
        return ZYGOTES.socket_for(env)

    def _image_files(self, run: PodRun, image: images.Image) -> list[tuple[str, str, bool]]:
        """The image's versions of files this machine has (its ssh_config...): this machine's
        text with the image's additions, mounted read-only over them in the container."""
        if not self.isolated:
            return []
        out = []
        for number, (path, added) in enumerate(image.files):
            if not os.path.isfile(path):
                continue
            copy = run.directory / "image-files" / f"{number}-{os.path.basename(path)}"
            if not copy.exists():
                copy.parent.mkdir(parents=True, exist_ok=True)
                copy.write_text(Path(path).read_text() + added)
            out.append((str(copy), path, True))
        return out

    def _pump(self, instance: Instance, stream: str, pipe: Any) -> None:
        for line in iter(pipe.readline, b""):
            append(self, instance, stream, line)
        pipe.close()

    def _enforce_memory(self, run: PodRun) -> None:
        """A container over its memory limit is killed and reported `OOMKilled`, exit 137, as
        the kernel's cgroup OOM killer and containerd report it (here: its resident memory,
        read from /proc, checked on every sync)."""
        for container in run.containers:
            instance = container.current
            limit = ((container.spec.get("resources") or {}).get("limits") or {}).get("memory")
            if not limit or instance is None or instance.process is None or instance.exit_code is not None:
                continue
            if _rss(instance.process.pid) + _rss(_warm_pid(instance)) > quantity.parse(limit):
                instance.reason = "OOMKilled"
                self._signal(container, signal.SIGKILL)

    def _signal(self, container: ContainerRun, sig: int) -> None:
        instance = container.current
        if instance and instance.process and instance.exit_code is None:
            try:
                os.killpg(instance.process.pid, sig)
            except ProcessLookupError:
                pass


def _warm_pid(instance: Instance) -> int:
    """The pid of the container's program forked from a zygote (launch.py writes it), or 0."""
    try:
        return int(instance.warm_pid_file.read_text()) if instance.warm_pid_file else 0
    except (OSError, ValueError):
        return 0


def _rss(pid: int) -> int:
    """Resident bytes of a process and its descendants (0 for pid 0)."""
    total, todo, seen = 0, [pid] if pid else [], set()
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
