"""`save_checkpoint` / `load_checkpoint`: the one checkpoint convention of a run.

    ckpt = tracking.load_checkpoint()                 # None on a fresh run
    start = ckpt.step if ckpt else 0
    if ckpt:
        model.load_state_dict(ckpt.state["model"])
        optimizer.load_state_dict(ckpt.state["optimizer"])
    for step in range(start + 1, num_steps + 1):
        ...
        if step % 50 == 0:
            tracking.save_checkpoint({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, step)

Why it is built this way:

* A run that is started again (a gang restart after a replica failed, attempt `PX_ATTEMPT`; a
  Hyperband trial kept for its next rung) must find what its last attempt saved: checkpoints
  live in the run's outputs (`runstore.checkpoints` has the layout), which continue across
  attempts and are copied into a continued trial's outputs.
* A checkpoint is complete or absent: it is written to a dot-name in the same folder, flushed to
  disk, then renamed into place. A replica killed in the middle of a save leaves the previous
  checkpoint as the newest.
* Per rank by default (each replica saves and loads its own state, as DDP ranks with their own
  data order and RNG do); `shared=True` for one checkpoint of the whole run (usually saved by
  the master and loaded by everyone).
* The last `keep` of a scope are kept (`CHECKPOINTS_KEPT`, 3 by default), so a long run does not
  fill the disk, and one older than the newest is still there should the newest be bad.
* Objects are written with `torch.save` when torch is already imported (model and optimizer
  state, tensors, RNG states), else with pickle; both read back with `load_checkpoint`. PyTorch's
  `torch.distributed.checkpoint` (sharded, asynchronous saves) is not used yet: each rank writes
  its whole state, synchronously.
* A replica may be asked to checkpoint now (`checkpoint_requested()`): Slurm signals a job before
  its time limit (`sbatch --signal`), and the Slurm backend passes SIGUSR1 (as submitit and
  Lightning use it) to every replica, then requeues the job once they have saved
  (`jupyter_px.processes.checkpoint_signal`); the next `save_checkpoint` answers the request.

Standard library only (torch is used only when the training code has imported it already).
"""

from __future__ import annotations

import os
import pickle
import sys
from dataclasses import dataclass
from typing import Any

from ..processes import checkpoint_signal
from ..runstore.checkpoints import RESUME_AT_ENV, SHARED_SCOPE, file_name, in_scope, scope_dir
from .delivery import process_index

#: Checkpoints kept per scope after a save (the newest ones). Change it before saving, or pass
#: `keep=` to `save_checkpoint`.
CHECKPOINTS_KEPT = 3


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint read back: the step it was saved at, the state, and its file."""

    step: int
    state: Any
    path: str


def _scope(shared: bool) -> str:
    if shared:
        return SHARED_SCOPE
    env = os.environ
    key = f"{env.get('PX_TASK_TYPE') or 'master'}-{int(env.get('PX_TASK_INDEX') or 0)}"
    process = process_index(env)
    return f"{key}.rank{process}" if process > 0 else key


def _outputs() -> str:
    from . import get_outputs_path  # the package's: it copies a continued trial's outputs in first

    return get_outputs_path()


def save_checkpoint(state: Any, step: int, *, shared: bool = False, keep: int | None = None) -> str:
    """Save `state` as this replica's checkpoint at `step` (or the run's, `shared=True`);
    returns its path. Atomic: complete or absent. Keeps the newest `keep` (CHECKPOINTS_KEPT)."""
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"save_checkpoint: step must be a whole number >= 0, got {step!r}")
    kept = CHECKPOINTS_KEPT if keep is None else keep
    if isinstance(kept, bool) or not isinstance(kept, int) or kept < 1:
        raise ValueError(f"save_checkpoint: keep must be a whole number >= 1, got {kept!r}")
    folder = scope_dir(_outputs(), _scope(shared))
    os.makedirs(folder, exist_ok=True)
    torch = sys.modules.get("torch")
    fmt = "pt" if torch is not None else "pkl"
    final = os.path.join(folder, file_name(step, fmt))
    temporary = os.path.join(folder, f".{file_name(step, fmt)}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as handle:
            if torch is not None:
                torch.save(state, handle)
            else:
                pickle.dump(state, handle, protocol=pickle.HIGHEST_PROTOCOL)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, final)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    _prune(folder, kept, final)
    checkpoint_signal.clear()  # the request, if there was one, is answered
    return final


def checkpoint_requested() -> bool:
    """Whether this replica was asked to save a checkpoint now (a Slurm job near its time limit,
    about to be requeued): read it at a step boundary and save when it says so.

        if step % 50 == 0 or tracking.checkpoint_requested():
            tracking.save_checkpoint(state, step)

    True from the request (SIGUSR1, `jupyter_px.processes.checkpoint_signal`) until the next save."""
    return checkpoint_signal.requested()


def _prune(folder: str, kept: int, newest: str) -> None:
    """Remove all but the newest `kept` checkpoints, and what killed saves left (dot-files of
    processes that are gone)."""
    scope = os.path.basename(folder)
    checkpoints = in_scope(os.path.dirname(os.path.dirname(folder)), scope)
    for old in checkpoints[: max(0, len(checkpoints) - kept)]:
        if old.path != newest:
            _remove(old.path)
    for name in os.listdir(folder):
        if name.startswith(".") and name.endswith(".tmp"):
            pid = name.rsplit(".", 2)[-2]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                _remove(os.path.join(folder, name))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def load_checkpoint(*, shared: bool = False, weights_only: bool = True) -> Checkpoint | None:
    """This replica's newest complete checkpoint (or the run's, `shared=True`), or None.

    A `.pt` checkpoint is read with `torch.load(map_location="cpu", weights_only=weights_only)`
    (tensors, dicts, numbers: what state dicts hold; pass `weights_only=False` for other objects
    you trust), a `.pkl` one with pickle.

    In an attempt after a gang restart, the newest is the newest at or below the step every
    replica had saved when the attempt started (`PX_CHECKPOINT_STEP`): a rank killed in the middle
    of its save at step 30 resumes at 20, and so do its peers, which had saved 30 already."""
    checkpoints = in_scope(_outputs(), _scope(shared))
    limit = os.environ.get(RESUME_AT_ENV)
    if limit and limit.isdigit():  # the gang's common step: not one rank's newer save
        checkpoints = [c for c in checkpoints if c.step <= int(limit)]
    if not checkpoints:
        return None
    newest = checkpoints[-1]
    if newest.format == "pt":
        import torch

        state = torch.load(newest.path, map_location="cpu", weights_only=weights_only)
    else:
        with open(newest.path, "rb") as handle:
            state = pickle.load(handle)
    return Checkpoint(step=newest.step, state=state, path=newest.path)


def get_attempt() -> int:
    """Which attempt of the run this is: 1, then 2 after the whole gang was started again."""
    try:
        return max(1, int(os.environ.get("PX_ATTEMPT") or 1))
    except ValueError:
        return 1
