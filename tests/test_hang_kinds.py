"""A DataLoader whose worker deadlocked and a skipped barrier, as local runs (tests/hang_kinds.py):
the stacks the supervisor takes on the stall show worker-1 apart, and the collective timeout
ends the run naming worker-1. Both runs go side by side in one test (each waits on its timeout)."""

from __future__ import annotations

import json

import pytest
from hang_kinds import HANGS, assert_named, expected, groups, notebook
from local_support import RUN_TIMEOUT_S, describe, wait
from waiting import wait_for

from jupyter_px.diagnostics import snapshots

#: Stalled 4 s after the last step; the collectives give up 20 s after the hang began.
TOPOLOGY = {
    "framework": "pytorch",
    "termination": {"collectiveTimeout": 20},
    "environment": {"replicas": {"n_workers": 2}},
}


def stall_snapshot(run) -> dict | None:
    for path in snapshots.kept(run.paths.root):
        taken = json.loads(path.read_text(encoding="utf-8"))
        if taken["why"].startswith("stalled: "):
            return taken
    return None


@pytest.mark.jobs
def test_a_deadlocked_dataloader_and_a_skipped_barrier_are_seen_and_named(px_home, tmp_path, monkeypatch, launch):
    from jupyter_px.api import submit

    monkeypatch.setenv("PX_STALL_AFTER_S", "4")
    runs = {hang: submit(notebook(tmp_path, hang), TOPOLOGY) for hang in HANGS}
    try:
        for hang, run in runs.items():
            taken = wait_for(lambda run=run: stall_snapshot(run), f"the {hang.name} stall's stacks", timeout=120)
            assert groups(taken) == expected(hang), taken["text"]
        for hang, run in runs.items():
            status = wait(run, RUN_TIMEOUT_S)
            assert_named(status, hang), describe(run)
    finally:
        for run in runs.values():
            run.stop()
