"""Warm replicas on SSH hosts (`backends/ssh/host_template.py`), on real sshd servers
(tests/ssh_hosts.py). Both hosts are this machine, as one user: they share one warm folder, so
one template serves them both."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from px_cli import px
from ssh_hosts import (  # noqa: F401 (fixtures)
    processes_of,
    ssh_hosts_fixture,
    stop_templates,
    template_children,
    template_listening,
    templates,
    use_ssh_fixture,
)
from waiting import wait_for

from jupyter_px.service import RunService, ScriptFile, Submission

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
pytestmark = pytest.mark.ssh
DEADLINE_S = 240.0
KEYS = ("master-0", "worker-0", "worker-1")
NO_TEMPLATE = "cold: no template on this host yet (this replica starts one for the next run)"
#: Each rank's environment and process, as its log shows them.
PROBE = """\
import os, psutil, torch.distributed as dist
dist.init_process_group("gloo")
import torch
t = torch.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(t)
me = psutil.Process()
print("sum", int(t.item()), "threads", os.environ.get("OMP_NUM_THREADS"), flush=True)
print("ancestors", [p.pid for p in me.parents()], flush=True)
dist.destroy_process_group()
"""


def topology() -> dict:
    return {"framework": "pytorch", "backend": "ssh", "environment": {"replicas": {"n_workers": 2}}}


def run(service: RunService, script: Path, name: str) -> tuple[str, dict[str, str]]:
    """A run to its end (it must succeed), and each replica's `launch`."""
    run_id = service.submit(Submission(ScriptFile(script), topology(), name=name))
    status = service.wait(run_id, timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", (status, service.log_tail(run_id, "worker", 1))
    for role, index in (("master", 0), ("worker", 0), ("worker", 1)):
        assert "sum 6" in service.log_tail(run_id, role, index)
    return run_id, {r.key: r.launch or "" for r in status.replicas}


def template_pid(launch: str) -> int:
    match = re.fullmatch(r"warm \(template pid (\d+)\)", launch)
    assert match, launch
    return int(match.group(1))


@pytest.fixture
def probe(use_ssh, tmp_path: Path) -> Iterator[Path]:
    """The probe script; each test starts with no template on the hosts and leaves none."""
    stop_templates(use_ssh)
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    yield script
    stop_templates(use_ssh)


def test_a_second_run_starts_warm_from_its_hosts_template_and_leaves_nothing_but_it(use_ssh, probe):
    service = RunService()
    _, first = run(service, probe, "first")
    assert set(first.values()) == {NO_TEMPLATE}, first
    wait_for(lambda: template_listening(use_ssh), "the template to listen", timeout=120)

    second_id, second = run(service, probe, "second")
    pids = {template_pid(launch) for launch in second.values()}
    assert len(pids) == 1, second  # one template serves both hosts here (one machine, one user)
    (pid,) = pids
    shown = px("status", second_id)  # what a user reads
    assert f"replicas warm (template pid {pid})" in shown.stdout, shown.stdout
    wait_for(lambda: [t.pid for t in templates(use_ssh)] == [pid], "one template left, the one that served")
    for key in KEYS:  # the rank ran in a fork of the template, torch imported there once
        role, index = key.split("-")
        ancestors = re.search(r"ancestors \[([\d, ]+)\]", service.log_tail(second_id, role, int(index)))
        assert ancestors and pid in [int(p) for p in ancestors.group(1).split(",")], key
    # what a stop and an end leave: the template, waiting for the next run, and nothing it forked
    wait_for(lambda: not template_children(use_ssh), "the warm replicas gone", timeout=60)
    assert not processes_of(second_id)
    assert psutil.pid_exists(pid)


def test_a_host_environment_that_changed_retires_the_template_and_the_next_run_starts_warm_again(
    use_ssh, probe, monkeypatch
):
    service = RunService()
    run(service, probe, "starts-the-template")
    wait_for(lambda: template_listening(use_ssh), "the template to listen", timeout=120)
    (old,) = templates(use_ssh)

    # the hosts' environment now sets a variable torch reads when it is imported
    monkeypatch.setenv("PX_SSH_SETUP", "export OMP_NUM_THREADS=3")
    _, refused = run(service, probe, "refused")
    # the first replica to reach the template is refused and the template retires; the others
    # find none (on hosts of their own, each host's first replica would be the one refused)
    changed = "cold: OMP_NUM_THREADS changed since this host's template started"
    assert changed in refused.values(), refused
    assert set(refused.values()) <= {changed, NO_TEMPLATE}, refused
    wait_for(lambda: not old.is_running(), "the old template to retire", timeout=60)
    wait_for(lambda: template_listening(use_ssh), "a new template to listen", timeout=120)

    again_id, again = run(service, probe, "warm-again")
    (new,) = {template_pid(launch) for launch in again.values()}
    assert new != old.pid
    assert "threads 3" in service.log_tail(again_id, "master", 0)


def test_warm_false_starts_every_replica_cold_and_starts_no_template(use_ssh, probe, monkeypatch):
    monkeypatch.setenv("PX_SSH_WARM", "false")
    service = RunService()
    _, launches = run(service, probe, "cold")
    assert set(launches.values()) == {"cold"}, launches
    assert not templates(use_ssh)


def test_a_template_folder_others_can_write_to_is_not_used(tmp_path):
    """A replica hands its session's streams and environment only to a template of its own user,
    in a folder nobody else can write to (another user could put a socket there)."""
    from jupyter_px.processes.private_folder import private_folder

    folder = tmp_path / "warm"
    assert private_folder(str(folder)) is None and folder.stat().st_mode & 0o777 == 0o700
    folder.chmod(0o777)
    assert private_folder(str(folder)) == f"{folder} is not this user's alone (owner uid {os.getuid()}, mode 777)"


def test_a_template_killed_under_a_warm_run_leaves_the_run_to_end_as_it_would(use_ssh, probe, tmp_path):
    """The template only forks: a warm run it started goes on without it, to its own end."""
    service = RunService()
    run(service, probe, "starts-the-template")
    wait_for(lambda: template_listening(use_ssh), "the template to listen", timeout=120)
    release = tmp_path / "release"
    waits = tmp_path / "waits.py"
    waits.write_text(f"import os, time\nwhile not os.path.exists({str(release)!r}):\n    time.sleep(0.1)\n{PROBE}")
    run_id = service.submit(Submission(ScriptFile(waits), topology(), name="outlives"))
    wait_for(lambda: len(template_children(use_ssh)) >= 3, "the warm replicas to start")
    (template,) = templates(use_ssh)
    template.kill()
    release.touch()
    status = service.wait(run_id, timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", (status, service.log_tail(run_id, "worker", 1))
    assert {r.launch for r in status.replicas} == {f"warm (template pid {template.pid})"}
    assert all("sum 6" in service.log_tail(run_id, role, index) for role, index in (("master", 0), ("worker", 1)))


def test_a_template_that_cannot_import_its_preload_says_why_and_is_not_started_again(tmp_path):
    """Its replicas start cold; a template that failed is not started again by each of them, as
    long as the host's environment is the one it failed in."""
    from jupyter_px.backends.ssh.task_entry import Warm, failed_path, fingerprint

    warm = Warm("no_such_module_here", "600", str(tmp_path / "w"))
    warm.start_template({"PYTHONUNBUFFERED": "1"})
    failed = Path(failed_path(warm.socket_path))
    wait_for(failed.exists, "the template to say why it could not start", timeout=120)
    said = json.loads(failed.read_text())
    assert said["fingerprint"] == fingerprint(warm.preload)
    assert said["error"].startswith("cannot import no_such_module_here: ModuleNotFoundError"), said

    def started() -> list[psutil.Process]:
        return [p for p in psutil.process_iter(["cmdline"]) if warm.socket_path in (p.info["cmdline"] or [])]

    wait_for(lambda: not started(), "the failed template to exit")
    warm.start_template({})
    assert not started()
