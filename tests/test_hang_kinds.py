"""A DataLoader whose worker deadlocked and a skipped barrier, as local runs (tests/hang_kinds.py):
the stacks the supervisor takes on the stall show worker-1 apart, and the collective timeout
ends the run naming worker-1. Both runs go side by side in one test (each waits on its timeout)."""

from __future__ import annotations

import pytest
from hang_kinds import COLLECTIVE_TIMEOUT_S, HANGS, assert_named, notebook, stacks_of_the_hang
from local_support import RUN_TIMEOUT_S, describe, wait

#: Stalled 4 s after the last step; the collectives give up a minute after the hang began.
TOPOLOGY = {
    "framework": "pytorch",
    "termination": {"collectiveTimeout": COLLECTIVE_TIMEOUT_S},
    "environment": {"replicas": {"n_workers": 2}},
}


@pytest.mark.jobs
def test_a_deadlocked_dataloader_and_a_skipped_barrier_are_seen_and_named(px_home, tmp_path, monkeypatch, launch):
    from jupyter_px.api import submit

    monkeypatch.setenv("PX_STALL_AFTER_S", "4")
    runs = {hang: submit(notebook(tmp_path, hang), TOPOLOGY) for hang in HANGS}
    try:
        for hang, run in runs.items():
            stacks_of_the_hang(run, hang, timeout=120)
        for hang, run in runs.items():
            status = wait(run, RUN_TIMEOUT_S)
            assert_named(status, hang), describe(run)
    finally:
        for run in runs.values():
            run.stop()
