"""The checkpoint convention of a resumed run (a Hyperband trial kept for its next rung):
`tracking.get_outputs_path()` holds a copy of the outputs of the run it continues, made once
whichever process asks first, and `tracking.get_resume_step()` says the step they are at."""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = """
import json, os, sys
from jupyter_px import tracking
out = tracking.get_outputs_path()
with open(os.path.join(out, "checkpoint.json")) as handle:
    saved = json.load(handle)
print(json.dumps({"step": tracking.get_resume_step(), "saved": saved, "files": sorted(os.listdir(out))}))
"""


def test_a_resumed_runs_processes_find_the_last_runs_checkpoint(tmp_path):
    previous, outputs = tmp_path / "run-1" / "outputs", tmp_path / "run-2" / "outputs"
    (previous / "sub").mkdir(parents=True)
    outputs.parent.mkdir()  # the run's directory; its outputs folder is made on first use
    (previous / "checkpoint.json").write_text(json.dumps({"step": 9, "w": [1, 2]}))
    (previous / "sub" / "extra.bin").write_bytes(b"\0" * 1000)
    env = {
        **os.environ,
        "PX_RUN_ID": "run-2",
        "PX_TASK_TYPE": "worker",
        "PX_OUTPUTS_PATH": str(outputs),
        "PX_RESUME_FROM": str(previous),
        "PX_RESUME_STEP": "9",
    }
    children = [
        subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE, text=True) for _ in range(4)
    ]
    seen = [json.loads(child.communicate(timeout=60)[0]) for child in children]
    assert all(child.returncode == 0 for child in children)
    for got in seen:  # every process: the whole copy, never half of it
        assert got == {"step": 9, "saved": {"step": 9, "w": [1, 2]}, "files": got["files"]}
        assert {"checkpoint.json", "sub"} <= set(got["files"])
    assert (outputs / "sub" / "extra.bin").read_bytes() == b"\0" * 1000
    assert (outputs / ".px-resumed").read_text() == str(previous)
    (outputs / "checkpoint.json").write_text("{}")  # the new run's own checkpoint
    assert json.loads((previous / "checkpoint.json").read_text())["step"] == 9  # the last run's is kept


def test_a_fresh_run_resumes_from_nothing(tmp_path, monkeypatch):
    from jupyter_px import tracking

    monkeypatch.setenv("PX_RUN_ID", "run-1")
    monkeypatch.setenv("PX_OUTPUTS_PATH", str(tmp_path / "out"))
    monkeypatch.delenv("PX_RESUME_STEP", raising=False)
    monkeypatch.delenv("PX_RESUME_FROM", raising=False)
    assert tracking.get_resume_step() is None
    assert os.listdir(tracking.get_outputs_path()) == []
    monkeypatch.setenv("PX_RESUME_STEP", "2.5")
    assert tracking.get_resume_step() == 2.5
