"""The warm templates through the Jupyter server: `GET px/api/warm` shows each with its memory
(what the sidebar draws), `DELETE px/api/warm` stops them; a template started in the server's
process belongs to that server."""

from __future__ import annotations

import json

import pytest
from warm_support import template_env

from jupyter_px.backends.local import warm
from jupyter_px.backends.local.settings import load_settings
from jupyter_px.processes.detached import ProcessIdentity

pytest_plugins = ["pytest_jupyter.jupyter_server"]


@pytest.fixture
def jp_server_config(px_home, tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PX_WARM_DIR", str(tmp_path / "warm"))
    return {"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}}


async def test_the_sidebar_reads_templates_with_their_memory_and_stops_them(jp_fetch, px_home):
    state = warm.start(None, template_env(), load_settings(), timeout=120)
    try:
        # started in the server's process: the extension told it its pid, so it ends with the server
        me = ProcessIdentity.current()
        assert state["owner"] == {"kind": "server", "pid": me.pid, "started_at": me.started_at}
        body = json.loads((await jp_fetch("px", "api", "warm")).body)
        (shown,) = body["templates"]
        assert (shown["key"], shown["state"], shown["running"], shown["pid"]) == (
            state["key"],
            "ready",
            True,
            state["pid"],
        )
        assert shown["owner"] == "server" and shown["memory"]["rss_mib"] > 0 and shown["memory"]["uss_mib"] > 0
        assert shown["standby_memory"] is not None and "jupyter_px.runner" in shown["preload"]
        stopped = json.loads((await jp_fetch("px", "api", "warm", method="DELETE")).body)
        (after,) = stopped["templates"]
        assert (after["running"], after["state"], after["stop_reason"]) == (
            False,
            "stopped",
            "stopped from the sidebar",
        )
    finally:
        warm.stop_all("the test ended")
