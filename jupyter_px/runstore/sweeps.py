"""Sweeps on disk, beside the runs: `$PX_HOME/sweeps/<sweep id>/`.

    sweep.json       the record, written once: topology (with its sweep section), code, workdir
    code/            the code every trial ships (and values pushed with it, pushed.pkl)
    study.journal    Optuna's journal (the engine's own truth: what a resumed controller reads)
    status.json      written by the controller only: state, owner, every trial's row, the best
    controller.log   the controller's output
    stop             a stop request (the controller stops the trials, then itself)

Readers read `status.json` only (reads never act); the controller is its one writer.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..processes import file_lock
from .errors import RunNotFound
from .files import atomic_write_bytes, atomic_write_json, new_run_id
from .layout import RUN_ID_PATTERN, px_home
from .models import CodeSpec, RunOwner
from .published import newest_named, publish, published_ids

RECORD = "sweep.json"
STATUS = "status.json"
JOURNAL = "study.journal"
STOP = "stop"
LOG = "controller.log"


class SweepNotFound(RunNotFound):
    """No sweep by that id, name or `last`."""


class SweepState(str, Enum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    STOPPED = "Stopped"

    @property
    def finished(self) -> bool:
        return self in (SweepState.SUCCEEDED, SweepState.FAILED, SweepState.STOPPED)


class TrialState(str, Enum):
    PENDING = "Pending"  # its run waits in a queue (a Slurm partition, a cluster without room)
    RUNNING = "Running"
    COMPLETE = "Complete"
    PRUNED = "Pruned"
    FAILED = "Failed"
    STOPPED = "Stopped"


#: A diverged trial's loss is infinite or NaN: status.json keeps it as "Infinity"/"NaN" text
#: (JSON has no such number, and pydantic would write null, which a float field then refuses).
NONFINITE_AS_TEXT = ConfigDict(extra="ignore", ser_json_inf_nan="strings")


#: A trial's state as every text says it: a trial that succeeded reads as its run does in the
#: runs list (Optuna's "Complete" stays the data's word, in JSON and `counts`).
STATE_WORDS = {"Complete": "Succeeded"}


def state_word(state: str) -> str:
    return STATE_WORDS.get(state, state)


class TrialRow(BaseModel):
    """One trial as the controller last saw it."""

    model_config = NONFINITE_AS_TEXT

    number: int
    state: TrialState
    run_id: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    value: float | None = Field(default=None, description="the objective's last value")
    values: dict[str, float] | None = Field(
        default=None, description="each objective's final value (a multi-objective sweep's complete trial)"
    )
    step: int | None = Field(default=None, description="the last step reported")
    intermediate: list[tuple[int, float]] = Field(default_factory=list, description="(step, value) reported")
    reason: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    runs: list[str] = Field(default_factory=list, description="a promoted trial's runs, a rung each")

    @field_validator("intermediate", mode="before")
    @classmethod
    def _null_points(cls, value: Any) -> Any:
        """Status files written before non-finite values were kept hold null for them: NaN."""
        if isinstance(value, list):
            return [
                [p[0], math.nan if p[1] is None else p[1]] if isinstance(p, list | tuple) and len(p) == 2 else p
                for p in value
            ]
        return value

    @field_validator("values", mode="before")
    @classmethod
    def _null_values(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {name: math.nan if v is None else v for name, v in value.items()}
        return value


class ObjectiveRow(BaseModel):
    """One objective of a sweep: a metric and which way is better."""

    name: str
    direction: str


class SweepRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")

    sweep_id: str
    name: str | None = None
    topology: dict[str, Any]
    code: CodeSpec
    workdir: str
    created_at: float = Field(default_factory=time.time)
    submitted_from: str = "api"


class SweepStatus(BaseModel):
    model_config = NONFINITE_AS_TEXT

    sweep_id: str
    state: SweepState = SweepState.PENDING
    message: str | None = None
    owner: RunOwner | None = None
    started_at: float | None = None
    finished_at: float | None = None
    updated_at: float = Field(default_factory=time.time)
    n_trials: int = 0
    concurrency: int = 1
    objective: str | None = None
    direction: str | None = None
    best: int | None = Field(default=None, description="the best trial's number")
    objectives: list[ObjectiveRow] = Field(default_factory=list)
    pareto: list[int] | None = Field(
        default=None, description="a multi-objective sweep's result: the numbers of the trials on its Pareto front"
    )
    trials: list[TrialRow] = Field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for trial in self.trials:
            out[trial.state.value] = out.get(trial.state.value, 0) + 1
        return out

    def best_trial(self) -> TrialRow | None:
        return next((t for t in self.trials if t.number == self.best), None)


class SweepPaths:
    def __init__(self, sweep_id: str, home: Path):
        if not RUN_ID_PATTERN.match(sweep_id):
            raise SweepNotFound(f"{sweep_id!r} is not a sweep id")
        self.sweep_id = sweep_id
        self.root = home / "sweeps" / sweep_id

    record = property(lambda self: self.root / RECORD)
    status = property(lambda self: self.root / STATUS)
    journal = property(lambda self: self.root / JOURNAL)
    stop = property(lambda self: self.root / STOP)
    log = property(lambda self: self.root / LOG)
    code_dir = property(lambda self: self.root / "code")


class SweepStore:
    """Every sweep under one home (default `$PX_HOME`)."""

    def __init__(self, home: Path | str | None = None):
        self.home = Path(home) if home else px_home()
        self.root = self.home / "sweeps"

    def paths(self, sweep_id: str) -> SweepPaths:
        return SweepPaths(sweep_id, self.home)

    def create(self, record: SweepRecord, files: dict[str, bytes | str], status: SweepStatus) -> SweepPaths:
        """A complete sweep directory, published with one rename."""
        paths = self.paths(record.sweep_id)
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=self.root, prefix=f".new-{record.sweep_id}-"))
        try:
            (staging / "code").mkdir()
            for name, content in files.items():
                target = (staging / "code" / name).resolve()
                if (staging / "code").resolve() not in target.parents:
                    raise ValueError(f"code file name {name!r} leaves the code directory")
                target.write_bytes(content.encode() if isinstance(content, str) else content)
            atomic_write_json(staging / RECORD, record.model_dump(mode="json"))
            atomic_write_bytes(staging / STATUS, status.model_dump_json(indent=1).encode())
            publish(staging, paths.root, staging / RECORD)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return paths

    @contextmanager
    def owner_lock(self, sweep_id: str) -> Iterator[None]:
        """Held while deciding who owns the sweep (its controller): one owner at any time."""
        with file_lock.locked(self.paths(sweep_id).root / ".owner.lock"):
            yield

    def new_id(self, name: str | None) -> str:
        sweep_id = new_run_id(name)
        return sweep_id if name else "sweep" + sweep_id[3:]

    def record(self, sweep_id: str) -> SweepRecord:
        return SweepRecord.model_validate_json(self._require(sweep_id).record.read_bytes())

    def status(self, sweep_id: str) -> SweepStatus:
        return SweepStatus.model_validate_json(self._require(sweep_id).status.read_bytes())

    def write_status(self, status: SweepStatus) -> None:
        status.updated_at = time.time()
        atomic_write_bytes(self._require(status.sweep_id).status, status.model_dump_json(indent=1).encode())

    def _require(self, sweep_id: str) -> SweepPaths:
        paths = self.paths(sweep_id)
        if not paths.record.exists():
            raise SweepNotFound(f"no sweep {sweep_id!r} in {self.root}")
        return paths

    def sweep_ids(self) -> list[str]:
        """Newest first (by the record's publication time)."""
        return published_ids(self.root, RECORD)

    def resolve(self, ref: str) -> str:
        """A sweep id, a sweep name (its newest sweep) or `last`."""
        ids = self.sweep_ids()
        if ref == "last":
            if not ids:
                raise SweepNotFound(f"no sweeps yet in {self.root}")
            return ids[0]
        if ref in ids:
            return ref
        named = newest_named(ids, ref, lambda sweep_id: self.record(sweep_id).name)
        if named is None:
            raise SweepNotFound(f"no sweep with id or name {ref!r} in {self.root}")
        return named
