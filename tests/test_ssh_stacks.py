"""Every rank's stack on the SSH backend's hosts (real sshd servers, tests/ssh_hosts.py): the same
hangs as locally (tests/test_stacks.py, tests/hang_kinds.py), the replicas spread over host-a and
host-b. `jupyter px stacks` asks each host over its ssh connection (`stack_request` run there);
the follower marks the replicas Stalled, takes the stacks once when the stall begins, and when a
collective times out names the rank its peers waited for."""

from __future__ import annotations

import hang_kinds
import pytest
from ssh_hosts import processes_of, ssh_hosts_fixture, use_ssh_fixture  # noqa: F401 (fixtures)
from test_hang_kinds import TOPOLOGY as HANG_TOPOLOGY
from test_stacks import ASLEEP, IN_ALL_REDUCE, hang_notebook
from waiting import wait_for

from jupyter_px.cli import main as cli_main

pytestmark = pytest.mark.ssh

DEADLINE_S = 240.0
TOPOLOGY = {**HANG_TOPOLOGY, "backend": "ssh"}


def test_a_hung_run_on_hosts_without_the_run_store_shows_its_stacks_and_names_the_sleeping_rank(
    use_ssh, px_home, tmp_path, monkeypatch, capsys
):
    """Each host has its own copy of the run: the frames it saw there are read as the run's own
    code, by notebook cell, and the failure records of the ranks that timed out come back in
    their output, so the run names worker-1 with their places known."""
    from jupyter_px.api import submit

    monkeypatch.setenv("PX_SSH_SHARED_FILESYSTEM", "no")
    run = submit(hang_notebook(tmp_path), TOPOLOGY)
    expected = {IN_ALL_REDUCE: ["master-0", "worker-0"], ASLEEP: ["worker-1"]}
    seen: list[dict] = []

    def hung():
        seen.append(run.stacks())
        return seen[-1] if hang_kinds.groups(seen[-1]) == expected else None

    try:
        try:
            taken = wait_for(hung, "two ranks in all_reduce and one asleep", timeout=DEADLINE_S, poll=1)
        except AssertionError as error:
            raise AssertionError(f"{error}; the last stacks: {seen[-1]['text'] if seen else None}") from None
        worker = next(r for r in taken["replicas"] if r["key"] == "worker-1")
        frame = next(t for t in worker["threads"] if t["main"])["frames"][0]
        assert frame["file"].startswith(str(run.paths.root)), frame  # the host's copy read as the run's code
        assert cli_main(["stacks", run.run_id, "--last"]) == 0
        assert f"worker-1: {ASLEEP}" in capsys.readouterr().out
        status = run.wait(timeout=DEADLINE_S)
    finally:
        run.stop()
    assert status.reason == "CollectiveTimeout", status
    # (then a note that host-b's copy could not be sent back: on this machine both hosts' copies
    # are one folder, which host-a's copy-back removed first)
    assert f"; worker-1 was at {ASLEEP}" in status.message, status.message
    waited = [r for r in status.replicas if r.key != "worker-1" and r.failure is not None]
    assert waited and all((r.failure.label, r.failure.line) == ("cell [4]", 5) for r in waited), status.replicas
    assert not processes_of(run.run_id)


def test_a_deadlocked_dataloader_and_a_skipped_barrier_are_seen_and_named_on_ssh_hosts(
    use_ssh, px_home, tmp_path, monkeypatch
):
    from jupyter_px.api import submit

    monkeypatch.setenv("PX_STALL_AFTER_S", "4")
    monkeypatch.setenv("PX_SSH_HOSTS", "host-a slots=3,host-b slots=3")  # both runs at once
    runs = {hang: submit(hang_kinds.notebook(tmp_path, hang), TOPOLOGY) for hang in hang_kinds.HANGS}
    try:
        for hang, run in runs.items():
            hang_kinds.stacks_of_the_hang(run, hang, timeout=DEADLINE_S)
            stalled = wait_for(
                lambda run=run: all(r.stalled_since for r in run.status().replicas), "Stalled marks", timeout=30
            )
            assert stalled
        for hang, run in runs.items():
            hang_kinds.assert_named(run.wait(timeout=DEADLINE_S), hang)
    finally:
        for run in runs.values():
            run.stop()
