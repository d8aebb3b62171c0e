"""The Kubernetes follower following a big run: its threads, sockets, memory and API requests.

    python benchmarks/bench_kubernetes_follow.py [--workers 1000] [--duration 30] [--interval 1] [--runs 1] [--server]

`--runs` native PyTorch runs (at once), each with one master and `--workers` workers, are submitted to the simulated
cluster (tests/kube_sim) whose node is hollow (tests/kube_sim/hollow.py: pods run no process;
each container prints a line every `--interval` s for `--duration` s, then exits 0). Each run's
real follower process follows it; with `--server`, a real `jupyter server` with the extension
(in a process of its own) gets the runs through its REST API and follows them on its namespace's
one watch. Five times a second the benchmark reads the followers' (summed) or the server's
threads, open sockets and resident memory from /proc, and counts the HTTP requests the API server got while
the run ran (and the pod watches opened). At the end every replica's stored log is checked line
by line: a lost line is reported (and the exit status is 1).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from kube_sim import Cluster, scheduling  # noqa: E402
from kube_sim.hollow import HollowKubelet, Script  # noqa: E402
from server_support import free_port, stop_process, wait_until_serving, write_server_config  # noqa: E402


def _proc(pid: int) -> tuple[int, int, int]:
    """(threads, sockets, resident KiB) of a process; zeros once it is gone."""
    try:
        fields = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
        )
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return 0, 0, 0
    sockets = 0
    for fd in fds:
        try:
            sockets += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return int(fields["Threads"]), sockets, int(fields["VmRSS"].split()[0])


def _kind(method: str, path: str) -> str:
    """`GET pods/log`, `GET pods` (list or watch), `DELETE pods/<name>`..."""
    parts = path.strip("/").split("/")
    resource = parts[parts.index("namespaces") + 2 :] if "namespaces" in parts else parts[-1:]
    named = "/<name>" if len(resource) >= 2 else ""
    sub = "/" + resource[2] if len(resource) >= 3 else ""
    return f"{method} {resource[0]}{sub if sub else named}"


@contextlib.contextmanager
def jupyter_server(home: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """`jupyter server` with the extension (its keeper, so it follows Kubernetes runs itself),
    in a process of its own: (the runs URL, the request headers)."""
    root, config, log = home / "root", home / "config", home / "server.log"
    root.mkdir()
    (root / "train.py").write_text("pass\n")
    write_server_config(config)
    port, token = free_port(), "bench"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(config), JUPYTER_RUNTIME_DIR=str(home / "runtime"))
    command = [sys.executable, "-m", "jupyter_server", f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1"]
    command += [f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False"]
    with open(log, "wb") as out:
        server = subprocess.Popen([*command, "--allow-root"], env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/px/api/runs"
    headers = {"Authorization": f"token {token}", "Content-Type": "application/json"}
    try:
        wait_until_serving(server, url, log, 120, headers)
        yield url, headers
    finally:
        stop_process(server)


def submit_through(url: str, headers: dict[str, str], topology: dict) -> str:
    body = json.dumps({"topology": topology, "script": "train.py"}).encode()
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=600) as answer:
        return json.loads(answer.read())["run_id"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1000)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=1, help="runs submitted at once")
    parser.add_argument("--server", action="store_true", help="follow in a Jupyter server (REST submit)")
    args = parser.parse_args()
    lines = int(args.duration / args.interval)
    home = Path(tempfile.mkdtemp(prefix="px-bench-follow-"))
    node = scheduling.node(cpu="100000", memory="100000Gi", pods=str(args.runs * (args.workers + 1) + 100))
    cluster = Cluster(controllers=("gc", "scheduler"), node=node)
    # the master ends last (its success ends the run): every worker's log is whole by then
    script = Script(duration=args.duration, interval=args.interval, last="-master-0")
    hollow = HollowKubelet(cluster.api, script)
    with cluster:
        hollow.start()
        os.environ.update(
            KUBECONFIG=cluster.kubeconfig(home / "kubeconfig"),
            PX_HOME=str(home / "px"),
            PX_K8S_CONFIG=str(home / "none.yaml"),
            PX_K8S_IMAGE="python:3.11-slim",
            PX_K8S_FOLLOWER_GIVE_UP_S="120",
        )
        import jupyter_px

        topology = {
            "framework": "pytorch",
            "backend": "native",
            "environment": {"replicas": {"n_workers": args.workers}},
        }
        with contextlib.ExitStack() as stack:
            started, watches_before = time.perf_counter(), len(cluster.watches)
            if args.server:
                url, headers = stack.enter_context(jupyter_server(home))
                started, watches_before = time.perf_counter(), len(cluster.watches)
                runs = [jupyter_px.Run(submit_through(url, headers, topology)) for _ in range(args.runs)]
            else:
                runs = [jupyter_px.submit("pass\n", topology) for _ in range(args.runs)]
            submitted = time.perf_counter() - started
            statuses, followed, samples, requests = follow(runs, cluster, args.duration)
            watches = sum(1 for w in cluster.watches[watches_before:] if w[0] == "pods")
        hollow.stop()
    if statuses is None:
        print("the runs did not finish in time", file=sys.stderr)
        return 2
    who = "Jupyter server" if args.server else f"{args.runs} follower process(es), summed"
    kinds = collections.Counter(_kind(m, p) for m, p in requests)
    lost = 0
    for run, status in zip(runs, statuses, strict=True):
        for replica in status.replicas:
            log_text = run.logs(replica.role, replica.index, tail=None)
            stored = [line for line in log_text.splitlines() if " line " in line]
            count = hollow.produced.get(f"{run.run_id}-{replica.role}-{replica.index}", 0)
            want = [f"{run.run_id}-{replica.role}-{replica.index} line {n}" for n in range(count)]
            lost += len(set(want) - set(stored)) + max(0, len(stored) - len(set(stored)))
    threads = max(s[0] for s in samples)
    sockets = max(s[1] for s in samples)
    rss = max(s[2] for s in samples)
    print(
        f"{args.runs} run(s): 1 master + {args.workers} workers each, each {lines} log lines over "
        f"{args.duration:.0f} s (hollow pods)"
    )
    states = ", ".join(sorted({s.state.value for s in statuses}))
    print(f"submit: {submitted:.1f} s; followed until the last final status: {followed:.1f} s ({states})")
    print(f"{who}: at most {threads} threads, {sockets} open sockets, {rss / 1024:.0f} MiB resident")
    print(f"pod watches opened from the first submit on: {watches}")
    per_minute = len(requests) / followed * 60
    print(f"API requests while following: {len(requests)} ({per_minute:.0f}/min)")
    for kind, count in kinds.most_common(6):
        print(f"  {kind}: {count}")
    print(f"log lines lost or doubled: {lost} of {sum(hollow.produced.values())}")
    return 1 if lost else 0


def follow(runs, cluster, duration: float):
    """Sample the runs' owners (summed over distinct processes) until every run has finished:
    (final statuses or None when they did not in time, seconds, samples, the API requests
    meanwhile)."""
    requests_before = len(cluster.requests)
    pids = {run.store.status(run.run_id).owner.pid for run in runs}
    samples = []
    follow_start = time.perf_counter()
    while True:
        statuses = [run.store.status(run.run_id) for run in runs]
        sample = [sum(values) for values in zip(*(_proc(pid) for pid in pids), strict=True)]
        if sample[0]:
            samples.append(sample)
        if all(status.state.finished and status.owner is None for status in statuses):
            break
        if time.perf_counter() - follow_start > duration * 4 + 300 * len(runs):
            return None, 0.0, samples, []
        time.sleep(0.2)
    followed = time.perf_counter() - follow_start
    return statuses, followed, samples, cluster.requests[requests_before:]


if __name__ == "__main__":
    sys.exit(main())
