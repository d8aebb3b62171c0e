"""The preflight's reads survive a kept-alive connection that the server (or a proxy between)
closed while it was idle: the request on the reused connection is reset (or the connection is
closed without an answer, as a loaded API server did in CI), and is asked again once on a fresh
connection. Against a real HTTP server on loopback and the real client."""

from __future__ import annotations

import json
import socket
import struct
import threading

import pytest
from kubernetes import client

from jupyter_px.backends.kubernetes.shared.client import Cluster
from jupyter_px.backends.kubernetes.shared.preflight import check_allowed

ALLOWED = json.dumps(
    {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {},
        "status": {"allowed": True},
    }
).encode()


class ResettingServer:
    """Answers every request with "allowed", keeping the connection alive; the second request
    on any connection is answered with a TCP reset instead (what a reused connection meets
    after the server closed it while idle)."""

    def __init__(self, close: bool = False) -> None:
        self.close_instead = close  # closed without an answer (`RemoteDisconnected`), not reset
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.resets = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection, connection.makefile("rb") as requests:
            for answered in range(2):
                length = 0
                while (line := requests.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                if not line:
                    return
                requests.read(length)
                if answered:  # the reused connection: reset (or closed without an answer)
                    if not self.close_instead:
                        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.resets += 1
                    return
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(ALLOWED)}\r\n\r\n".encode()
                    + ALLOWED
                )

    def close(self) -> None:
        self.listener.close()


@pytest.mark.parametrize("close", [False, True], ids=["reset", "closed-without-answer"])
def test_a_reset_on_a_reused_connection_is_asked_again_on_a_fresh_one(close):
    server = ResettingServer(close)
    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{server.port}"
    configuration.retries = 0  # as `client.connect` configures it
    api = client.ApiClient(configuration)
    cluster = Cluster(api, "default", configuration.host, None)
    try:
        for verb in ("create", "get", "delete"):  # one after the other: each reuses the last connection
            check_allowed(cluster, [(verb, "", "pods")])
    finally:
        cluster.close()
        server.close()
    assert server.resets == 2 and server.connections == 3
