"""On a machine with an NVIDIA GPU: a warm replica never inherits a CUDA context, and uses the GPU.

    python benchmarks/gpu_warm_check.py          # under 3 minutes; prints PASS or FAIL, exits 0 or 1
    python benchmarks/gpu_warm_check.py --cpu    # the same steps without a GPU (checks the script)

Needs only torch built with CUDA and this package (no Jupyter server, no test suite). In a
private PX_HOME and template directory it:

1. starts the PyTorch template (`jupyter_px.service.warm.start`) and checks the template, its
   standby owner and its zygote have no CUDA driver loaded (`libcuda.so` / `libnvidia-*` in
   `/proc/<pid>/maps`) and no `/dev/nvidia*` device open: no CUDA context before any fork;
2. runs a function on a master and a worker forked warm from it, each asking for one GPU
   (`resources: gpu: 1`; the worker gets none when the machine has a single GPU): each replica
   reports that CUDA was not initialised and torch is not "in a bad fork" when its code starts,
   then initialises CUDA itself, multiplies on its GPU and reports what it saw, which must match
   the CUDA_VISIBLE_DEVICES the local backend gave it;
3. does it twice (a second fork from the same template), and checks step 1 again afterwards.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def probe() -> dict:
    """Runs in each replica (shipped by value)."""
    import os

    import torch

    before = {"initialized": torch.cuda.is_initialized(), "bad_fork": torch.cuda._is_in_bad_fork()}
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    seen = {"visible": visible, "before": before, "device_count": torch.cuda.device_count()}
    if visible:
        x = torch.randn(256, 256, device="cuda")
        seen["matmul"] = float((x @ x).sum().item()) == float((x @ x).sum().item())
        seen["device_name"] = torch.cuda.get_device_name(0)
    seen["role"] = f"{os.environ['PX_TASK_TYPE']}-{os.environ['PX_TASK_INDEX']}"
    return seen


def cuda_in(pid: int) -> list[str]:
    """What of CUDA a process holds: driver libraries mapped, NVIDIA devices open."""
    found = []
    try:
        for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
            name = line.split()[-1] if len(line.split()) > 5 else ""
            if ("libcuda.so" in name or "libnvidia-" in name) and name not in found:
                found.append(name)
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            target = os.readlink(fd)
            if target.startswith("/dev/nvidia") and target not in found:
                found.append(target)
    except OSError:
        pass
    return found


def family(pid: int) -> list[int]:
    import psutil

    return [pid, *[child.pid for child in psutil.Process(pid).children(recursive=True)]]


def main() -> int:
    failures: list[str] = []

    def check(ok: bool, what: str) -> None:
        print(("ok    " if ok else "FAIL  ") + what, flush=True)
        if not ok:
            failures.append(what)

    import torch

    cpu_only = "--cpu" in sys.argv[1:]
    if not cpu_only and not torch.cuda.is_available():  # (this process may initialise CUDA: not the template)
        print(f"FAIL: this torch ({torch.__version__}) sees no CUDA GPU; install a CUDA build of torch")
        return 1
    gpus = 0 if cpu_only else torch.cuda.device_count()
    work = Path(tempfile.mkdtemp(prefix="px-gpu-check-"))
    os.environ.update(PX_HOME=str(work / "home"), JUPYTER_PX_WARM_DIR=str(work / "warm"), JUPYTER_PX_WARM="1")
    os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    from jupyter_px.api import submit
    from jupyter_px.service import warm

    started = time.monotonic()
    try:
        state = warm.start("pytorch")
        print(f"template pid {state['pid']} ready in {time.monotonic() - started:.1f} s; {gpus} GPU(s) here")
        for pid in family(state["pid"]):
            check(not cuda_in(pid), f"before any run: process {pid} of the template holds no CUDA: {cuda_in(pid)}")
        environment: dict = {"replicas": {"n_workers": 1}}
        if gpus:  # the master gets one; the worker one too where there are two
            environment["resources"] = {"gpu": {"limits": 1}}
            if gpus > 1:
                environment["replicas"]["default_worker"] = {"resources": {"gpu": {"limits": 1}}}
        topology = {"framework": "pytorch", "environment": environment}
        for attempt in (1, 2):
            run = submit(probe, topology)
            try:
                seen = run.results(timeout=120)
            except Exception as error:
                check(False, f"run {attempt} ({run.run_id}): {type(error).__name__}: {error}")
                continue
            check(run.status().launch.startswith("warm"), f"run {attempt} started warm: {run.status().launch}")
            for replica in seen:
                who = f"run {attempt} {replica['role']}"
                check(not replica["before"]["initialized"], f"{who}: CUDA not initialised when its code started")
                check(not replica["before"]["bad_fork"], f"{who}: torch not in a bad fork (no inherited CUDA)")
                wanted = len([d for d in replica["visible"].split(",") if d])
                check(
                    replica["device_count"] == wanted, f"{who}: sees {replica['device_count']} GPU(s), given {wanted}"
                )
                if wanted:
                    check(replica.get("matmul") is True, f"{who}: multiplied on {replica.get('device_name')}")
        for pid in family(state["pid"]):
            check(not cuda_in(pid), f"after the runs: process {pid} of the template holds no CUDA: {cuda_in(pid)}")
    finally:
        warm.stop("the GPU check ended")
    print(f"{'PASS' if not failures else 'FAIL'} ({time.monotonic() - started:.0f} s)")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
