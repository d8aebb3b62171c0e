"""`processes/replica_kill.py`, what `jupyter px kill` runs where a replica is (a pod, an SSH host),
and the pod entry's first process (`pod/entry.stay_first`) that lets it work in a real container.

The container is made as a runtime makes one: a PID namespace of its own (`unshare --pid`), the
entry its first process, the kill run inside it as an exec is (`nsenter` into that namespace)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
from kube_sim_support import require
from waiting import wait_for

from jupyter_px.processes import replica_kill

REPO = Path(__file__).resolve().parents[1]
KILL = REPO / "jupyter_px" / "processes" / "replica_kill.py"

#: A replica as the pod entry starts it: `stay_first`, then (in what is now the runner's process)
#: its pid beside the dumps as `stack_signal.install` writes it, and a long step.
REPLICA = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, {repo!r})
    from jupyter_px.backends.kubernetes.pod.entry import stay_first
    if {first}:
        stay_first()
    with open(os.path.join({dumps!r}, "worker-0.pid"), "w") as handle:
        handle.write(str(os.getpid()))
    print("ready", os.getpid(), flush=True)
    time.sleep(120)
    """
)


def _kill_here(dumps: Path, key: str, signum: int) -> dict:
    done = subprocess.run(
        [sys.executable, str(KILL), str(dumps), key, str(signum)], capture_output=True, text=True, check=True
    )
    return replica_kill.answer_of(done.stdout)


def test_a_replica_is_signalled_by_its_pid_file_and_a_reused_pid_is_not(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        assert _kill_here(tmp_path, "worker-0", signal.SIGKILL) == {"absent": "no worker-0 here"}
        pid_file = tmp_path / "worker-0.pid"
        pid_file.write_text(str(child.pid))
        old = psutil.Process(child.pid).create_time() - 60
        os.utime(pid_file, (old, old))  # written before the process started: its pid was reused
        assert _kill_here(tmp_path, "worker-0", signal.SIGKILL) == {"failed": f"worker-0 (pid {child.pid}) has ended"}
        assert child.poll() is None
        pid_file.write_text(str(child.pid))
        assert _kill_here(tmp_path, "worker-0", signal.SIGTERM) == {"pid": child.pid, "signal": "SIGTERM"}
        assert child.wait(timeout=30) == -signal.SIGTERM
        assert replica_kill.main(["x", "worker-0"]) == 2
    finally:
        child.kill()


def _container(tmp_path: Path, first: bool) -> tuple[subprocess.Popen, int]:
    """A PID namespace whose first process is the replica's entry; (the runtime's process, the
    host pid of the namespace's first process)."""
    tools = bool(shutil.which("unshare") and shutil.which("nsenter"))
    require(tools, "util-linux's unshare and nsenter make a PID namespace")
    script = REPLICA.format(repo=str(REPO), first=first, dumps=str(tmp_path))
    runtime = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = runtime.stdout.readline()
    if not line.startswith("ready"):
        runtime.kill()
        require(False, f"this machine cannot make a PID namespace (unshare said {line!r}, exit {runtime.wait()})")
    first_process = wait_for(lambda: psutil.Process(runtime.pid).children(), what="the namespace's first process")
    return runtime, first_process[0].pid


def _kill_inside(first_pid: int, dumps: Path, signum: int) -> dict:
    """`replica_kill.py` as an exec in the pod runs it: inside the container's PID namespace. When
    the kill ends the container, the kernel ends the exec with it (its namespace's first process
    is gone), maybe before it printed anything more: it says what it sends before sending it."""
    argv = ["nsenter", f"--target={first_pid}", "--pid", "--mount", sys.executable, str(KILL), str(dumps)]
    done = subprocess.run([*argv, "worker-0", str(signum)], capture_output=True, text=True, check=False)
    return replica_kill.answer_of(done.stdout)


def test_in_a_container_the_entry_stays_first_and_the_runner_is_killed_as_a_crash_ends_it(tmp_path):
    runtime, first = _container(tmp_path, first=True)
    try:
        runner_pid = int((tmp_path / "worker-0.pid").read_text())
        assert runner_pid != 1  # the entry is pid 1; the runner its child
        assert _kill_inside(first, tmp_path, signal.SIGKILL) == {"pid": runner_pid, "signal": "SIGKILL"}
        # the container ends as the runner did: 128 + 9, what the kubelet reports as exit code 137
        assert runtime.wait(timeout=30) == 137
    finally:
        runtime.kill()


def test_the_entry_passes_the_kubelets_stop_on_to_the_runner(tmp_path):
    runtime, first = _container(tmp_path, first=True)
    try:
        time.sleep(0.2)  # its handlers installed (right after the fork, before the child wrote its pid)
        os.kill(first, signal.SIGTERM)  # the kubelet stops a container by its first process
        assert runtime.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        runtime.kill()


def test_a_replica_that_is_its_containers_first_process_is_refused_not_signalled_in_vain(tmp_path):
    runtime, first = _container(tmp_path, first=False)
    try:
        said = _kill_inside(first, tmp_path, signal.SIGKILL)["failed"]
        assert said == "worker-0 is its container's first process, which ignores signals sent from inside it"
        assert runtime.poll() is None
    finally:
        runtime.kill()


def test_the_answer_is_the_last_line_said_a_failure_after_the_signal_it_meant_to_send():
    sent = '{"pid": 42, "signal": "SIGKILL"}\n'
    assert replica_kill.answer_of(sent) == {"pid": 42, "signal": "SIGKILL"}
    assert replica_kill.answer_of(sent + '{"failed": "worker-0 (pid 42) has ended"}\n') == {
        "failed": "worker-0 (pid 42) has ended"
    }
    assert replica_kill.answer_of("") is None and replica_kill.answer_of("Traceback ...\n") is None
