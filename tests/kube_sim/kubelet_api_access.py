"""How a pod reaches the API server, as every pod of a cluster can: what `rest.InClusterConfig`
(client-go) reads, so that `kubectl` in a pod works (the MPI launcher's kubexec.sh runs
`kubectl exec` to start the ranks' daemons on the workers).

- the service account's credentials at /var/run/secrets/kubernetes.io/serviceaccount (`token`,
  `ca.crt`, `namespace`), unless `automountServiceAccountToken: false` (kubernetes v1.33.0
  plugin/pkg/admission/serviceaccount/admission.go adds them as the projected volume
  `kube-api-access-<5>`; here the kubelet mounts them without writing the volume into the pod's
  spec, which the tests of the backends compare);
- `KUBERNETES_SERVICE_HOST` / `KUBERNETES_SERVICE_PORT` (pkg/kubelet/kubelet_pods.go
  getServiceEnvVarMap: the `kubernetes` Service's, in every pod);
- the `kubernetes` Service's address: on the pod network, 10.96.0.1:443 inside the node's network
  namespace, relayed to the API server's HTTPS port on this machine (as kube-proxy's rules send
  the ClusterIP to the apiserver's endpoint); without one, the API server's own address here.
"""

from __future__ import annotations

import ctypes
import os
import socket
import threading
from typing import Any

from .authentication import SERVICE_IP, ca_pem
from .kubelet_parts import KubeletPart
from .kubelet_pods import PodRun

MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
CLONE_NEWNET = 0x40000000
SERVICE_PORT = 443


class ApiAccess(KubeletPart):
    """The service account files, the `kubernetes` Service's env and its relay (a Kubelet part)."""

    #: where the API server's HTTPS port is on this machine (set by the Cluster), or None
    apiserver: tuple[str, int] | None
    network: Any
    _relay: socket.socket | None

    def _service_env(self) -> dict[str, str]:
        if self.apiserver is None:
            return {}
        host, port = (SERVICE_IP, SERVICE_PORT) if self.network is not None else self.apiserver
        return {
            "KUBERNETES_SERVICE_HOST": host,
            "KUBERNETES_SERVICE_PORT": str(port),
            "KUBERNETES_SERVICE_PORT_HTTPS": str(port),
            "KUBERNETES_PORT": f"tcp://{host}:{port}",
        }

    def _account_mount(self, run: PodRun) -> list[tuple[str, str, bool]]:
        """The service account's files for the pod (made once), as a read-only mount."""
        spec = run.pod["spec"]
        if self.apiserver is None or spec.get("automountServiceAccountToken") is False:
            return []
        folder = run.directory / "serviceaccount"
        if not folder.exists():
            folder.mkdir(parents=True)
            account = spec.get("serviceAccountName") or "default"
            (folder / "token").write_text(self.api.authenticator.issue(run.namespace, account))
            (folder / "ca.crt").write_text(ca_pem())
            (folder / "namespace").write_text(run.namespace)
        return [(str(folder), MOUNT_PATH, True)]

    # ---- the relay on the pod network ----------------------------------------------------------

    def _start_relay(self) -> None:
        """Listen on 10.96.0.1:443 in the node's network namespace and relay each connection to
        the API server's HTTPS port on this machine."""
        if self.network is None or self.apiserver is None or self.network.node is None:
            return
        self.network.node.run("ip", "addr", "add", f"{SERVICE_IP}/32", "dev", "lo")
        listening = _listen_in(self.network.node.path, SERVICE_IP, SERVICE_PORT)
        self._relay = listening
        threading.Thread(
            target=self._accept, args=(listening,), name="kube-sim-kubernetes-service", daemon=True
        ).start()

    def _accept(self, listening: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                inbound, _ = listening.accept()
            except OSError:
                return
            try:
                outbound = socket.create_connection(self.apiserver, timeout=10)  # type: ignore[arg-type]
            except OSError:
                inbound.close()
                continue
            outbound.settimeout(None)
            for source, target in ((inbound, outbound), (outbound, inbound)):
                threading.Thread(target=_pipe, args=(source, target), daemon=True).start()

    def _stop_relay(self) -> None:
        relay, self._relay = self._relay, None
        if relay is not None:
            relay.close()


def _pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        try:
            target.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _listen_in(netns: str, host: str, port: int) -> socket.socket:
    """A listening socket made inside a network namespace (by a thread that joins it and ends)."""
    result: dict[str, Any] = {}

    def inside() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(netns, os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                result["error"] = OSError(ctypes.get_errno(), "setns failed")
                return
            server = socket.socket()
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind((host, port))
            server.listen(128)
            result["socket"] = server
        except OSError as error:
            result["error"] = error
        finally:
            os.close(fd)

    thread = threading.Thread(target=inside, daemon=True)
    thread.start()
    thread.join(30)
    if "socket" not in result:
        raise OSError(f"cannot listen on {host}:{port} in {netns}: {result.get('error')}")
    return result["socket"]
