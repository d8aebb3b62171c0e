"""What the run monitor says: the replica table's wording, slow starts, failed runs, and the
static final view that replaces the widget in the notebook when a run ends.

The monitor is driven in-process over run directories as a backend leaves them (no processes):
what is asserted is what a user reads in the table, the tabs and the saved output.
"""

from __future__ import annotations

import html
import re

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from jupyter_px.presentation import monitor as present
from jupyter_px.presentation.colors import STATE_COLORS
from jupyter_px.presentation.text import memory_text, resources_text
from jupyter_px.runstore import ReplicaState, RunState, RunStore
from jupyter_px.widgets.run_mime import MIMETYPE

TF_PS = {"framework": "tensorflow", "environment": {"replicas": {"n_workers": 2, "n_ps": 1}}}
PYTORCH_2 = {
    "framework": "pytorch",
    "environment": {"replicas": {"n_workers": 2, "default_worker": {"resources": {"memory": {"limits": 4096}}}}},
}


def _monitor(run_id):
    from jupyter_px.api import Run
    from jupyter_px.widgets.run_monitor import RunMonitor

    return RunMonitor(Run(run_id), autostart=False)


def _cells(table_html: str, key: str) -> list[str]:
    row = re.search(rf"<tr data-replica='{key}'.*?</tr>", table_html).group(0)
    return [html.unescape(re.sub(r"<[^>]+>", "", cell)) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)]


def _header() -> list[str]:
    return list(present.TABLE_HEADERS)


def _cell(table_html: str, key: str, column: str) -> str:
    return _cells(table_html, key)[_header().index(column)]


def _set_replicas(run_id: str, **changes) -> None:
    store = RunStore()
    status = store.status(run_id)
    for key, fields in changes.items():
        role, index = key.rsplit("-", 1)
        replica = status.replica(role, int(index))
        for name, value in fields.items():
            setattr(replica, name, value)
    store.write_status(status)


def _finish(run_id: str, state: RunState) -> None:
    store = RunStore()
    status = store.status(run_id)
    status.state = state
    status.finished_at = status.started_at + 10 if status.started_at else None
    store.write_status(status)


# ---- wording -----------------------------------------------------------------------------------


def test_memory_reads_with_units():
    assert memory_text(4096) == "4 GiB" and memory_text(512) == "512 MiB" and memory_text(1536) == "1.5 GiB"
    from jupyter_px.topology import parse_topology

    worker = parse_topology(PYTORCH_2).replica("worker", 0)
    assert resources_text(worker.resources) == "mem up to 4 GiB"
    spec = parse_topology(
        {"framework": "pytorch", "environment": {"resources": {"cpu": {"requests": 1, "limits": 2}, "memory": 512}}}
    ).replica("master", 0)
    assert resources_text(spec.resources) == "cpu 1\u20132, mem 512 MiB"


def test_table_separates_reason_from_details_and_step(synthetic_run):
    synthetic_run(
        "tbl-1",
        PYTORCH_2,
        state="Failed",
        replica_states={"master-0": "Stopped", "worker-0": "Failed", "worker-1": "Stopped"},
        metric_points=22,
        total_steps=600,
    )
    _set_replicas(
        "tbl-1",
        **{
            "worker-0": {"reason": "Error", "message": "exited with code 3", "exit_code": 3},
            "master-0": {"reason": "StoppedByRun", "message": "stopped because worker-0 failed"},
            "worker-1": {"reason": "StoppedByUser", "message": "stopped on request"},
        },
    )
    table = _monitor("tbl-1").table.value
    assert _cell(table, "worker-0", "reason") == "error: exited with code 3"
    assert _cell(table, "worker-0", "exit code") == "3"
    assert _cell(table, "master-0", "reason") == "stopped because worker-0 failed"
    assert _cell(table, "worker-1", "reason") == "stopped on request"
    assert _cell(table, "worker-1", "step") == "22/600"  # its own cell, not run into the reason
    assert _cell(table, "worker-0", "resources") == "mem up to 4 GiB"


def test_tensorflow_chief_and_servers_stopped_when_the_run_succeeded(synthetic_run):
    synthetic_run("tf-1", TF_PS, state="Succeeded")
    stopped = {"reason": "StoppedByRun", "message": "still running when the run succeeded; stopped", "exit_code": 143}
    _set_replicas("tf-1", **{"ps-0": stopped, "worker-0": stopped, "worker-1": stopped})
    monitor = _monitor("tf-1")
    table = monitor.table.value
    assert _cell(table, "master-0", "replica") == "chief"  # what TF_CONFIG calls it
    assert _cell(table, "master-0", "state") == "Succeeded"
    for key in ("ps-0", "worker-0", "worker-1"):
        assert _cell(table, key, "state") == "stopped when the run succeeded"
        assert _cell(table, key, "exit code") == "-"  # not 143
        assert _cell(table, key, "reason") == ""
    assert monitor.logs.selector.titles[0] == "chief"
    assert "4 succeeded of 4" in monitor.replica_label.value

    synthetic_run("tf-2", {**TF_PS, "environment": {**TF_PS["environment"], "tf_master_type": "master"}})
    assert _cell(_monitor("tf-2").table.value, "master-0", "replica") == "master-0"


# ---- slow starts -------------------------------------------------------------------------------


def test_running_replicas_without_output_are_starting_then_show_their_last_line(synthetic_run, px_home):
    root = synthetic_run("slow-1", PYTORCH_2, log_lines=0)
    monitor = _monitor("slow-1")
    assert {_cell(monitor.table.value, k, "state") for k in ("master-0", "worker-0", "worker-1")} == {"starting"}
    assert monitor.replica_label.value == "3 starting of 3"

    (root / "logs" / "worker-0.log").write_text("importing tensorflow\nconnecting to ps-0:2222\n\n")
    (root / "logs" / "worker-1.log").write_text("epoch 1\r 10%\r 55%")  # a progress bar: its latest state
    monitor.refresh()
    table = monitor.table.value
    assert _cell(table, "worker-0", "state") == "Running"
    assert _cell(table, "worker-0", "last output") == "connecting to ps-0:2222"
    assert _cell(table, "worker-1", "last output") == "55%"
    assert _cell(table, "master-0", "state") == "starting"
    assert monitor.replica_label.value == "1 starting, 2 running of 3"


def test_a_metric_ends_the_starting_phase(synthetic_run):
    synthetic_run("slow-2", PYTORCH_2, log_lines=0, metric_points=3)
    table = _monitor("slow-2").table.value
    assert _cell(table, "worker-0", "state") == "Running" and _cell(table, "worker-0", "step") == "step 2"


# ---- failed runs -------------------------------------------------------------------------------

TRACEBACK = (
    "epoch 1 ok\n"
    "Traceback (most recent call last):\n"
    '  File "main.py", line 3, in <module>\n'
    "    train()\n"
    "ValueError: loss is nan\n"
)


def test_failed_run_is_red_and_opens_the_failing_replicas_log(synthetic_run):
    root = synthetic_run("bad-1", PYTORCH_2)
    monitor = _monitor("bad-1")
    assert monitor.tabs.selected_index == 0 and monitor.replica_bar.style.bar_color == STATE_COLORS["Running"]
    (root / "logs" / "worker-1.log").write_text(TRACEBACK)
    _set_replicas(
        "bad-1",
        **{
            "worker-1": {"state": ReplicaState.FAILED, "reason": "Error", "message": "exited with code 1"},
            "master-0": {"state": ReplicaState.STOPPED, "reason": "StoppedByRun"},
            "worker-0": {"state": ReplicaState.STOPPED, "reason": "StoppedByRun"},
        },
    )
    _finish("bad-1", RunState.FAILED)
    monitor.refresh()
    assert monitor.replica_bar.style.bar_color == STATE_COLORS["Failed"]
    assert monitor.replica_bar.value == monitor.replica_bar.max  # a full red bar, not an empty one
    assert monitor.tabs.selected_index == 1  # Logs
    assert monitor.logs.selected() == 2  # worker-1
    shown = monitor.logs.views[2].value
    errors = [html.unescape(m) for m in re.findall(r"<span class='px-log-error'[^>]*>(.*?)</span>", shown)]
    assert errors == [
        "Traceback (most recent call last):",
        '  File "main.py", line 3, in <module>',
        "    train()",
        "ValueError: loss is nan",
    ]
    assert "epoch 1 ok" in shown and "epoch 1 ok" not in "".join(errors)
    assert monitor.stop_button.disabled and monitor.stop_button.button_style == ""


def test_stop_button_is_neutral_once_the_run_ended(synthetic_run):
    synthetic_run("btn-1", PYTORCH_2)
    monitor = _monitor("btn-1")
    assert not monitor.stop_button.disabled and monitor.stop_button.button_style == "danger"
    _finish("btn-1", RunState.SUCCEEDED)
    monitor.refresh()
    assert monitor.stop_button.disabled and monitor.stop_button.button_style == ""


# ---- the final view ----------------------------------------------------------------------------


@pytest.fixture
def shell():
    return InteractiveShell.instance()


def test_the_output_becomes_the_final_state_when_the_run_ends(synthetic_run, shell):
    root = synthetic_run("fin-1", PYTORCH_2, metric_points=12, total_steps=12)
    with capture_output() as captured:
        monitor = _monitor("fin-1")
        monitor.show()
        monitor.refresh()  # still running: no update
        assert not monitor.final_shown
        (root / "logs" / "worker-1.log").write_text(TRACEBACK)
        _set_replicas("fin-1", **{"worker-1": {"state": ReplicaState.FAILED, "reason": "Error"}})
        _finish("fin-1", RunState.FAILED)
        monitor.refresh()
        monitor.refresh()  # once only
    first, *updates = captured.outputs
    assert "application/vnd.jupyter.widget-view+json" in first.data
    assert "Pending" not in first.data["text/plain"] and "live monitor" in first.data["text/plain"]
    (update,) = updates
    assert update.update and update.transient["display_id"] == first.transient["display_id"]
    # no widget: a saved notebook shows this; the run's mimetype lets the extension show it as it is now
    assert set(update.data) == {"text/html", "text/plain", MIMETYPE}
    assert first.data[MIMETYPE]["run_id"] == "fin-1" and first.data[MIMETYPE]["final"] is False
    payload = update.data[MIMETYPE]
    assert (payload["run_id"], payload["state"], payload["final"], payload["tensorboard"]) == (
        "fin-1",
        "Failed",
        True,
        False,
    )
    assert {"key": "worker-1", "state": "Failed"} in payload["replicas"]
    page, text = update.data["text/html"], update.data["text/plain"]
    assert "data-state='Failed'" in page and "px-final-bar" in page
    assert set(re.findall(r"data-replica='([^']+)' data-state='([^']+)'", page)) >= {("worker-1", "Failed")}
    # the final values, not a second drawing of the plot (plots are plotly's, the live views')
    assert "<svg" not in page and "final metrics" in page and page.count("<td") >= 6 * 4
    assert re.search(r"<details class='px-final-log' data-replica='worker-1' open>", page)
    assert "ValueError: loss is nan" in page and "%px_attach fin-1" in page
    assert text.startswith("run fin-1 Failed") and "worker-1" in text and "loss" in text


def test_a_monitor_shown_after_the_end_stays_live(synthetic_run, shell):
    synthetic_run("fin-2", PYTORCH_2, state="Succeeded")
    with capture_output() as captured:
        monitor = _monitor("fin-2")
        monitor.show()
        monitor.refresh()
    assert len(captured.outputs) == 1 and not monitor.final_shown  # %px_attach shows the widget itself
    view = monitor.final_view()
    assert present.final_text(view).startswith("run fin-2 Succeeded")


def test_a_failed_tensorflow_runs_final_view_calls_its_master_chief(synthetic_run, shell):
    """The output that replaces the monitor names replicas as the job does, as the CLI does."""
    synthetic_run("fin-tf", TF_PS, state="Failed", replica_states={"master-0": "Failed"})
    monitor = _monitor("fin-tf")
    text = present.final_text(monitor.final_view())
    assert text.startswith("run fin-tf Failed") and "  chief Failed" in text, text
    assert "master-0" not in text.split("\n\n")[0], text
