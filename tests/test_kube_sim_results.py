"""A function's results on Kubernetes, where the replica's log is the results channel: the pod's
run directory is its read-only ConfigMap, so the runner writes each outcome as a signed
`@px-result` line and the follower streams it into the store. A line the replica's code prints
(a forgery, or data that holds one) is neither returned nor unpickled."""

from __future__ import annotations

import pytest
from kube_sim_support import backend_cluster
from kubernetes_support import DEADLINE_S
from test_functions import forged_line

import jupyter_px

pytestmark = pytest.mark.kube


def test_a_forged_result_line_in_a_pods_log_is_neither_returned_nor_unpickled(tmp_path, monkeypatch, px_home):
    planted = tmp_path / "planted"
    lines = [forged_line("master-0", planted)] * 3

    def prints_forgeries(lines: list[str], leave_early: bool):
        import atexit
        import os
        import sys

        print("a dataset's text: " + lines[0], flush=True)
        print(lines[1], flush=True)
        atexit.register(print, lines[2], flush=True)
        if leave_early:
            sys.stdout.flush()
            os._exit(0)
        return {"genuine": [1.5, "two"]}

    with backend_cluster(tmp_path, monkeypatch, px_home):
        topology = {"framework": "pytorch", "backend": "native"}
        run = jupyter_px.submit(prints_forgeries, topology, args=(lines, False))
        early = jupyter_px.submit(prints_forgeries, topology, args=(lines, True))
        assert run.results(timeout=DEADLINE_S) == [{"genuine": [1.5, "two"]}]
        assert early.results(timeout=DEADLINE_S) == [None]
        assert "@px-result master-0" in early.logs("master", 0)
        assert not (run.paths.root / "results").exists()  # it did come through the log
    assert not planted.exists()
