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


def test_final_view_keeps_the_tensorboard_opened_from_the_monitor(synthetic_run, px_home):
    """The run's TensorBoard stays where the user opened it: the static final view that replaces
    the monitor embeds the same TensorBoard (page and link), and one never opened adds nothing."""
    import re

    from jupyter_px import tensorboard
    from jupyter_px.presentation.monitor import final_html
    from jupyter_px.runstore import RunState, RunStore

    synthetic_run("ask-3", PYTORCH_2)
    synthetic_run("ask-4", PYTORCH_2)
    monitor, untouched = _monitor("ask-3"), _monitor("ask-4")
    try:
        monitor.show_tensorboard(background=False)  # the TensorBoard button, for real
        embedded = re.search(r"<iframe src='([^']+)'", monitor.tensorboard_view.value)
        assert embedded, monitor.tensorboard_view.value
        store = RunStore()
        for run_id in ("ask-3", "ask-4"):
            status = store.status(run_id)
            status.state, status.finished_at = RunState.SUCCEEDED, status.started_at + 5
            store.write_status(status)
        monitor.refresh()
        untouched.refresh()
        page = final_html(monitor.final_view())
        assert "class='px-final-tensorboard'" in page and f"<iframe src='{embedded.group(1)}'" in page
        assert "px-tensorboard" not in final_html(untouched.final_view())
    finally:
        for info in tensorboard.list_servers(home=px_home):
            tensorboard.stop(info, home=px_home)
