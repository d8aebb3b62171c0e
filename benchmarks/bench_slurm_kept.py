"""A cell run twice on Slurm: the second run on the allocation the first one kept, against the
same two runs by hand (`sbatch --wait`, then `salloc` + `srun` steps), on a real cluster.

    python benchmarks/bench_slurm_kept.py [--rounds 3] [--size tiny]

Starts a Slurm cluster on this machine (`tests/slurm_cluster`: 2 slurmd nodes of 4 CPUs), and
runs the reference workload a researcher would (`examples/workloads/torch_cnn.py`: a ResNet-style
CNN under DDP, a DataLoader with two workers per rank, AdamW, autocast, checkpoints), four ranks
of one CPU, each way as a whole process, timed from its start to its exit:

* the cell, first: `%%px_distributed -f topology.yaml --wait` over the workload, in a kernel
  nbclient drives (the cell's wall time, as its user waits), the Slurm setting `keep_allocation_s`
  on, no allocation yet (sbatch, the scheduler, each node's server importing torch, the run);
* the cell, second: the same cell again, on the allocation the first kept;
* `jupyter px run torch_cnn.py -f topology.yaml --wait`, first and second, the same from a shell
  (each run also pays the command's own start);
* by hand, first: `sbatch --wait` of a script whose `srun` runs the workload on each task (a
  wrapper sets MASTER_ADDR, RANK and WORLD_SIZE from Slurm's variables, as users write it);
* by hand, second: `srun --jobid=<id>` of the same step in an allocation `salloc --no-shell` holds.

Every way runs the workload through a few lines that import torch and note the time (`STAMPED`):
"ready" is when the last rank got there, the start of its training; what a kept allocation saves
is all before it (the queue, the interpreters, the imports). Each round starts with no allocation
left. Reported: medians, and second / first for each way; the goal (issue 40: the second run
within 0.3 of the first) is checked on "ready", the training itself being the same in both runs.
Exits 1 when a run fails or the cell's median ratio is above the goal.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from notebook_cell import CellKernel

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
WORKLOAD = ROOT / "examples" / "workloads" / "torch_cnn.py"

GOAL = 0.3
RANKS = 4
#: What Slurm gives each rank, the same for every way.
CPUS, MEM_PER_CPU_MIB = 1, 1500
TOPOLOGY = textwrap.dedent(f"""\
    framework: pytorch
    backend: slurm
    environment:
      resources: {{cpu: {CPUS}, memory: {CPUS * MEM_PER_CPU_MIB}}}
      replicas:
        n_workers: {RANKS - 1}
        default_worker: {{resources: {{cpu: {CPUS}, memory: {CPUS * MEM_PER_CPU_MIB}}}}}
    """)
#: Every way runs this: it imports torch, notes when (each rank ready to run its code), then runs
#: the workload as `python torch_cnn.py` would.
STAMPED = textwrap.dedent("""\
    import os, runpy, sys, time
    import torch, torch.distributed
    with open(os.path.join(os.environ["BENCH_STAMPS"], f"{os.getpid()}-{time.time()!r}"), "w"):
        pass
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
    """)
#: What a user puts under `srun` by hand: torch's rendezvous variables from Slurm's.
WRAPPER = textwrap.dedent("""\
    #!/bin/bash
    export MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 5000 + ${SLURM_STEP_ID:-0} % 100))
    export RANK=$SLURM_PROCID WORLD_SIZE=$SLURM_NTASKS LOCAL_RANK=$SLURM_LOCALID
    exec "$@"
    """)


def run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(seconds to every rank ready, seconds to the command's exit) of one whole command, which
    must succeed."""
    stamps = Path(env["BENCH_STAMPS"])
    for old in stamps.iterdir():
        old.unlink()
    start = time.time()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    took = time.time() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:4])} failed: {(done.stderr or done.stdout).strip()[-800:]}")
    ready = [float(path.name.partition("-")[2]) for path in stamps.iterdir()]
    if len(ready) != RANKS:
        raise RuntimeError(f"{' '.join(command[:4])}: {len(ready)} of {RANKS} ranks ran")
    return max(ready) - start, took


def run_cell(kernel: CellKernel, stamps: Path) -> tuple[float, float]:
    """Like `run`, for the cell: (seconds to every rank ready, seconds to the cell's end)."""
    for old in stamps.iterdir():
        old.unlink()
    start = time.time()
    _, ok, said = kernel.run()
    took = time.time() - start
    if not ok:
        raise RuntimeError(f"the cell failed: {said[-800:]}")
    ready = [float(path.name.partition("-")[2]) for path in stamps.iterdir()]
    if len(ready) != RANKS:
        raise RuntimeError(f"the cell: {len(ready)} of {RANKS} ranks ran")
    return max(ready) - start, took


def empty_queue(cluster, env: dict[str, str]) -> None:
    subprocess.run(["scancel", "--partition", cluster.partition], env=env, check=False)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not subprocess.run(["squeue", "--noheader"], env=env, capture_output=True, text=True).stdout.strip():
            return
        time.sleep(0.5)
    raise RuntimeError("the queue did not empty")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", default="tiny", choices=["tiny", "real"])
    args = parser.parse_args(argv)
    from slurm_cluster import SlurmCluster

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; Slurm cluster starting", flush=True)
    with (
        SlurmCluster(nodes=2, cpus=4, memory_mib=8000) as cluster,
        tempfile.TemporaryDirectory(prefix="px-bench-kept-", dir="/tmp") as tmp,
    ):
        folder = Path(tmp)
        folder.chmod(0o755)
        (folder / "topology.yaml").write_text(TOPOLOGY)
        (folder / "wrapper.sh").write_text(WRAPPER)
        (folder / "stamped.py").write_text(STAMPED)
        (folder / "stamps").mkdir()
        workload = [str(WORKLOAD), "--size", args.size]
        step = ["bash", str(folder / "wrapper.sh"), sys.executable, str(folder / "stamped.py"), *workload]
        shape = [f"--ntasks={RANKS}", f"--cpus-per-task={CPUS}", f"--mem-per-cpu={MEM_PER_CPU_MIB}M"]
        (folder / "job.sh").write_text(
            "#!/bin/bash\n"
            + "".join(f"#SBATCH {option}\n" for option in shape)
            + f"#SBATCH --output={folder / 'hand-%j.out'}\n"
            + f"srun {' '.join(step)}\n"
        )
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PX_"))},
            **cluster.env,
            "PX_HOME": str(folder / "home"),
            "PX_SLURM_CONFIG": str(folder / "none.yaml"),
            "PX_SLURM_KEEP_ALLOCATION_S": "120",
            "PYTHONPATH": str(ROOT),
            "BENCH_STAMPS": str(folder / "stamps"),
        }
        jupyter = str(Path(sys.executable).with_name("jupyter"))
        px = [jupyter, "px", "run", "stamped.py", "-f", "topology.yaml", "--wait", "--", *workload]
        results: dict[str, list[tuple[float, float]]] = {}
        body = STAMPED.replace("sys.argv = sys.argv[1:]", f"sys.argv = {workload!r}")
        kernel = CellKernel(env, folder, f"%%px_distributed -f {folder / 'topology.yaml'} --wait\n{body}")
        stamps = Path(env["BENCH_STAMPS"])
        for round_ in range(args.rounds + 1):  # round 0 warms the caches, unmeasured
            empty_queue(cluster, env)
            times = {"the cell, first": run_cell(kernel, stamps), "the cell, second": run_cell(kernel, stamps)}
            empty_queue(cluster, env)
            times["jupyter px run, first"] = run(px, env, folder)
            times["jupyter px run, second"] = run(px, env, folder)
            empty_queue(cluster, env)
            times["by hand, first"] = run(["sbatch", "--wait", "--quiet", "job.sh"], env, folder)
            held = subprocess.run(
                ["salloc", "--no-shell", *shape], env=env, cwd=folder, capture_output=True, text=True, check=True
            )
            job = re.search(r"Granted job allocation (\d+)", held.stderr)
            assert job, held.stderr
            srun = ["srun", f"--jobid={job.group(1)}", *shape, "--quiet", *step]
            run(srun, env, folder)  # the allocation's first step: what `salloc` + `srun` cost the first time
            times["by hand, second"] = run(srun, env, folder)
            if round_:
                for way, took in times.items():
                    results.setdefault(way, []).append(took)
            said = ", ".join(f"{w} {r:.2f}/{t:.2f} s" for w, (r, t) in times.items())
            print(f"round {round_} (ready/exit): {said} (load {os.getloadavg()[0]:.1f})", flush=True)
        empty_queue(cluster, env)
        kernel.close()
    medians = {way: [statistics.median(t[i] for t in times) for i in (0, 1)] for way, times in results.items()}
    print(f"\nmedians of {args.rounds} rounds (seconds), torch_cnn.py --size {args.size}, {RANKS} ranks")
    print("| way | run | start -> every rank ready (torch imported) | start -> exit |")
    print("| --- | --- | --- | --- |")
    for way in ("the cell", "jupyter px run", "by hand"):
        (r1, t1), (r2, t2) = medians[f"{way}, first"], medians[f"{way}, second"]
        print(f"| {way} | first | {r1:.2f} | {t1:.2f} |")
        print(f"| {way} | second | {r2:.2f} ({r2 / r1:.2f} of the first) | {t2:.2f} ({t2 / t1:.2f} of the first) |")
    ready = medians["the cell, second"][0] / medians["the cell, first"][0]
    if ready > GOAL:
        print(f"FAIL: the cell's second run was ready in {ready:.2f} of its first's time (goal {GOAL})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
