"""A stateful fake Kubernetes API server on 127.0.0.1, for the official client over real HTTP.

It keeps objects in memory and answers like the API server does for what the Kubernetes
backends use: create/get/list/delete (one or a collection by label selector)/watch for pods,
services, configmaps, namespaces and custom resources; pod logs (with follow, streamed while the
pod runs); CRD lookups; SelfSubjectAccessReviews; /version. It assigns uids and resource
versions, answers 404/409/422 like the real one (Status objects with a reason and a message),
and garbage-collects dependents through ownerReferences when their owner is deleted.

Tests drive it directly: `set_pod_status`, `append_log`, `fail(...)` (inject 403/422/500 on the
Nth call of a verb on a resource; with `lost=True` the call happens and only its answer fails),
`deny(...)` (SSAR answers), `latency` (seconds per request), `outage()` (the server goes away,
open connections cut, and comes back on the same address with the same objects), `hang(method,
plural)` (matching calls are accepted and never answered until the block ends; `hung` counts
those waiting).
"""

from __future__ import annotations

import copy
import itertools
import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse


@dataclass
class Fault:
    method: str  # POST, GET, DELETE
    plural: str  # pods, services, configmaps, tfjobs, ...
    status: int
    reason: str
    message: str
    nth: int = 1  # the nth matching call fails (1 = the next one)
    times: int = 1
    lost: bool = False  # the call is carried out, then its answer is this error (a lost response)


def _match(labels: dict[str, str], selector: str | None) -> bool:
    if not selector:
        return True
    for term in selector.split(","):
        term = term.strip()
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.split("=", 1)
            if labels.get(key.rstrip("=")) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


VERSION = {
    "major": "1",
    "minor": "37",
    "gitVersion": "v1.37.0-fake",
    "gitCommit": "0" * 40,
    "gitTreeState": "clean",
    "buildDate": "2026-11-01T00:00:00Z",
    "goVersion": "go1.25",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):  # clients hang up; that is fine
            super().handle_error(request, client_address)


class FakeKube:
    """Start with `with FakeKube() as kube:`; `kube.url` is the server address."""

    def __init__(self, namespaces: tuple[str, ...] = ("default",), crds: tuple[str, ...] = ()):
        self.lock = threading.Condition()
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}  # (plural, namespace, name) -> object
        self.namespaces = set(namespaces)
        self.crds = set(crds)  # "tfjobs.kubeflow.org", ...
        self.logs: dict[tuple[str, str], list[str]] = {}  # (namespace, pod) -> lines of the current container
        self.events: list[tuple[int, str, str, dict[str, Any]]] = []  # (rv, type, plural, object)
        self.requests: list[tuple[str, str]] = []
        self.faults: list[Fault] = []
        self.denied: set[tuple[str, str]] = set()  # (verb, resource) SSAR says no to
        self.latency = 0.0
        self.hanging: set[tuple[str, str]] = set()  # (method, plural) calls that get no answer
        self.hung = 0  # calls waiting in a hang now
        self.max_in_flight = 0
        self._in_flight = 0
        self._rv = itertools.count(1)
        self._closed = False
        self._connections: set[socket.socket] = set()
        self._handler = type("Handler", (_Handler,), {"kube": self})
        self._bind(0)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def _bind(self, port: int) -> None:
        self.httpd = _Server(("127.0.0.1", port), self._handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> FakeKube:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop listening and cut every open connection (kept-alive ones too: a client must see
        the server gone, not a connection that still answers)."""
        with self.lock:
            self._closed = True
            self.lock.notify_all()
            connections = list(self._connections)
        self.httpd.shutdown()
        self.httpd.server_close()
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    @contextmanager
    def outage(self) -> Iterator[None]:
        """Inside the block the API server is gone (connections refused); after it, it answers
        again on the same address, with the same objects and logs."""
        port = self.httpd.server_address[1]
        self.close()
        try:
            yield
        finally:
            with self.lock:
                self._closed = False
            self._bind(port)
            self._thread.start()

    @contextmanager
    def hang(self, method: str, plural: str) -> Iterator[None]:
        """Inside the block, `method` calls on `plural` are read and never answered (an API server
        that accepts connections and hangs); after it, or when the server closes, they go on."""
        with self.lock:
            self.hanging.add((method, plural))
        try:
            yield
        finally:
            with self.lock:
                self.hanging.discard((method, plural))
                self.lock.notify_all()

    def kubeconfig(self, path, namespace: str = "default", context: str = "fake") -> str:
        """Write a kubeconfig pointing at this server; returns its path."""
        import yaml

        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "tester", "user": {"token": "t0ken"}}],
            "contexts": [{"name": context, "context": {"cluster": "fake", "user": "tester", "namespace": namespace}}],
            "current-context": context,
        }
        with open(path, "w") as handle:
            yaml.safe_dump(config, handle)
        return str(path)

    # ---- state, for tests ----------------------------------------------------------------

    def list(self, plural: str, namespace: str = "default", selector: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            return [
                copy.deepcopy(o)
                for (p, ns, _), o in sorted(self.objects.items())
                if p == plural and ns == namespace and _match(o["metadata"].get("labels") or {}, selector)
            ]

    def get(self, plural: str, name: str, namespace: str = "default") -> dict[str, Any] | None:
        with self.lock:
            obj = self.objects.get((plural, namespace, name))
            return copy.deepcopy(obj) if obj else None

    def fail(
        self,
        method: str,
        plural: str,
        status: int,
        reason: str,
        message: str,
        nth: int = 1,
        times: int = 1,
        lost: bool = False,
    ):
        """The nth call of `method` on `plural` answers `status`; with `lost`, after doing it."""
        with self.lock:
            self.faults.append(Fault(method, plural, status, reason, message, nth, times, lost))

    def deny(self, verb: str, resource: str) -> None:
        self.denied.add((verb, resource))

    def set_pod_status(self, name: str, status: dict[str, Any], namespace: str = "default") -> None:
        with self.lock:
            obj = self.objects[("pods", namespace, name)]
            obj["status"] = copy.deepcopy(status)
            self._changed("MODIFIED", "pods", obj)

    def set_status(self, plural: str, name: str, status: dict[str, Any], namespace: str = "default") -> None:
        with self.lock:
            obj = self.objects[(plural, namespace, name)]
            obj["status"] = copy.deepcopy(status)
            self._changed("MODIFIED", plural, obj)

    def append_log(self, pod: str, text: str, namespace: str = "default") -> None:
        with self.lock:
            self.logs.setdefault((namespace, pod), []).extend(text.splitlines(keepends=True))
            self.lock.notify_all()

    def restart_container(self, pod: str, namespace: str = "default") -> None:
        """A new container in the pod: its log starts empty (as `kubectl logs` shows it)."""
        with self.lock:
            self.logs[(namespace, pod)] = []
            self.lock.notify_all()

    # ---- the store -----------------------------------------------------------------------

    def _changed(self, kind: str, plural: str, obj: dict[str, Any]) -> None:
        rv = next(self._rv)
        obj["metadata"]["resourceVersion"] = str(rv)
        self.events.append((rv, kind, plural, copy.deepcopy(obj)))
        self.lock.notify_all()

    def _create(self, plural: str, namespace: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        meta = body.setdefault("metadata", {})
        name = meta.get("name")
        if not name:
            return 422, _status(422, "Invalid", f"{plural}: metadata.name: Required value")
        if namespace not in self.namespaces:
            return 404, _status(404, "NotFound", f'namespaces "{namespace}" not found')
        if (plural, namespace, name) in self.objects:
            return 409, _status(409, "AlreadyExists", f'{plural} "{name}" already exists')
        meta.update(namespace=namespace, uid=str(uuid.uuid4()), creationTimestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ"))
        if plural == "pods":
            body.setdefault("status", {"phase": "Pending"})
        self.objects[(plural, namespace, name)] = body
        self._changed("ADDED", plural, body)
        return 201, body

    def _delete(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        obj = self.objects.pop((plural, namespace, name), None)
        if obj is None:
            return None
        self._changed("DELETED", plural, obj)
        self.lock.notify_all()
        uid = obj["metadata"]["uid"]
        for key, other in list(self.objects.items()):  # garbage collection of dependents
            owners = other["metadata"].get("ownerReferences") or []
            if key in self.objects and any(ref.get("uid") == uid for ref in owners):
                self._delete(*key)
        return obj

    def _fault(self, method: str, plural: str) -> Fault | None:
        for fault in self.faults:
            if fault.method == method and fault.plural == plural and fault.times > 0:
                fault.nth -= 1
                if fault.nth <= 0:
                    fault.times -= 1
                    return fault
        return None


class _Handler(BaseHTTPRequestHandler):
    kube: FakeKube
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        with self.kube.lock:
            self.kube._connections.add(self.connection)

    def finish(self) -> None:
        with self.kube.lock:
            self.kube._connections.discard(self.connection)
        try:
            super().finish()
        except OSError:  # the connection was cut (outage, close)
            pass

    # ---- plumbing ------------------------------------------------------------------------

    _lost: Fault | None = None

    def _send(self, code: int, body: dict[str, Any]) -> None:
        lost, self._lost = self._lost, None
        if lost is not None:
            code, body = lost.status, _status(lost.status, lost.reason, lost.message)
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict[str, Any]:
        return json.loads(self._payload or b"{}")

    def _route(self, method: str) -> None:
        kube = self.kube
        url = urlparse(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        parts = [p for p in url.path.split("/") if p]
        length = int(self.headers.get("Content-Length") or 0)
        self._payload = self.rfile.read(length) if length else b""  # read even when refusing: keep-alive
        with kube.lock:
            kube.requests.append((method, url.path))
            kube._in_flight += 1
            kube.max_in_flight = max(kube.max_in_flight, kube._in_flight)
        try:
            if kube.latency:
                time.sleep(kube.latency)
            self._dispatch(method, parts, query)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with kube.lock:
                kube._in_flight -= 1

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_DELETE(self) -> None:
        self._route("DELETE")

    # ---- the API -------------------------------------------------------------------------

    def _dispatch(self, method: str, parts: list[str], query: dict[str, str]) -> None:
        kube = self.kube
        if parts == ["version"]:
            return self._send(200, VERSION)
        if parts[:2] == ["apis", "authorization.k8s.io"] and parts[-1] == "selfsubjectaccessreviews":
            review = self._body()
            attrs = review.get("spec", {}).get("resourceAttributes", {})
            allowed = (attrs.get("verb"), attrs.get("resource")) not in kube.denied
            review["status"] = {"allowed": allowed, **({} if allowed else {"reason": "RBAC: no rule allows it"})}
            return self._send(201, review)
        if parts[:3] == ["apis", "apiextensions.k8s.io", "v1"] and len(parts) == 5:
            name = parts[4]
            if name in kube.crds:
                return self._send(200, {"kind": "CustomResourceDefinition", "metadata": {"name": name}})
            return self._send(404, _status(404, "NotFound", f'customresourcedefinitions "{name}" not found'))
        if parts[:2] == ["api", "v1"]:
            rest = parts[2:]
            group = ""
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, rest = parts[1], parts[3:]
        else:
            return self._send(404, _status(404, "NotFound", "the server could not find the requested resource"))
        if rest[:1] == ["namespaces"] and len(rest) == 2 and not group:
            with kube.lock:
                if rest[1] in kube.namespaces:
                    return self._send(200, {"kind": "Namespace", "metadata": {"name": rest[1]}})
            return self._send(404, _status(404, "NotFound", f'namespaces "{rest[1]}" not found'))
        if rest[:1] != ["namespaces"] or len(rest) < 3:
            return self._send(404, _status(404, "NotFound", "the server could not find the requested resource"))
        namespace, plural, name, sub = rest[1], rest[2], (rest[3] if len(rest) > 3 else None), rest[4:]
        if group and f"{plural}.{group}" not in kube.crds:
            return self._send(404, _status(404, "NotFound", "the server could not find the requested resource"))
        with kube.lock:
            if (method, plural) in kube.hanging:
                kube.hung += 1
                while (method, plural) in kube.hanging and not kube._closed:
                    kube.lock.wait()
                kube.hung -= 1
                if kube._closed:
                    return None
            fault = kube._fault(method, plural)
        if fault and not fault.lost:
            return self._send(fault.status, _status(fault.status, fault.reason, fault.message))
        self._lost = fault  # done, and its answer lost on the way (a proxy's 504): `_send` swaps it
        if sub == ["log"] and method == "GET":
            return self._logs(namespace, name or "", query)
        if method == "POST" and name is None:
            with kube.lock:
                code, body = kube._create(plural, namespace, self._body())
            return self._send(code, body)
        if method == "GET" and name is None:
            if query.get("watch") in ("true", "1"):
                return self._watch(plural, namespace, query)
            with kube.lock:  # the items and their version in one snapshot: a watch from it misses nothing
                items = kube.list(plural, namespace, query.get("labelSelector"))
                rv = str(len(kube.events))
            return self._send(
                200, {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": rv}, "items": items}
            )
        if method == "GET":
            obj = kube.get(plural, name, namespace)
            if obj is None:
                return self._send(404, _status(404, "NotFound", f'{plural} "{name}" not found'))
            return self._send(200, obj)
        if method == "DELETE" and name is None:
            with kube.lock:
                gone = [
                    kube._delete(*key)
                    for key in list(kube.objects)
                    if key[0] == plural
                    and key[1] == namespace
                    and _match(kube.objects[key]["metadata"].get("labels") or {}, query.get("labelSelector"))
                ]
            return self._send(200, {"kind": "List", "items": [g for g in gone if g]})
        if method == "DELETE":
            with kube.lock:
                obj = kube._delete(plural, namespace, name)
            if obj is None:
                return self._send(404, _status(404, "NotFound", f'{plural} "{name}" not found'))
            return self._send(200, obj)  # as the API server does: the object, now being deleted
        return self._send(405, _status(405, "MethodNotAllowed", f"{method} is not supported here"))

    def _stream_start(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _watch(self, plural: str, namespace: str, query: dict[str, str]) -> None:
        kube = self.kube
        selector = query.get("labelSelector")
        deadline = time.monotonic() + float(query.get("timeoutSeconds") or 30)
        since = int(query.get("resourceVersion") or 0)
        self._stream_start()
        position = 0
        with kube.lock:
            if not since:  # a watch without a version starts with the current objects
                for (p, ns, _), obj in sorted(kube.objects.items()):
                    if p == plural and ns == namespace and _match(obj["metadata"].get("labels") or {}, selector):
                        self._chunk(json.dumps({"type": "ADDED", "object": obj}).encode() + b"\n")
                position = len(kube.events)
            else:
                position = next((i for i, e in enumerate(kube.events) if e[0] > since), len(kube.events))
        while True:
            with kube.lock:
                while position >= len(kube.events) and not kube._closed and time.monotonic() < deadline:
                    kube.lock.wait(min(0.2, max(0.0, deadline - time.monotonic())))
                if kube._closed or (position >= len(kube.events) and time.monotonic() >= deadline):
                    break
                batch = kube.events[position:]
                position = len(kube.events)
            for _, kind, p, obj in batch:
                if (
                    p == plural
                    and obj["metadata"]["namespace"] == namespace
                    and _match(obj["metadata"].get("labels") or {}, selector)
                ):
                    self._chunk(json.dumps({"type": kind, "object": obj}).encode() + b"\n")
        self._chunk(b"")

    def _logs(self, namespace: str, pod: str, query: dict[str, str]) -> None:
        kube = self.kube
        if kube.get("pods", pod, namespace) is None:
            return self._send(404, _status(404, "NotFound", f'pods "{pod}" not found'))
        follow = query.get("follow") in ("true", "1")
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = 0
        while True:
            with kube.lock:
                lines = kube.logs.get((namespace, pod), [])
                if sent > len(lines):  # the container restarted: a new log
                    break
                chunk = lines[sent:]
                sent = len(lines)
                obj = kube.objects.get(("pods", namespace, pod))
                done = (
                    obj is None
                    or (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")
                    or _terminated(obj)
                    or kube._closed
                )
                if not chunk and follow and not done:
                    kube.lock.wait(0.2)
                    continue
            if chunk:
                self._chunk("".join(chunk).encode())
            if not follow or (done and not chunk):
                break
        self._chunk(b"")


def _terminated(pod: dict[str, Any]) -> bool:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return bool(statuses) and all("terminated" in (s.get("state") or {}) for s in statuses)
