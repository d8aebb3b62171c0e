"""On a machine with NVIDIA GPUs: a hang on NCCL is seen per GPU and ends naming its missing rank.

    python benchmarks/gpu_hang_check.py          # about 2 minutes; prints PASS or FAIL, exits 0 or 1
    python benchmarks/gpu_hang_check.py --cpu    # the same steps on gloo, without a GPU (checks the script)

Needs only torch built with CUDA and this package. In a private PX_HOME it runs, on the local
backend, a 2-replica PyTorch job on NCCL (one GPU each where there are two, else both on GPU 0)
with `termination: {collectiveTimeout: 20}`: both ranks all-reduce on their GPU for 20 steps,
then rank 1 (worker-0) sleeps before its next all_reduce while rank 0 waits in it. It checks:

1. NVML's metrics (`diagnostics/gpu_metrics.py`): each replica's `system/gpu<i>_util_percent`,
   `_memory_mib` and `_power_w` points in the run's metrics, the memory above 0 MiB;
2. the stacks taken on request show worker-0 apart from master-0 (asleep / in all_reduce);
3. the run ends Failed (CollectiveTimeout) naming worker-0, and the waiting rank's failure record
   carries the flight recorder's last collectives (`diagnostics/flight_recorder.py`: "master-0
   timed out after 20 s in all_reduce #21").

NCCL's watchdog may end the waiting rank itself (TORCH_NCCL_ASYNC_ERROR_HANDLING) before its
Python code sees the timeout; then check 3 fails, which is what this check is for finding out.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HANG = """
import os, time
import torch
import torch.distributed as dist
from jupyter_px import tracking

backend = os.environ.get("PX_CHECK_BACKEND", "nccl")
dist.init_process_group(backend)
rank = dist.get_rank()
device = torch.device("cuda", 0) if backend == "nccl" else torch.device("cpu")
value = torch.ones(1 << 20, device=device)
for step in range(20):
    dist.all_reduce(value)
    tracking.log_metrics(step=step, loss=1.0 / (step + 1))
    time.sleep(0.5)
if rank == 1:
    time.sleep(600)
dist.all_reduce(value)
"""


def main() -> int:
    failures: list[str] = []

    def check(ok: bool, what: str) -> None:
        print(("ok    " if ok else "FAIL  ") + what, flush=True)
        if not ok:
            failures.append(what)

    cpu_only = "--cpu" in sys.argv[1:]
    work = Path(tempfile.mkdtemp(prefix="px-gpu-hang-"))
    os.environ.update(PX_HOME=str(work / "home"), JUPYTER_PX_WARM="0")
    script = work / "hang.py"
    script.write_text(HANG)
    from jupyter_px.api import submit

    gpus = 0
    if not cpu_only:
        import torch

        gpus = torch.cuda.device_count()
        if not gpus:
            print(f"FAIL: this torch ({torch.__version__}) sees no CUDA GPU; install a CUDA build of torch")
            return 1
    environment: dict = {"replicas": {"n_workers": 1}, "env": {"PX_CHECK_BACKEND": "gloo" if cpu_only else "nccl"}}
    if gpus > 1:  # one GPU each; with one GPU both ranks share it (no `gpu:` asked)
        environment["resources"] = {"gpu": {"limits": 1}}
        environment["replicas"]["default_worker"] = {"resources": {"gpu": {"limits": 1}}}
    topology = {"framework": "pytorch", "termination": {"collectiveTimeout": 20}, "environment": environment}
    started = time.monotonic()
    run = submit(script, topology)
    try:
        deadline = time.monotonic() + 120
        taken: dict = {}
        while time.monotonic() < deadline:
            taken = run.stacks()
            summaries = [group["summary"] for group in taken.get("groups") or []]
            if any("hang.py line 17" in s for s in summaries) and any(s.startswith("all_reduce") for s in summaries):
                break
            time.sleep(1)
        print(taken.get("text"))
        check(
            taken.get("text") == "master-0: all_reduce <- <module>, hang.py line 18\n"
            "worker-0: <module>, hang.py line 17: time.sleep(600)",
            "the stacks show worker-0 asleep apart from master-0 in all_reduce",
        )
        status = run.wait(timeout=180)
    finally:
        run.stop()
    print(f"{status.state.value} ({status.reason}): {status.message}")
    check(status.reason == "CollectiveTimeout", "the run ended by its collective timeout")
    check(status.message.startswith("worker-0 never joined"), "worker-0 is named as the rank its peer waited for")
    check(" in all_reduce #21)" in status.message, "the flight recorder says which collective (all_reduce #21)")
    if not cpu_only:
        from jupyter_px.service import RunService

        metrics = RunService().metrics(run.run_id)
        for key in ("master-0", "worker-0"):
            series = metrics.get(key) or {}
            gpu = sorted(name for name in series if name.startswith("system/gpu"))
            print(f"{key}: {gpu}")
            memory = [name for name in gpu if name.endswith("_memory_mib")]
            check(bool(memory), f"{key}: NVML's points are in its metrics")
            check(any(max(series[name].values or [0]) > 0 for name in memory), f"{key}: it holds GPU memory, per NVML")
    print(f"{'PASS' if not failures else 'FAIL'} ({time.monotonic() - started:.0f} s)")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
