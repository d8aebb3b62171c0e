"""A Slurm run's stacks (`jupyter_px.diagnostics`): `scancel --signal=URG` reaches every process
of the job's steps on every node (slurmstepd signals its whole process container), and the
runners armed on it write to the run's directory, which the nodes share. Asked for by
`jupyter px stacks` (`SlurmBackend.stacks`) and by the follower when a stall begins."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...diagnostics import taking
from ...diagnostics.stack_signal import STACKS_SIGNAL
from .commands import SlurmCommands
from .handle import JobHandle


def take_stacks(
    root: Path, run_id: str, handle: JobHandle, targets: Mapping[str, int | None], why: str = "on request"
) -> dict[str, Any]:
    """Signal every task of the job once and collect what the `targets` (replica -> pid) wrote."""
    commands = SlurmCommands(handle.slurm_conf)

    class _Job:
        def signal_all(self) -> None:
            commands.scancel(handle.ref, signal=str(int(STACKS_SIGNAL)))

    return taking.take(root, run_id, targets, why=why, send=_Job(), work_dir=handle.work_dir(root))
