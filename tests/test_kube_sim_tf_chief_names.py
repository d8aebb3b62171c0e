"""A TensorFlow run's master is `chief` wherever people read it, as its TF_CONFIG and its job
call it: `jupyter px status` (its table and its heading, which says how the run ended),
`jupyter px logs` (each line's tag), `%px_status`, `%px_logs` and the REST API's detail (each
replica's `label`, the run's message) agree; the store keeps the key `master-0`, which names the
files and which the REST answer keeps as `key`. A native TensorFlow run on the simulated cluster,
whose follower writes the run's message.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import px_cli
import pytest
from kubernetes_support import DEADLINE_S, kube_fixture  # noqa: F401 (kube_fixture: the `kube` fixture)
from magics_support import magic_shell, run
from px_cli import CLI

import jupyter_px

pytest_plugins = ["pytest_jupyter.jupyter_server"]

TF = {"framework": "tensorflow", "backend": "native", "environment": {"replicas": {"n_workers": 1}}}


def code(said: Path) -> str:
    """Each replica says hello; the chief ends once the worker has (a file the worker writes after
    its line): the chief's end is the run's, and a worker that had not printed yet, on a loaded
    machine, was stopped with no line to show."""
    return (
        f"import os, pathlib, time\nsaid = pathlib.Path({str(said)!r})\n"
        "print('hello from', os.environ['PX_TASK_TYPE'], flush=True)\n"
        "if os.environ['PX_TASK_TYPE'] == 'worker':\n    said.touch()\n"
        "while not said.exists():\n    time.sleep(0.05)\n"
    )


@pytest.fixture
def jp_server_config(px_home):
    return {"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}, "JupyterPxApp": {"keeper_interval": 0}}


@pytest.fixture
def ip(px_home):
    yield from magic_shell()


def px(*args: str) -> str:
    done = px_cli.px(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_status_logs_magics_and_the_rest_detail_call_a_tensorflow_master_chief(
    kube, px_home, jp_fetch, ip, tmp_path
):
    run = jupyter_px.submit(code(tmp_path / "worker-said-hello"), TF)
    status = await asyncio.to_thread(run.wait, DEADLINE_S)
    assert status.state.value == "Succeeded"
    assert (px_home / "runs" / run.run_id / "logs" / "master-0.log").exists()  # the store's key names the file

    shown = await asyncio.to_thread(px, "status", run.run_id)
    heading, _, table = shown.partition("\n")
    assert heading.endswith("- chief succeeded"), shown  # how the run ended, in the job's words
    assert [line.split()[0] for line in table.splitlines()[-2:]] == ["chief", "worker-0"], shown

    logs = await asyncio.to_thread(px, "logs", run.run_id)
    assert sorted(logs.splitlines()) == ["[chief.0] hello from master", "[worker.0] hello from worker"]
    assert await asyncio.to_thread(px, "logs", run.run_id, "--role", "chief") == "hello from master\n"
    assert await asyncio.to_thread(px, "logs", run.run_id, "--role", "master") == "hello from master\n"
    refused = await asyncio.to_thread(
        subprocess.run, [*CLI, "logs", run.run_id, "--role", "ps"], capture_output=True, text=True
    )
    assert refused.returncode != 0 and "(it has chief.0, worker.0)" in refused.stderr

    table = magic_text(ip, f"%px_status {run.run_id}", run.run_id)
    assert "chief succeeded" in table and "master-0" not in without_pod_names(table, run.run_id)
    assert [line.split()[0] for line in table.splitlines()[-2:]] == ["chief", "worker-0"], table
    assert magic_text(ip, f"%px_logs {run.run_id} --role chief") == "hello from master\n"

    detail = json.loads((await jp_fetch("px", "api", "runs", run.run_id)).body)
    assert detail["message"] == "chief succeeded"
    assert [(r["key"], r["label"]) for r in detail["replicas"]] == [("master-0", "chief"), ("worker-0", "worker-0")]
    for text in (shown, logs, detail["message"]):
        assert "master-0" not in without_pod_names(text, run.run_id) and "[master" not in text


def without_pod_names(text: str, run_id: str) -> str:
    """`text` less the pods' names (`<run>-master-0`: the cluster's name for the pod, shown as is)."""
    return text.replace(f"{run_id}-master-0", "<pod>")


def magic_text(ip, line: str, run_id: str | None = None) -> str:
    """What a line magic shows: what it prints, then the text of what it displays (with `run_id`,
    only the displays that name it: `capture_output` also takes what another test's run monitor,
    still updating its own display in this process, sends meanwhile)."""
    result, captured = run(ip, line)
    assert result.error_in_exec is None and result.error_before_exec is None, captured.stderr
    texts = [str(o.data.get("text/plain", "")) for o in captured.outputs]
    return captured.stdout + "".join(text for text in texts if run_id is None or run_id in text)
