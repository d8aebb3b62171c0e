"""The monitor's buttons: Stop asks before it acts (as the sidebar's does), and the buttons have a
row of their own at fixed widths, so the header's ticking elapsed time never moves them.

Driven in-process over a run directory (no processes), as the other monitor tests."""

from __future__ import annotations

import subprocess

PYTORCH_2 = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}}


def _monitor(run_id):
    from jupyter_px.api import Run
    from jupyter_px.widgets.run_monitor import RunMonitor

    return RunMonitor(Run(run_id), autostart=False)


def _orphan(run_id: str) -> None:
    """The run's supervisor is gone (the status still says Running): Stop settles it as Lost."""
    from jupyter_px.runstore import RunStore
    from jupyter_px.runstore.models import RunOwner

    store = RunStore()
    status = store.status(run_id)
    dead = subprocess.Popen(["true"])
    dead.wait()
    status.owner = RunOwner(kind="supervisor", pid=dead.pid)
    store.write_status(status)


def _state(run_id: str) -> str:
    from jupyter_px.runstore import RunStore

    return RunStore().status(run_id).state.value


def test_stop_asks_before_it_stops(synthetic_run):
    synthetic_run("ask-1", PYTORCH_2)
    _orphan("ask-1")
    monitor = _monitor("ask-1")
    assert monitor.stop_question.layout.display == "none"

    monitor.stop_button.click()
    assert monitor.stop_question.layout.display == "flex"  # asked, nothing done
    assert "ask-1" in monitor.stop_question.children[0].value
    assert _state("ask-1") == "Running" and not monitor.finished

    monitor.cancel_stop_button.click()
    assert monitor.stop_question.layout.display == "none"
    assert _state("ask-1") == "Running" and not monitor.finished and not monitor.stop_button.disabled

    monitor.stop_button.click()
    monitor.confirm_stop_button.click()
    assert monitor.stop_question.layout.display == "none"
    assert monitor.finished and _state("ask-1") == "Lost"
    assert monitor.stop_button.disabled


def test_buttons_do_not_share_the_ticking_header_row(synthetic_run):
    synthetic_run("ask-2", PYTORCH_2)
    monitor = _monitor("ask-2")
    buttons = (monitor.stop_button, monitor.tensorboard_button, monitor.confirm_stop_button)
    assert monitor.header in monitor.children and monitor.header not in monitor.button_row.children
    assert monitor.button_row.children[:2] == (monitor.stop_button, monitor.tensorboard_button)
    assert all(button.layout.width for button in buttons)  # fixed widths: a label change moves nothing
    before = (monitor.button_row.children, [b.layout.width for b in buttons])
    monitor.refresh()  # a new elapsed time in the header
    assert before == (monitor.button_row.children, [b.layout.width for b in buttons])
