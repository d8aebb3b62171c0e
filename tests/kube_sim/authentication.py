"""Who a request comes from, and the API server's TLS.

kube-apiserver serves HTTPS only, and authenticates every request (kubernetes v1.33.0
staging/src/k8s.io/apiserver/pkg/endpoints/filters/authentication.go): a bearer token that no
authenticator accepts is a 401 `Unauthorized` Status, whatever the request; a request without
credentials is `system:anonymous` (anonymous auth is on by default), which RBAC's default
`system:public-info-viewer` lets read only /version, /healthz, /livez and /readyz
(plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go), everything else 403.

Here: the simulation serves HTTPS (a CA made for it by `trustme`; the kubeconfig of
`Cluster.kubeconfig(tls=True)` and the pods' service account volume carry it) and, for the tests
that have always used it, plain HTTP. kubectl sends no credentials over plain HTTP
(client-go tools/clientcmd/client_config.go: user credentials only for a TLS transport), so there
a request without credentials is the kubeconfig's user `tester`, as on the old insecure port;
a token sent is checked on both. Tokens: the kubeconfig's (`tester`) and the service account
tokens the kubelet puts in pods (`system:serviceaccount:<namespace>:<name>`).
"""

from __future__ import annotations

import functools
import ssl
import tempfile
import threading
from pathlib import Path
from typing import Any

from . import errors
from .errors import ApiError

TOKEN = "t0ken"
ANONYMOUS = "system:anonymous"
#: what `system:public-info-viewer` lets anyone read (bootstrappolicy/policy.go)
PUBLIC_PATHS = ("/version", "/healthz", "/livez", "/readyz")
#: the names the server certificate is for: this machine, and the `kubernetes` Service's
#: names and address as pods reach it (kubernetes v1.33.0 pkg/controlplane: the service's
#: first address of the service CIDR, 10.96.0.1 with kubeadm's default)
SERVICE_IP = "10.96.0.1"
NAMES = (
    "127.0.0.1",
    "localhost",
    SERVICE_IP,
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


def unauthorized() -> ApiError:
    return ApiError(errors.status(401, "Unauthorized", "Unauthorized"))


class Authenticator:
    """Bearer tokens to users."""

    def __init__(self) -> None:
        self._tokens: dict[str, str] = {TOKEN: "tester"}
        self._lock = threading.Lock()

    def issue(self, namespace: str, account: str) -> str:
        """A token for a service account (the kubelet's projected `token` file)."""
        import secrets

        token = secrets.token_urlsafe(32)
        with self._lock:
            self._tokens[token] = f"system:serviceaccount:{namespace}:{account}"
        return token

    def user(self, authorization: str | None, secure: bool, path: str) -> str:
        """The user of a request; ApiError 401 for a token no one issued, 403 for what an
        anonymous request may not read."""
        if authorization:
            scheme, _, token = authorization.partition(" ")
            with self._lock:
                user = self._tokens.get(token.strip()) if scheme.lower() == "bearer" else None
            if user is None:
                raise unauthorized()
            return user
        if not secure:
            return "tester"
        if path.rstrip("/") in PUBLIC_PATHS:
            return ANONYMOUS
        raise errors.forbidden_path(ANONYMOUS, path)


@functools.cache
def _authority() -> tuple[str, str, str]:
    """The CA's PEM and a server certificate chain + key (files), made once per process."""
    import trustme

    ca = trustme.CA(organization_name="kube-sim")
    server = ca.issue_cert(*NAMES)
    folder = Path(tempfile.mkdtemp(prefix="kube-sim-tls-"))
    chain, key = folder / "server.pem", folder / "server.key"
    chain.write_bytes(b"".join(blob.bytes() for blob in server.cert_chain_pems))
    key.write_bytes(server.private_key_pem.bytes())
    return ca.cert_pem.bytes().decode(), str(chain), str(key)


def ca_pem() -> str:
    return _authority()[0]


@functools.cache
def server_context() -> ssl.SSLContext:
    _, chain, key = _authority()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(chain, key)
    # Go's TLS client offers h2 first; the server here speaks HTTP/1.1 (ALPN http/1.1), as an
    # API server does for the upgrade requests of exec, attach and port-forward
    context.set_alpn_protocols(["http/1.1"])
    return context


def wrap(connection: Any) -> Any:
    return server_context().wrap_socket(connection, server_side=True)
