"""Elastic workers (`n_workers: "MIN:MAX"`, torchrun's `--nnodes=MIN:MAX`): a run that loses a
worker beyond its retries goes on with the rest, and takes the worker back when it returns.

Driven by a real failure: a rank of a real DDP job (gloo) SIGKILLed by `jupyter px kill`. What
each step computed says which world it ran in: every rank all-reduces a one, and rank 0 logs the
sum (`tests/jobs/elastic_train.py`).
"""

from __future__ import annotations

import pytest
from local_support import describe, replica, submit, wait
from px_cli import px
from waiting import wait_for

from jupyter_px.presentation.run_view import RunViewSource
from jupyter_px.runstore import RunState
from jupyter_px.runstore.checkpoints import all_checkpoints
from jupyter_px.service import RunService
from jupyter_px.topology import TopologyError, parse_topology
from jupyter_px.topology.export import to_yaml
from jupyter_px.topology.termination import lone_restart_warnings

pytestmark = [pytest.mark.usefixtures("launch")]

STEPS = 40


def _elastic(workers: str = "1:2", **termination) -> dict:
    topology: dict = {
        "framework": "pytorch",
        "environment": {
            "replicas": {
                "n_workers": workers,
                # a lost worker may come back once: its own restart policy
                "default_worker": {"restart_policy": "OnFailure", "max_restarts": 1},
            }
        },
    }
    if termination:
        topology["termination"] = termination
    return topology


def test_a_worker_range_reads_as_torchruns_and_writes_back_as_written():
    topology = parse_topology(_elastic("2:4"))
    section = topology.replicas_section
    assert (section.n_workers, section.min_workers, section.elastic) == (4, 2, True)
    assert "n_workers: '2:4'" in to_yaml(topology) and parse_topology(to_yaml(topology)) == topology
    assert topology.total_replicas() == 5  # the most the run starts with


@pytest.mark.parametrize(
    "topology, says",
    [
        (_elastic("3:2"), "environment.replicas.n_workers: '3:2': the minimum must be at least 1 and at most"),
        (_elastic("0:2"), "environment.replicas.n_workers: '0:2': the minimum must be at least 1"),
        (
            {**_elastic(), "framework": "tensorflow"},
            "environment.replicas.n_workers: '1:2': elastic workers are for PyTorch",
        ),
        (
            {**_elastic(), "backend": "native"},
            "'1:2': the native backend does not run elastic workers yet (backends that do: local, kubeflow)",
        ),
        ({"framework": "pytorch", "environment": {"replicas": {"n_workers": "two"}}}, "n_workers: 'two' is not"),
    ],
)
def test_a_bad_worker_range_names_the_field_and_value(topology, says):
    with pytest.raises(TopologyError) as error:
        parse_topology(topology)
    assert says in str(error.value)


def test_an_elastic_workers_restart_policy_is_how_it_comes_back_and_is_not_warned_of():
    assert lone_restart_warnings(parse_topology(_elastic())) == []
    fixed = _elastic()
    fixed["environment"]["replicas"]["n_workers"] = 2
    assert "worker-0, worker-1 alone" in lone_restart_warnings(parse_topology(fixed))[0]


def _lose_worker_1(topology: dict, steps: int, name: str, saved: int = 1, sleep: float = 0.15):
    """Submit elastic_train.py, SIGKILL worker-1 (`jupyter px kill`) once a checkpoint at step
    `saved` or later is on disk, and wait for the run to end: (run, final status). The first
    attempt stops at its checkpoint after `saved` until then (however slow the machine)."""
    hold = -(-saved // 5) * 5  # elastic_train.py checkpoints every 5 steps
    args = ["--steps", str(steps), "--step-sleep", str(sleep), "--hold-after", str(hold)]
    run = submit("elastic_train.py", topology, args=args, name=name)
    wait_for(
        lambda: any(c.step >= saved for c in all_checkpoints(str(run.paths.outputs_dir))),
        f"a shared checkpoint at step {saved} or later",
        timeout=180,
    )
    killed = px("kill", run.run_id, "worker-1", "--signal", "KILL")
    assert killed.returncode == 0, killed.stderr + describe(run)
    return run, wait(run)


def _worlds(run) -> dict[int, float]:
    series = run.metrics()["master-0"]["world"]
    return dict(zip(series.steps, series.values, strict=True))


@pytest.mark.jobs
@pytest.mark.warm_only  # the supervisor's re-forming, as a user's run starts: the cold gang is below
def test_a_lost_worker_leaves_the_run_which_goes_on_and_takes_it_back_at_the_next_checkpoint(px_home):
    """master + workers 1:2, no run-level retries: worker-1 SIGKILLed after the checkpoint at
    step 10. The run goes on as attempt 2 with master-0 and worker-0 (a world of 2) from that
    checkpoint; worker-1 comes back (its restart policy) at the next checkpoint attempt 2 saves,
    and attempt 3 runs in a world of 3 again to the end."""
    run, status = _lose_worker_1(_elastic(), STEPS, "elastic", saved=10)
    assert status.state == RunState.SUCCEEDED, describe(run)

    first, second, third = status.attempts
    assert (first.workers, first.failed, first.signal, first.retried) == (2, "worker-1", "SIGKILL", True)
    assert (second.workers, second.failed, second.returned) == (1, None, "worker-1")
    assert second.resumed_from is not None and 10 <= second.resumed_from <= first.step
    assert third.workers == 2 and third.resumed_from is not None and third.resumed_from > second.resumed_from
    assert status.attempt == 3 and status.max_attempts == 3  # re-forming used no retry (there were none)
    assert replica(status, "worker-1").state.value == "Succeeded" and replica(status, "worker-1").restarts == 1

    # what each step computed: a world of 3, then of 2 from the checkpoint it resumed at, then 3
    worlds = _worlds(run)
    assert sorted(worlds) == list(range(1, STEPS + 1)), describe(run)
    assert {worlds[s] for s in range(1, second.resumed_from + 1)} == {3.0}
    assert {worlds[s] for s in range(second.resumed_from + 1, third.resumed_from + 1)} == {2.0}
    assert {worlds[s] for s in range(third.resumed_from + 1, STEPS + 1)} == {3.0}

    log = run.paths.log("worker", 1).read_text()
    assert "attempt 1: rank 2 of 3 starts after step 0" in log
    assert f"attempt 3: rank 2 of 3 starts after step {third.resumed_from}" in log
    assert "attempt 2:" not in log  # it was out of attempt 2
    worker0 = run.paths.log("worker", 0).read_text()
    assert f"attempt 2: rank 1 of 2 starts after step {second.resumed_from}" in worker0
    shown = px("status", run.run_id).stdout
    assert f"attempt 3 of 3 with 2 workers, from step {third.resumed_from:,}" in shown, shown
    assert f"attempt 1: worker-1 killed by SIGKILL at step {first.step:,}; went on without it" in shown, shown
    assert "attempt 2: worker-1 came back\n" in shown, shown


@pytest.mark.jobs
@pytest.mark.cold_only  # the module's one cold gang: a lost worker's end seen as a cold start's
def test_a_run_that_would_fall_below_its_minimum_fails_and_says_so(px_home):
    """workers 2:2 (none may leave): a killed worker fails the run, as without elastic workers."""
    run, status = _lose_worker_1(_elastic("2:2"), 400, "min", sleep=0.1)
    assert status.state == RunState.FAILED, describe(run)
    assert status.message.startswith("worker-1 failed (Signaled): killed by SIGKILL"), describe(run)
    assert "the run cannot go on with fewer than 2 workers (n_workers: '2:2')" in status.message
    assert replica(status, "worker-1").restarts == 0  # not restarted alone: it could not rejoin


@pytest.mark.jobs
@pytest.mark.warm_only  # the supervisor's gang restart, not how a replica starts
def test_with_retries_left_a_lost_worker_restarts_the_whole_gang_with_it(px_home):
    """workers 1:2 and maxRetries 1: the first loss uses the retry, and the gang starts again
    whole (a world of 3 throughout), as a run without elastic workers would."""
    run, status = _lose_worker_1(_elastic(maxRetries=1), 25, "retry")
    assert status.state == RunState.SUCCEEDED, describe(run)
    first, second = status.attempts
    assert (first.workers, first.failed, second.workers) == (2, "worker-1", 2)
    assert (status.attempt, status.max_attempts) == (2, 2)
    assert set(_worlds(run).values()) == {3.0}
    assert replica(status, "worker-1").restarts == 0  # the gang restarted, not worker-1 alone


@pytest.mark.jobs
@pytest.mark.warm_only  # the supervisor's bookkeeping of a worker gone for good
def test_a_worker_whose_restart_policy_is_never_leaves_for_good_and_the_run_ends_without_it(px_home):
    """workers 1:2, restart_policy Never: worker-1 is lost for good (a node gone); the run ends
    in a world of 2 and worker-1's row says it left and why it did not come back."""
    topology = _elastic()
    topology["environment"]["replicas"]["default_worker"] = {"restart_policy": "Never"}
    run, status = _lose_worker_1(topology, 25, "gone")
    assert status.state == RunState.SUCCEEDED, describe(run)
    first, second = status.attempts
    assert (first.workers, first.failed, second.workers, second.returned) == (2, "worker-1", 1, None)
    left = replica(status, "worker-1")
    assert (left.state.value, left.reason) == ("Stopped", "LeftRun")
    assert left.message == (
        "killed by SIGKILL; left the run, which went on with 1 of 1:2 workers; "
        "does not return (restart_policy Never, 0 of 0 restarts)"
    ), left.message
    worlds = _worlds(run)
    assert worlds[25] == 2.0 and sorted(worlds) == list(range(1, 26))
    # the run view (notebook output, sidebar): its row says why it is out, the attempts why
    view = RunViewSource(RunService(), run.run_id).view()
    row = next(r for r in view.replicas if r.key == "worker-1")
    assert (row.state, row.reason) == ("Stopped", left.message), row
    assert view.attempt == f"attempt 2 of 2 with 1 worker, from step {second.resumed_from:,}"
    assert [(a.attempt, a.ended) for a in view.attempts] == [
        (1, f"worker-1 killed by SIGKILL at step {first.step:,}"),
        (2, ""),
    ]
