"""Topology validation and the environment contract at scale.

    python benchmarks/bench_topology.py

A 1,000-worker, 100-ps TensorFlow topology with 200 per-index overrides: time to parse and
validate it (from YAML text, as `%%px_topology` and `jupyter px validate` receive it), to resolve
every replica, and to compute the whole contract (TF_CONFIG etc.) for all 1,100 replicas; plus
the wall time of the `jupyter px validate` command on it, interpreter start included. Also the
summary table of a topology at the replica maximum (built from defaults and overrides, not per
replica) and the refusal of a count far beyond it and of a YAML bomb (both bounded). Exits
non-zero if `jupyter px validate` takes a second or more.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time

import yaml

from jupyter_px.cluster import ClusterEnv, kubernetes_addresses
from jupyter_px.topology import TopologyError, parse_topology, summary_text
from jupyter_px.topology.limits import MAX_TOTAL_REPLICAS

WORKERS, PS, OVERRIDES = 1000, 100, 200


def big_topology_yaml() -> str:
    return yaml.safe_dump(
        {
            "framework": "tensorflow",
            "environment": {
                "resources": {"cpu": {"requests": 1, "limits": 2}, "memory": {"requests": 256, "limits": 1024}},
                "replicas": {
                    "n_workers": WORKERS,
                    "n_ps": PS,
                    "default_worker": {
                        "resources": {"cpu": {"requests": 1, "limits": 2}, "gpu": {"requests": 1, "limits": 1}}
                    },
                    "default_ps": {"resources": {"memory": {"requests": "512Mi", "limits": "1Gi"}}},
                    "worker": [
                        {"index": i * 6, "resources": {"memory": {"requests": 512, "limits": 2048}}}
                        for i in range(OVERRIDES - 50)
                    ],
                    "ps": [{"index": i * 2, "resources": {"cpu": "500m"}} for i in range(50)],
                },
            },
        }
    )


def timed(fn, repeats: int = 7) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> int:
    text = big_topology_yaml()
    parse_s, topology = timed(lambda: parse_topology(text))
    resolve_s, _ = timed(lambda: parse_topology(text).replicas())
    addresses = kubernetes_addresses(topology, "bench")

    def contract():
        cluster = ClusterEnv(topology, "bench", addresses)
        return [cluster.for_replica(s.role, s.index) for s in topology.replicas()]

    contract_s, envs = timed(contract)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as handle:
        handle.write(text)
        handle.flush()
        cli_s, done = timed(
            lambda: subprocess.run(
                [sys.executable, "-m", "jupyter_px.cli", "validate", handle.name], capture_output=True, text=True
            ),
            repeats=5,
        )
    assert done.returncode == 0, done.stderr

    at_maximum = parse_topology(
        {"framework": "tensorflow", "environment": {"replicas": {"n_workers": MAX_TOTAL_REPLICAS - 101, "n_ps": 100}}}
    )
    summary_s, _ = timed(lambda: summary_text(at_maximum))

    def refused(source) -> None:
        try:
            parse_topology(source)
        except TopologyError:
            return
        raise AssertionError("accepted")

    huge_s, _ = timed(
        lambda: refused("framework: pytorch\nenvironment:\n  replicas: {n_workers: 99999999999999999999}\n")
    )
    bomb = "l0: &l0 [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n" + "".join(
        f"l{i}: &l{i} [{','.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9)
    )
    bomb_s, _ = timed(lambda: refused(bomb))
    rows = [
        ("parse + validate (YAML text)", parse_s),
        ("parse + validate + resolve 1,100 replicas", resolve_s),
        (f"contract for all {len(envs)} replicas", contract_s),
        ("`jupyter px validate FILE` (whole process)", cli_s),
        (f"summary table, {MAX_TOTAL_REPLICAS:,} replicas", summary_s),
        ("refuse n_workers: 10**20", huge_s),
        (f"refuse a {len(bomb)}-byte billion laughs", bomb_s),
    ]
    print(
        f"topology: tensorflow, {WORKERS} workers, {PS} ps, {OVERRIDES} per-index overrides "
        f"({len(text) // 1024} KiB of YAML)"
    )
    for name, seconds in rows:
        print(f"  {name:<45} {seconds * 1000:8.1f} ms (median)")
    if cli_s >= 1.0:
        print("FAIL: jupyter px validate took a second or more")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
