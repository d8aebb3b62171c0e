"""`jupyter px run / runs / status / logs / stop` as a user runs them: real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from local_support import JOBS, assert_nothing_left, wait_for
from px_cli import CLI, ROOT, px

#: Each real job runs twice, cold and warm (`launch`, tests/conftest.py).
# What the CLI prints, not how replicas start: its jobs start warm, as a user's do (the modules
# of the replica's own guarantees, test_local_backend and test_local_faults, run cold too).
pytestmark = [pytest.mark.usefixtures("launch"), pytest.mark.warm_only]

FAULTS = str(JOBS / "faults.py")
TOPOLOGY = "framework: pytorch\nenvironment:\n  replicas:\n    n_workers: 2\n"


@pytest.fixture
def topology_file(tmp_path):
    path = tmp_path / "topology.yaml"
    path.write_text(TOPOLOGY)
    return str(path)


def _run(run_id: str):
    from jupyter_px.api import Run

    return Run(run_id)


@pytest.mark.jobs
def test_run_wait_success_streams_prefixed_logs(px_home, topology_file, tmp_path):
    result = px("run", FAULTS, "-f", topology_file, "--wait", "--workdir", str(tmp_path), "--", "env", "--wait", "x")
    assert result.returncode == 0, result.stderr
    assert "Succeeded" in result.stderr and "master-0 succeeded" in result.stderr
    run_id = result.stderr.split()[1]
    run = _run(run_id)
    assert run.record.submitted_from == "cli"
    argv = json.loads((run.paths.outputs_dir / "worker-1.json").read_text())["argv"]
    assert argv[1:] == ["env", "--wait", "x"]  # everything after -- reaches the script
    assert_nothing_left(run)


@pytest.mark.jobs
def test_run_wait_failure_exit_code_and_reason(px_home, topology_file):
    result = px("run", FAULTS, "-f", topology_file, "--wait", "--", "exit", "worker-1", "3")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "[worker.1] worker-1: doing exit 3" in result.stdout
    assert "[master.0] master-0: waiting" in result.stdout
    assert "Failed: worker-1 failed (Error): exited with code 3" in result.stderr
    assert "worker-1 Failed (Error, exit code 3): exited with code 3" in result.stderr
    assert "--role worker --index 1" in result.stderr  # where to look next


@pytest.mark.jobs
def test_run_then_status_logs_and_runs(px_home, topology_file):
    result = px("run", FAULTS, "-f", topology_file, "--name", "cli-demo", "--", "env")
    assert result.returncode == 0, result.stderr
    run_id = result.stdout.strip()
    assert run_id.startswith("cli-demo-")
    _run(run_id).wait(timeout=240)

    status = px("status", run_id, "--json")
    assert status.returncode == 0
    data = json.loads(status.stdout)
    assert data["run_id"] == run_id and data["state"] == "Succeeded"
    assert [(r["role"], r["index"], r["state"], r["exit_code"]) for r in data["replicas"]] == [
        ("master", 0, "Succeeded", 0),
        ("worker", 0, "Succeeded", 0),
        ("worker", 1, "Succeeded", 0),
    ]

    table = px("status", run_id)
    assert table.returncode == 0 and f"run {run_id}: Succeeded" in table.stdout
    assert table.stdout.splitlines()[2].split()[:3] == ["REPLICA", "STATE", "PID"]

    runs = px("runs", "--json")
    listed = {r["run_id"]: r for r in json.loads(runs.stdout)}
    assert listed[run_id]["state"] == "Succeeded" and listed[run_id]["submitted_from"] == "cli"
    assert listed[run_id]["name"] == "cli-demo" and listed[run_id]["replica_counts"] == {"Succeeded": 3}
    assert run_id in px("runs").stdout
    by_name = px("status", "cli-demo")  # what the user called it, not the id with its suffix
    assert by_name.returncode == 0 and f"run {run_id}: Succeeded" in by_name.stdout
    assert f"run {run_id}: Succeeded" in px("status", "last").stdout
    by_name_logs = px("logs", "cli-demo")
    assert by_name_logs.returncode == 0 and by_name_logs.stdout == px("logs", run_id).stdout


@pytest.mark.jobs
def test_logs_prefixes_and_selection(px_home, topology_file):
    run_id = px("run", FAULTS, "-f", topology_file, "--", "exit", "worker-0", "0").stdout.strip()
    run = _run(run_id)
    wait_for(lambda: "doing exit" in run.logs("worker", 0), timeout=240, what="worker-0's log line")
    everything = px("logs", run_id)
    assert everything.returncode == 0
    assert "[worker.0] worker-0: doing exit 0" in everything.stdout.splitlines()
    assert "[master.0] master-0: waiting" in everything.stdout.splitlines()
    one = px("logs", run_id, "--role", "worker", "--index", "0")
    assert one.stdout.splitlines()[0] == "worker-0: doing exit 0"  # one replica: no prefix
    role = px("logs", run_id, "--role", "worker")
    assert {line.split()[0] for line in role.stdout.splitlines()} == {"[worker.0]", "[worker.1]"}
    stopped = px("stop", run_id)
    assert stopped.returncode == 0 and f"run {run_id} Stopped" in stopped.stdout
    followed = px("logs", run_id, "--follow")  # finished: returns at once with everything
    assert followed.returncode == 0 and "[worker.0] worker-0: doing exit 0" in followed.stdout
    assert_nothing_left(run)
    again = px("stop", run_id)
    assert again.returncode == 0 and "already finished: Stopped" in again.stdout


@pytest.mark.jobs
def test_logs_follow_until_the_run_ends(px_home, topology_file):
    run_id = px("run", FAULTS, "-f", topology_file, "--", "flaky", "worker-1", "0").stdout.strip()
    followed = px("logs", run_id, "--follow")
    assert followed.returncode == 0
    assert "[worker.1] worker-1: attempt 0" in followed.stdout
    assert _run(run_id).status().state.value == "Succeeded"


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "no_such_script.py", "--framework", "pytorch"], "script 'no_such_script.py' does not exist"),
        (["run", FAULTS, "-f", "/no/such/topology.yaml"], "cannot read topology file '/no/such/topology.yaml'"),
        (["run", FAULTS, "--framework", "pytorch", "--workers", "-2"], "argument --workers: '-2' is negative"),
        (
            ["run", FAULTS, "--framework", "tensorflow", "--workers", "1", "--workdir", "/no/such/dir"],
            "--workdir '/no/such/dir' is not a directory",
        ),
        (["status", "no-such-run"], "no run with id or name 'no-such-run'"),
        (["status", "Bad/Id"], "no run with id or name 'Bad/Id'"),
        (["logs", "no-such-run"], "no run with id or name 'no-such-run'"),
        (["stop", "no-such-run"], "no run with id or name 'no-such-run'"),
        (["status", "last"], "no runs yet"),
    ],
)
def test_bad_input_is_one_clear_message_and_exit_2(px_home, args, message):
    result = px(*args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert message in result.stderr


def test_invalid_topology_names_the_field(px_home, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("framework: pytorch\nenvironment:\n  replicas:\n    n_workers: 2\n    worker: [{index: 5}]\n")
    result = px("run", FAULTS, "-f", str(bad))
    assert result.returncode == 2
    assert "environment.replicas.worker[0].index: 5 is not below n_workers (2)" in result.stderr
    assert px("runs", "--json").stdout.strip() == "[]"  # nothing was submitted


def test_unmeetable_request_is_refused_before_anything_starts(px_home):
    topology = "framework: pytorch\nenvironment:\n  resources: {memory: {requests: 100Ti}}\n"
    proc = subprocess.run(
        [*CLI, "run", FAULTS, "-f", "-"],
        input=topology,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=60,
    )  # topology from stdin
    assert proc.returncode == 2 and "master-0 requests 104857600 MiB of memory" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert px("runs", "--json").stdout.strip() == "[]"


@pytest.mark.jobs
def test_logs_selection_errors(px_home, topology_file):
    run_id = px("run", FAULTS, "-f", topology_file, "--", "env").stdout.strip()
    no_role = px("logs", run_id, "--index", "1")
    assert no_role.returncode == 2 and "--index needs --role" in no_role.stderr
    missing = px("logs", run_id, "--role", "ps")
    assert missing.returncode == 2 and "has no replica ps (it has master.0, worker.0, worker.1)" in missing.stderr
    _run(run_id).wait(timeout=240)


def test_runs_when_there_are_none(px_home):
    result = px("runs")
    assert result.returncode == 0 and "no runs yet" in result.stdout


@pytest.mark.jobs
def test_readme_example_runs(px_home):
    """The README's first command: the PyTorch example with its topology (master + 2 workers)."""
    result = px("run", str(ROOT / "examples" / "allreduce.py"), "-f", str(ROOT / "examples" / "pytorch.yaml"), "--wait")
    assert result.returncode == 0, result.stdout + result.stderr
    for rank, prefix in enumerate(["[master.0]", "[worker.0]", "[worker.1]"]):
        assert f"{prefix} rank {rank}/3: all_reduce of ranks = 3 (expected 3)" in result.stdout
        assert f"{prefix} rank {rank}: final loss" in result.stdout
    assert result.stdout.count("weights identical on all ranks: True") == 3
    run_id = result.stderr.split()[1]
    metrics = _run(run_id).paths.metrics("worker", 1).read_text().splitlines()
    assert len(metrics) == 20 and json.loads(metrics[-1])["step"] == 19  # tracking.log_metrics reached the store


# ---- closed pipes, damaged runs, hostile names, reconciliation, memory ------------------------

PYTORCH_2 = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}}


def _into_a_closed_pipe(*args: str) -> subprocess.CompletedProcess:
    """Run a command whose stdout is a pipe nobody reads any more (`cmd | head -0`)."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # before the command writes a byte: every write gets EPIPE
    try:
        proc = subprocess.run(
            [*CLI, *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
    finally:
        os.close(write_end)
    return proc


@pytest.mark.parametrize("command", [["status", "piped-1"], ["runs"], ["runs", "--json"], ["logs", "piped-1"]])
def test_a_closed_pipe_ends_quietly(synthetic_run, command):
    synthetic_run("piped-1", PYTORCH_2, state="Succeeded")
    result = _into_a_closed_pipe(*command)
    assert result.stderr == "" and result.returncode == 141, (result.returncode, result.stderr)


def test_damaged_run_is_one_line_and_runs_lists_the_others(synthetic_run, px_home):
    synthetic_run("fine-1", PYTORCH_2, state="Succeeded")
    (synthetic_run("garbage-1", PYTORCH_2) / "status.json").write_text('{"run_id": 7, "state": ')
    (synthetic_run("missing-1", PYTORCH_2) / "status.json").unlink()
    for command in ("status", "logs", "stop"):
        result = px(command, "garbage-1")
        assert result.returncode == 2
        assert result.stderr.startswith(f"jupyter px {command}: run garbage-1 is damaged: status.json is not valid")
        assert len(result.stderr.splitlines()) == 1
    missing = px("status", "missing-1")
    assert missing.returncode == 2 and "run missing-1 is damaged: status.json is missing" in missing.stderr
    listed = px("runs")
    assert listed.returncode == 0 and [line.split()[0] for line in listed.stdout.splitlines()[1:]] == ["fine-1"]


def test_names_with_terminal_escapes_are_escaped_and_clipped(px_home):
    from jupyter_px.runstore import RunRecord, RunStore

    store = RunStore()
    hostile = "\x1b]0;retitled\x07\x1b[31mred\nsecond row\u202e" + "n" * 300
    store.create(RunRecord(run_id="evil-1", name=hostile, topology={}), {"main.py": ""})
    store.create(RunRecord(run_id="plain-1", name="plain", topology={}), {"main.py": ""})
    result = px("runs")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert len(lines) == 3  # header + one row per run: the newline did not break a row
    assert not any(ch in result.stdout for ch in "\x1b\x07\u202e")
    assert "\\x1b]0;retitled\\x07\\x1b[31mred\\nsecond row" in result.stdout
    assert max(len(line) for line in lines) < 160  # the 300-character name is clipped
    assert json.loads(px("runs", "--json").stdout)[1]["name"] == hostile  # JSON keeps the real name


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_status_runs_and_logs_report_a_run_whose_supervisor_died_and_follow_keeps_it(synthetic_run):
    from jupyter_px.runstore import RunStore
    from jupyter_px.runstore.models import RunOwner

    synthetic_run("orphan-1", PYTORCH_2, log_lines=2)
    store = RunStore()
    status = store.status("orphan-1")
    status.owner = RunOwner(kind="supervisor", pid=_dead_pid())
    store.write_status(status)
    stored = store.paths("orphan-1").status.read_bytes()
    problem = f"the supervisor (pid {status.owner.pid}) is gone while the run was Running"
    run = _run("orphan-1")
    assert repr(run) == f"<Run orphan-1 Running; {problem}>"  # a repr only reads, and says what it saw
    listed = px("runs", "--json")
    assert json.loads(listed.stdout)[0]["state"] == "Running"
    assert json.loads(listed.stdout)[0]["owner_problem"] == problem
    table = px("runs")
    assert "Running (no owner)" in table.stdout and problem in table.stderr
    shown = px("status", "orphan-1")
    assert shown.stdout.startswith("run orphan-1: Running") and "jupyter px follow orphan-1" in shown.stderr
    logs = px("logs", "orphan-1", "--follow", timeout=60)  # a read cannot end the run: it says why it stops
    assert logs.returncode == 0 and "[worker.1] worker-1 line 1" in logs.stdout and problem in logs.stderr
    assert store.paths("orphan-1").status.read_bytes() == stored  # none of the reads wrote

    followed = px("follow", "orphan-1")  # the explicit keeper: reconciles, and the run ends Lost
    assert followed.returncode == 1 and "Lost" in followed.stderr, followed.stderr
    assert store.status("orphan-1").state.value == "Lost"
    assert px("status", "orphan-1").stdout.startswith("run orphan-1: Lost (SupervisorLost)")


def _peak_rss_kib(*args: str) -> int:
    """Peak resident memory of `jupyter px ARGS > /dev/null`, measured by a parent of its own
    (RUSAGE_CHILDREN of this test process would include every earlier child)."""
    probe = (
        "import resource, subprocess, sys\n"
        "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
        "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, *CLI, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    code, peak = out.stdout.split()
    assert code == "0", out.stderr
    return int(peak)


def _write_log(path, size_mb: int, line: bool) -> None:
    block = ("y" * 99 + "\n") * 10_486 if line else "z" * 1_048_600
    with open(path, "w") as handle:
        for _ in range(size_mb):
            handle.write(block)


@pytest.mark.parametrize("lines", [True, False], ids=["many-lines", "one-huge-line"])
def test_logs_memory_does_not_grow_with_the_log(synthetic_run, lines):
    root = synthetic_run("big-1", PYTORCH_2, state="Succeeded", log_lines=0)
    log = root / "logs" / "worker-0.log"
    _write_log(log, 2, lines)
    small = _peak_rss_kib("logs", "big-1")
    _write_log(log, 150, lines)
    big = _peak_rss_kib("logs", "big-1")
    assert big - small < 40 * 1024, (small, big)  # a 148 MB larger log, under 40 MB more memory
    assert _peak_rss_kib("logs", "big-1", "--role", "worker", "--index", "0") - small < 40 * 1024


@pytest.mark.jobs
def test_run_wait_streams_a_big_log_in_bounded_memory(px_home, tmp_path):
    script = tmp_path / "chatty.py"
    script.write_text("import sys\nline = 'w' * 999 + '\\n'\nfor _ in range(150_000):\n    sys.stdout.write(line)\n")
    peak = _peak_rss_kib("run", str(script), "--framework", "pytorch", "--wait")
    assert peak < 200 * 1024, peak  # 150 MB of log through a process that stays small
