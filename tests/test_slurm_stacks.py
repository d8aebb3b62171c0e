"""Every rank's stack on a real Slurm cluster (tests/slurm_cluster): the same hang as the local
test (tests/test_stacks.py), each replica on its own node; `jupyter px stacks` reaches them through
`scancel --signal` and reads their dumps from the run directory the nodes share."""

from __future__ import annotations

import pytest
from slurm_support import DEADLINE_S, slurm_cluster_fixture, use_slurm_fixture, wait_for  # noqa: F401
from test_stacks import ASLEEP, IN_ALL_REDUCE, hang_notebook

from jupyter_px.cli import main as cli_main
from jupyter_px.diagnostics import snapshots

pytestmark = pytest.mark.slurm


def test_the_stacks_of_a_hung_slurm_job_show_the_sleeping_rank_apart(use_slurm, px_home, tmp_path, capsys):
    from jupyter_px.api import submit

    resources = {"cpu": 3, "memory": 900}  # one replica per node
    topology = {
        "framework": "pytorch",
        "backend": "slurm",
        "environment": {
            "resources": resources,
            "replicas": {"n_workers": 2, "default_worker": {"resources": resources}},
        },
    }
    run = submit(hang_notebook(tmp_path), topology)
    try:
        # every replica running and past its steps (each logged its last one)
        wait_for(
            lambda: all(r.state.value == "Running" for r in run.status().replicas) and _all_logged(run),
            "every replica past its 30 steps",
            timeout=DEADLINE_S,
            poll=0.5,
        )
        taken = run.stacks()
        groups = {g["summary"]: g["replicas"] for g in taken["groups"]}
        assert groups == {IN_ALL_REDUCE: ["master-0", "worker-0"], ASLEEP: ["worker-1"]}, taken["text"]
        assert cli_main(["stacks", run.run_id, "--last"]) == 0
        assert f"worker-1: {ASLEEP}" in capsys.readouterr().out
    finally:
        run.stop()
    assert snapshots.latest(run.paths.root)["groups"] == taken["groups"]  # kept in the run's own directory


def _all_logged(run) -> bool:
    """Whether every replica's metrics file holds its last step (29)."""
    for role, index in run.replicas():
        path = run.paths.metrics(role, index)
        try:
            if '"step":29,' not in path.read_text():
                return False
        except OSError:
            return False
    return True
