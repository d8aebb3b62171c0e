"""Every backend in one table: its name, the other names it answers to, its family and what it can do.

Before this table, `native`/`kubernetes` was translated in four places and a REST handler gave
"kubernetes" a third meaning. Now every layer asks here: the topology model validates a
topology's `backend:` against it (and offers its names in the JSON schema the sidebar's form is
built from), the run store reads an older record's name through it, `backends.get_backend`
imports the implementation it names, the Jupyter server picks a thread pool by its family, and
the CLI offers the backends that can `render`. A new backend is one row here and one folder
under `backends/`, the shape of its siblings.

Standard library only, at the bottom of the layers: the topology model imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Family = Literal["local", "kubernetes", "slurm"]


@dataclass(frozen=True)
class BackendEntry:
    """One backend."""

    name: str
    #: Other names a topology or an older run record may use for it.
    aliases: tuple[str, ...]
    #: Backends of one family share settings (a kubeconfig, a namespace), a way to reach their
    #: runs and the Jupyter server's thread pool for submits and stops.
    family: Family
    #: `module:Class` of the implementation, imported when it is first used.
    implementation: str
    #: Whether `jupyter px render` can print what a submit would create.
    renders: bool
    #: One line for help texts and the docs.
    summary: str


BACKENDS: tuple[BackendEntry, ...] = (
    BackendEntry(
        "local",
        (),
        "local",
        "jupyter_px.backends.local:LocalBackend",
        renders=False,
        summary="processes on this machine (the default: nothing to set up)",
    ),
    BackendEntry(
        "native",
        ("kubernetes",),
        "kubernetes",
        "jupyter_px.backends.kubernetes.native.backend:NativeBackend",
        renders=True,
        summary="Kubernetes pods, a headless Service and a ConfigMap",
    ),
    BackendEntry(
        "kubeflow",
        (),
        "kubernetes",
        "jupyter_px.backends.kubernetes.kubeflow.backend:KubeflowBackend",
        renders=True,
        summary="Kubeflow's TFJob, PyTorchJob, MXJob and MPIJob (training-operator, mpi-operator)",
    ),
    BackendEntry(
        "kubeflow-trainer",
        (),
        "kubernetes",
        "jupyter_px.backends.kubernetes.trainer.backend:KubeflowTrainerBackend",
        renders=True,
        summary="Kubeflow Trainer v2's TrainJob on a training runtime",
    ),
    BackendEntry(
        "slurm",
        (),
        "slurm",
        "jupyter_px.backends.slurm:SlurmBackend",
        renders=True,
        summary="one Slurm job per run (heterogeneous when replicas differ), through sbatch on PATH",
    ),
)

DEFAULT_BACKEND = "local"

#: Every name a topology may use, canonical names first.
ALL_NAMES: tuple[str, ...] = tuple(e.name for e in BACKENDS) + tuple(a for e in BACKENDS for a in e.aliases)

_BY_NAME = {name: entry for entry in BACKENDS for name in (entry.name, *entry.aliases)}


class UnknownBackend(ValueError):
    """A backend name no row of the table has."""


def entry(name: str | None) -> BackendEntry:
    """The backend `name` (an alias included; None: the default); UnknownBackend naming the choices."""
    found = _BY_NAME.get(name or DEFAULT_BACKEND)
    if found is None:
        raise UnknownBackend(f"unknown backend {name!r}: use {', '.join(e.name for e in BACKENDS)}")
    return found


def canonical(name: str | None) -> str:
    """A backend's one name (`kubernetes` is `native`); an unknown name is returned as it is, for
    readers of records written by a version that had it."""
    found = _BY_NAME.get(name or DEFAULT_BACKEND)
    return found.name if found is not None else str(name)


def family_names(family: Family) -> tuple[str, ...]:
    """The canonical names of one family's backends (`--backend` choices of a family's commands)."""
    return tuple(e.name for e in BACKENDS if e.family == family)
