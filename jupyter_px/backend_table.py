"""Every backend in one table: its name, the other names it answers to, its family and what it can do.

Before this table, `native`/`kubernetes` was translated in four places and a REST handler gave
"kubernetes" a third meaning. Now every layer asks here: the topology model validates a
topology's `backend:` against it (and offers its names in the JSON schema the sidebar's form is
built from), the run store reads an older record's name through it, `backends.get_backend`
imports the implementation it names, the Jupyter server picks a thread pool by its row, the run
service renders through its row, sweeps keep its settings variables by its row, and the CLI
offers the backends that can `render`. No layer above `backends/` tests a backend's name or
family: it reads a field of the row. A new backend is one row here and one folder under
`backends/`, the shape of its siblings.

Standard library only, at the bottom of the layers: the topology model imports it.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Backends of one family share settings (a kubeconfig, a namespace), a way to reach their runs
#: and the Jupyter server's thread pool for submits and stops: a name, never tested for by a
#: surface (they read the row's fields below).
Family = str


@dataclass(frozen=True)
class BackendEntry:
    """One backend: what every layer above `backends/` may know of it."""

    name: str
    #: Other names a topology or an older run record may use for it.
    aliases: tuple[str, ...]
    family: Family
    #: `module:Class` of the implementation, imported when it is first used.
    implementation: str
    #: `module:function` of its dry run, `(topology, code, name, backend, **options) -> Rendered`
    #: (`jupyter px render`, the sidebar's render); None: it renders nothing.
    render: str | None
    #: One line for help texts and the docs.
    summary: str
    #: `PX_K8S_`: the prefix of its family's settings variables (a sweep's controller and a
    #: detached helper inherit them); None: it has none.
    settings_prefix: str | None = None
    #: Variables of its own, outside the prefix, that its runs read (seconds, switches): kept
    #: wherever a run's own `PX_*` variables are dropped.
    tunables: tuple[str, ...] = ()
    #: The Jupyter server's thread pool for its submits and stops (one per family), and its size.
    pool: str = "local"
    pool_threads: int = 4
    #: `module:function` loading its settings with a Jupyter server's overrides (`namespace`,
    #: `image`), None: the server's overrides do not apply to it.
    server_settings: str | None = None
    #: Whether a run's outputs are on this machine's disk, where the next trial of a sweep
    #: reads its checkpoint (hyperband's resume).
    outputs_here: bool = False
    #: Whether its replicas run in this machine's Python environment (a polyaxonfile's
    #: `build_steps` of pip installs are checked against it; elsewhere an image is built).
    runs_here: bool = False
    #: Whether its replicas run a container image (the server's configured image fills it in).
    uses_image: bool = False
    #: Whether its runs are started again as a whole after a replica fails (`termination:
    #: {maxRetries: N}`); a topology that asks for it elsewhere is refused, never left unread.
    retries_runs: bool = False
    #: Where a backend that does not start runs again has a way of its own, what to say of it.
    retries_elsewhere: str = ""
    #: Whether it runs elastic workers (`n_workers: "MIN:MAX"`): a run that loses workers goes on
    #: with the rest, and takes them back when they return.
    elastic_workers: bool = False
    #: Whether a sweep's trials of one shape go to it together, as one job array
    #: (`Backend.submit_array`: one scheduler record, at most `concurrency` running).
    job_arrays: bool = False
    #: The module of its warm templates (`templates`, `start`, `stop`, `directory`,
    #: `FRAMEWORKS`: `jupyter px warm`, px/api/warm), None: it keeps none.
    warm: str | None = None

    @property
    def renders(self) -> bool:
        """Whether `jupyter px render` can print what a submit would create."""
        return self.render is not None


def _kubernetes(
    name: str,
    aliases: tuple[str, ...],
    implementation: str,
    summary: str,
    retries_runs: bool = False,
    retries_elsewhere: str = "",
    elastic_workers: bool = False,
) -> BackendEntry:
    """A row of the Kubernetes family: one settings file, one pool, the server's namespace and image."""
    return BackendEntry(
        name,
        aliases,
        "kubernetes",
        f"jupyter_px.backends.kubernetes.{implementation}",
        render="jupyter_px.backends.kubernetes.dry_run:rendered",
        summary=summary,
        settings_prefix="PX_K8S_",
        pool="kubernetes",
        pool_threads=8,
        server_settings="jupyter_px.backends.kubernetes.shared.settings:load_settings",
        uses_image=True,
        retries_runs=retries_runs,
        retries_elsewhere=retries_elsewhere,
        elastic_workers=elastic_workers,
    )


BACKENDS: tuple[BackendEntry, ...] = (
    BackendEntry(
        "local",
        (),
        "local",
        "jupyter_px.backends.local:LocalBackend",
        render=None,
        summary="processes on this machine (the default: nothing to set up)",
        settings_prefix="PX_LOCAL_",
        tunables=(
            "PX_STOP_GRACE_S",
            "PX_COMPLETION_GRACE_S",
            "PX_MASTER_HEAD_START_S",
            "PX_RUN_CGROUPS",
            "PX_STALL_AFTER_S",
        ),
        outputs_here=True,
        runs_here=True,
        retries_runs=True,
        elastic_workers=True,
        warm="jupyter_px.backends.local.templates",
    ),
    _kubernetes(
        "native",
        ("kubernetes",),
        "native.backend:NativeBackend",
        "Kubernetes pods, a headless Service and a ConfigMap",
        retries_runs=True,
    ),
    _kubernetes(
        "kubeflow",
        (),
        "kubeflow.backend:KubeflowBackend",
        "Kubeflow's TFJob, PyTorchJob, MXJob and MPIJob (training-operator, mpi-operator)",
        elastic_workers=True,  # an elastic PyTorchJob: torchrun's agent in every pod (kubeflow/manifests.py)
    ),
    _kubernetes(
        "kubeflow-trainer",
        (),
        "trainer.backend:KubeflowTrainerBackend",
        "Kubeflow Trainer v2's TrainJob on a training runtime",
        retries_elsewhere="its runtime's failurePolicy.maxRestarts restarts the whole JobSet, and the run shows "
        "each restart as an attempt",
    ),
    BackendEntry(
        "slurm",
        (),
        "slurm",
        "jupyter_px.backends.slurm:SlurmBackend",
        render="jupyter_px.backends.slurm.render:rendered",
        summary="one Slurm job per run (heterogeneous when replicas differ), through sbatch on PATH",
        settings_prefix="PX_SLURM_",
        tunables=("PX_STOP_GRACE_S", "PX_COMPLETION_GRACE_S"),
        pool="slurm",
        retries_runs=True,
        job_arrays=True,
    ),
    BackendEntry(
        "ssh",
        (),
        "ssh",
        "jupyter_px.backends.ssh:SshBackend",
        render="jupyter_px.backends.ssh.render:rendered",
        summary="processes on machines you name (a hostfile, `host slots=N`), started over OpenSSH",
        settings_prefix="PX_SSH_",
        tunables=("PX_STOP_GRACE_S", "PX_COMPLETION_GRACE_S"),
        pool="ssh",
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
    readers of records written by a version that had it. The one place an alias is mapped."""
    found = _BY_NAME.get(name or DEFAULT_BACKEND)
    return found.name if found is not None else str(name)


def family_names(family: Family) -> tuple[str, ...]:
    """The canonical names of one family's backends (`--backend` choices of a family's commands)."""
    return tuple(e.name for e in BACKENDS if e.family == family)


def runs_here(name: object) -> bool:
    """Whether backend `name` runs replicas in this machine's Python environment (an unknown
    name: no; the topology's own check names it)."""
    if name is not None and not isinstance(name, str):
        return False
    found = _BY_NAME.get(name or DEFAULT_BACKEND)
    return found is not None and found.runs_here


def choices_text() -> str:
    """Every backend's name for a help text: `local, native, ... or ssh`."""
    names = [e.name for e in BACKENDS]
    return f"{', '.join(names[:-1])} or {names[-1]}"


def pools() -> dict[str, int]:
    """Each family's thread pool and its size (the Jupyter server's submits and stops)."""
    return {e.pool: e.pool_threads for e in BACKENDS}


def settings_prefixes() -> tuple[str, ...]:
    """Every backend's settings prefix (`PX_K8S_`, ...): what a detached helper inherits."""
    return tuple(dict.fromkeys(e.settings_prefix for e in BACKENDS if e.settings_prefix))


def tunables() -> tuple[str, ...]:
    """Every backend's own variables outside its prefix."""
    return tuple(dict.fromkeys(name for e in BACKENDS for name in e.tunables))
