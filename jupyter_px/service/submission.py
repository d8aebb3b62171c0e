"""One typed submission: what every surface hands the run service to start a run or a sweep.

The same ten to fourteen keyword arguments used to be written out in `api.submit`,
`RunService.submit`, `sweeps.api.sweep` and `SweepService.start`, each list a little different.
Now a surface builds one `Submission` (as jupyter-scheduler's handlers build a `CreateJob`) and
passes it down unchanged: the magics, the CLI, the REST handler, the public API, and the sweep
controller for each trial. Its fields are checked where it is built, so a bad value is one line
naming the field (`name: 'last' is reserved ...`) before anything else happens.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, Unpack, get_args

from ..code.loading import LoadedCode
from ..code.sources import CodeSource, code_source
from ..runstore.models import TrialOf
from ..topology import Topology, apply_overrides
from ..topology.models import SECTIONS_KEPT_AS_WRITTEN

#: Where a run was submitted from, as its record says (`RunRecord.submitted_from`).
Origin = Literal["api", "cli", "magic", "sidebar", "sweep"]
ORIGINS: tuple[str, ...] = get_args(Origin)

#: A name no run may have: `last` means the newest run wherever a run is named.
RESERVED_NAMES = frozenset({"last"})


def check_run_name(name: str | None) -> str | None:
    """`name` if a run can be found by it later, else ValueError naming it: text that cannot be
    written as UTF-8 (a lone surrogate, e.g. from a file name in an unknown encoding) would make
    the run's record unreadable, and `last` would always mean the newest run instead."""
    if name is None:
        return None
    if not isinstance(name, str):
        raise ValueError(f"name: {name!r} is not text")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(
            f"name: {name!r} is not valid text ({name[error.start]!r} at position {error.start} is a lone surrogate)"
        ) from None
    if name in RESERVED_NAMES:
        raise ValueError(f"name: {name!r} is reserved (it means the newest run): choose another name")
    return name


@dataclass(frozen=True)
class Overrides:
    """What a surface's options change in the topology (`--framework`, `--workers`, `--ps`,
    `--backend`), or the whole topology when none was given."""

    framework: str | None = None
    workers: int | None = None
    ps: int | None = None
    backend: str | None = None

    @property
    def any(self) -> bool:
        return any(value is not None for value in (self.framework, self.workers, self.ps, self.backend))

    def applied_to(self, topology: Topology | None) -> Topology:
        """`topology` with these overrides (`--workers 4` and the rest) applied; the overrides
        alone, on the defaults, without one. TopologyError names the option's field."""
        return apply_overrides(
            topology, framework=self.framework, workers=self.workers, ps=self.ps, backend=self.backend
        )


@dataclass(frozen=True)
class Submission:
    """A run (or a sweep: a topology with a sweep section) to start.

    `source`: the code (`ScriptFile`, `SourceText`, `NotebookCells`, `FunctionCall`, or a
    `LoadedCode` where the surface loaded it already); `topology`: a parsed one,
    polyaxonfile YAML or its dict (None: only `overrides`); `language` ("python", or "ipython"
    for %magics and !commands) overrides the source's; `push`: notebook values shipped to every
    replica (pickled); `origin`: which surface submitted it; `trial`: the sweep trial it is.
    A field that cannot be used is a ValueError naming it, when the submission is made."""

    source: CodeSource | LoadedCode
    topology: Topology | str | dict[str, Any] | None = None
    overrides: Overrides = field(default_factory=Overrides)
    name: str | None = None
    workdir: str | os.PathLike | None = None
    args: tuple[str, ...] = ()
    language: str | None = None
    push: Mapping[str, Any] | None = None
    origin: Origin = "api"
    trial: TrialOf | None = None
    #: Start every replica afresh, not forked from a warm template (`--cold`; local backend).
    cold: bool = False

    def __post_init__(self) -> None:
        check_run_name(self.name)
        if self.origin not in ORIGINS:
            raise ValueError(f"origin: {self.origin!r} is not one of {', '.join(ORIGINS)}")
        if not isinstance(self.args, tuple):  # a list given: kept as a tuple of text
            object.__setattr__(self, "args", tuple(str(arg) for arg in self.args))
        if self.language not in (None, "python", "ipython"):
            raise ValueError(f"language: {self.language!r} is not python or ipython")

    @classmethod
    def of_code(
        cls,
        code: str | os.PathLike | CodeSource,
        topology: Topology | str | dict[str, Any] | None,
        overrides: Overrides | None = None,
        **options: Unpack[CodeOptions],
    ) -> Submission:
        """The public API's submission (`jupyter_px.submit`, `jupyter_px.sweep`): `code` made a
        typed source once (`code_source`: a path, or one line ending in `.py`, is a script; other
        text is code), `source` recorded as where it came from."""
        typed = code_source(code)
        source = options.get("source")
        if source is not None:
            typed = dataclasses.replace(typed, origin=source)
        return cls(
            typed,
            topology,
            overrides or Overrides(),
            name=options.get("name"),
            workdir=options.get("workdir"),
            args=tuple(options.get("args", ())),
            language=options.get("language"),
            push=options.get("push"),
            origin=options.get("submitted_from", "api"),  # type: ignore[arg-type]  # checked in __post_init__
            cold=bool(options.get("cold", False)),
        )


class CodeOptions(TypedDict, total=False):
    """The public API's options for the code of a run or a sweep (`jupyter_px.submit`'s keywords)."""

    name: str | None
    workdir: str | os.PathLike | None
    args: Sequence[str]
    language: str | None
    push: Mapping[str, Any] | None
    submitted_from: str
    source: str | None
    cold: bool


class PushError(ValueError):
    """A value named in --push cannot be shipped to the replicas."""


def pickle_pushed(values: Mapping[str, Any]) -> bytes:
    """Values shipped with --push, pickled; PushError naming the first that cannot be."""
    for name, value in values.items():
        try:
            pickle.dumps(value)
        except Exception as error:  # pickle raises many types (TypeError, PicklingError, AttributeError...)
            raise PushError(f"cannot ship {name!r} ({type(value).__name__}) to the replicas: {error}") from None
    return pickle.dumps(dict(values))


def refuse_sweep_section(topology: Topology) -> None:
    """A topology with a sweep section starts a sweep, never one run without the sweep's values
    (`jupyter_px.start` decides that for every surface): a ValueError naming the section."""
    section = next((key for key in SECTIONS_KEPT_AS_WRITTEN if getattr(topology, key) is not None), None)
    if section is not None:
        raise ValueError(
            f"{section}: the topology has a sweep section, so it starts a sweep, not one run "
            "(jupyter_px.sweep(), %%px_distributed or jupyter px run start one)"
        )
