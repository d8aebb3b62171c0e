"""The run's mimetype payload (`jupyter_px/widgets/run_mime.py`) is what the extension's renderer
reads (`labextension/src/output/runMime.ts`): the same fields, the same mimetype, and the live
monitor's output carries it beside the widget."""

from __future__ import annotations

import re
from pathlib import Path

from jupyter_px.runstore import RunStatus
from jupyter_px.widgets.run_mime import MIMETYPE, VERSION, run_payload

RUN_MIME_TS = Path(__file__).resolve().parent.parent / "labextension" / "src" / "output" / "runMime.ts"


def _ts_interface_fields(text: str, name: str) -> set[str]:
    body = re.search(rf"export interface {name} \{{(.*?)\n\}}", text, re.S)
    assert body, f"{name} not found in {RUN_MIME_TS}"
    return set(re.findall(r"^\s+(\w+)\??:", body.group(1), re.M))


def test_the_payload_is_what_the_renderer_reads():
    text = RUN_MIME_TS.read_text()
    assert f"RUN_MIMETYPE = '{MIMETYPE}'" in text
    assert f"payload.version !== {VERSION}" in text
    payload = run_payload(
        "r-1",
        name="quick",
        backend="local",
        created_at=1.0,
        status=RunStatus.initial("r-1", [("master", 0), ("worker", 0)]),
        final=False,
    )
    assert set(payload) == _ts_interface_fields(text, "IRunPayload")
    assert payload["state"] == "Pending" and payload["finished"] is False
    assert payload["replicas"] == [{"key": "master-0", "state": "Pending"}, {"key": "worker-0", "state": "Pending"}]


def test_a_payload_before_any_status_names_the_run_only():
    payload = run_payload("r-2", name=None, backend="native", created_at=2.0, status=None, final=False)
    assert (payload["run_id"], payload["state"], payload["finished"], payload["replicas"]) == ("r-2", None, False, [])
