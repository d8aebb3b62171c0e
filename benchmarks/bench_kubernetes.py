"""Kubernetes backends at scale: `jupyter px render` as a whole process, the largest pod, and
creating a run against the simulated API server.

    python benchmarks/bench_kubernetes.py [--rounds 3] [--latency-ms 5] [--create-workers 1000 10000]
                                   [--old-commit 5536807 | --no-old]

Render: `jupyter px render train.py -f topology.yaml --backend native` run as a user runs it
(a new process: interpreter start and imports included), for TensorFlow with 1,000 workers +
100 ps + the chief, and with 9,899 workers + 100 ps + the chief (10,000 replicas, the topology's
maximum); median of `--rounds`; the YAML's size and the largest pod (its JSON, what the API server
stores). Targets (issue 19): under 1.5 s and 10 s; no pod over 16 KB.

Create: the native run's objects created through the backend's `create_all` (its pool of 16
calls) against the simulated API server (`tests/kube_sim`, schema validation included) with
`--latency-ms` added to every request; no scheduler and no kubelet, so nothing runs: create only.

Before/after: the previous implementation (every pod carried every address) is measured the same
way from a `git worktree` of `--old-commit`, for 1,000 workers only (at 10,000 it cannot render
in reasonable time: 5,000 workers took 340 s and 2.1 GB, and its pods could not start). Exits
non-zero when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

TARGETS = {1_000: 1.5, 9_899: 10.0}
POD_LIMIT = 16 * 1024
SCRIPT = "import jupyter_px.tracking as t\nt.log_metrics(step=0, loss=1.0)\n"

#: Renders in the process given by PYTHONPATH (this tree or an old one): objects as JSON on stdout.
RENDER_OBJECTS = """
import json, sys
from jupyter_px.backends.kubernetes.render import render_manifests
from jupyter_px.backends.kubernetes.shared.settings import KubernetesSettings
from jupyter_px.topology import parse_topology
topology = parse_topology(json.loads(sys.argv[1]))
code = {"entrypoint": "train.py", "language": "python", "args": []}
objects = render_manifests("native", topology, "bench", code, {"train.py": sys.argv[2].encode()}, KubernetesSettings())
json.dump(objects, sys.stdout)
"""


def topology(workers: int) -> dict[str, Any]:
    return {
        "framework": "tensorflow",
        "backend": "native",
        "environment": {"replicas": {"n_workers": workers, "n_ps": 100}},
    }


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree)}


def whole_render(tree: Path, workers: int, folder: Path, rounds: int) -> tuple[float, float, float, int]:
    """`jupyter px render` in a new process: median and best wall seconds, median CPU seconds
    (user + system: what the machine's load does not inflate), and the bytes it printed."""
    import resource

    import yaml

    script, spec = folder / "train.py", folder / f"topology-{workers}.yaml"
    script.write_text(SCRIPT)
    spec.write_text(yaml.safe_dump(topology(workers)))
    jupyter = Path(sys.executable).with_name("jupyter")
    command = [str(jupyter), "px", "render", str(script), "-f", str(spec), "--backend", "native"]
    times, cpu, size = [], [], 0
    for _ in range(rounds):
        out = folder / "out.yaml"
        with out.open("wb") as sink:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(command, stdout=sink, check=True, env=_env(tree), cwd=folder)
            times.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        size = out.stat().st_size
    return statistics.median(times), min(times), statistics.median(cpu), size


def objects_of(tree: Path, workers: int) -> list[dict[str, Any]]:
    """The native run's objects as rendered by the code in `tree`."""
    command = [sys.executable, "-c", RENDER_OBJECTS, json.dumps(topology(workers)), SCRIPT]
    # cwd=tree: `python -c` puts the working directory first on sys.path, before PYTHONPATH
    result = subprocess.run(command, capture_output=True, check=True, env=_env(tree), cwd=tree)
    return json.loads(result.stdout)


def largest_pod(objects: list[dict[str, Any]]) -> int:
    return max(len(json.dumps(o, separators=(",", ":"))) for o in objects if o["kind"] == "Pod")


def create(objects: list[dict[str, Any]], latency: float) -> float:
    """Seconds for `create_all` of every object against the simulated API server (no kubelet)."""
    from kube_sim import Cluster

    from jupyter_px.backends.kubernetes.shared.client import connect
    from jupyter_px.backends.kubernetes.shared.create import create_all
    from jupyter_px.backends.kubernetes.shared.settings import KubernetesSettings

    pods = sum(o["kind"] == "Pod" for o in objects)
    with Cluster(controllers=()) as sim, tempfile.TemporaryDirectory() as tmp:
        os.environ["KUBECONFIG"] = sim.kubeconfig(Path(tmp) / "kubeconfig")
        sim.api.latency = latency
        settings = KubernetesSettings()
        cluster = connect(settings)
        try:
            start = time.perf_counter()
            create_all(cluster, objects, settings.create_parallelism)
            elapsed = time.perf_counter() - start
        finally:
            cluster.close()
        assert len(sim.list("pods")) == pods
    return elapsed


def old_tree(commit: str, folder: Path) -> Path:
    tree = folder / f"old-{commit}"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit], check=True, capture_output=True
    )
    return tree


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--create-workers", type=int, nargs="*", default=[1_000, 9_899])
    parser.add_argument("--old-commit", default="5536807")
    parser.add_argument("--no-old", action="store_true", help="skip the previous implementation (about a minute)")
    args = parser.parse_args(argv)
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        old = None if args.no_old else old_tree(args.old_commit, folder)
        try:
            what = "TensorFlow native, chief + N workers + 100 ps"
            print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
            print(f"`jupyter px render`, whole process, {what} (wall: median and best of {args.rounds}; CPU):")
            for workers, target in TARGETS.items():
                seconds, best, cpu, size = whole_render(ROOT, workers, folder, args.rounds)
                pod = largest_pod(objects_of(ROOT, workers))
                line = (
                    f"  {workers:>5,} workers: {seconds:6.2f} s (best {best:.2f} s, CPU {cpu:.2f} s), "
                    f"{size / 1e6:6.1f} MB of YAML, largest pod {pod:,} B"
                )
                if old is not None and workers == 1_000:
                    old_seconds, _, _, old_size = whole_render(old, workers, folder, 1)
                    old_pod = largest_pod(objects_of(old, workers))
                    line += (
                        f"\n         before ({args.old_commit}): {old_seconds:6.2f} s, {old_size / 1e6:6.1f} MB, "
                        f"largest pod {old_pod:,} B -> {old_seconds / seconds:.0f}x faster, "
                        f"{old_size / size:.0f}x less YAML"
                    )
                print(line, flush=True)
                if best >= target:  # the best round: the one the other work on the machine disturbed least
                    failed.append(f"render of {workers} workers took {best:.2f} s at best (target {target} s)")
                if pod > POD_LIMIT:
                    failed.append(f"a pod of {workers} workers is {pod} B (limit {POD_LIMIT})")
            print(f"create (native, pool of 16) against the simulated API server, {args.latency_ms:g} ms per request:")
            for workers in args.create_workers:
                objects = objects_of(ROOT, workers)
                seconds = create(objects, args.latency_ms / 1000)
                line = f"  {workers:>5,} workers ({len(objects):,} objects): {seconds:6.2f} s"
                if old is not None and workers == 1_000:
                    old_seconds = create(objects_of(old, workers), args.latency_ms / 1000)
                    line += (
                        f"; before ({args.old_commit}'s objects): {old_seconds:6.2f} s -> {old_seconds / seconds:.1f}x"
                    )
                print(line, flush=True)
        finally:
            if old is not None:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=False)
    for problem in failed:
        print(f"FAIL: {problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
