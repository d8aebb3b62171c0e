"""Kubeflow's rules for a local run, as pure functions: no processes, no clock, no files.

The supervisor asks these when something happened (a replica exited, the run may be decided);
keeping them apart means every rule can be read, and tested, on plain values:

* `should_restart` / `restart_delay`: a replica's restart_policy (Never, OnFailure, Always,
  ExitCode: retry only the codes of a signal, 130/137/143) and its max_restarts;
* `decides_run`: would this replica's success finish the run (the rule itself, shared with the
  Kubernetes backend, is `backends/outcome.py`);
* `start_rank` / `is_server`: the order replicas start in, and which replicas serve until they
  are stopped (so a successful run stops them at once instead of waiting for them to finish).
"""

from __future__ import annotations

from .config import RETRYABLE_EXIT_CODES

#: Longest pause before a restart; the pause doubles from 0.2 s with each restart.
MAX_RESTART_DELAY_S = 5.0


def should_restart(
    policy: str, *, failed: bool, exit_code: int, restarts: int, max_restarts: int, decides_run: bool
) -> bool:
    """Does a replica that just exited start again? (Only asked while the run is undecided.)"""
    if restarts >= max_restarts:
        return False
    if policy == "OnFailure":
        return failed
    if policy == "ExitCode":
        return failed and exit_code in RETRYABLE_EXIT_CODES
    if policy == "Always":
        return failed or not decides_run  # a success that would end the run is not undone
    return False


def restart_delay(restarts: int) -> float:
    """Seconds to wait before restart number `restarts + 1` (exponential, capped)."""
    return min(0.2 * 2**restarts, MAX_RESTART_DELAY_S)


def decides_run(role: str, *, has_master: bool, other_workers_succeeded: bool) -> bool:
    """Would this replica's success finish the run?"""
    if role == "master":
        return True
    if role != "worker" or has_master:
        return False
    return other_workers_succeeded


def head_start(framework: str | None, processes: int, cores: int, configured: float | None) -> float:
    """Seconds a master gets ahead of its workers: `configured` when set, else 0.3 s for PyTorch
    when the run has more processes than the machine has cores.

    A PyTorch worker whose first connection to the master's TCPStore is refused (the master is
    still importing torch) retries only after a backoff of up to about a second. On a machine
    with fewer cores than processes, the master's imports are slowed by the workers', so without
    a lead it is often last to listen. The lead costs little there (the cores are saturated either
    way) and is not taken where there are enough cores."""
    if framework != "pytorch":
        return 0.0
    if configured is not None:
        return configured
    return 0.3 if processes > cores else 0.0


def start_rank(role: str, *, is_mpi: bool) -> int:
    """Replicas start in increasing rank. The master first: it hosts the rendezvous (torch's
    TCPStore), and a worker that finds it not listening yet backs off for up to a second. MPI is
    the other way round: its workers (the hosts) are up before the launcher starts."""
    ranks = {"worker": 0, "master": 1} if is_mpi else {"master": 0, "ps": 1, "worker": 2, "evaluator": 3}
    return ranks.get(role, 2)


def is_server(role: str, *, framework: str, is_mpi: bool, has_ps: bool) -> bool:
    """Replicas that serve until stopped rather than finish: parameter servers, evaluators, MPI
    host placeholders, and TensorFlow workers next to parameter servers."""
    if role in ("ps", "evaluator"):
        return True
    if role == "worker" and is_mpi:
        return True
    return role == "worker" and framework == "tensorflow" and has_ps
