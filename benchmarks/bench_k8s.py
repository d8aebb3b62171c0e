"""Kubernetes backends at scale: rendering and creating a 1,000-worker run.

    python benchmarks/bench_k8s.py [--workers 999] [--latency-ms 5]

Render: the manifests of a PyTorch run with one master and `--workers` workers, for each backend
(pure functions; median of 7). Create: the same native run (1,000 pods, one Service, the
ConfigMap) against the tests' simulated API server (`tests/kube_sim`, no controllers: nothing
schedules or runs the pods) on 127.0.0.1 with `--latency-ms` added to every
request, once with one call at a time and once with the backend's pool of 16. Exits non-zero if
the native render takes 0.5 s or more.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from kube_sim import Cluster

from jupyter_px.backends.kubernetes.client import connect
from jupyter_px.backends.kubernetes.create import create_all
from jupyter_px.backends.kubernetes.render import render_manifests
from jupyter_px.backends.kubernetes.settings import KubernetesSettings
from jupyter_px.topology import parse_topology

CODE = {"entrypoint": "train.py", "language": "python", "args": []}
FILES = {"train.py": b"import jupyter_px.tracking as t\nt.log_metrics(step=0, loss=1.0)\n"}


def _render(backend: str, workers: int) -> tuple[float, int]:
    topology = parse_topology({"framework": "pytorch", "environment": {"replicas": {"n_workers": workers}}})
    times, count = [], 0
    for _ in range(7):
        start = time.perf_counter()
        objects = render_manifests(backend, topology, "bench-run", CODE, FILES, KubernetesSettings())
        times.append(time.perf_counter() - start)
        count = len(objects)
    return statistics.median(times), count


def _create(workers: int, latency: float, parallelism: int) -> float:
    import os

    topology = parse_topology({"framework": "pytorch", "environment": {"replicas": {"n_workers": workers}}})
    settings = KubernetesSettings(create_parallelism=parallelism)
    objects = render_manifests("native", topology, "bench-run", CODE, FILES, settings)
    with Cluster(controllers=()) as kube, tempfile.TemporaryDirectory() as tmp:
        os.environ["KUBECONFIG"] = kube.kubeconfig(Path(tmp) / "kubeconfig")
        kube.latency = latency
        cluster = connect(settings)
        start = time.perf_counter()
        create_all(cluster, objects, parallelism)
        elapsed = time.perf_counter() - start
        cluster.close()
        assert len(kube.list("pods")) == workers + 1
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=999)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    args = parser.parse_args(argv)
    print(f"render, 1 master + {args.workers} workers (median of 7):")
    native = 0.0
    for backend in ("native", "kubeflow", "kubeflow-trainer"):
        seconds, count = _render(backend, args.workers)
        native = seconds if backend == "native" else native
        print(f"  {backend:17s} {seconds * 1000:7.1f} ms  ({count} objects)")
    print(f"create, native, {args.workers + 3} objects, {args.latency_ms:g} ms per request:")
    for parallelism in (1, 16):
        seconds = _create(args.workers, args.latency_ms / 1000, parallelism)
        print(f"  {parallelism:2d} at a time      {seconds:7.2f} s")
    if native >= 0.5:
        print(f"FAIL: native render took {native:.3f} s (bound 0.5 s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
