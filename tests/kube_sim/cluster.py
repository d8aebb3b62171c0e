"""The whole simulated cluster: the API server (in-process registry + HTTP on 127.0.0.1) and the
controllers started with it. `with Cluster() as cluster:`; `cluster.kubeconfig(path)` writes a
kubeconfig the official client and kubectl can use. Each pod gets its own network namespace and
address on a bridge where the machine permits it (kubelet_network.py); `Cluster(pod_network=True)`
requires it (`PodNetworkUnavailable` with the reason where the machine does not permit it),
`pod_network=False` has pods share this machine's network."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from . import authentication, scheduling
from .apiserver import ApiServer
from .authentication import TOKEN
from .gc import GarbageCollector
from .httpapi import HttpFrontend
from .job_controller import JobController
from .jobset_controller import JobSetController
from .kubelet import Kubelet
from .mpi_operator import MPIOperator
from .trainer_controller import TrainerController
from .training_operator import TrainingOperator


class Cluster:
    def __init__(
        self,
        namespaces: tuple[str, ...] = ("default",),
        crds: bool | tuple[str, ...] = True,
        history: int = 1000,
        version: str = "1.33.0",
        trainer: str = "2.3",
        mpi_operator: bool = False,
        mxjob: bool = True,
        port: int = 0,
        controllers: tuple[str, ...] = (
            "gc",
            "scheduler",
            "kubelet",
            "job-controller",
            "jobset-controller",
            "training-operator",
            "trainer",
        ),
        node: dict[str, Any] | None = None,
        kubelet: dict[str, Any] | None = None,
        pod_network: bool | None = None,
    ):
        if "kubelet" in controllers:
            # None: each pod its own network namespace where the machine permits it (else pods share
            # this machine's, `kubelet.no_pod_network_because` says why); True: required; False: off
            kubelet = {"pod_network": pod_network, **(kubelet or {})}
        self.api = ApiServer(
            namespaces=namespaces,
            crds=crds,
            history=history,
            version=version,
            trainer=trainer,
            mpi_operator=mpi_operator,
            mxjob=mxjob,
        )
        self.http = HttpFrontend(self.api, port)
        self.url = self.http.url
        self.controllers: list[Any] = []
        self.kubelet: Kubelet | None = None
        if "gc" in controllers:
            self.controllers.append(GarbageCollector(self.api))
        if "scheduler" in controllers or "kubelet" in controllers:
            self.api.create(self.api.resource("", "v1", "nodes"), node or scheduling.node())
        if "scheduler" in controllers:
            self.controllers.append(scheduling.Scheduler(self.api))
        if "kubelet" in controllers:
            name = (node or {}).get("metadata", {}).get("name", "node-1")
            try:
                self.kubelet = Kubelet(self.api, name, **(kubelet or {}))
            except Exception:
                self.http.httpd.server_close()  # bound in its constructor, not serving yet
                self.http.httpsd.server_close()
                raise
            self.kubelet.apiserver = ("127.0.0.1", self.http.httpsd.server_address[1])
            self.controllers.append(self.kubelet)
        if "job-controller" in controllers:
            self.controllers.append(JobController(self.api))
        if "jobset-controller" in controllers and crds:
            self.controllers.append(JobSetController(self.api))
        if "trainer" in controllers and ("trainer.kubeflow.org", "v1alpha1", "trainjobs") in self.api.resources:
            self.controllers.append(TrainerController(self.api))
        if "training-operator" in controllers:
            self.controllers.append(TrainingOperator(self.api))
        if "training-operator" in controllers and mpi_operator:
            self.controllers.append(MPIOperator(self.api))  # its MPIJob instead of the training operator's

    def start(self) -> Cluster:
        self.http.start()
        for controller in self.controllers:
            controller.start()
        return self

    def close(self) -> None:
        for controller in reversed(self.controllers):
            controller.stop()
        self.http.close()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def outage(self) -> Iterator[None]:
        with self.http.outage():
            yield

    # ---- for tests: objects by plural, faults, limits -----------------------------------------

    def _plural(self, plural: str) -> Any:
        found = [r for (_, _, p), r in self.api.resources.items() if p == plural]
        core = [r for r in found if not r.group]
        return (core or found)[0]

    def list(self, plural: str, namespace: str = "default", selector: str | None = None) -> list[dict[str, Any]]:
        return self.api.list(self._plural(plural), namespace, selector)["items"]

    def get(self, plural: str, name: str, namespace: str = "default") -> dict[str, Any] | None:
        return self.api.try_get(self._plural(plural), namespace, name)

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
    ) -> None:
        """The `nth` call of `method` on `plural` answers `status`; with `lost`, after doing it."""
        self.api.fail(method, plural, status, reason, message, nth, times, lost)

    @contextmanager
    def hang(self, method: str, plural: str) -> Iterator[None]:
        with self.http.hang(method, plural):
            yield

    @property
    def hung(self) -> int:
        return self.api.hung

    def deny(self, verb: str, resource: str, group: str = "*", namespace: str = "*") -> None:
        self.api.deny(verb, resource, group, namespace)

    @property
    def requests(self) -> list[tuple[str, str]]:
        return self.api.requests

    @property
    def watches(self) -> list[tuple[str, str, str | None]]:
        """Every watch opened over HTTP: (resource plural, namespace, label selector)."""
        return self.api.watches

    @property
    def latency(self) -> float:
        return self.api.latency

    @latency.setter
    def latency(self, seconds: float) -> None:
        self.api.latency = seconds

    @property
    def max_in_flight(self) -> int:
        return self.api.max_in_flight

    def kubeconfig(
        self, path: str | Path, namespace: str = "default", context: str = "kube-sim", tls: bool = False,
        token: str = TOKEN,
    ) -> str:  # fmt: skip
        """A kubeconfig for the official client and kubectl: the plain HTTP port (what the tests
        have always used), or with `tls` the HTTPS one as a real cluster's, its CA included (kubectl
        sends the token only over TLS: authentication.py)."""
        cluster: dict[str, Any] = {"server": self.url}
        if tls:
            ca = base64.b64encode(authentication.ca_pem().encode()).decode()
            cluster = {"server": self.http.secure_url, "certificate-authority-data": ca}
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "kube-sim", "cluster": cluster}],
            "users": [{"name": "tester", "user": {"token": token}}],
            "contexts": [
                {"name": context, "context": {"cluster": "kube-sim", "user": "tester", "namespace": namespace}}
            ],
            "current-context": context,
        }
        Path(path).write_text(yaml.safe_dump(config))
        return str(path)
