"""The reference workloads (examples/workloads/) at their tiny size across the sshd hosts
(tests/ssh_hosts.py): each runs to its end on the SSH backend as on the local one, every replica
prints its `RESULT {json}` line (a synchronous workload's final loss is the same on every rank,
all-reduced), every step is in the store's metrics, and nothing is left running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from ssh_hosts import processes_of, ssh_hosts_fixture, use_ssh_fixture  # noqa: F401 (fixtures)

from jupyter_px.service import RunService, ScriptFile, Submission

pytestmark = pytest.mark.ssh

WORKLOADS = Path(__file__).resolve().parents[1] / "examples" / "workloads"
DEADLINE_S = 420.0
#: script, topology, optimizer steps at the tiny size, whether its final loss is all-reduced
CASES = [
    ("torch_cnn.py", "torch.yaml", 12, True),
    ("torch_lm.py", "torch.yaml", 15, True),
    ("tf_mwms.py", "tf_mwms.yaml", 12, True),
    ("tf_ps.py", "tf_ps.yaml", 12, False),
]


def _result(log: str) -> dict:
    lines = [line for line in log.splitlines() if line.startswith("RESULT ")]
    assert lines, log[-2000:]
    return json.loads(lines[-1][len("RESULT ") :])


@pytest.mark.parametrize(("script", "topology", "steps", "synchronous"), CASES, ids=[c[0][:-3] for c in CASES])
def test_a_workload_at_its_tiny_size_runs_across_the_hosts(use_ssh, px_home, script, topology, steps, synchronous):
    spec = yaml.safe_load((WORKLOADS / topology).read_text())
    spec["backend"] = "ssh"
    service = RunService()
    submission = Submission(
        ScriptFile(WORKLOADS / script), spec, args=("--size", "tiny", "--seed", "3"), name=script[:-3]
    )
    run_id = service.submit(submission)
    status = service.wait(run_id, timeout=DEADLINE_S)
    logs = {r.key: service.log_tail(run_id, r.role, r.index) for r in status.replicas}
    assert status.state.value == "Succeeded", (status, {k: v[-1500:] for k, v in logs.items()})
    trainers = [r for r in status.replicas if r.role in ("master", "worker")]
    results = {r.key: _result(logs[r.key]) for r in trainers if r.role == "master" or synchronous}
    if synchronous:  # all-reduced: the same final loss on every rank
        losses = {result["eval_loss"] for result in results.values()}
        assert len(losses) == 1, results
    metrics = service.metrics(run_id)
    for replica in trainers if synchronous else [r for r in trainers if r.role == "master"]:
        logged = metrics[replica.key]
        longest = max(len(series.steps) for series in logged.values())
        assert longest >= steps, (replica.key, {name: len(s.steps) for name, s in logged.items()})
    assert not processes_of(run_id)
