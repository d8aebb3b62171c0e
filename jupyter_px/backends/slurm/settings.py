"""What the Slurm backend needs beyond the topology: where jobs go and how their tasks start.

Read as every backend family reads its settings (`backends/settings_file.py`): defaults (below),
then a YAML file (`$PX_SLURM_CONFIG`, else `$PX_HOME/slurm.yaml`), then `PX_SLURM_<FIELD>`
variables (`PX_SLURM_SETUP` and `PX_SLURM_SBATCH_LINES` one entry per line of text), each bad
value, or one Slurm would refuse, one line naming it. The stop grace is not a Slurm setting: it is
`PX_STOP_GRACE_S`, the one every backend reads (seconds between asking replicas to stop and
killing them, so tracking flushes what it accepted).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base import BackendError
from ..settings_file import SettingsFile, check_bool, env_bool, env_lines, env_seconds

ENV_PREFIX = "PX_SLURM_"
#: Seconds between SIGTERM to the tasks and the kill of the job (the same variable as every backend's).
STOP_GRACE_ENV = "PX_STOP_GRACE_S"
DEFAULT_STOP_GRACE_S = 30.0

#: Slurm's time formats (sbatch --time): MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS; or UNLIMITED.
_TIME = re.compile(r"^(\d+(:\d{1,2}){0,2}|\d+-\d{1,2}(:\d{1,2}){0,2})$")
#: Names Slurm accepts for partitions, accounts, QOS, reservations and GRES (no spaces, no shell).
_NAME = re.compile(r"^[A-Za-z0-9_.+-]+(,[A-Za-z0-9_.+-]+)*$")
#: A GRES name, with its type where a site has several (`gpu`, `gpu:a100`).
_GRES = re.compile(r"^[A-Za-z0-9_.+-]+(:[A-Za-z0-9_.+-]+)?$")
#: A constraint expression (features joined by & | , [ ] * and digits).
_CONSTRAINT = re.compile(r"^[A-Za-z0-9_.&|,\[\]*()!-]+$")


@dataclass(frozen=True)
class SlurmSettings:
    partition: str | None = None  # None: the cluster's default partition
    account: str | None = None
    qos: str | None = None
    #: sbatch --time (e.g. "30", "02:00:00", "1-12:00"); None: the partition's default
    time_limit: str | None = None
    constraint: str | None = None
    reservation: str | None = None
    #: the GRES GPUs are requested by: `gpu`, or `gpu:<type>` for one model (`gpu:a100`)
    gres_name: str = "gpu"
    #: how a replica's GPUs are asked for: `gpus-per-task` (`--gpus-per-task=[<type>:]<n>`, select/
    #: cons_tres) or `gres` (`--gres=<gres_name>:<n>` per node, each such replica alone on its node,
    #: for sites without cons_tres or whose GRES is not named `gpu`)
    gpu_option: str = "gpus-per-task"
    #: how replicas without GPUs start: `node` (one task per node forks the node's replicas: one
    #: interpreter per node) or `task` (a task per replica, each its own interpreter)
    launcher: str = "node"
    #: shell lines run before each replica (and before the job's first step): module loads, venv activation
    setup: list[str] = field(default_factory=list)
    #: more `#SBATCH` options, one per line (`--exclusive`, `--mail-type=END`); they apply to the whole job
    sbatch_lines: list[str] = field(default_factory=list)
    #: a folder the compute nodes share with this machine, for runs when $PX_HOME is not on such a
    #: filesystem: the run's directory is kept there and its logs, metrics and outputs copied back
    shared_dir: str | None = None
    #: the Python the tasks run (None: this interpreter, which a shared filesystem makes the nodes' too)
    python: str | None = None
    #: seconds between polls of the queue (one `squeue` for every followed run of this run store)
    poll_interval_s: float = 2.0
    #: seconds every task of a job waits for the others to start before it gives up
    rendezvous_timeout_s: float = 300.0
    #: prove with a one-task job that the nodes see the run store (once per hour and run store)
    probe_shared: bool = True
    #: seconds the follower keeps going while the Slurm commands fail (slurmctld down) before it
    #: ends, keeping the run's state (reason LostContact); the next keeper follows it again
    follower_give_up_s: float = 180.0
    #: for a run with retries (`termination`): seconds before the job's time limit Slurm signals
    #: it (`sbatch --signal=B:USR1@<s>`), for its replicas to checkpoint before the job is requeued
    checkpoint_grace_s: float = 90.0
    #: a sweep's trials of one shape as one job array (`--array=0-<n-1>%<concurrency>`, one record
    #: in the queue); false: a job per trial (for a site whose MaxArraySize or policy refuses arrays)
    job_arrays: bool = True
    #: seconds a run's job is kept after its run, idle, for the next run of the same shape: the
    #: next run starts in it at once, forked on each node from a warm process (`allocations.py`,
    #: `salloc`'s way); 0: a job per run
    keep_allocation_s: float = 0.0
    stop_grace_s: float = field(default_factory=lambda: _stop_grace())

    @property
    def interpreter(self) -> str:
        return self.python or sys.executable


def _stop_grace() -> float:
    text = os.environ.get(STOP_GRACE_ENV)
    if not text:
        return DEFAULT_STOP_GRACE_S
    value = env_seconds(text, STOP_GRACE_ENV)
    if value < 0:
        raise BackendError(f"{STOP_GRACE_ENV}: {text!r} is below 0")
    return value


GPU_OPTIONS = ("gpus-per-task", "gres")
LAUNCHERS = ("node", "task")
_LISTS = {"setup", "sbatch_lines"}
_FLOATS = {"poll_interval_s", "rendezvous_timeout_s", "follower_give_up_s", "checkpoint_grace_s"}
_BOOLS = {"probe_shared", "job_arrays"}
_NAMES = {"partition", "account", "qos", "reservation"}
#: Settings not read from files or PX_SLURM_* (they have their own variable).
_NOT_SETTINGS = {"stop_grace_s"}


def _check(name: str, value: Any, where: str) -> Any:
    """`value` if it is a valid `name`, else BackendError naming the setting and the value."""
    if name in _LISTS:
        if isinstance(value, str):
            value = [line for line in value.splitlines() if line.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise BackendError(f"{where}: {name}: {value!r} is not a list of lines")
        if any("\n" in v or "\0" in v for v in value):
            raise BackendError(f"{where}: {name}: one line per entry (no newline inside one)")
        if name == "sbatch_lines":
            for line in value:
                option = line.strip().removeprefix("#SBATCH").strip()
                if not option.startswith("-"):
                    raise BackendError(f"{where}: sbatch_lines: {line!r} is not an sbatch option (like --exclusive)")
            value = [line.strip().removeprefix("#SBATCH").strip() for line in value]
        return value
    if name in _BOOLS:
        return check_bool(name, value, where)
    if name == "keep_allocation_s":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise BackendError(f"{where}: {name}: {value!r} is not a number of seconds (0: no allocation kept)")
        return float(value)
    if name in _FLOATS:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise BackendError(f"{where}: {name}: {value!r} is not a positive number of seconds")
        return float(value)
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise BackendError(f"{where}: {name}: {value!r} is not text")
    text = str(value).strip()
    if name in _NAMES and not _NAME.match(text):
        raise BackendError(f"{where}: {name}: {text!r} is not a Slurm name (letters, digits, _ . + -)")
    if name == "gres_name" and not _GRES.match(text):
        raise BackendError(f"{where}: gres_name: {text!r} is not a GRES name (like gpu, or gpu:a100)")
    if name == "launcher" and text not in LAUNCHERS:
        raise BackendError(f"{where}: launcher: {text!r} is not one of {', '.join(LAUNCHERS)}")
    if name == "gpu_option" and text not in GPU_OPTIONS:
        raise BackendError(f"{where}: gpu_option: {text!r} is not one of {', '.join(GPU_OPTIONS)}")
    if name == "time_limit" and text.upper() not in ("UNLIMITED", "INFINITE") and not _TIME.match(text):
        raise BackendError(
            f"{where}: time_limit: {text!r} is not a Slurm time (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)"
        )
    if name == "constraint" and not _CONSTRAINT.match(text):
        raise BackendError(f"{where}: constraint: {text!r} is not a Slurm constraint (features joined by & | ,)")
    if name in ("shared_dir", "python") and not os.path.isabs(os.path.expanduser(text)):
        raise BackendError(f"{where}: {name}: {text!r} is not an absolute path")
    if name in ("shared_dir", "python"):
        return os.path.expanduser(text)
    return text


#: How each `PX_SLURM_*` variable that is not plain text reads.
_ENV_TEXT: dict[str, Callable[[str, str], Any]] = {
    **dict.fromkeys(_LISTS, env_lines),
    **dict.fromkeys(_BOOLS, env_bool),
    **dict.fromkeys(_FLOATS, env_seconds),
    "keep_allocation_s": env_seconds,
}
SETTINGS_FILE = SettingsFile(
    "Slurm", SlurmSettings, ENV_PREFIX, "slurm.yaml", _check, _ENV_TEXT, not_settings=_NOT_SETTINGS
)


def config_path() -> Path:
    return SETTINGS_FILE.path()


def load_settings(**overrides: Any) -> SlurmSettings:
    """Defaults < settings file < PX_SLURM_* variables < `overrides`."""
    return SETTINGS_FILE.load(**overrides)
