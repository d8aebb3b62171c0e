"""What the kubelet does for `kubectl exec`, `attach`, `cp` and `port-forward` (kubernetes v1.33.0
pkg/kubelet/server/server.go getExec / getAttach / getPortForward and the CRI runtime's Exec,
Attach and PortForward, as containerd does them):

- exec: a new process in the container, with the container's environment, in its namespaces
  (mount, UTS, network: `nsenter --target <the container's process>`) and its working directory;
  `cp` is an exec of `tar` (kubectl cp: `tar cf - <path>` out, `tar xmf - -C <dir>` in);
- attach: the container's output from now on (its CRI log followed), and its stdin when the
  container has `stdin: true` (kept open by the kubelet since it started);
- port-forward: a connection to `localhost:<port>` inside the pod's network namespace (the pod's
  address on this machine's network when pods share it).
"""

from __future__ import annotations

import ctypes
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

from . import errors
from .kubelet_parts import KubeletPart
from .kubelet_pods import ContainerRun, PodRun

CLONE_NEWNET = 0x40000000


class StreamError(Exception):
    """A request the kubelet refuses before streaming (an HTTP error to the client)."""


class Streams(KubeletPart):
    """exec, attach and port-forward (a Kubelet part)."""

    def _running(self, namespace: str, pod: str, container: str) -> tuple[PodRun, ContainerRun]:
        with self._lock:
            run = next((r for r in self.pods.values() if (r.namespace, r.name) == (namespace, pod)), None)
            if run is None:
                raise StreamError(f'pod "{pod}" not found on node "{self.node}"')
            names = [c.name for c in run.containers if not c.init] or [c.name for c in run.containers]
            chosen = container or names[0]
            found = next((c for c in run.containers if c.name == chosen), None)
            if found is None:
                raise StreamError(f"container {chosen} is not valid for pod {pod}")
            if not found.running or found.current is None or found.current.process is None:
                raise StreamError(f'container not found ("{chosen}")')
            return run, found

    def exec_process(self, namespace: str, pod: str, container: str, argv: list[str], stdin: bool) -> subprocess.Popen:
        """Start `argv` in the container (containerd's Exec)."""
        run, found = self._running(namespace, pod, container)
        env = self._env(run, found.spec)  # type: ignore[attr-defined]
        workdir = found.spec.get("workingDir") or "/"
        if self.isolated:
            pid = found.current.process.pid  # type: ignore[union-attr]
            full = ["nsenter", f"--target={pid}", "--mount", "--uts", "--net", f"--wd={workdir}", "--", *argv]
            cwd = None
        else:
            full, cwd = list(argv), str(run.directory)
        return subprocess.Popen(
            full,
            env=env,
            cwd=cwd,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    def attach_output(self, namespace: str, pod: str, container: str) -> Iterator[tuple[str, bytes]]:
        """The container's output from now on, line by line with its stream, until it exits
        (containerd's Attach reads the container's live stdout and stderr)."""
        _run, found = self._running(namespace, pod, container)
        instance = found.current
        assert instance is not None
        with open(instance.log_path) as handle:
            handle.seek(0, os.SEEK_END)
            while True:
                line = handle.readline()
                if line:
                    _when, _, rest = line.partition(" ")
                    stream, _, rest = rest.partition(" ")
                    _tag, _, content = rest.partition(" ")
                    yield stream, content.encode()
                    continue
                if instance.exit_code is not None or self._stop.is_set():
                    return
                time.sleep(0.05)

    def attach_stdin(self, namespace: str, pod: str, container: str) -> object | None:
        """The container's stdin (a pipe), if its spec asks for one (`stdin: true`)."""
        _run, found = self._running(namespace, pod, container)
        process = found.current.process if found.current else None
        return process.stdin if process is not None and found.spec.get("stdin") else None

    def port_connect(self, namespace: str, pod: str, port: int) -> socket.socket:
        """A connection to the pod's `port`: inside its network namespace on a pod network (as
        the runtime's PortForward dials localhost there), else to its address here."""
        with self._lock:
            run = next((r for r in self.pods.values() if (r.namespace, r.name) == (namespace, pod)), None)
        if run is None:
            raise StreamError(f'pod "{pod}" not found on node "{self.node}"')
        if run.netns:
            return _connect_in(run.netns, port)
        last: OSError | None = None
        for host in (run.ip, "127.0.0.1"):
            try:
                return socket.create_connection((host, port), timeout=10)
            except OSError as error:
                last = error
        raise StreamError(f"failed to connect to localhost:{port} inside the pod: {last}")


def _connect_in(netns: str, port: int) -> socket.socket:
    """Connect to 127.0.0.1:port from inside a network namespace: a thread joins it (setns acts
    on the calling thread only), makes the socket there and ends; the socket keeps its namespace."""
    result: dict[str, object] = {}

    def inside() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(netns, os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                result["error"] = OSError(ctypes.get_errno(), "setns failed")
                return
            try:
                result["socket"] = socket.create_connection(("127.0.0.1", port), timeout=10)
            except OSError as error:
                result["error"] = error
        finally:
            os.close(fd)
            # the thread ends here: its namespace goes with it, the process's is untouched

    thread = threading.Thread(target=inside, daemon=True)
    thread.start()
    thread.join(30)
    if "socket" in result:
        return result["socket"]  # type: ignore[return-value]
    raise StreamError(f'failed to connect to localhost:{port} inside namespace "{netns}", IPv4: {result.get("error")}')


def not_found_error(message: str) -> errors.ApiError:
    return errors.ApiError(errors.status(404, "NotFound", message))
