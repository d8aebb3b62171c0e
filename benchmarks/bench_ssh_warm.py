"""A run on SSH hosts, cold and warm (from each host's template), against the same job started by
hand with torchrun over ssh, on real sshd servers on this machine.

    python benchmarks/bench_ssh_warm.py [--rounds 3] [--size tiny]

Starts two OpenSSH servers on 127.0.0.1 (`tests/ssh_hosts.py`: host-a and host-b, 2 slots each),
and runs the reference workload a researcher would (`examples/workloads/torch_cnn.py`: a
ResNet-style CNN under DDP, a DataLoader with two workers per rank, AdamW, autocast,
checkpoints), four ranks, two per host, each way as the whole command a user waits for:

* `jupyter px run torch_cnn.py -f topology.yaml --wait` with no template on the hosts (cold: each
  replica a fresh interpreter that imports torch; the run starts the hosts' template);
* the same again, once the template listens (warm: each replica a fork of it, torch imported);
* by hand: `ssh host-a torchrun --nnodes 2 --node-rank 0 --nproc-per-node 2 ...` and the same on
  host-b at once, as a group without a scheduler starts a job on its machines.

Reported: medians, and warm / cold and warm / by hand. Both hosts are this machine (two cores
here): the figures are what the starts cost, not a cluster's speed. Exits 1 when a run fails or
warm is not faster than cold.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
WORKLOAD = ROOT / "examples" / "workloads" / "torch_cnn.py"
TOPOLOGY = "framework: pytorch\nbackend: ssh\nenvironment:\n  replicas:\n    n_workers: 3\n"


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        said = done.stdout[-2000:] + done.stderr[-2000:]
        raise SystemExit(f"failed ({done.returncode}): {' '.join(argv[:4])}...\n{said}")
    return time.monotonic() - started


def by_hand(hosts, size: str, port: int, env: dict[str, str]) -> float:
    """torchrun on each host over ssh, at once; the time until both ended."""
    started = time.monotonic()
    sessions = []
    for rank, host in enumerate(("host-a", "host-b")):
        torchrun = [
            sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--node-rank", str(rank),
            "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port", str(port),
            str(WORKLOAD), "--size", size,
        ]  # fmt: skip
        argv = ["ssh", "-F", str(hosts.config), host, "--", *torchrun]
        sessions.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for session in sessions:
        out, _ = session.communicate(timeout=900)
        if session.returncode != 0:
            raise SystemExit(f"torchrun over ssh failed ({session.returncode}):\n{out[-3000:]}")
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", default="tiny")
    args = parser.parse_args()

    from free_ports import free_port
    from ssh_hosts import start_hosts, stop_hosts, stop_templates

    hosts = start_hosts(2)
    scratch = Path(tempfile.mkdtemp(prefix="px-bench-ssh-"))
    topology = scratch / "topology.yaml"
    topology.write_text(TOPOLOGY)
    env = {
        **os.environ,
        "PX_HOME": str(scratch / "px_home"),
        "PX_SSH_CONFIG": str(scratch / "no-settings.yaml"),
        "PX_SSH_SSH_CONFIG": str(hosts.config),
        "PX_SSH_HOSTS": "host-a slots=2,host-b slots=2",
        "PX_SSH_CONTROL_DIR": str(hosts.folder / "cm"),
        "PX_SSH_WARM_DIR": str(hosts.warm),
    }
    run = [sys.executable, "-m", "jupyter_px.cli", "run", str(WORKLOAD), "-f", str(topology), "--wait"]
    run += ["--", "--size", args.size]
    times: dict[str, list[float]] = {"cold": [], "warm": [], "by hand (torchrun over ssh)": []}
    try:
        for round_ in range(args.rounds):
            stop_templates(hosts)
            times["cold"].append(timed(run, env))
            deadline = time.monotonic() + 120
            while not any(hosts.warm.glob("*.sock")) and time.monotonic() < deadline:
                time.sleep(0.2)
            times["warm"].append(timed(run, env))
            times["by hand (torchrun over ssh)"].append(by_hand(hosts, args.size, free_port(), env))
            print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), flush=True)
    finally:
        stop_templates(hosts)
        stop_hosts(hosts)
    medians = {way: statistics.median(values) for way, values in times.items()}
    print(f"\n{WORKLOAD.name} --size {args.size}, 4 ranks on 2 hosts, {args.rounds} rounds (medians, whole commands):")
    for way, value in medians.items():
        print(f"  {way:28s} {value:6.2f} s")
    hand = medians["by hand (torchrun over ssh)"]
    print(f"  warm / cold     {medians['warm'] / medians['cold']:.2f}")
    print(f"  warm / by hand  {medians['warm'] / hand:.2f}")
    return 0 if medians["warm"] < medians["cold"] else 1


if __name__ == "__main__":
    sys.exit(main())
