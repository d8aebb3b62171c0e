"""The signal that makes a replica write every thread's Python stack, installed by the runner.

`jupyter px stacks RUN` (and the supervisor, once per stall) asks each live replica for its
stacks by sending it `STACKS_SIGNAL`. The runner arms it before the user's code runs with
`faulthandler.register(..., all_threads=True, chain=False)`, writing to the replica's own file
under the run directory (`stacks/dumps/<role>-<index>[.rank<N>].txt`, appended to: whoever asks
notes the file's size first and reads what the dump added).

Why faulthandler and not a Python signal handler: a Python-level handler runs only when the main
thread comes back to the interpreter's eval loop, so a replica blocked in native code (gloo's or
NCCL's `all_reduce`, a C extension, a lock) would never answer, and that is the replica one most
needs to see. faulthandler's handler is C, runs in the signal's context without the GIL, and walks
every thread's frames as they are at that instant. (py-spy would see native frames too, but it is
a separate binary that needs ptrace rights a pod or a Slurm task rarely has.)

Why SIGURG: its default action is to do nothing, so a replica signalled before the runner armed
it (still importing), or a process that is not ours, is not killed; nothing in this product uses it
(Slurm's stop and preemption use TERM/USR1/USR2, which the Slurm task entry forwards); it is only
raised by the kernel for out-of-band TCP data on a socket whose owner was set with F_SETOWN, which
neither gloo nor NCCL does.

Standard library only: the runner imports it in every replica.
"""

from __future__ import annotations

import faulthandler
import os
import signal
from pathlib import Path
from typing import IO

#: The signal a replica answers with its stacks.
STACKS_SIGNAL = signal.SIGURG
#: A run's stacks directory: the snapshots taken (`<time>.json`) and, under `dumps/`, the raw dumps.
STACKS_DIR = "stacks"
DUMPS_DIR = "dumps"

#: Where a replica writes its dumps instead of its run directory's `stacks/dumps/`, when that is
#: read-only (a Kubernetes pod's run directory is the run's ConfigMap: its container's environment
#: names the pod's own volume, `shared/payload.STACKS_DIR`).
DUMPS_DIR_VARIABLE = "PX_STACKS_DIR"
#: Beside each dump there, the process's pid (`<key>.pid`): how `stack_request.py` finds whom to
#: signal in a pod, where no status lists the pids.
PID_SUFFIX = ".pid"

#: The open dump file (faulthandler keeps its file descriptor, so the file object must live on).
_dump_file: IO[str] | None = None


def process_key(environ: os._Environ[str] | dict[str, str] | None = None) -> str:
    """`worker-1`, or `worker-1.rank2` for process 2 of a replica that starts several (as
    `code.source_map.keep_failure` names this process's failure record)."""
    env = os.environ if environ is None else environ
    key = f"{env.get('PX_TASK_TYPE', 'master')}-{env.get('PX_TASK_INDEX', '0')}"
    process = env.get("LOCAL_RANK") or "0"
    return key if process == "0" else f"{key}.rank{process}"


def dump_path(run_dir: Path, key: str) -> Path:
    return run_dir / STACKS_DIR / DUMPS_DIR / f"{key}.txt"


def _disarm_in_child() -> None:
    """A process forked from a replica (a DataLoader worker) must not dump into the replica's file
    (a Slurm step's signal reaches every process of it): it is unarmed until it installs its own."""
    global _dump_file
    if _dump_file is not None:
        faulthandler.unregister(STACKS_SIGNAL)
        _dump_file = None  # (its copy of the file descriptor closes here; the parent keeps its own)


def install(run_dir: Path) -> Path | None:
    """Arm `STACKS_SIGNAL` in this process; its path, or None where the run directory cannot be
    written (then the replica simply has no stacks to give)."""
    global _dump_file
    elsewhere = os.environ.get(DUMPS_DIR_VARIABLE)
    key = process_key()
    path = Path(elsewhere) / f"{key}.txt" if elsewhere else dump_path(run_dir, key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if elsewhere:
            path.with_name(f"{key}{PID_SUFFIX}").write_text(str(os.getpid()))
        dump_file = open(path, "a", encoding="utf-8")  # noqa: SIM115 (kept open for faulthandler)
        faulthandler.register(STACKS_SIGNAL, file=dump_file, all_threads=True, chain=False)
    except (OSError, RuntimeError, ValueError):
        return None
    if _dump_file is not None:
        _dump_file.close()
    else:
        os.register_at_fork(after_in_child=_disarm_in_child)
    _dump_file = dump_file
    return path
