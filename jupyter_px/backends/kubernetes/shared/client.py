"""Connecting to a cluster: kubeconfig (`KUBECONFIG`, the current or a named context) or, when
this process runs in a pod (Kubeflow Notebooks, JupyterHub on Kubernetes), the in-cluster config.

`connect` returns the official client's API objects sharing one connection pool sized for the
backend's parallel creates, and the namespace to use (settings, else the context's, else the
pod's own namespace, else "default").

Every call has a request timeout: the official client waits forever by default, so one API
server that accepts a connection and never answers would hold a submit (and the thread serving
it) for as long as it hangs. A call that names its own `_request_timeout` (watches, log streams)
keeps it; every other call gets `REQUEST_TIMEOUT_S`.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import urllib3
from kubernetes import client, config
from kubernetes.client import rest
from kubernetes.client.exceptions import ApiException

from ...base import BackendError
from .settings import KubernetesSettings

#: Seconds to wait for the API server to accept a connection (watches, log streams, polls).
CONNECT_TIMEOUT_S = 10.0
#: Seconds to wait for the answer to one call (create, get, delete, list) that names no timeout.
REQUEST_TIMEOUT_S = 30.0
IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class TimedRESTClient(rest.RESTClientObject):
    """The official client's HTTP layer with a default request timeout (see the module doc).

    The timeout is set here, the one method every request of every client version goes through:
    kubernetes 37's `ApiClient.call_api(method, url, ...)` and the `call_api(resource_path,
    method, ...)` of the generated clients before it (34 to 36) both end in
    `rest_client.request(..., _request_timeout=...)`, always by keyword."""

    default_timeout: tuple[float, float] = (CONNECT_TIMEOUT_S, REQUEST_TIMEOUT_S)

    def request(self, method: Any, url: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("_request_timeout") is None:
            kwargs["_request_timeout"] = self.default_timeout
        return super().request(method, url, *args, **kwargs)


class TimedApiClient(client.ApiClient):
    """The official client with a default request timeout on every call."""

    def __init__(self, configuration: client.Configuration):
        super().__init__(configuration)
        self.rest_client.pool_manager.clear()  # nothing was sent through it yet
        self.rest_client = TimedRESTClient(configuration)


@dataclass
class Cluster:
    """A connection to one cluster. Preflight, the object kinds the backends create, the
    follower's pod watch, events and logs go through `request` and `raw_get`: the REST API as
    JSON, the client's connection pool and authentication. The generated `CoreV1Api` is made on
    first use, for the one call that needs its method (a command run in a pod: the exec stream):
    importing it costs about a second of CPU (kubernetes 37 builds a pydantic validator for each
    of its 400 methods at import), in every follower, kernel and CLI that submits or follows."""

    api: client.ApiClient
    namespace: str
    host: str
    context: str | None

    @functools.cached_property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    def close(self) -> None:
        self.api.close()


def _kubeconfig() -> str | None:
    """KUBECONFIG (read now: the client reads it once, at import) or ~/.kube/config, if any exists."""
    paths = os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    return paths if any(Path(p).expanduser().is_file() for p in paths.split(os.pathsep) if p) else None


def connect(settings: KubernetesSettings) -> Cluster:
    """An API client for the configured cluster, or BackendError saying what is missing."""
    configuration = client.Configuration()
    namespace = settings.namespace
    context = settings.context
    try:
        kubeconfig = _kubeconfig()
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)
            if namespace is None or context is None:
                contexts, active = config.list_kube_config_contexts(config_file=kubeconfig)
                if context:
                    active = next((c for c in contexts if c["name"] == context), active)
                namespace = namespace or (active or {}).get("context", {}).get("namespace")
                context = context or (active or {}).get("name")
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config(client_configuration=configuration)
            if namespace is None and IN_CLUSTER_NAMESPACE.is_file():
                namespace = IN_CLUSTER_NAMESPACE.read_text().strip()
        else:
            raise BackendError(
                "no Kubernetes configuration: set KUBECONFIG (or create ~/.kube/config), or run the notebook "
                "in a pod of the cluster"
            )
    except config.ConfigException as error:
        raise BackendError(f"cannot load the Kubernetes configuration: {error}") from None
    configuration.connection_pool_maxsize = max(4, settings.create_parallelism)
    configuration.retries = 0  # our own calls decide; a refused connection must fail fast
    api = TimedApiClient(configuration)
    return Cluster(
        api=api,
        namespace=namespace or "default",
        host=configuration.host,
        context=context,
    )


Query = list[tuple[str, Any]]


def request(
    cluster: Cluster,
    method: str,
    path: str,
    query: Query | None = None,
    body: Any = None,
    read_timeout: float | None = None,
) -> Any:
    """`method` on `path` (`/api/v1/namespaces/ns/pods`), the answer's JSON: one call of the REST
    API as the client makes it (see `raw_get`); `read_timeout` None: every call's default
    (`TimedRESTClient.default_timeout`)."""
    response = _send(cluster, method, path, query, body, "application/json", read_timeout, stream=False)
    return json.loads(response.data) if response.data else {}


def raw_get(cluster: Cluster, path: str, query: Query, accept: str, read_timeout: float) -> Any:
    """GET `path` as a raw, streaming urllib3 response (a log, a watch), authenticated as every
    call of the client is (its bearer token, refreshed by the configuration's hook; client
    certificates and proxies are in the client's pool). The same on every client version:
    kubernetes 37 builds requests with `param_serialize`, older clients with
    `call_api(resource_path, ...)`. ApiException with the server's status and body for an answer
    other than 2xx."""
    return _send(cluster, "GET", path, query, None, accept, read_timeout, stream=True)


def _send(
    cluster: Cluster,
    method: str,
    path: str,
    query: Query | None,
    body: Any,
    accept: str,
    read_timeout: float | None,
    *,
    stream: bool,
) -> Any:
    connect_timeout, default_read = TimedRESTClient.default_timeout
    configuration = cluster.api.configuration
    headers = {**cluster.api.default_headers, "Accept": accept}
    for setting in configuration.auth_settings().values():
        if setting.get("in") == "header" and setting.get("value"):
            headers[setting["key"]] = setting["value"]
    payload = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        payload = json.dumps(body).encode()
    url = f"{configuration.host}{path}?{urlencode(query)}" if query else f"{configuration.host}{path}"
    response = cluster.api.rest_client.pool_manager.request(
        method,
        url,
        headers=headers,
        body=payload,
        preload_content=not stream,
        timeout=urllib3.Timeout(connect=connect_timeout, read=read_timeout or default_read),
    )
    if not 200 <= response.status <= 299:
        answer = response.data if not stream else response.read()
        response.release_conn()
        error = ApiException(status=response.status, reason=response.reason)
        error.body = answer.decode("utf-8", "replace")
        error.headers = response.headers
        raise error
    return response


def api_reason(error: ApiException) -> str:
    """The API server's own message for a refused call (`pods "x" already exists`)."""
    try:
        body: Any = json.loads(error.body or "")
        message = body.get("message") if isinstance(body, dict) else None
    except (ValueError, TypeError):
        message = None
    return f"{error.status} {error.reason}: {message}" if message else f"{error.status} {error.reason}"
