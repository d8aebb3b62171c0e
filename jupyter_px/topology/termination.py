"""`termination`: the run-level retry, as Polyaxon v1 writes it (`termination: {maxRetries: 3}`).

When any replica of a run fails and the run has retries left, the whole gang is stopped and
started again as the next attempt (a fresh rendezvous, each replica resuming from its newest
checkpoint: `tracking.load_checkpoint`). A replica's own `restart_policy: OnFailure` keeps its
Kubernetes meaning (that one process restarts), which a DDP rank cannot use: a lone restarted
rank cannot rejoin its process group.

Which failures are retried follows Kubeflow's `ExitCode` restart policy by default
(training-operator v1.8, pkg/util/train/train_util.go `IsRetryableExitCode`: `exitCode >= 128`;
docs "restartPolicy: ExitCode": 1-127 are permanent errors, 128 and above are retryable): a
process killed by a signal (SIGKILL 137, SIGTERM 143, OOMKilled 137, a segfault 139) is retried,
a Python exception (exit 1, a SyntaxError) is not. `retry_on: OnFailure` retries every failure,
and a list of exit codes retries exactly those.

`collective_timeout` (seconds) bounds how long a replica's collectives wait for a rank that never
joins them, so a hang ends as a failure that names that rank instead of half an hour of Running
(`diagnostics/collective_timeout.py`: the product's default is 10 minutes). It reaches every
replica as `PX_COLLECTIVE_TIMEOUT_S`, on every backend, through the replicas' own `env`.

Both spellings are read: Polyaxon v1's camelCase (`maxRetries`, as users paste it) and the
snake_case of the rest of this topology (`max_retries`); `dialects.py` renames the first.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

#: The most attempts after the first a run may ask for.
MAX_RETRIES = 100

#: Polyaxon v1's spelling -> ours.
CAMEL_CASE = {"maxRetries": "max_retries", "retryOn": "retry_on", "collectiveTimeout": "collective_timeout"}
#: The replica variable that carries `collective_timeout` (read by the runner:
#: `diagnostics.collective_timeout.ENV`, which cannot import this pydantic module).
COLLECTIVE_TIMEOUT_ENV = "PX_COLLECTIVE_TIMEOUT_S"
#: The longest collective timeout a run may set: a day.
MAX_COLLECTIVE_TIMEOUT_S = 86_400


def _retry_on(value: Any) -> Any:
    if isinstance(value, list):
        for code in value:
            if isinstance(code, bool) or not isinstance(code, int) or not 1 <= code <= 255:
                raise ValueError(f"{code!r} is not an exit code from 1 to 255")
        if not value:
            raise ValueError("[] retries nothing: give exit codes, ExitCode or OnFailure")
        return tuple(value)
    if value not in ("ExitCode", "OnFailure"):
        raise ValueError(f"{value!r} is not one of 'ExitCode', 'OnFailure' or a list of exit codes")
    return value


def _whole(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"{str(value).lower()} is not a whole number")
    return value


class Termination(BaseModel):
    """`termination`: how often the whole run is started again after a replica failed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_retries: Annotated[int, BeforeValidator(_whole)] = Field(
        default=0,
        ge=0,
        le=MAX_RETRIES,
        description="Times the whole run is started again after a replica fails (each replica "
        "resumes from its newest checkpoint). Polyaxon v1: maxRetries.",
    )
    retry_on: Annotated[
        Literal["ExitCode", "OnFailure"] | tuple[int, ...],
        BeforeValidator(_retry_on),
    ] = Field(
        default="ExitCode",
        description="Which failures are retried: ExitCode (Kubeflow's: killed by a signal or "
        "OOMKilled, exit 128 and above), OnFailure (every failure) or a list of exit codes.",
    )

    collective_timeout: Annotated[float | None, BeforeValidator(_whole)] = Field(
        default=None,
        gt=0,
        le=MAX_COLLECTIVE_TIMEOUT_S,
        description="Seconds a replica's collectives (all_reduce, barrier) wait for a rank that does not "
        "join them before they fail and the run names that rank; default 600 (PyTorch's own: 1,800 for "
        "gloo). Polyaxon-style: collectiveTimeout.",
    )

    def replica_env(self) -> dict[str, str]:
        """What every replica's environment gets from this section."""
        if self.collective_timeout is None:
            return {}
        return {COLLECTIVE_TIMEOUT_ENV: f"{self.collective_timeout:g}"}

    def retries(self, exit_code: int | None) -> bool:
        """Whether a replica that ended with `exit_code` (128+N: killed by signal N) is retried."""
        if exit_code is None or exit_code == 0:
            return False
        if self.retry_on == "OnFailure":
            return True
        if self.retry_on == "ExitCode":
            return exit_code >= 128
        return exit_code in self.retry_on

    def rule(self) -> str:
        """The rule in words, for messages."""
        if self.retry_on == "ExitCode":
            return "Kubeflow's ExitCode policy: exit codes 128 and above (a signal, OOMKilled) retry, 1-127 do not"
        if self.retry_on == "OnFailure":
            return "every failure retries"
        return f"exit codes {', '.join(map(str, self.retry_on))} retry"


#: Frameworks whose replicas meet in collectives: a lone restarted replica cannot rejoin them.
_COLLECTIVE = ("pytorch", "horovod", "mpi")


def lone_restart_warnings(topology: Any) -> list[str]:
    """What `jupyter px topology validate` warns of: a replica's own restart (`restart_policy`
    other than Never, with restarts allowed) in a job whose replicas meet in collectives (PyTorch
    DDP, Horovod/MPI; TensorFlow without parameter servers), where the restarted process cannot
    rejoin the group its peers are still in. The run-level retry restarts the whole gang instead."""
    collective = topology.framework in _COLLECTIVE or (
        topology.framework == "tensorflow" and "ps" not in topology.counts()
    )
    if not collective or topology.total_replicas() < 2:
        return []
    elastic = topology.replicas_section.elastic  # an elastic worker's restart policy is how it comes back
    lone = [
        s.key
        for s in topology.replicas()
        if s.restart_policy != "Never" and s.max_restarts > 0 and not (elastic and s.role == "worker")
    ]
    if not lone:
        return []
    shown = ", ".join(lone[:4]) + (f" and {len(lone) - 4} more" if len(lone) > 4 else "")
    return [
        f"restart_policy restarts {shown} alone, which cannot rejoin the {topology.framework} process group its "
        "peers are in; to start the whole run again from its checkpoints, set termination: {maxRetries: N}"
    ]
