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
    api: client.ApiClient
    core: client.CoreV1Api
    custom: client.CustomObjectsApi
    namespace: str
    host: str
    context: str | None

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
        core=client.CoreV1Api(api),
        custom=client.CustomObjectsApi(api),
        namespace=namespace or "default",
        host=configuration.host,
        context=context,
    )


def raw_get(cluster: Cluster, path: str, query: list[tuple[str, Any]], accept: str, read_timeout: float) -> Any:
    """GET `path` as a raw, streaming urllib3 response, authenticated as every call of the
    client is (its bearer token, refreshed by the configuration's hook; client certificates and
    proxies are in the client's pool). For requests the generated API has no method for (a pod
    log from a `sinceTime`), the same on every client version: kubernetes 37 builds requests with
    `param_serialize`, older clients with `call_api(resource_path, ...)`. ApiException with the
    server's status and body for an answer other than 2xx."""
    configuration = cluster.api.configuration
    headers = {**cluster.api.default_headers, "Accept": accept}
    for setting in configuration.auth_settings().values():
        if setting.get("in") == "header" and setting.get("value"):
            headers[setting["key"]] = setting["value"]
    url = f"{configuration.host}{path}?{urlencode(query)}" if query else f"{configuration.host}{path}"
    response = cluster.api.rest_client.pool_manager.request(
        "GET",
        url,
        headers=headers,
        preload_content=False,
        timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT_S, read=read_timeout),
    )
    if not 200 <= response.status <= 299:
        body = response.read()
        response.release_conn()
        error = ApiException(status=response.status, reason=response.reason)
        error.body = body.decode("utf-8", "replace")
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
