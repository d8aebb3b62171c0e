"""The run monitor, driven in-process (ipywidgets works without a kernel: the widgets keep their
state, nothing is sent). The topology form's tests are in test_topology_form.py."""

from __future__ import annotations

import os
import re

import pytest
from conftest import write_metrics
from plot_config_support import assert_private

from jupyter_px.presentation.colors import STATE_COLORS
from jupyter_px.topology.registry import topologies


@pytest.fixture(autouse=True)
def _private_store(px_home):
    topologies.clear()
    yield
    topologies.clear()


# ---- RunMonitor -----------------------------------------------------------------------------

PYTORCH_2 = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}}


def _monitor(run_id):
    from jupyter_px.api import Run
    from jupyter_px.widgets.run_monitor import RunMonitor

    return RunMonitor(Run(run_id), autostart=False)


def _row_states(table_html: str) -> dict[str, str]:
    return dict(re.findall(r"data-replica='([^']+)' data-state='([^']+)'", table_html))


def test_monitor_shows_replicas_progress_logs_and_metrics(synthetic_run):
    synthetic_run("mon-1", PYTORCH_2, metric_points=30, total_steps=60)
    monitor = _monitor("mon-1")
    assert "mon-1" in monitor.header.value and "local" in monitor.header.value
    assert _row_states(monitor.table.value) == {"master-0": "Running", "worker-0": "Running", "worker-1": "Running"}
    assert monitor.replica_bar.max == 3 and monitor.replica_bar.value == 3
    assert monitor.step_row.layout.display == "flex"
    assert monitor.step_bar.value == pytest.approx(0.5)
    assert "master-0 line 9" in monitor.logs.views[0].value
    assert monitor.plot is not None and monitor.plot.metric == "loss"  # preferred when there is one
    assert monitor.plot.point_count() == 90
    assert not monitor.finished


def test_the_live_plot_reaches_the_browser_whole_in_its_first_message(monkeypatch):
    """plotly.js draws a widget's view once, from the state it has when it renders: the comm's
    open message must already hold the theme and the config (a later update can come too late)."""
    import comm

    from jupyter_px.presentation.plot_theme import GREY
    from jupyter_px.widgets.plots import LivePlot

    opened: list[dict] = []  # `comm.create_comm` is the hook a kernel sets; this one keeps each open

    def record(**kwargs):
        opened.append(kwargs["data"]["state"])
        return real(**kwargs)

    real = comm.create_comm
    monkeypatch.setattr(comm, "create_comm", record)
    LivePlot()
    first = next(state for state in opened if "_widget_layout" in state)
    assert first["_widget_layout"]["font"] == {"color": GREY}
    assert first["_widget_layout"]["paper_bgcolor"] == "rgba(0,0,0,0)"
    assert_private(first["_config"])


def test_monitor_reads_only_new_log_bytes_and_keeps_a_bounded_tail(synthetic_run, px_home):
    from jupyter_px.runstore.log_readers import LOG_TAIL_BYTES

    root = synthetic_run("mon-2", PYTORCH_2, log_lines=0)
    monitor = _monitor("mon-2")
    log = root / "logs" / "master-0.log"
    with open(log, "w") as handle:
        handle.write("x" * 200_000 + "\nfirst\n")
    monitor.refresh()
    tail = monitor.logs.tails[0]
    assert len(tail.text) <= LOG_TAIL_BYTES
    assert tail.text.endswith("first\n") and tail.offset == os.path.getsize(log)
    with open(log, "a") as handle:
        handle.write("second\n")
    monitor.refresh()
    assert tail.text.endswith("first\nsecond\n")
    assert tail.offset == os.path.getsize(log)


def test_monitor_final_refresh_keeps_final_state_in_widget_state(synthetic_run, px_home):
    from jupyter_px.runstore import ReplicaState, RunState, RunStore

    synthetic_run("mon-3", PYTORCH_2, metric_points=5)
    monitor = _monitor("mon-3")
    store = RunStore()
    status = store.status("mon-3")
    status.state = RunState.SUCCEEDED
    for replica in status.replicas:
        replica.state, replica.exit_code = ReplicaState.SUCCEEDED, 0
    store.write_status(status)
    write_metrics(store.paths("mon-3").metrics("worker", 1), range(5, 8))

    monitor.refresh()
    assert monitor.finished and monitor.stop_button.disabled
    state = monitor.table.get_state()
    assert set(_row_states(state["value"]).values()) == {"Succeeded"}
    assert "px-state-Succeeded" in monitor.get_state()["_dom_classes"]
    saved = monitor.plot.figure.get_state()["_widget_data"]
    assert sum(len(trace["x"]) for trace in saved) == 18  # 5 + 5 + 8 points, plain lists
    assert_private(monitor.plot.figure.get_state()["_config"])  # what the browser gets: no cloud link
    # each replica's log is in its tab after the end
    assert all("line 9" in view.value for view in monitor.logs.views)


def test_monitor_background_updates_stop_themselves_after_the_final_refresh(synthetic_run, px_home):
    from local_support import wait_for

    from jupyter_px.api import Run
    from jupyter_px.runstore import ReplicaState, RunState, RunStore
    from jupyter_px.widgets.run_monitor import RunMonitor

    synthetic_run("mon-4", PYTORCH_2, state="Succeeded")
    finished = RunMonitor(Run("mon-4"), interval=0.05)
    assert finished.finished and not finished.updating  # the first refresh saw the end: no updates needed

    synthetic_run("mon-5", PYTORCH_2)
    running = RunMonitor(Run("mon-5"), interval=0.05)
    assert running.updating and not running.finished
    store = RunStore()
    status = store.status("mon-5")
    status.state = RunState.SUCCEEDED
    for replica in status.replicas:
        replica.state, replica.exit_code = ReplicaState.SUCCEEDED, 0
    store.write_status(status)
    wait_for(lambda: not running.updating, timeout=30, what="the monitor's updates to end by themselves")
    assert running.finished and running.stop_button.disabled  # after the final refresh
    assert set(_row_states(running.table.value).values()) == {"Succeeded"}

    synthetic_run("mon-8", PYTORCH_2)
    stopped = RunMonitor(Run("mon-8"), interval=0.05)
    stopped.stop_updates()
    assert not stopped.updating and not stopped.finished


def test_monitor_neither_builds_nor_refreshes_nor_reprs_by_reconciling(synthetic_run):
    """The monitor only reads: a run whose supervisor is gone stays as recorded (its status file
    untouched, from the constructor's first refresh on) and the header says the supervisor is
    gone; the Stop button, an action, is what settles it."""
    import subprocess

    from jupyter_px.runstore import RunStore
    from jupyter_px.runstore.models import RunOwner

    synthetic_run("mon-9", PYTORCH_2)
    store = RunStore()
    status = store.status("mon-9")
    dead = subprocess.Popen(["true"])
    dead.wait()
    status.owner = RunOwner(kind="supervisor", pid=dead.pid)  # gone; the status still says Running
    store.write_status(status)
    status_file = store.paths("mon-9").status
    before = (status_file.read_bytes(), status_file.stat().st_mtime_ns)
    monitor = _monitor("mon-9")  # the constructor refreshes once
    assert monitor.refresh().state.value == "Running" and not monitor.finished
    assert repr(monitor).startswith("<RunMonitor mon-9: Running")
    assert "px-state-Running" in monitor.get_state()["_dom_classes"]
    assert f"the supervisor (pid {dead.pid}) is gone" in monitor.header.value
    assert (status_file.read_bytes(), status_file.stat().st_mtime_ns) == before

    monitor.stop_run()  # the Stop button acts: the backend finds the supervisor gone
    assert monitor.last_status is not None and monitor.last_status.state.value == "Lost" and monitor.finished
    assert "px-owner-problem" not in monitor.header.value  # a finished run has no owner to miss


def test_monitor_with_many_replicas_uses_one_log_view(synthetic_run):
    synthetic_run("mon-6", {"framework": "pytorch", "environment": {"replicas": {"n_workers": 40}}}, log_lines=2)
    monitor = _monitor("mon-6")
    assert not monitor.logs.tabs and len(monitor.logs.views) == 1
    monitor.logs.selector.value = 5  # worker-4
    assert "worker-4 line 1" in monitor.logs.views[0].value
    assert len(_row_states(monitor.table.value)) == 41


def test_monitor_shows_failed_replica_reason(synthetic_run):
    from jupyter_px.runstore import RunStore

    synthetic_run(
        "mon-7",
        PYTORCH_2,
        state="Failed",
        replica_states={"worker-1": "Failed", "master-0": "Stopped", "worker-0": "Stopped"},
    )
    store = RunStore()
    status = store.status("mon-7")
    failed = status.replica("worker", 1)
    failed.reason, failed.message = "OOMKilled", "memory 700 MiB over its limit <512 MiB>"
    store.write_status(status)
    monitor = _monitor("mon-7")
    assert monitor.finished
    assert _row_states(monitor.table.value)["worker-1"] == "Failed"
    row = re.search(r"<tr data-replica='worker-1'.*?</tr>", monitor.table.value).group(0)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    assert "out of memory: memory 700 MiB over its limit &lt;512 MiB&gt;" in cells  # a cell of its own
    assert monitor.bar_state == "Failed" and monitor.replica_bar.style.bar_color == STATE_COLORS["Failed"]


def test_monitor_tensorboard_button_embeds_the_proxied_url(synthetic_run, px_home, monkeypatch):
    """A real TensorBoard, started for the run and embedded under the server's base URL."""
    from jupyter_px import tensorboard

    monkeypatch.delenv("TENSORBOARD_PROXY_URL", raising=False)
    monkeypatch.setenv("JUPYTER_PX_BASE_URL", "/user/someone/")
    synthetic_run("mon-tb", PYTORCH_2, state="Succeeded")
    monitor = _monitor("mon-tb")
    try:
        monitor.show_tensorboard(background=False)
        match = re.search(r"<iframe src='(/user/someone/px/tensorboard/(\d+)/)'", monitor.tensorboard_view.value)
        assert match, monitor.tensorboard_view.value
        (server,) = tensorboard.list_servers(home=px_home)
        assert server.port == int(match.group(2))
        assert not monitor.tensorboard_button.disabled
    finally:
        for server in tensorboard.list_servers(home=px_home):
            tensorboard.stop(server, home=px_home)
