"""The topology model: the single source of truth for a distributed job's shape.

The model mirrors the current polyaxonfile form (`framework`, `backend`,
`environment.resources`, `environment.replicas`), so what a user pastes, what the sidebar form
edits (through the JSON schema) and what is written back to YAML are one structure. Older forms
are rewritten into this one before validation (see `dialects.py`).

Units after validation: cpu in cores, memory in MiB, gpu in whole devices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    NonNegativeInt,
    WithJsonSchema,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from .. import backend_table
from .kubernetes_syntax import check_env_name, check_env_value, check_label_key, check_label_value
from .limits import MAX_PROCESSES_PER_REPLICA, MAX_REPLICAS_PER_ROLE, MAX_TOTAL_REPLICAS
from .quantities import parse_cpu, parse_gpu, parse_memory_mib
from .termination import Termination

Framework = Literal["tensorflow", "pytorch", "mxnet", "horovod", "mpi"]
if TYPE_CHECKING:
    BackendName = str
else:  # the names of the one backend table, aliases included (`Literal[("a", "b")]` is `Literal["a", "b"]`)
    BackendName = Literal[backend_table.ALL_NAMES]
RestartPolicy = Literal["Never", "OnFailure", "Always", "ExitCode"]

#: Top-level sections of a polyaxonfile that `parse_topology` keeps as written, unread: a
#: sweep's (Polyaxon v0 `hptuning`, v1 `matrix`), read by `jupyter_px.sweeps.spec`.
SECTIONS_KEPT_AS_WRITTEN = ("hptuning", "matrix")

#: Our role names, in the order replicas are listed and started.
ROLES = ("master", "worker", "ps", "evaluator")

#: Which roles each framework has (besides the master, which every framework has unless n_masters: 0).
FRAMEWORK_ROLES: dict[str | None, tuple[str, ...]] = {
    None: ("master",),
    "tensorflow": ("master", "worker", "ps", "evaluator"),
    "pytorch": ("master", "worker"),
    "mxnet": ("master", "worker", "ps"),
    "horovod": ("master", "worker"),
    "mpi": ("master", "worker"),
}

#: Frameworks whose master is not optional: MXNet's scheduler and MPI's launcher.
MASTER_REQUIRED = {"mxnet", "horovod", "mpi"}

_QUANTITY_SCHEMA = WithJsonSchema({"anyOf": [{"type": "number", "minimum": 0}, {"type": "string"}]})
CpuQuantity = Annotated[float, BeforeValidator(parse_cpu), _QUANTITY_SCHEMA]
MemoryQuantity = Annotated[float, BeforeValidator(parse_memory_mib), _QUANTITY_SCHEMA]
GpuQuantity = Annotated[int, BeforeValidator(parse_gpu), WithJsonSchema({"type": "integer", "minimum": 0})]
EnvValue = Annotated[
    str,
    BeforeValidator(
        lambda v: str(v).lower() if isinstance(v, bool) else (str(v) if isinstance(v, (int, float)) else v)
    ),
    AfterValidator(check_env_value),
]
EnvName = Annotated[str, AfterValidator(check_env_name)]
LabelKey = Annotated[str, AfterValidator(check_label_key)]
LabelValue = Annotated[str, AfterValidator(check_label_value)]


def _not_a_bool(value: Any) -> Any:
    """YAML's `true` is no count: pydantic would read it as 1."""
    if isinstance(value, bool):
        raise ValueError(f"{str(value).lower()} is not a whole number")
    return value


#: A whole number that refuses `true`/`false` (every count, index and limit of a topology).
WholeNumber = Annotated[int, BeforeValidator(_not_a_bool)]
Count = Annotated[NonNegativeInt, BeforeValidator(_not_a_bool)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Range(_Strict):
    """`{requests, limits}`; `request` (singular, as in polyaxon's docs) means `requests`."""

    if TYPE_CHECKING:  # each kind declares its own (typed) fields
        requests: Any
        limits: Any

    @model_validator(mode="before")
    @classmethod
    def _singular_request(cls, data: Any) -> Any:
        if isinstance(data, dict) and "request" in data:
            if "requests" in data:
                raise ValueError("give either 'request' or 'requests', not both")
            data = {("requests" if k == "request" else k): v for k, v in data.items()}
        elif not isinstance(data, dict) and not isinstance(data, BaseModel):
            # A scalar (`cpu: 2`) is shorthand for requests = limits.
            data = {"requests": data, "limits": data}
        return data

    @model_validator(mode="after")
    def _requests_within_limits(self) -> _Range:
        requests, limits = self.requests, self.limits
        if requests is not None and limits is not None and requests > limits:
            raise ValueError(f"requests {_num(requests)} is above limits {_num(limits)}")
        return self


def _num(value: float) -> int | float:
    return int(value) if value == int(value) else value


class CpuRange(_Range):
    requests: CpuQuantity | None = Field(default=None, description='Cores requested (2, 0.5 or "500m").')
    limits: CpuQuantity | None = Field(default=None, description="Cores at most.")


class MemoryRange(_Range):
    requests: MemoryQuantity | None = Field(default=None, description='MiB requested (a number), or "1Gi", "512Mi".')
    limits: MemoryQuantity | None = Field(default=None, description="MiB at most; a replica above it is OOMKilled.")


class GpuRange(_Range):
    requests: GpuQuantity | None = Field(default=None, description="Whole GPUs requested.")
    limits: GpuQuantity | None = Field(default=None, description="Whole GPUs at most.")


class Resources(_Strict):
    cpu: CpuRange | None = None
    memory: MemoryRange | None = None
    gpu: GpuRange | None = None

    def gpus(self) -> int:
        """GPUs a replica gets: the limit, else the request (Kubernetes requires them equal)."""
        if self.gpu is None:
            return 0
        return self.gpu.limits if self.gpu.limits is not None else (self.gpu.requests or 0)


class ReplicaSettings(_Strict):
    """What a role's default (`default_worker`) or the environment may set for replicas."""

    resources: Resources | None = None
    image: str | None = Field(default=None, description="Container image (Kubernetes backends).")
    env: dict[EnvName, EnvValue] | None = Field(default=None, description="Extra environment variables.")
    node_selector: dict[LabelKey, LabelValue] | None = Field(default=None, description="Kubernetes node selector.")
    restart_policy: RestartPolicy | None = None
    max_restarts: Count | None = Field(default=None, description="Restarts allowed with OnFailure.")


#: Fields an override or a role default may replace (polyaxon's rule: replace what it names).
SETTING_FIELDS = tuple(ReplicaSettings.model_fields)


class ReplicaOverride(ReplicaSettings):
    """Settings for one index of a role; replaces the role's default for the fields it names."""

    index: Count


_COUNT_LIMITS = (
    f"At most {MAX_REPLICAS_PER_ROLE:,} per role and {MAX_TOTAL_REPLICAS:,} replicas in all (master included)."
)


class Replicas(_Strict):
    """`environment.replicas`: how many of each role and their settings."""

    n_masters: WholeNumber = Field(default=1, ge=0, le=1, description="0 for a job of workers only (no chief/master).")
    n_workers: WholeNumber = Field(
        default=0,
        ge=0,
        le=MAX_REPLICAS_PER_ROLE,
        description=f"Workers; PyTorch also takes a range 'MIN:MAX' (elastic workers, torchrun's --nnodes). "
        f"{_COUNT_LIMITS}",
    )
    min_workers: WholeNumber | None = Field(
        default=None,
        ge=0,
        le=MAX_REPLICAS_PER_ROLE,
        description="Elastic workers: the fewest workers the run goes on with after losing some "
        "(written `n_workers: 'MIN:MAX'`).",
    )
    n_ps: WholeNumber = Field(
        default=0, ge=0, le=MAX_REPLICAS_PER_ROLE, description=f"Parameter servers. {_COUNT_LIMITS}"
    )
    n_evaluators: WholeNumber = Field(default=0, ge=0, le=1, description="TensorFlow only: a side-car evaluator.")
    default_worker: ReplicaSettings | None = None
    default_ps: ReplicaSettings | None = None
    default_evaluator: ReplicaSettings | None = None
    worker: list[ReplicaOverride] = Field(default_factory=list)
    ps: list[ReplicaOverride] = Field(default_factory=list)
    evaluator: list[ReplicaOverride] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _worker_range(cls, data: Any) -> Any:
        """`n_workers: "2:4"` (torchrun's `--nnodes=2:4`): at most 4 workers, at least 2."""
        if isinstance(data, dict) and isinstance(data.get("n_workers"), str):
            low, colon, high = data["n_workers"].partition(":")
            if colon and low.strip().isdigit() and high.strip().isdigit():
                if data.get("min_workers") is not None:
                    raise ValueError(f"n_workers {data['n_workers']!r} and min_workers both give the minimum: give one")
                data = {**data, "n_workers": int(high), "min_workers": int(low)}
        return data

    @property
    def elastic(self) -> bool:
        """Whether the run goes on with fewer workers after losing some (`min_workers`)."""
        return self.min_workers is not None

    def count(self, role: str) -> int:
        return {"master": self.n_masters, "worker": self.n_workers, "ps": self.n_ps, "evaluator": self.n_evaluators}[
            role
        ]

    def default(self, role: str) -> ReplicaSettings | None:
        return getattr(self, f"default_{role}", None)

    def overrides(self, role: str) -> list[ReplicaOverride]:
        return getattr(self, role) if role in ("worker", "ps", "evaluator") else []


class Environment(ReplicaSettings):
    """`environment`: the master's resources, settings for every replica, and the replicas."""

    resources: Resources | None = Field(default=None, description="The master's resources.")
    replicas: Replicas | None = None
    processes_per_replica: WholeNumber = Field(
        default=1,
        gt=0,
        le=MAX_PROCESSES_PER_REPLICA,
        description=f"Processes per replica (torch nproc_per_node, MPI slots); at most {MAX_PROCESSES_PER_REPLICA:,}.",
    )
    tf_master_type: Literal["chief", "master"] = Field(
        default="chief", description="Task type of the master in TF_CONFIG."
    )


class Topology(_Strict):
    """A distributed job's shape. Build it with `parse_topology` (any accepted form) or directly."""

    version: float | None = None
    kind: Literal["experiment", "job", "group"] | None = None
    name: str | None = None
    description: str | None = None
    tags: list[str] | None = None
    framework: Framework | None = None
    backend: BackendName = "local"
    environment: Environment = Field(default_factory=Environment)
    termination: Termination | None = Field(
        default=None, description="The run-level retry: the whole run starts again after a replica fails."
    )
    # The sweep section as written (Polyaxon v0 `hptuning`, v1 `matrix`), kept as written so the
    # YAML round-trips; `jupyter_px.sweeps.spec` reads and validates it (`read_sweep`). Not in the
    # JSON schema: the sidebar's form edits one job's shape.
    hptuning: SkipJsonSchema[dict[str, Any] | None] = None
    matrix: SkipJsonSchema[dict[str, Any] | None] = None
    # Polyaxon v0's constants for the code and its `run: {cmd}`, read by `v0_sections.py` (which
    # also honours or refuses the file's other v0 sections); `values.py` says how they reach a run.
    declarations: SkipJsonSchema[dict[str, Any] | None] = None
    run: SkipJsonSchema[dict[str, Any] | None] = None

    def without_sweep(self) -> Topology:
        """The job one trial runs: this topology without its sweep section."""
        return self.model_copy(update=dict.fromkeys(SECTIONS_KEPT_AS_WRITTEN))

    # ---- derived views -------------------------------------------------------------------
    @property
    def replicas_section(self) -> Replicas:
        return self.environment.replicas or Replicas()

    @property
    def backend_kind(self) -> str:
        """The backend's one name (`backend_table`: `kubernetes` is accepted as input for `native`)."""
        return backend_table.canonical(self.backend)

    @property
    def is_mpi(self) -> bool:
        return self.framework in ("horovod", "mpi")

    def counts(self) -> dict[str, int]:
        """{role: replicas} for the roles present, in start order."""
        section = self.replicas_section
        return {role: section.count(role) for role in ROLES if section.count(role) > 0}

    def total_replicas(self) -> int:
        return sum(self.counts().values())

    def replicas(self) -> list[ReplicaSpec]:
        """Every replica with its settings resolved (role default, then the index's override)."""
        return list(self._resolved.values())

    def replica(self, role: str, index: int) -> ReplicaSpec:
        try:
            return self._resolved[(role, index)]
        except KeyError:
            raise KeyError(f"this topology has no replica {role}[{index}] (it has {self.counts()})") from None

    def resolve(self, role: str, index: int) -> ReplicaSpec:
        """One replica's settings, without resolving every other one (summaries of big topologies
        need one per distinct setting, not one per replica)."""
        if not 0 <= index < self.replicas_section.count(role):
            raise KeyError(f"this topology has no replica {role}[{index}] (it has {self.counts()})")
        override = next((o for o in self.replicas_section.overrides(role) if o.index == index), None)
        return self._spec(role, index, self._role_settings(role), override)

    @cached_property
    def _resolved(self) -> dict[tuple[str, int], ReplicaSpec]:
        """Resolved once per (immutable) topology: backends ask for every replica, often."""
        resolved = {}
        for role, count in self.counts().items():
            settings = self._role_settings(role)
            by_index = {override.index: override for override in self.replicas_section.overrides(role)}
            for index in range(count):
                resolved[(role, index)] = self._spec(role, index, settings, by_index.get(index))
        return resolved

    def _role_settings(self, role: str) -> dict[str, Any]:
        """The environment's settings, then the role's default (`default_worker`) over them."""
        env = self.environment
        settings = {name: getattr(env, name) for name in SETTING_FIELDS if name != "resources"}
        settings["resources"] = env.resources if role == "master" else None
        default = self.replicas_section.default(role)
        if default is not None:
            settings.update({k: getattr(default, k) for k in default.model_fields_set})
        return settings

    def _spec(self, role: str, index: int, settings: dict[str, Any], override: ReplicaOverride | None) -> ReplicaSpec:
        if override is not None:  # replaces the fields it names (polyaxon's rule)
            settings = dict(settings)
            settings.update({k: getattr(override, k) for k in override.model_fields_set if k != "index"})
        return ReplicaSpec(
            role=role,
            index=index,
            resources=settings["resources"] or Resources(),
            image=settings["image"],
            env=(self.termination.replica_env() if self.termination else {}) | dict(settings["env"] or {}),
            node_selector=dict(settings["node_selector"] or {}),
            restart_policy=settings["restart_policy"] or "Never",
            max_restarts=settings["max_restarts"] if settings["max_restarts"] is not None else 0,
            processes=self.environment.processes_per_replica,
        )


@dataclass(frozen=True)
class ReplicaSpec:
    """One replica, fully resolved: what a backend starts."""

    role: str
    index: int
    resources: Resources
    image: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    restart_policy: str = "Never"
    max_restarts: int = 0
    processes: int = 1

    @property
    def key(self) -> str:
        return f"{self.role}-{self.index}"
