"""What `jupyter px stacks` runs inside a Kubernetes pod, run here as the pod runs it: a replica
armed with `PX_STACKS_DIR` (a pod's run directory is read-only) writes its pid beside its dump
file, and `python .../stack_request.py DIR`, started as a file, signals it and prints what its dump
added as JSON. A process that has ended is named as such."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from waiting import wait_for

import jupyter_px

REQUEST = Path(jupyter_px.__file__).parent / "diagnostics" / "stack_request.py"

REPLICA = """\
import time
from pathlib import Path
from jupyter_px.diagnostics import stack_signal
stack_signal.install(Path("/nonexistent/read-only/run"))
def wait_here():
    time.sleep(60)
wait_here()
"""


def _replica(tmp_path: Path, index: int) -> subprocess.Popen:
    script = tmp_path / f"replica{index}.py"
    script.write_text(REPLICA)
    env = {
        **os.environ,
        "PX_STACKS_DIR": str(tmp_path / "dumps"),
        "PX_TASK_TYPE": "worker",
        "PX_TASK_INDEX": str(index),
    }
    return subprocess.Popen([sys.executable, str(script)], env=env)


def _request(dumps: Path) -> dict:
    # as the pod runs it: the file by its path, outside any package, with a bare environment
    env = {"PATH": os.environ["PATH"]}
    out = subprocess.run(
        [sys.executable, str(REQUEST), str(dumps)], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_a_pod_s_replicas_answer_by_their_pid_files_and_an_ended_one_is_named(tmp_path):
    dumps = tmp_path / "dumps"
    replicas = [_replica(tmp_path, 0), _replica(tmp_path, 1)]
    try:
        wait_for(lambda: len(list(dumps.glob("*.pid"))) == 2, "both replicas armed", timeout=60)
        assert (dumps / "worker-1.pid").read_text() == str(replicas[1].pid)
        replicas[1].kill()
        replicas[1].wait()
        answer = _request(dumps)
    finally:
        for replica in replicas:
            replica.kill()
            replica.wait()
    assert list(answer["replicas"]) == ["worker-0"], answer
    assert answer["replicas"]["worker-0"]["pid"] == replicas[0].pid
    text = answer["replicas"]["worker-0"]["text"]
    assert 'replica0.py", line 6 in wait_here' in text and 'replica0.py", line 7 in <module>' in text, text
    assert answer["errors"] == {"worker-1": "no stack: its process has ended"}, answer
