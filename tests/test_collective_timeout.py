"""A hang ends with its cause: the run's collective timeout reaches every replica, and when a
collective times out the run names the rank that never joined it, not the rank that waited.

The real case is a 3-replica PyTorch job on gloo where worker-0 sleeps before an `all_reduce` the
other two wait in; with `termination: {collectiveTimeout: 5}` gloo gives up in 5 s (not its own 30
minutes), and the first replica to fail is one that waited.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from free_ports import free_port
from local_support import describe, wait
from waiting import wait_for

from jupyter_px.diagnostics import collective_timeout, missing_ranks
from jupyter_px.topology import TopologyError, parse_topology

HANG = textwrap.dedent("""\
    import os, time
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    dist.all_reduce(torch.ones(1))  # every rank joined once
    if os.environ["PX_TASK_TYPE"] == "worker" and os.environ["PX_TASK_INDEX"] == "0":
        time.sleep(120)
    dist.all_reduce(torch.ones(1))
    """)


def test_the_timeout_reaches_every_replica_from_the_topology_and_bad_values_are_named():
    topology = parse_topology(
        {
            "framework": "pytorch",
            "termination": {"collectiveTimeout": 45},
            "environment": {"replicas": {"n_workers": 2}},
        }
    )
    keys = [(role, i) for role, count in topology.counts().items() for i in range(count)]
    assert {topology.replica(role, i).env[collective_timeout.ENV] for role, i in keys} == {"45"}
    assert parse_topology({"framework": "pytorch"}).replica("master", 0).env == {}  # the runner's default applies
    for value, said in ((0, "0 is not > 0"), ("soon", "'soon' is not a number"), (True, "true is not")):
        with pytest.raises(TopologyError) as error:
            parse_topology({"framework": "pytorch", "termination": {"collectiveTimeout": value}})
        assert f"termination.collectiveTimeout: {said}" in str(error.value)


def test_a_replica_s_timeout_is_the_run_s_else_ten_minutes_else_pytorch_s_own():
    assert collective_timeout.seconds({}) == collective_timeout.DEFAULT_S == 600
    assert collective_timeout.seconds({collective_timeout.ENV: "7.5"}) == 7.5
    assert collective_timeout.seconds({collective_timeout.ENV: "0"}) is None
    assert collective_timeout.seconds({collective_timeout.ENV: "never"}) is None


def test_the_runner_s_hook_sets_the_default_of_every_process_group_torch_makes():
    """In a fresh interpreter, as a cold replica: the hook is installed before torch is imported."""
    probe = textwrap.dedent("""\
        from jupyter_px.diagnostics import collective_timeout
        print(collective_timeout.install())
        from torch.distributed import distributed_c10d as c10d
        print(c10d._get_default_timeout(c10d.Backend("gloo")).total_seconds())
        print(collective_timeout.install())  # again, torch imported (a warm fork): set at once
        """)
    env = {**os.environ, collective_timeout.ENV: "42"}
    said = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True).stdout
    assert said.split() == ["42.0", "42.0", "42.0"]


RANK = textwrap.dedent("""\
    import os, sys, time
    from jupyter_px.diagnostics import collective_timeout
    collective_timeout.install()
    import torch, torch.distributed as dist
    time.sleep(float(sys.argv[1]))  # this rank's pod starts late
    dist.init_process_group("gloo")
    dist.all_reduce(torch.ones(1))
    print("joined", flush=True)
    # Leave as the runner leaves a replica (os._exit): the interpreter's own exit frees the gloo
    # group while its peer may be gone, and gloo's destructor aborted once (SIGABRT, "terminate
    # called without an active exception") after both ranks had joined.
    os._exit(0)
    """)


@pytest.mark.parametrize(
    "delays",
    [("6", "0"), ("0", "0", "6")],
    ids=["the-store-s-host-late", "a-third-rank-late"],
)
def test_a_short_collective_timeout_leaves_the_rendezvous_time_for_a_late_rank(delays):
    """With `collectiveTimeout: 2`, one rank starts 6 s after the others (pods start apart): the
    rank that hosts the rendezvous store, or a third one while the first two wait for it in the
    process group's set-up. The early ranks still meet it (the store waits as torchrun's
    rendezvous does, and the set-up begins once every rank is there), and their collectives keep
    the 2 s timeout."""
    env = {
        **os.environ,
        collective_timeout.ENV: "2",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "WORLD_SIZE": str(len(delays)),
    }
    ranks = [
        subprocess.Popen(
            [sys.executable, "-c", RANK, delay], env={**env, "RANK": str(rank)}, stdout=subprocess.PIPE, text=True
        )
        for rank, delay in enumerate(delays)
    ]
    outs = [rank.communicate(timeout=120)[0] for rank in ranks]
    assert [rank.returncode for rank in ranks] == [0] * len(delays) and outs == ["joined\n"] * len(delays), outs


def test_the_error_of_a_timed_out_collective_is_told_from_others():
    gloo = "RuntimeError: [.../gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 5000ms for recv operation"
    nccl = "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=381, OpType=ALLREDUCE) ran for 600000 ms"
    closed = "RuntimeError: [.../gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:49576"
    assert collective_timeout.is_timeout(gloo) and collective_timeout.is_timeout(nccl)
    assert not collective_timeout.is_timeout(closed) and not collective_timeout.is_timeout("ValueError: bad")


def _entry(key: str, *files: str) -> dict:
    frames = [{"file": f, "line": 1, "function": "f", "user": f.startswith("/run/code/")} for f in files]
    return {"key": key, "error": None, "threads": [{"main": True, "frames": frames}]}


def test_a_rank_in_backward_or_a_collective_waits_one_in_its_dataloader_or_own_code_does_not_one_exiting_neither():
    torch = "/venv/lib/python3.11/site-packages/torch/"
    snapshot = {
        "replicas": [
            _entry("master-0", torch + "distributed/distributed_c10d.py", "/run/code/main.py"),
            _entry("worker-0", torch + "autograd/graph.py", torch + "_tensor.py", "/run/code/main.py"),
            _entry("worker-1", torch + "utils/data/dataloader.py", "/run/code/main.py"),
            _entry("worker-2", "/run/code/main.py"),
            {"key": "worker-3", "error": "no answer", "threads": []},
            _entry("worker-4", torch + "library.py", "/venv/lib/python3.11/site-packages/jupyter_px/runner.py"),
        ]
    }
    # worker-4's code has ended (a peer exiting after its own timeout): not the one waited for
    assert missing_ranks.not_waiting(snapshot) == ["worker-1", "worker-2"]


@pytest.mark.jobs
@pytest.mark.warm_only  # as a user's run starts: nothing here depends on how a replica started
def test_a_rank_that_never_joins_an_all_reduce_is_named_when_its_peers_time_out(px_home, tmp_path, launch):
    from jupyter_px.api import submit

    script = tmp_path / "hang.py"
    script.write_text(HANG)
    topology = {
        "framework": "pytorch",
        "termination": {"collectiveTimeout": 5},
        "environment": {"replicas": {"n_workers": 2}},
    }
    run = submit(script, topology)
    status = wait(run)
    by_key = {r.key: r for r in status.replicas}
    assert status.state.value == "Failed", describe(run)
    assert status.reason == "CollectiveTimeout", describe(run)
    assert status.message.startswith("worker-0 never joined the collective its peers waited in ("), status.message
    assert "timed out after 5 s in all_reduce #2)" in status.message, status.message  # the flight recorder's
    assert status.message.endswith("; worker-0 was at <module>, hang.py line 8: time.sleep(120)"), status.message
    # the flight recorder's last collectives, in the waiting replicas' records and in the REST reply
    from jupyter_px.server.models import RunDetail, dump
    from jupyter_px.service.views import run_detail

    detail = dump(RunDetail, run_detail(run.record, status))
    collectives = [r["failure"]["collectives"] for r in detail["replicas"] if r.get("failure")]
    assert collectives and all(c[-1]["op"] == "all_reduce" and c[-1]["seq"] == 2 for c in collectives), detail
    sleeper = by_key["worker-0"]
    # ended by the run, asleep (not at the end of its 120 s): Failed as the cause
    assert sleeper.state.value == "Failed" and sleeper.reason == "CollectiveTimeout", sleeper
    assert sleeper.message.startswith("never joined the collective its peers waited in"), sleeper
    for key in ("master-0", "worker-1"):  # they waited: each failed in its own timeout, or was stopped for worker-0
        waiter = by_key[key]
        if waiter.state.value == "Failed":  # its own error, read from its failure record (written together)
            assert "Timed out waiting 5000ms" in (waiter.message or ""), waiter
        else:
            assert waiter.message == "stopped because worker-0 never joined a collective", waiter


def test_each_attempt_s_timeout_is_judged_on_stacks_taken_for_it():
    """A run started again after a timeout (termination.maxRetries) that times out again is
    judged on stacks taken then, not on the first attempt's."""
    from jupyter_px.backends.collective_blame import CollectiveTimeouts
    from jupyter_px.backends.outcome import Outcome
    from jupyter_px.runstore import ReplicaState, ReplicaStatus, RunState
    from jupyter_px.topology import ReplicaNames

    timed_out = "exited with code 1: RuntimeError: [...] Timed out waiting 5000ms for recv operation"
    asleep = [_entry("worker-0", "/run/code/main.py")]
    in_collective = [_entry("worker-0", "/venv/lib/python3.11/site-packages/torch/distributed/c10d.py")]
    snapshots = [{"replicas": asleep, "groups": []}, {"replicas": in_collective, "groups": []}]
    taken: list[str] = []

    def take(targets: dict, why: str) -> dict:
        taken.append(why)
        return snapshots[len(taken) - 1]

    timeouts = CollectiveTimeouts(take)
    outcome = Outcome(RunState.FAILED, "ReplicaFailed", "master-0 failed", cause="master-0")
    for finished_at, named in ((10.0, "worker-0"), (50.0, None)):  # attempt 1, then attempt 2
        replicas = [
            ReplicaStatus(
                role="master", index=0, state=ReplicaState.FAILED, message=timed_out, finished_at=finished_at
            ),
            ReplicaStatus(role="worker", index=0, state=ReplicaState.RUNNING, pid=4242),
        ]
        assert timeouts.holds(replicas)  # a new failure: its stacks are taken
        wait_for(lambda r=replicas: not timeouts.holds(r), "the stacks taken", timeout=10, poll=0.01)
        said = timeouts.name(outcome, replicas, ReplicaNames())
        assert (said.outcome.cause if said else None) == named, said
    assert taken == ["master-0's collective timed out"] * 2


def test_a_peer_that_failed_when_the_rank_that_timed_out_exited_is_stopped_because_of_the_missing_one():
    """master-0 timed out waiting for worker-1 (asleep) and exited; worker-0, on a loaded machine,
    lost its connection to master-0 before its own timeout came (gloo: "Connection closed by
    peer"). worker-1 is named; worker-0 reads as the others the run stopped, its exit code kept;
    master-0 keeps its own timeout."""
    from jupyter_px.backends.collective_blame import name_missing
    from jupyter_px.backends.outcome import Outcome
    from jupyter_px.runstore import ReplicaState, ReplicaStatus, RunState
    from jupyter_px.runstore.models import Reason
    from jupyter_px.topology import ReplicaNames

    timed_out = "exited with code 1: RuntimeError: [...] Timed out waiting 5000ms for recv operation"
    closed = "exited with code 1: RuntimeError: [.../tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:58580"
    master = ReplicaStatus(role="master", index=0, state=ReplicaState.FAILED, message=timed_out, finished_at=10.0)
    worker_0 = ReplicaStatus(
        role="worker", index=0, state=ReplicaState.FAILED, message=closed, exit_code=1, finished_at=10.3
    )
    worker_1 = ReplicaStatus(role="worker", index=1, state=ReplicaState.RUNNING, pid=4242)
    snapshot = {"replicas": [_entry("worker-1", "/run/code/main.py")], "groups": []}
    outcome = Outcome(RunState.FAILED, "ReplicaFailed", "master-0 failed", cause="master-0")

    named = name_missing(outcome, [master, worker_0, worker_1], snapshot, ReplicaNames())
    assert named is not None and named.outcome.cause == "worker-1", named
    assert named.cascaded == {"worker-0"}
    worker_1.state, worker_1.exit_code = ReplicaState.STOPPED, 143  # ended by the run
    for replica in (master, worker_0, worker_1):
        named.settle(replica)
    assert (master.state, master.message) == (ReplicaState.FAILED, timed_out)
    assert (worker_0.state, worker_0.reason, worker_0.exit_code) == (ReplicaState.STOPPED, Reason.STOPPED_BY_RUN, 1)
    assert worker_0.message == "stopped because worker-1 never joined a collective"
    assert (worker_1.state, worker_1.reason) == (ReplicaState.FAILED, Reason.COLLECTIVE_TIMEOUT)
    assert worker_1.message == named.missing["worker-1"]


def test_a_peer_seen_unwinding_from_the_broken_collective_is_not_named_once_its_failure_says_so():
    """master-0 timed out waiting for worker-1 (its DataLoader deadlocked) and exited; worker-0's
    all_reduce broke with it, and its stack, taken as the error unwound, was in its DataLoader's
    `__del__` under the user's line: outside every collective, as worker-1's. The decision waits
    (at most SETTLE_S) while a rank seen outside still runs; worker-0 then fails with the closed
    connection, which places it in the collective: only worker-1 is named."""
    from jupyter_px.backends.collective_blame import SETTLE_S, CollectiveTimeouts
    from jupyter_px.backends.outcome import Outcome
    from jupyter_px.runstore import ReplicaState, ReplicaStatus, RunState
    from jupyter_px.topology import ReplicaNames

    dataloader = "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py"
    snapshot = {
        "replicas": [
            _entry("worker-0", dataloader, "/run/code/main.py"),
            _entry("worker-1", dataloader, "/run/code/main.py"),
        ],
        "groups": [],
    }
    timeouts = CollectiveTimeouts(lambda targets, why: snapshot)
    timed_out = "exited with code 1: RuntimeError: [...] Timed out waiting 20000ms for recv operation"
    master = ReplicaStatus(role="master", index=0, state=ReplicaState.FAILED, message=timed_out, finished_at=10.0)
    worker_0 = ReplicaStatus(role="worker", index=0, state=ReplicaState.RUNNING, pid=4241)
    worker_1 = ReplicaStatus(role="worker", index=1, state=ReplicaState.RUNNING, pid=4242)
    replicas = [master, worker_0, worker_1]
    assert timeouts.holds(replicas)
    wait_for(lambda: timeouts.snapshot is not None, "the stacks taken", timeout=10, poll=0.01)
    assert timeouts.holds(replicas)  # worker-0 and worker-1 seen outside, still running: not yet
    worker_0.state, worker_0.finished_at = ReplicaState.FAILED, 10.4
    worker_0.message = (
        "exited with code 1: RuntimeError: [.../tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:58580"
    )
    assert timeouts.holds(replicas)  # worker-1 still runs, SETTLE_S not yet up
    wait_for(lambda: not timeouts.holds(replicas), "the settling time", timeout=SETTLE_S + 5, poll=0.05)
    outcome = Outcome(RunState.FAILED, "ReplicaFailed", "master-0 failed", cause="master-0")
    named = timeouts.name(outcome, replicas, ReplicaNames())
    assert named is not None and named.outcome.cause == "worker-1", named
    assert named.outcome.message.startswith(
        "worker-1 never joined the collective its peers waited in (master-0 timed out"
    )
    assert set(named.missing) == {"worker-1"} and named.cascaded == {"worker-0"}


def test_a_rank_in_another_collective_than_most_of_its_peers_is_named_and_a_tie_names_nobody():
    """Every rank timed out inside a collective (a skipped barrier): the rank away from the line
    most ranks failed at is named; with one rank at each of two lines nobody can be told apart."""
    from jupyter_px.backends.collective_blame import name_missing
    from jupyter_px.backends.outcome import Outcome
    from jupyter_px.runstore import ReplicaState, ReplicaStatus, RunState
    from jupyter_px.runstore.models import ReplicaFailure
    from jupyter_px.topology import ReplicaNames

    def failed(role: str, index: int, line: int, at: float) -> ReplicaStatus:
        said = f"exited with code 1: RuntimeError: Timed out waiting 20000ms for recv operation (cell [4], line {line})"
        failure = ReplicaFailure(exception="RuntimeError: Timed out waiting 20000ms", label="cell [4]", line=line)
        return ReplicaStatus(
            role=role, index=index, state=ReplicaState.FAILED, message=said, failure=failure, finished_at=at
        )

    outcome = Outcome(RunState.FAILED, "ReplicaFailed", "worker-1 failed", cause="worker-1")
    # the rank at fault timed out first, in its own collective
    three = [failed("worker", 1, 10, 1.0), failed("master", 0, 9, 1.1), failed("worker", 0, 9, 1.2)]
    said = name_missing(outcome, three, {}, ReplicaNames())
    assert said is not None and said.outcome.cause == "worker-1", said
    assert said.outcome.message == (
        "worker-1 never joined the collective its peers waited in (master-0 timed out after 20 s); "
        "worker-1 was in another collective than its peers (cell [4] line 10; they waited at cell [4] line 9)"
    )
    assert name_missing(outcome, three[:2], {}, ReplicaNames()) is None
    assert name_missing(outcome, [failed("master", 0, 9, 1.0), failed("worker", 0, 9, 1.1)], {}, ReplicaNames()) is None


def test_the_flight_recorder_is_on_unless_the_run_s_environment_says():
    from jupyter_px.diagnostics import flight_recorder

    for given, expected in (
        ({}, "2000"),
        ({"TORCH_FR_BUFFER_SIZE": "0"}, "0"),
        ({"TORCH_NCCL_TRACE_BUFFER_SIZE": "50"}, None),
    ):
        environ = dict(given)
        flight_recorder.install(environ)
        assert environ.get("TORCH_FR_BUFFER_SIZE") == expected, (given, environ)
    assert flight_recorder.describe({"op": "all_reduce", "seq": 31, "group": "default_pg"}) == "all_reduce #31"
    assert flight_recorder.describe({"op": "barrier", "seq": 4, "group": "tp"}) == "barrier #4 of group tp"
