"""The API server on 127.0.0.1 over real HTTP, for the official `kubernetes` client (and kubectl
for what it asks): REST paths, query parameters, chunked watch and log streams, discovery.

Paths: /api/v1/..., /apis/<group>/<version>/..., `namespaces/<ns>/<plural>[/<name>[/<sub>]]`
(staging/src/k8s.io/apiserver/pkg/endpoints/installer.go). Faults, latency, a rate limit and
`outage()` (the server goes away, open connections cut, and comes back on the same port with the
same state) are for tests.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import yaml

from . import authentication, errors, field_manager, openapi, protobuf, spdy, streaming, websocket
from .apiserver import ApiServer, Fault
from .authorization import request_attributes
from .errors import ApiError
from .kubelet_streams import StreamError
from .query_params import query_flag
from .tables import table, wants_table

log = logging.getLogger(__name__)

#: server-side apply's patch type (field_manager.py)
APPLY_PATCH = "application/apply-patch+yaml"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    #: TLS on each accepted connection (the handshake in the connection's thread)
    secure = False
    #: The listen backlog. socketserver's default of 5 resets the sixth connection that arrives
    #: at once; Go's net.Listen, which kube-apiserver serves from, takes the kernel's somaxconn
    #: (go1.24 src/net/sock_linux.go maxListenerBacklog), 4096 on current kernels.
    request_queue_size = 4096

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError, OSError)):
            super().handle_error(request, client_address)


class HttpFrontend:
    """Serves `api` on 127.0.0.1 (a free port unless given)."""

    def __init__(self, api: ApiServer, port: int = 0):
        self.api = api
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._handler = type("Handler", (_Handler,), {"front": self})
        self._bind(port)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def _bind(self, port: int, secure_port: int = 0) -> None:
        self.httpd = _Server(("127.0.0.1", port), self._handler)
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="kube-sim-http", daemon=True
        )
        #: the secure port: HTTPS, as kube-apiserver serves (authentication.py)
        self.httpsd = _Server(("127.0.0.1", secure_port), self._handler)
        self.httpsd.secure = True
        self._secure_thread = threading.Thread(
            target=self.httpsd.serve_forever, kwargs={"poll_interval": 0.05}, name="kube-sim-https", daemon=True
        )
        self.secure_url = f"https://127.0.0.1:{self.httpsd.server_address[1]}"

    def start(self) -> None:
        self._thread.start()
        self._secure_thread.start()

    def close(self) -> None:
        """Stop listening and cut every open connection (kept-alive ones too)."""
        with self.api.cond:
            self.api.closed = True
            self.api.cond.notify_all()
        for server in (self.httpd, self.httpsd):
            server.shutdown()
            server.server_close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    @contextmanager
    def hang(self, method: str, plural: str) -> Iterator[None]:
        """Inside the block, `method` calls on `plural` are read and never answered (an API server
        that accepts connections and hangs); after it, or when the server closes, they go on."""
        with self.api.cond:
            self.api.hanging.add((method, plural))
        try:
            yield
        finally:
            with self.api.cond:
                self.api.hanging.discard((method, plural))
                self.api.cond.notify_all()

    @contextmanager
    def outage(self) -> Iterator[None]:
        """Inside the block the API server is unreachable (connections refused); after it, it
        answers again on the same address with the same objects. The controllers keep their
        state meanwhile (they talk to the registry in-process, as a real control plane's
        components would reconnect)."""
        port, secure_port = self.httpd.server_address[1], self.httpsd.server_address[1]
        self.close()
        try:
            yield
        finally:
            with self.api.cond:
                self.api.closed = False
            self._bind(port, secure_port)
            self.start()


class _Handler(BaseHTTPRequestHandler):
    front: HttpFrontend
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def setup(self) -> None:
        if getattr(self.server, "secure", False):
            self.request = authentication.wrap(self.request)
        super().setup()
        with self.front._lock:
            self.front._connections.add(self.connection)

    def finish(self) -> None:
        with self.front._lock:
            self.front._connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_PUT(self) -> None:
        self._route("PUT")

    def do_PATCH(self) -> None:
        self._route("PATCH")

    def do_DELETE(self) -> None:
        self._route("DELETE")

    # ---- plumbing ------------------------------------------------------------------------------

    _lost: Fault | None = None

    def _send(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        lost, self._lost = self._lost, None
        if lost is not None:
            code, body, headers = lost.status, errors.status(lost.status, lost.reason, lost.message), None
        data = json.dumps(body, separators=(",", ":")).encode()
        content_type = "application/json"
        if protobuf.accepts(self.headers.get("Accept") or ""):
            encoded = protobuf.encode(body)
            if encoded is not None:
                data, content_type = encoded, protobuf.CONTENT_TYPE
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream_start(self, content_type: str = "application/json") -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _route(self, method: str) -> None:
        api = self.front.api
        url = urlparse(self.path)
        self._query_lists = parse_qs(url.query, keep_blank_values=True)
        query = {k: v[-1] for k, v in self._query_lists.items()}
        parts = [p for p in url.path.split("/") if p]
        length = int(self.headers.get("Content-Length") or 0)
        payload = self.rfile.read(length) if length else b""  # read even when refusing: keep-alive
        try:
            self.user = api.authenticator.user(
                self.headers.get("Authorization"), getattr(self.server, "secure", False), url.path
            )
        except ApiError as error:
            return self._send(error.code, error.status, error.headers)
        with api.cond:
            api.requests.append((method, url.path))
            api.in_flight += 1
            api.max_in_flight = max(api.max_in_flight, api.in_flight)
        try:
            if api.latency:
                time.sleep(api.latency)
            api.admit_rate()
            if (self.headers.get("Content-Type") or "").startswith(protobuf.CONTENT_TYPE):
                payload = self._from_protobuf(payload)
            self._dispatch(method, parts, query, payload)
        except ApiError as error:
            self._send(error.code, error.status, error.headers)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with api.cond:
                api.in_flight -= 1

    def _from_protobuf(self, payload: bytes) -> bytes:
        """A protobuf body as JSON (protobuf.py); a kind without a message table: 415, as
        kube-apiserver answers protobuf for a custom resource (handlers/rest.go negotiation)."""
        try:
            return json.dumps(protobuf.decode(payload)).encode()
        except (protobuf.ProtobufError, KeyError, UnicodeDecodeError) as error:
            log.info("protobuf body refused: %s", error)
            raise ApiError(
                errors.status(
                    415,
                    "UnsupportedMediaType",
                    f"the body of the request was in an unknown format - accepted media types include: "
                    f"application/json, application/yaml, {protobuf.CONTENT_TYPE}",
                )
            ) from None

    # ---- the API -------------------------------------------------------------------------------

    def _dispatch(self, method: str, parts: list[str], query: dict[str, str], payload: bytes) -> None:
        api = self.front.api
        if parts == ["version"]:
            major, minor, patch = (api.version.split(".") + ["0", "0"])[:3]
            return self._send(
                200,
                {
                    "major": major,
                    "minor": minor,
                    "gitVersion": f"v{major}.{minor}.{patch}",
                    "gitCommit": "0" * 40,
                    "gitTreeState": "clean",
                    "buildDate": "2026-01-01T00:00:00Z",
                    "goVersion": "go1.24",
                    "compiler": "gc",
                    "platform": "linux/amd64",
                },
            )
        if parts in (["healthz"], ["readyz"], ["livez"]):
            data = b"ok"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(data)
            return None
        if parts == ["api"]:
            return self._send(
                200,
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
                },
            )
        if parts == ["apis"]:
            return self._send(200, self._groups())
        if parts[:1] == ["openapi"]:
            return self._openapi(parts[1:])
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise errors.not_found_path()
        if not rest:
            return self._send(200, self._resource_list(group, version))
        if group == "authorization.k8s.io" and rest == ["selfsubjectaccessreviews"] and method == "POST":
            return self._send(201, api.authorizer.review(json.loads(payload or b"{}")))
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3 and (group, version, rest[2]) in api.resources:
            namespace, rest = rest[1], rest[2:]
        resource = api.resource(group, version, rest[0])
        if resource.namespaced is False and namespace:
            raise errors.not_found_path()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        # requestinfo.go: /api/v1/namespaces/<name> is in the namespace <name>
        scope = name or "" if resource.plural == "namespaces" and not group else namespace
        api.authorizer.authorize(request_attributes(method, group, resource.plural, scope, name, sub, query))
        with api.cond:
            if (method, resource.plural) in api.hanging:
                api.hung += 1
                while (method, resource.plural) in api.hanging and not api.closed:
                    api.cond.wait(0.5)
                api.hung -= 1
                if api.closed:
                    return None
        fault = api.take_fault(method, resource.plural)
        if fault and not fault.lost:
            return self._send(fault.status, errors.status(fault.status, fault.reason, fault.message))
        self._lost = fault  # carried out, its answer lost on the way: `_send` swaps it
        content_type = self.headers.get("Content-Type") or ""
        if content_type.startswith(APPLY_PATCH) and payload:
            try:
                body = yaml.safe_load(payload)
            except yaml.YAMLError as error:
                raise errors.bad_request(f"error decoding YAML: {error}") from None
        else:
            body = json.loads(payload) if payload else None
        manager = field_manager.manager_of(query, self.headers.get("User-Agent") or "")
        strict = query.get("fieldValidation") == "Strict"
        dry_run = "dryRun" in query
        if name is None:
            if method == "GET":
                if query_flag(query.get("watch")):
                    return self._watch(resource, namespace, query)
                listed = api.list(
                    resource,
                    namespace,
                    query.get("labelSelector"),
                    query.get("fieldSelector"),
                    int(query.get("limit") or 0),
                    query.get("continue") or None,
                    query.get("resourceVersion"),
                )
                return self._send(200, self._maybe_table(resource, listed["items"], listed["metadata"], query))
            if method == "POST":
                created = api.create(resource, body or {}, namespace, strict=strict, dry_run=dry_run, manager=manager)
                warnings = created.pop("__warnings__", [])
                return self._send(201, created, _warning_headers(warnings))
            if method == "DELETE":
                options = body or {}
                return self._send(
                    200,
                    api.delete_collection(
                        resource,
                        namespace,
                        query.get("labelSelector"),
                        query.get("fieldSelector"),
                        _grace(query, options),
                        query.get("propagationPolicy") or options.get("propagationPolicy"),
                    ),
                )
            raise _not_allowed(method)
        if sub == "log" and method == "GET" and resource.plural == "pods":
            return self._logs(namespace, name, query)
        if sub == "binding" and method == "POST" and resource.plural == "pods":
            from .scheduling import bind

            bind(api, namespace, name, ((body or {}).get("target") or {}).get("name", ""))
            return self._send(
                201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
            )
        if resource.plural == "pods" and not resource.group and sub in ("exec", "attach", "portforward"):
            return self._stream(namespace, name, sub)
        if sub and sub not in ("status",):
            raise errors.not_found_path()
        if method == "GET":
            found = api.get(resource, namespace, name)
            return self._send(
                200,
                self._maybe_table(
                    resource, [found], {"resourceVersion": found["metadata"]["resourceVersion"]}, query, found
                ),
            )
        if method == "PUT":
            if (body or {}).get("metadata", {}).get("name") not in (None, name):
                raise errors.bad_request(
                    f"the name of the object ({body['metadata']['name']}) does not match the name on the URL ({name})"
                )
            body = body or {}
            body.setdefault("metadata", {})["name"] = name
            return self._send(200, api.update(resource, body, namespace, sub, strict=strict, manager=manager))
        if method == "PATCH":
            if content_type.startswith(APPLY_PATCH):
                if not query.get("fieldManager"):
                    raise errors.bad_request(
                        "PATCH requests of type application/apply-patch+yaml must have a fieldManager"
                    )
                force = query_flag(query.get("force"))
                existed = api.try_get(resource, namespace, name) is not None
                applied = api.apply(resource, namespace, name, body, manager, force, dry_run)
                return self._send(200 if existed else 201, applied)
            return self._send(200, api.patch(resource, namespace, name, body, content_type, sub, manager=manager))
        if method == "DELETE":
            options = body or {}
            obj = api.delete(
                resource,
                namespace,
                name,
                _grace(query, options),
                query.get("propagationPolicy") or options.get("propagationPolicy"),
                options.get("preconditions"),
            )
            return self._send(200, obj)
        raise _not_allowed(method)

    def _stream(self, namespace: str, name: str, sub: str) -> None:
        """exec, attach, portforward: the SPDY/3.1 upgrade, then the kubelet's streams (streaming.py)."""
        api = self.front.api
        pod = api.get(api.resource("", "v1", "pods"), namespace, name)
        upgrade = (self.headers.get("Upgrade") or "").lower()
        over_websocket = upgrade == "websocket"
        if not over_websocket and "spdy/3.1" not in upgrade:
            raise errors.bad_request("Upgrade request required")
        phase = (pod.get("status") or {}).get("phase")
        if sub != "portforward" and phase in ("Succeeded", "Failed"):
            # pkg/registry/core/pod/strategy.go streamLocation
            raise errors.bad_request(
                f"cannot {'exec into' if sub == 'exec' else 'attach to'} a container in a completed pod; "
                f"current phase is {phase}"
            )
        kubelet = api.streamer
        if kubelet is None or not (pod.get("spec") or {}).get("nodeName"):
            raise errors.bad_request(f"pod {name} does not have a host assigned")
        lists = self._query_lists
        supported = streaming.PORT_FORWARD_PROTOCOLS if sub == "portforward" else streaming.REMOTE_COMMAND_PROTOCOLS
        if over_websocket:
            supported = (websocket.TUNNEL_PROTOCOL,) if sub == "portforward" else websocket.PROTOCOLS
        offered = websocket.offered(self.headers) if over_websocket else spdy.offered_protocols(self.headers)
        protocol = spdy.negotiate(offered, supported)
        if protocol is None:
            raise ApiError(
                errors.status(
                    403,
                    "Forbidden",
                    f"unable to upgrade: unable to negotiate protocol: client supports {offered}, "
                    f"server supports {list(supported)}",
                )
            )
        container = (lists.get("container") or [""])[-1]
        options = {k: query_flag((lists.get(k) or [None])[-1]) for k in ("stdin", "stdout", "stderr", "tty")}
        if sub != "portforward":
            try:
                kubelet._running(namespace, name, container)
            except StreamError as refused:
                raise errors.bad_request(str(refused)) from None
        self.send_response(101)
        if over_websocket:
            for header, value in websocket.handshake_headers(self.headers, protocol).items():
                self.send_header(header, value)
        else:
            self.send_header("Connection", "Upgrade")
            self.send_header("Upgrade", "SPDY/3.1")
            self.send_header("X-Stream-Protocol-Version", protocol)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        if over_websocket and sub == "portforward":
            tunnel = websocket.Tunnel(self.rfile, self.wfile)
            streaming.port_forward(tunnel, tunnel, kubelet, namespace, name)
        elif over_websocket:
            argv = lists.get("command") if sub == "exec" else None
            streaming.remote_command_websocket(
                self.rfile, self.wfile, kubelet, namespace, name, container, argv, options, protocol
            )
        elif sub == "portforward":
            streaming.port_forward(self.rfile, self.wfile, kubelet, namespace, name)
        else:
            argv = lists.get("command") if sub == "exec" else None
            streaming.remote_command(
                self.rfile, self.wfile, kubelet, namespace, name, container, argv, options, protocol
            )
        return None

    def _openapi(self, parts: list[str]) -> None:
        """/openapi/v2 and /openapi/v3[/<group version>] (openapi.py)."""
        api = self.front.api
        served = tuple(sorted(api.resources.values(), key=lambda r: (r.group, r.version, r.plural)))
        if parts == ["v2"]:
            accept = self.headers.get("Accept") or "*/*"
            if accept.startswith(openapi.V2_PROTOBUF_ASKED):
                data = openapi.v2_protobuf(served, api.version)
                self.send_response(200)
                self.send_header("Content-Type", openapi.V2_PROTOBUF)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return None
            if not any(t in accept for t in ("application/json", "*/*")):
                raise ApiError(
                    errors.status(406, "NotAcceptable", "only the following media types are accepted: application/json")
                )
            return self._send(200, openapi.v2(served, api.version))
        if parts == ["v3"]:
            return self._send(200, openapi.v3_discovery(served, api.version))
        if parts[:1] == ["v3"]:
            wanted = "/".join(parts[1:])
            group = openapi.group_versions(served).get(wanted)
            if group is None:
                raise errors.not_found_path()
            return self._send(200, openapi.v3(tuple(group), api.version))
        raise errors.not_found_path()

    def _maybe_table(
        self, resource: Any, items: list[Any], metadata: dict[str, Any], query: dict[str, str], one: Any = None
    ) -> Any:
        """A Table when the client asks for one (tables.py), else the list (or the object)."""
        version = wants_table(self.headers.get("Accept") or "")
        if version is None:
            return one if one is not None else {
                "kind": f"{resource.kind}List", "apiVersion": resource.api_version, "metadata": metadata, "items": items
            }  # fmt: skip
        for item in items:
            item.setdefault("apiVersion", resource.api_version)
            item.setdefault("kind", resource.kind)
        return table(resource, items, metadata, query.get("includeObject") or "Metadata", version)

    def _groups(self) -> dict[str, Any]:
        api = self.front.api
        groups: dict[str, list[str]] = {}
        for group, version, _ in api.resources:
            if group:
                groups.setdefault(group, [])
                if version not in groups[group]:
                    groups[group].append(version)
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [
                {
                    "name": g,
                    "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
                    "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]},
                }
                for g, vs in sorted(groups.items())
            ],
        }

    def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        api = self.front.api
        found = [r for (g, v, _), r in api.resources.items() if g == group and v == version]
        if not found:
            raise errors.not_found_path()
        verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
        items = []
        for r in found:
            item = {
                "name": r.plural,
                "singularName": r.kind.lower(),
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": verbs,
            }
            if r.short_names:
                item["shortNames"] = list(r.short_names)
            if r.categories:
                item["categories"] = list(r.categories)
            items.append(item)
            if r.status_subresource:
                items.append(
                    {
                        "name": f"{r.plural}/status",
                        "singularName": "",
                        "namespaced": r.namespaced,
                        "kind": r.kind,
                        "verbs": ["get", "patch", "update"],
                    }
                )
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": items,
        }

    def _watch(self, resource: Any, namespace: str, query: dict[str, str]) -> None:
        api = self.front.api
        with api.cond:
            api.watches.append((resource.plural, namespace, query.get("labelSelector")))
        events = api.watch(
            resource,
            namespace,
            query.get("resourceVersion") or None,
            query.get("labelSelector"),
            query.get("fieldSelector"),
            float(query.get("timeoutSeconds") or 1800),
            query_flag(query.get("allowWatchBookmarks")),
        )
        self._stream_start()  # the headers at once, as the real server flushes them
        for event in events:
            self._chunk(json.dumps(event, separators=(",", ":")).encode() + b"\n")
        self._chunk(b"")

    def _logs(self, namespace: str, name: str, query: dict[str, str]) -> None:
        from .logs import log_stream

        stream = log_stream(self.front.api, namespace, name, query)  # raises ApiError before any byte
        self._stream_start("text/plain")
        try:
            for data in stream:
                if data:
                    self._chunk(data)
        except OSError as error:  # a kubelet that cannot read its file ends the stream, as a proxy would
            log.warning("log stream of %s/%s: %s", namespace, name, error)
        self._chunk(b"")


def _grace(query: dict[str, str], options: dict[str, Any]) -> int | None:
    value = query.get("gracePeriodSeconds", options.get("gracePeriodSeconds"))
    return None if value is None else int(value)


def _warning_headers(warnings: list[str]) -> dict[str, str]:
    # RFC 7234 warn-code 299, as staging/src/k8s.io/apiserver/pkg/warning writes them; one header
    # line per warning there, joined here (the client splits on commas between quoted texts)
    if not warnings:
        return {}
    quoted = [w.replace("\\", "\\\\").replace('"', '\\"') for w in warnings]
    return {"Warning": ", ".join(f'299 - "{w}"' for w in quoted)}


def _not_allowed(method: str) -> ApiError:
    return ApiError(
        errors.status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    )
