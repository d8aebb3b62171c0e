"""Reads never act: across every read surface, a run whose owner is gone stays exactly as it was.

A real local run loses its supervisor and its watchdog (SIGKILL), so a reconcile *would* record
it Lost and kill what it left behind (a grandchild in a session of its own). Then every read
runs: the REST GETs (the runs list, also answered from its ETag, one run, logs, metrics), the
CLI (`runs`, `status`, `logs`), the magics (`%px_runs`, `%px_status`, `%px_logs`), the run
monitor's refresh and `repr(run)`. The run directory (every file's name, size and mtime) and the
run's processes are the same afterwards, and each read said that the supervisor is gone.
Only then does an explicit keeper (`Run.wait`) settle the run.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import psutil
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from local_support import describe, outputs, run_processes, submit, supervisor_and_watchdog, wait_for
from px_cli import px
from tornado.httpclient import HTTPClientError

#: Each real job runs twice, cold and warm (`launch`, tests/conftest.py).
pytestmark = [pytest.mark.usefixtures("launch")]

pytest_plugins = ["pytest_jupyter.jupyter_server"]

ONE_WORKER = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}


@pytest.fixture
def jp_server_config(px_home):
    """The server with our extension, its own keeper off: this test is about what reads do."""
    return {"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}, "JupyterPxApp": {"keeper_interval": 0}}


def _directory(root: Path) -> dict[str, tuple[int, int]]:
    """{relative path: (size, mtime_ns)} of everything under a run directory."""
    out = {}
    for path in sorted(root.rglob("*")):
        stat = path.lstat()
        out[str(path.relative_to(root))] = (stat.st_size if path.is_file() else 0, stat.st_mtime_ns)
    return out


def _processes(run_id: str) -> set[tuple[int, float]]:
    """The run's live processes, by pid and create time (a reused pid is another process)."""
    return {(p.pid, p.create_time()) for p in run_processes(run_id)}


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _magic(shell: InteractiveShell, line: str) -> str:
    """A line magic's stdout, stderr and text outputs together."""
    with capture_output() as captured:
        result = shell.run_cell(line, store_history=False)
    assert result.success, f"{line}: {result.error_in_exec!r}\n{captured.stderr}"
    shown = [output.data.get("text/plain", "") for output in captured.outputs]
    return captured.stdout + captured.stderr + "".join(shown)


@pytest.mark.jobs
async def test_no_read_surface_writes_a_file_or_touches_a_process(jp_fetch, px_home, tmp_path, monkeypatch):
    from jupyter_px.widgets.run_monitor import RunMonitor

    run = submit("faults.py", ONE_WORKER, args=["sleep"])
    seen = wait_for(lambda: len(outputs(run)) == 2 and outputs(run), what="every replica to start")
    status = run.status()
    replica_pids = {r.pid for r in status.replicas}
    supervisor, (watchdog,) = supervisor_and_watchdog(run)
    os.kill(watchdog.pid, signal.SIGKILL)
    os.kill(supervisor.pid, signal.SIGKILL)
    escaped = [pid for data in seen.values() for pid in data["children"][1:]]  # in sessions of their own
    # The replicas die with their supervisor (PR_SET_PDEATHSIG); what they started in a session of
    # its own lives on, and only a reconcile would kill it.
    wait_for(lambda: not any(_alive(pid) for pid in replica_pids), what="the replicas to die")
    assert escaped and all(_alive(pid) for pid in escaped), describe(run)
    problem = f"the supervisor (pid {supervisor.pid}) is gone while the run was Running"
    before_files, before_processes = _directory(run.paths.root), _processes(run.run_id)
    assert {pid for pid, _ in before_processes} >= set(escaped)

    # REST: the runs list, then the same list answered from its ETag; one run; logs; metrics.
    listed = await jp_fetch("px/api/runs")
    body = json.loads(listed.body)["runs"][0]
    assert (body["state"], body["owner_problem"]) == ("Running", problem)
    with pytest.raises(HTTPClientError) as unchanged:
        await jp_fetch("px/api/runs", headers={"If-None-Match": listed.headers["Etag"]})
    assert unchanged.value.code == 304
    detail = json.loads((await jp_fetch(f"px/api/runs/{run.run_id}")).body)
    assert (detail["state"], detail["owner_problem"]) == ("Running", problem)
    logs = json.loads((await jp_fetch(f"px/api/runs/{run.run_id}/logs", params={"role": "master"})).body)
    assert "master-0" in logs["text"] and not logs["finished"]
    metrics = json.loads((await jp_fetch(f"px/api/runs/{run.run_id}/metrics")).body)
    assert metrics["run_id"] == run.run_id and not metrics["finished"]

    # The CLI's reads.
    runs_json = json.loads(px("runs", "--json").stdout)
    assert (runs_json[0]["state"], runs_json[0]["owner_problem"]) == ("Running", problem)
    shown = px("status", run.run_id)
    assert shown.stdout.startswith(f"run {run.run_id}: Running") and problem in shown.stderr
    printed = px("logs", run.run_id)
    assert "[master.0] master-0: waiting" in printed.stdout

    # The magics' reads.
    monkeypatch.chdir(tmp_path)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "jupyter_px")
    assert problem in _magic(shell, "%px_runs")
    assert problem in _magic(shell, f"%px_status {run.run_id}")
    assert "master-0: waiting" in _magic(shell, f"%px_logs {run.run_id} --role master")

    # The monitor (its constructor refreshes too) and the run's repr.
    monitor = RunMonitor(run, autostart=False)
    assert monitor.refresh().state.value == "Running" and problem in monitor.header.value
    monitor.close()
    assert repr(run) == f"<Run {run.run_id} Running; {problem}>"

    assert _directory(run.paths.root) == before_files  # not one file written, renamed or touched
    assert _processes(run.run_id) == before_processes  # and the leftover still lives

    status = run.wait(timeout=60)  # the explicit keeper: records Lost and kills the leftovers
    assert status.state.value == "Lost" and problem in status.message, describe(run)
    wait_for(lambda: not run_processes(run.run_id), timeout=20, what="the leftovers to be killed")
