"""A Jupyter server follows its store's Kubernetes runs on one watch per namespace.

Without a server each run has a follower process and a pod watch of its own. A process that
hosts the store's followers (`RunService.host_followers`, what the server extension opens beside
its keeper) follows every run it is given on one list+watch of the namespace: the simulated API
server counts the watches opened. One owner per run at any time: the host takes a run at its
submit, or from its own follower (which hands it over and exits), and gives every run back to a
follower of its own when it closes; in between no line of any replica's log is lost or doubled.
The last test runs a real `jupyter server` in a process, submits through its REST API, and stops
it mid-run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import urllib.request

import pytest
from free_ports import free_port
from kubernetes_support import (  # noqa: F401 (kube_fixture: the `kube` fixture)
    DEADLINE_S,
    FOLLOWER_MODULE,
    follower_pids,
    kube_fixture,
    started_followers,
    wait_for,
    wait_for_file,
    wait_gone,
)
from server_support import stop_process, wait_until_serving, write_server_config

import jupyter_px
from jupyter_px.processes import detached
from jupyter_px.service import RunService

TORCH = {"framework": "pytorch", "backend": "native", "environment": {"replicas": {"n_workers": 1}}}
LINES = 4  # each replica prints as many before the test lets it go on, and as many after


def training_code(go) -> str:
    """Each replica prints LINES lines, waits for the file `go`, prints LINES more."""
    key = "os.environ['PX_TASK_TYPE'] + '-' + os.environ['PX_TASK_INDEX']"
    before = f"for i in range({LINES}):\n    print({key}, 'line', i, flush=True)\n"
    after = f"for i in range({LINES}, {2 * LINES}):\n    print({key}, 'line', i, flush=True)\n"
    return "import os\n" + before + wait_for_file(go) + after


def ever_started(since: int) -> list[int]:
    """The follower processes this test process started after its `since`-th child, alive or not."""
    return [c.pid for c in detached.children()[since:] if FOLLOWER_MODULE.decode() in c.popen.args]


def pod_watches(kube, since: int = 0) -> list[tuple[str, str, str | None]]:
    return [w for w in kube.watches[since:] if w[0] == "pods"]


def halfway(run) -> bool:
    """Every replica's first lines are stored."""
    return all(run.logs(role, 0).count("line") >= LINES for role in ("master", "worker"))


def assert_every_line_once(run) -> None:
    for role in ("master", "worker"):
        want = "".join(f"{role}-0 line {i}\n" for i in range(2 * LINES))
        assert run.logs(role, 0) == want, (role, run.logs(role, 0))


def test_runs_a_host_follows_share_one_watch_of_their_namespace(kube, px_home, tmp_path):
    go = tmp_path / "go"
    children = len(detached.children())
    host = RunService().host_followers()
    try:
        before = len(kube.watches)
        runs = [jupyter_px.submit(training_code(go), TORCH, name=f"shared-{i}") for i in range(3)]
        for run in runs:
            owner = run.status().owner
            assert owner.kind == "server" and owner.pid == os.getpid() and owner.host == host.name
        wait_for(lambda: all(halfway(run) for run in runs), what="every replica's first lines stored")
        assert all(run.observe().owner_problem is None for run in runs)
        go.touch()
        for run in runs:
            assert run.wait(timeout=DEADLINE_S).state.value == "Succeeded"
            assert_every_line_once(run)
        # three runs of six pods, one watch: of every run's pods (the run label), in its namespace
        assert pod_watches(kube, before) == [("pods", "default", "px.jupyter.org/run")]
        # no run is followed here any more: the watch ends with the last (once its thread has)
        wait_for(lambda: host.watches() == 0, what="the namespace's watch to end")
    finally:
        host.close()
    assert ever_started(children) == []  # no process of their own, then or when the host closed


def test_a_host_that_closes_mid_run_gives_every_run_back_to_a_follower_of_its_own(kube, px_home, tmp_path):
    go = tmp_path / "go"
    host = RunService().host_followers()
    try:
        runs = [jupyter_px.submit(training_code(go), TORCH, name=f"back-{i}") for i in range(2)]
        wait_for(lambda: all(halfway(run) for run in runs), what="every replica's first lines stored")
    finally:
        host.close()
    followers = started_followers()
    assert len(followers) == 2
    for run in runs:
        owner = run.status().owner
        assert owner.kind == "follower" and owner.pid in followers and owner.host is None
        assert run.observe().owner_problem is None
    assert not (px_home / "hosts" / f"{host.name}.json").exists()
    go.touch()
    for run in runs:
        assert run.wait(timeout=DEADLINE_S).state.value == "Succeeded"
        assert_every_line_once(run)
    for pid in followers:
        assert wait_gone(pid) == 0


def test_a_host_takes_each_run_over_from_its_own_follower(kube, px_home, tmp_path):
    go = tmp_path / "go"
    children = len(detached.children())
    runs = [jupyter_px.submit(training_code(go), TORCH, name=f"over-{i}") for i in range(2)]
    wait_for(lambda: all(halfway(run) for run in runs), what="every replica's first lines stored")
    own = started_followers()
    assert len(own) == 2
    service = RunService()
    host = service.host_followers()
    try:
        assert service.keep_all() == 2  # the keeper's pass: each follower hands its run over
        for run in runs:
            owner = run.status().owner
            assert owner.kind == "server" and owner.host == host.name
            assert host.follows(run.run_id)
        for pid in own:
            assert wait_gone(pid) == 0
        go.touch()
        for run in runs:
            assert run.wait(timeout=DEADLINE_S).state.value == "Succeeded"
            assert_every_line_once(run)
    finally:
        host.close()
    assert ever_started(children) == own  # and none since


@pytest.mark.parametrize("backend", ["native", "kubeflow"])
def test_a_keeper_pass_during_a_submit_waits_for_the_run_to_have_its_owner(kube, px_home, tmp_path, backend):
    """A server's keeper passes while the REST API submits: a pass that sees the run between its
    handle and its first status must not take it then (the submit's first status would overwrite
    its owner; a PyTorchJob read before it is created reads as deleted, and the run as Failed).
    The API server answers slowly, so the submit's creates take a while, and the keeper passes
    without pause meanwhile."""
    go = tmp_path / "go"
    service = RunService()
    host = service.host_followers()
    submitted = threading.Event()

    def keeper() -> None:
        while not submitted.is_set():
            service.keep_all()

    try:
        passes = threading.Thread(target=keeper)
        passes.start()
        kube.latency = 0.2
        try:
            run = jupyter_px.submit(training_code(go), {**TORCH, "backend": backend}, name="raced")
        finally:
            submitted.set()
            passes.join()
            kube.latency = 0.0
        owner = run.status().owner
        assert owner is not None and owner.kind == "server" and owner.host == host.name
        assert run.observe().owner_problem is None
        # both replicas running before either may end (a master that ends first ends the run)
        wait_for(lambda: halfway(run), what="every replica's first lines stored")
        go.touch()
        assert run.wait(timeout=DEADLINE_S).state.value == "Succeeded"
        assert_every_line_once(run)
    finally:
        host.close()


@pytest.mark.parametrize("end", ["stopped", "killed"])
def test_a_jupyter_server_follows_its_runs_on_one_watch_and_leaves_them_followed(kube, px_home, tmp_path, end):
    """The whole thing as a user has it: `jupyter server` in a process of its own, runs submitted
    through its REST API, the server stopped (SIGTERM: it hands its runs back) or killed (SIGKILL:
    their owner is gone, and the next keeper, here `Run.wait()`, follows them) while they run."""
    go, root, config = tmp_path / "go", tmp_path / "root", tmp_path / "config"
    root.mkdir()
    (root / "train.py").write_text(training_code(go))
    write_server_config(config)
    port, token, log = free_port(), "t0ken", tmp_path / "server.log"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(config), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    command = [sys.executable, "-m", "jupyter_server", f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1"]
    command += [f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False"]
    command += ["--JupyterPxApp.keeper_interval=0.5", "--allow-root"]
    url = f"http://127.0.0.1:{port}/px/api/runs"
    headers = {"Authorization": f"token {token}", "Content-Type": "application/json"}
    before = len(kube.watches)
    with open(log, "wb") as out:
        server = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until_serving(server, url, log, headers)
        run_ids = []
        for _ in range(3):
            body = json.dumps({"topology": TORCH, "script": "train.py"}).encode()
            request = urllib.request.Request(url, data=body, headers=headers, method="POST")
            with urllib.request.urlopen(request, timeout=120) as answer:
                run_ids.append(json.loads(answer.read())["run_id"])
        runs = [jupyter_px.Run(run_id) for run_id in run_ids]
        for run in runs:
            owner = run.status().owner
            assert owner.kind == "server" and owner.pid == server.pid
        wait_for(lambda: all(halfway(run) for run in runs), what="every replica's first lines stored")
        assert follower_pids(px_home) == []  # no follower process: the server follows them
        assert pod_watches(kube, before) == [("pods", "default", "px.jupyter.org/run")]
        if end == "stopped":
            server.terminate()
            assert server.wait(timeout=60) == 0
        else:
            server.kill()
            server.wait(timeout=60)
    finally:
        stop_process(server)
    if end == "stopped":  # handed back as the server stopped: each to a follower of its own
        for run in runs:
            owner = run.status().owner
            assert owner.kind == "follower" and run.observe().owner_problem is None
        assert len(follower_pids(px_home)) == 3
    else:  # its owner is gone: reads say so and act not
        for run in runs:
            assert run.observe().owner_problem == "nobody is following this run"
        assert follower_pids(px_home) == []
    go.touch()
    for run in runs:
        assert run.wait(timeout=DEADLINE_S).state.value == "Succeeded"  # a keeper: it follows if need be
        assert_every_line_once(run)
