"""Resumable runs: from a rank killed mid-run to training going on, against torchrun's restarts.

    python benchmarks/bench_resume.py              # 3 rounds; --rounds N for more
    python benchmarks/bench_resume.py --slurm      # and on a Slurm cluster started here
    python benchmarks/bench_resume.py --kube       # and on the simulated Kubernetes cluster (native)

A 3-rank gloo DDP job (tests/jobs/ddp_resume.py: a checkpoint every 5 steps, 0.1 s a step) with
`termination: {maxRetries: 2}`; once worker-1 has saved its step-10 checkpoint, it is SIGKILLed
(its pid from the run's status, as `jupyter px kill RUN worker-1 --signal KILL` sends it). From
the run's status and its master's metrics: the kill to the failure recorded, the failure to the
whole gang started again as attempt 2 (every peer stopped), the kill to the first step of attempt
2 logged (training resumed), and the steps done twice (the failed attempt's last logged step
minus the checkpoint attempt 2 resumed from). Cold (every replica a fresh interpreter) and warm
(forked from the template).

The peer, in the same rounds: the same job as a torchrun user writes it
(benchmarks/torchrun_resume_job.py: the same model, batches and interval, `torch.save` per rank,
resuming from the newest step every rank saved) under `torchrun --standalone --nproc-per-node 3
--max-restarts 2` (its elastic agent notices a dead worker every 0.1 s, its default, stops the
others and starts the group again), with `TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1` (without it the
restarted ranks connect to the killed attempt's addresses, pytorch/pytorch#135712); rank 1 is
SIGKILLed once it has saved step 10.

With `--slurm`, the same job also runs on a real Slurm cluster this benchmark starts
(`tests/slurm_cluster`: 4 nodes of 2 CPUs; a CPU and 700 MiB per replica), worker-1 killed
by `jupyter px kill`'s path (the request through the shared run directory, the replica's task
signals it on its node): the run's retry is a requeue of the whole job, which Slurm starts again
as attempt 2 once the job credential's lifetime has passed (slurm.conf(5) AuthInfo `cred_expire`:
"how long a requeued job must wait before starting again", 120 s unless `--cred-expire` says).

With `--elastic`, the job also runs with elastic workers (`n_workers: "1:2"`, no retries;
tests/jobs/elastic_train.py: a shared checkpoint every 5 steps, 0.1 s a step), cold and warm:
worker-1 SIGKILLed once step 10 is saved leaves the run, which goes on in a world of 2; its
restart policy brings it back at the next checkpoint, in a world of 3. From the status and the
master's metrics (each step logs the world it ran in): the kill to training resumed without it,
the steps done twice, and its return to the first step in a world of 3 again. No peer: torchrun's
own `--nnodes=1:2` agents are not run here (see docs/failures.md).

With `--kube`, the same job also runs on the simulated Kubernetes cluster (`tests/kube_sim`: its
kubelet runs each pod as processes of this machine) on the `native` backend, the run store on a
claim the pods share (`shared_claim`), worker-1 killed in its pod by `jupyter px kill`'s exec: the
run's follower deletes the attempt's pods and creates them again as attempt 2. With `--kube
--elastic`, the elastic job also runs there as Kubeflow's elastic PyTorchJob: every process of
worker-1's pod is killed (a lost node's doing), the kubelet restarts its container, and torchrun's
agents form the group again; the kill to the first step of the last group logged.

Targets (issue "Resumable runs"): warm, training resumed within TARGET_WARM_S of the failure;
steps done twice at most one checkpoint interval. Exits 1 when a target is missed or a run did
not succeed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "tests" / "jobs" / "ddp_resume.py"
PEER_JOB = ROOT / "benchmarks" / "torchrun_resume_job.py"
TOPOLOGY = {"framework": "pytorch", "termination": {"maxRetries": 2}, "environment": {"replicas": {"n_workers": 2}}}
EVERY = 5
STEPS = ["--steps", "60", "--every", str(EVERY), "--step-sleep", "0.1"]
TARGET_WARM_S = 3.0


#: On Slurm: a CPU and 700 MiB each (the memory a user declares: torch and gloo take about 400).
SLURM_RESOURCES = {"cpu": 1, "memory": 700}
SLURM_TOPOLOGY = {
    **TOPOLOGY,
    "backend": "slurm",
    "environment": {
        "resources": SLURM_RESOURCES,
        "replicas": {"n_workers": 2, "default_worker": {"resources": SLURM_RESOURCES}},
    },
}


KUBE_TOPOLOGY = {**TOPOLOGY, "backend": "native"}


def one_round(mode: str) -> dict[str, float]:
    from jupyter_px.api import submit
    from jupyter_px.service import RunService

    os.environ["JUPYTER_PX_WARM"] = "1" if mode == "warm" else "0"
    topology = {"slurm": SLURM_TOPOLOGY, "native": KUBE_TOPOLOGY}.get(mode, TOPOLOGY)
    run = submit(JOB, topology, args=STEPS)
    _wait_for_step_10(run, "worker-1")
    started = time.time()
    if mode in ("slurm", "native"):  # its pid means something on its node only: `jupyter px kill`'s way
        RunService().kill(run.run_id, "worker", 1, signal.SIGKILL)
    else:
        _kill_worker_1(run)
    status = run.wait(timeout=600, poll=0.2)
    if status.state.value != "Succeeded" or len(status.attempts) != 2:
        raise SystemExit(f"{run.run_id}: {status.state.value}, {len(status.attempts)} attempts: {status.message}")
    failed, resumed = status.attempts
    assert failed.finished_at and resumed.started_at and failed.step is not None and resumed.resumed_from is not None
    first = None
    with open(run.paths.metrics("master", 0)) as handle:
        for line in handle:
            record = json.loads(line)
            if record["step"] == resumed.resumed_from + 1 and record["time"] > resumed.started_at:
                first = record["time"]
                break
    assert first is not None
    return {
        "kill to failure recorded": failed.finished_at - started,
        "failure to gang restarted": resumed.started_at - failed.finished_at,
        "kill to training resumed": first - started,
        "steps done twice": float(failed.step - resumed.resumed_from),
    }


ELASTIC_JOB = ROOT / "tests" / "jobs" / "elastic_train.py"
ELASTIC_TOPOLOGY = {
    "framework": "pytorch",
    "environment": {
        "replicas": {"n_workers": "1:2", "default_worker": {"restart_policy": "OnFailure", "max_restarts": 1}}
    },
}


def elastic_round(mode: str) -> dict[str, float]:
    """Elastic workers: worker-1 killed after step 10, the run goes on without it, then with it."""
    from jupyter_px.api import submit

    os.environ["JUPYTER_PX_WARM"] = "1" if mode == "elastic-warm" else "0"
    run = submit(ELASTIC_JOB, ELASTIC_TOPOLOGY, args=STEPS)
    _wait_for_step_10(run, "shared")
    started = time.time()
    _kill_worker_1(run)
    status = run.wait(timeout=600, poll=0.2)
    if status.state.value != "Succeeded" or len(status.attempts) != 3:
        raise SystemExit(f"{run.run_id}: {status.state.value}, {len(status.attempts)} attempts: {status.message}")
    left, smaller, whole = status.attempts
    assert left.step is not None and smaller.resumed_from is not None and whole.resumed_from is not None
    with open(run.paths.metrics("master", 0)) as handle:
        records = [json.loads(line) for line in handle]
    without = next(r for r in records if r["metrics"]["world"] == 2.0)
    back = next(r for r in records if r["time"] > without["time"] and r["metrics"]["world"] == 3.0)
    assert smaller.finished_at is not None
    return {
        "kill to training resumed without it": without["time"] - started,
        "steps done twice": float(left.step - smaller.resumed_from),
        "its return to training with it": back["time"] - smaller.finished_at,
    }


KUBEFLOW_ELASTIC_TOPOLOGY = {**ELASTIC_TOPOLOGY, "backend": "kubeflow"}


def kubeflow_elastic_round() -> dict[str, float]:
    """Elastic workers on Kubeflow's elastic PyTorchJob: every process of worker-1's pod killed
    after step 10 (what a lost node does to it); the kubelet restarts its container at once, and
    torchrun's agents form the group again. From the run's attempts (each group torchrun formed)
    and the master's metrics: the kill to the first step of the last group, the steps done twice."""
    from kube_sim_support import lose_pod  # (tests/ is on the path: `_kube_cluster`)

    from jupyter_px.api import submit

    run = submit(ELASTIC_JOB, KUBEFLOW_ELASTIC_TOPOLOGY, args=STEPS)
    _wait_for_step_10(run, "shared")
    started = time.time()
    if lose_pod(run.run_id, "worker", 1) < 2:
        raise SystemExit(f"{run.run_id}: worker-1's pod had not its agent and its training to kill")
    status = run.wait(timeout=900, poll=0.5)
    if status.state.value != "Succeeded" or len(status.attempts) < 2:
        raise SystemExit(f"{run.run_id}: {status.state.value}, {len(status.attempts)} attempts: {status.message}")
    ended, following, last = status.attempts[0], status.attempts[1], status.attempts[-1]
    assert ended.step is not None and following.resumed_from is not None
    assert last.resumed_from is not None and last.started_at is not None
    first = None
    for path in run.paths.metrics_dir.glob("*.jsonl"):  # rank 0 may be in any pod of the last group
        with open(path) as handle:
            for line in handle:
                record = json.loads(line)
                if record["step"] == last.resumed_from + 1 and record["time"] >= last.started_at:
                    first = record["time"] if first is None else min(first, record["time"])
    assert first is not None
    return {
        "kill to training resumed": first - started,
        "groups formed again": float(len(status.attempts) - 1),
        "steps done twice": float(ended.step - following.resumed_from),
    }


def _wait_for_step_10(run, scope: str) -> None:
    """Until `scope` (a replica, or `shared`) has saved its checkpoint at step 10."""
    from jupyter_px.runstore.checkpoints import all_checkpoints

    deadline = time.monotonic() + 300
    while not any(c.scope == scope and c.step >= 10 for c in all_checkpoints(str(run.paths.outputs_dir))):
        if time.monotonic() > deadline:
            raise SystemExit(f"{run.run_id}: no checkpoint at step 10 after 300 s")
        time.sleep(0.02)


def _kill_worker_1(run) -> None:
    """SIGKILL to worker-1's process (its pid from the run's status)."""
    pid = run.status().replica("worker", 1).pid
    assert pid, "worker-1 has no pid"
    os.kill(pid, signal.SIGKILL)


def torchrun_round() -> dict[str, float] | str:
    """The peer: the same job under torchrun's elastic agent, rank 1 killed after step 10; or
    why its restart failed (the error its ranks raised)."""
    folder = Path(tempfile.mkdtemp(prefix="px-bench-resume-torchrun-"))
    steps_log = folder / "steps.jsonl"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "3"]
    command += ["--max-restarts", "2", str(PEER_JOB), *STEPS, "--checkpoint-dir", str(folder)]
    command += ["--steps-log", str(steps_log)]
    # torchrun shares its rendezvous TCPStore with init_process_group by default, and its restarted
    # ranks then read the killed attempt's addresses (gloo: "connectFullMesh failed ... Connection
    # refused"; pytorch/pytorch#135712, #167288): the workaround its users are given is set
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}
    agent = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    deadline = time.monotonic() + 300
    while not (folder / "rank1-step10.pt").exists():
        if time.monotonic() > deadline or agent.poll() is not None:
            os.killpg(agent.pid, signal.SIGKILL)
            raise SystemExit(f"torchrun: no checkpoint at step 10 ({agent.communicate()[1][-2000:]})")
        time.sleep(0.02)
    pid = int((folder / "pid-1").read_text())
    started = time.time()
    os.kill(pid, signal.SIGKILL)
    try:
        _, errors = agent.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(agent.pid, signal.SIGKILL)  # its ranks too: they hold its output open
        _, errors = agent.communicate()
        errors += "\nthe restarted group made no progress in 120 s"
    if agent.returncode != 0:
        (folder / "torchrun.err").write_text(errors)
        said = [line for line in errors.splitlines() if line.startswith(("RuntimeError", "the restarted"))]
        return f"{said[0] if said else f'exit code {agent.returncode}'} ({folder / 'torchrun.err'})"
    records = [json.loads(line) for line in steps_log.read_text().splitlines()]
    failed_last = max(r["step"] for r in records if r["restart"] == 0)
    resumed = next(r for r in records if r["restart"] == 1)
    return {
        "kill to training resumed": resumed["time"] - started,
        "steps done twice": float(failed_last - resumed["start"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--slurm", action="store_true", help="also on a Slurm cluster started here")
    parser.add_argument("--kube", action="store_true", help="also on the simulated Kubernetes cluster (native)")
    parser.add_argument("--elastic", action="store_true", help="also with elastic workers (n_workers: '1:2')")
    parser.add_argument(
        "--cred-expire",
        type=int,
        default=None,
        help="the cluster's AuthInfo cred_expire: how long Slurm holds a requeued job (default: Slurm's 120 s)",
    )
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="px-bench-resume-")
    os.environ["PX_HOME"] = home
    os.environ["JUPYTER_PX_WARM_WAIT_S"] = "300"
    modes = ("cold", "warm", *(("slurm",) if args.slurm else ()), *(("native",) if args.kube else ()))
    modes += ("elastic-cold", "elastic-warm") if args.elastic else ()
    modes += ("kubeflow-elastic",) if args.elastic and args.kube else ()
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in (*modes, "torchrun")}
    peer_failures: list[str] = []
    loads = [os.getloadavg()[0]]
    with contextlib.ExitStack() as stack:
        if args.slurm:
            stack.enter_context(_slurm_cluster(home, args.cred_expire))
        if args.kube:
            stack.enter_context(_kube_cluster(home))
        _rounds(args.rounds, modes, results, peer_failures, loads)
    return _report(args.rounds, results, peer_failures, loads)


@contextlib.contextmanager
def _slurm_cluster(home: str, cred_expire_s: int | None) -> Iterator[None]:
    """A Slurm cluster on this machine for the `slurm` rounds, this process pointed at it."""
    sys.path.insert(0, str(ROOT / "tests"))
    from slurm_cluster import SlurmCluster

    with SlurmCluster(nodes=4, cpus=2, memory_mib=2000, cred_expire_s=cred_expire_s) as cluster:
        os.environ.update(cluster.env)
        os.environ["PX_SLURM_CONFIG"] = str(Path(home) / "no-slurm-settings.yaml")
        os.environ["PX_SLURM_POLL_INTERVAL_S"] = "0.5"
        yield


@contextlib.contextmanager
def _kube_cluster(home: str) -> Iterator[None]:
    """The simulated cluster for the `native` rounds, the run store on a claim its pods share."""
    sys.path.insert(0, str(ROOT / "tests"))
    from kube_sim import Cluster

    with Cluster(kubelet={"backoff_base": 0.5, "claims": {"px-runs": home}}) as cluster:
        if cluster.kubelet is None or not cluster.kubelet.isolated:
            raise SystemExit("--kube: pods cannot have their own names here (unshare is not permitted)")
        os.environ.update(
            KUBECONFIG=cluster.kubeconfig(Path(home) / "kubeconfig"),
            PX_K8S_CONFIG=str(Path(home) / "no-kubernetes-settings.yaml"),
            PX_K8S_IMAGE="python:3.11-slim",
            PX_K8S_SHARED_CLAIM="px-runs",
            PX_K8S_SHARED_MOUNT_PATH=home,
        )
        yield


def _rounds(rounds: int, modes: tuple[str, ...], results, peer_failures: list[str], loads: list[float]) -> None:
    try:
        for _ in range(rounds):  # interleaved, so a change of load meets every way alike
            for mode in modes:
                results[mode].append(_round(mode))
            peer = torchrun_round()
            if isinstance(peer, str):
                peer_failures.append(peer)
            else:
                results["torchrun"].append(peer)
            loads.append(os.getloadavg()[0])
    finally:
        from jupyter_px.backends.local import warm

        warm.stop_all("the benchmark ended")


def _round(mode: str) -> dict[str, float]:
    if mode == "kubeflow-elastic":
        return kubeflow_elastic_round()
    return elastic_round(mode) if mode.startswith("elastic") else one_round(mode)


def _report(rounds: int, results, peer_failures: list[str], loads: list[float]) -> int:
    print(f"load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores; {rounds} rounds; medians")
    ok = True
    for failure in peer_failures:
        print(f"torchrun's restart failed: {failure}")
    resumed = [r["kill to training resumed"] for r in results["torchrun"]]
    peer = statistics.median(resumed) if resumed else float("nan")
    for mode, rounds in results.items():
        if not rounds:
            continue
        medians = {name: statistics.median(r[name] for r in rounds) for name in rounds[0]}
        line = "; ".join(f"{name} {value:.2f}" for name, value in medians.items())
        if mode != "torchrun" and "kill to training resumed" in medians:
            line += f"; resumed / torchrun's {medians['kill to training resumed'] / peer:.2f}"
        print(f"{mode}: {line}")
        ok &= max(r["steps done twice"] for r in rounds) <= EVERY
        if mode in ("warm", "elastic-warm"):
            resumed_in = medians.get("kill to training resumed", medians.get("kill to training resumed without it"))
            ok &= resumed_in is not None and resumed_in <= TARGET_WARM_S
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
