"""`POST px/api/runs/<ref>/replicas/<role>-<index>/kill`, the run view's Kill (issue "Resumable
runs", chaos on purpose), through the real Jupyter server: a local run with `termination:
{maxRetries: 1}` has worker-0 killed, answers what was signalled, and starts its gang again as
attempt 2, which succeeds; a bad signal is a 400 naming the field and the value, a replica the run
does not have a 404, a finished run a 409."""

from __future__ import annotations

import asyncio
import json

import pytest
from local_support import describe, wait
from tornado.httpclient import HTTPClientError
from waiting import wait_for

pytest_plugins = ["pytest_jupyter.jupyter_server"]

STEPS = """
import time
from jupyter_px import tracking
steps = 900 if tracking.get_attempt() == 1 else 3
for i in range(steps):
    tracking.log_metrics(step=i, loss=1.0 / (i + 1))
    time.sleep(0.1)
"""
TOPOLOGY = {"framework": "pytorch", "termination": {"maxRetries": 1}, "environment": {"replicas": {"n_workers": 1}}}


@pytest.fixture
def jp_server_config(px_home):
    """The server with our extension; `px_home` first, so the extension's store is the test's."""
    return {"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}}


async def _kill(jp_fetch, run_id: str, replica: str, body: dict) -> tuple[int, dict]:
    try:
        response = await jp_fetch(
            "px", "api", "runs", run_id, "replicas", replica, "kill", method="POST", body=json.dumps(body)
        )
    except HTTPClientError as error:
        assert error.response is not None
        return error.code, json.loads(error.response.body)
    return response.code, json.loads(response.body)


@pytest.mark.jobs
async def test_a_replica_killed_through_the_api_restarts_the_run_as_its_next_attempt(px_home, tmp_path, jp_fetch):
    from jupyter_px.api import submit

    script = tmp_path / "steps.py"
    script.write_text(STEPS)
    run = await asyncio.to_thread(submit, script, TOPOLOGY)
    await asyncio.to_thread(
        wait_for,
        lambda: (
            all(r.state.value == "Running" for r in run.status().replicas)
            and all(run.paths.metrics(role, 0).exists() for role in ("master", "worker"))
        ),
        "both replicas logging steps",
        timeout=120,
    )
    code, said = await _kill(jp_fetch, run.run_id, "worker-0", {"signal": "NOPE"})
    assert code == 400 and "signal" in said["message"] and "'NOPE'" in said["message"], said
    code, said = await _kill(jp_fetch, run.run_id, "worker-5", {})
    assert code == 404 and said["message"] == f"run {run.run_id} has no replica worker-5", said

    code, said = await _kill(jp_fetch, run.run_id, "worker-0", {"signal": "KILL"})
    assert code == 200, said
    assert said["replica"] == "worker-0" and said["said"].startswith(f"sent SIGKILL to worker-0 of run {run.run_id}")
    status = await asyncio.to_thread(wait, run)
    assert status.state.value == "Succeeded" and status.attempt == 2, describe(run)
    first = status.attempts[0]
    assert (first.failed, first.signal, first.retried) == ("worker-0", "SIGKILL", True), first

    code, said = await _kill(jp_fetch, run.run_id, "worker-0", {})
    assert code == 409 and said["message"] == f"run {run.run_id} has finished (Succeeded): nothing to kill", said
