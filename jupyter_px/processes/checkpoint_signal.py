"""The signal that asks a replica for a checkpoint now, armed in each replica of a Slurm run.

A Slurm job is signalled before its time limit (`sbatch --signal=B:USR1@<grace>`); the Slurm
backend then sends `CHECKPOINT_SIGNAL` to every replica, waits for their checkpoints and requeues
the job, which resumes from them (`backends/slurm/task_entry.py`). SIGUSR1, as submitit and
PyTorch Lightning use it on Slurm, so code written for them reads it too.

The handler only raises a flag: saving inside a signal handler would interrupt the very step
whose state it saves. The training loop reads the flag at a step boundary
(`jupyter_px.tracking.checkpoint_requested()`) and saves (`tracking.save_checkpoint`, which
lowers it). The Slurm task entry arms it in the replica's process before the runner starts;
elsewhere SIGUSR1 keeps its default. Kept out of `jupyter_px.tracking`, so arming it does not
import tracking (a third of a second per replica on a loaded machine); standard library only.
"""

from __future__ import annotations

import signal

#: The signal that asks a replica for a checkpoint now.
CHECKPOINT_SIGNAL = signal.SIGUSR1

_requested = False


def requested() -> bool:
    """Whether a checkpoint was asked for since the last `clear`."""
    return _requested


def clear() -> None:
    global _requested
    _requested = False


def _on_signal(_signum: int, _frame: object) -> None:
    global _requested
    _requested = True


def arm() -> None:
    """Make CHECKPOINT_SIGNAL a request instead of its default (which ends the process); code
    that installs its own handler afterwards keeps its own."""
    if signal.getsignal(CHECKPOINT_SIGNAL) in (signal.SIG_DFL, signal.SIG_IGN):
        signal.signal(CHECKPOINT_SIGNAL, _on_signal)
