"""The local backend: resource checks, placement, ports, the runner, and real distributed jobs.

Every job asserts on what it computed (written to PX_OUTPUTS_PATH), not only on exit codes,
and every finished run is checked to have left no process behind. TensorFlow's strategies run
locally as real workloads (Keras on MultiWorkerMirrored and on parameter servers:
tests/test_workloads.py), not a second time here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
from local_support import JOBS, describe, outputs, replica, submit, wait
from px_cli import ROOT

from jupyter_px.backends import ResourceUnavailable
from jupyter_px.backends.local import resources
from jupyter_px.processes import ports
from jupyter_px.processes.ports import PortReservation
from jupyter_px.runstore import CodeSpec, RunRecord, RunStore
from jupyter_px.topology import parse_topology

#: Each real job runs twice, cold and warm (`launch`, tests/conftest.py).
pytestmark = [pytest.mark.usefixtures("launch")]

PYTORCH_4 = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 3}}}


# ---- resources ---------------------------------------------------------------------------------


def _topology(**worker_resources):
    return parse_topology(
        {
            "framework": "pytorch",
            "environment": {"replicas": {"n_workers": 2, "worker": [{"index": 1, "resources": worker_resources}]}},
        }
    )


SMALL = resources.Machine(cpus=(0, 1), memory_mib=1000.0, gpus=())


@pytest.mark.parametrize(
    "asked, says",
    [
        ({"cpu": {"requests": 4}}, "worker-1 requests 4 cpu cores, but this machine lets a run use 2"),
        ({"cpu": {"limits": 3}}, "worker-1 requests 3 cpu cores"),
        ({"memory": {"requests": "8Gi"}}, "worker-1 requests 8192 MiB of memory, but this machine has 1000 MiB"),
        ({"gpu": {"limits": 1}}, "worker-1 requests 1 GPU, but the GPUs visible here are none"),
    ],
)
def test_check_names_the_replica_and_value(asked, says):
    with pytest.raises(ResourceUnavailable) as error:
        resources.check(_topology(**asked), SMALL)
    assert says in str(error.value)


def test_check_accepts_what_fits():
    resources.check(_topology(cpu={"requests": 2}, memory={"requests": 512, "limits": 4096}), SMALL)


def test_check_adds_up_memory_and_gpus_of_the_whole_run():
    """64 workers that each fit, but not together: refused, naming the totals."""
    big = {
        "framework": "pytorch",
        "environment": {
            "replicas": {
                "n_workers": 64,
                "default_worker": {"resources": {"cpu": {"requests": 1}, "memory": {"requests": 512, "limits": 2048}}},
            }
        },
    }
    with pytest.raises(
        ResourceUnavailable, match=r"its 65 replicas request 32768 MiB of memory in all, but this machine has 1000 MiB"
    ):
        resources.check(parse_topology(big), SMALL)
    two_gpus = resources.Machine(cpus=(0, 1), memory_mib=1e6, gpus=("0", "1"))
    three = {
        "framework": "pytorch",
        "environment": {
            "resources": {"gpu": 1},
            "replicas": {"n_workers": 2, "default_worker": {"resources": {"gpu": 1}}},
        },
    }
    with pytest.raises(
        ResourceUnavailable, match=r"its replicas request 3 GPUs in all, but the GPUs visible here are 2"
    ):
        resources.check(parse_topology(three), two_gpus)
    resources.check(
        parse_topology(
            {
                "framework": "pytorch",
                "environment": {
                    "replicas": {"n_workers": 7, "default_worker": {"resources": {"cpu": {"requests": 1}}}}
                },
            }
        ),
        SMALL,
    )  # cores are time-shared: 8 one-core replicas on 2 cores run


def test_check_counts_gpus_from_cuda_visible_devices():
    machine = resources.Machine(cpus=(0,), memory_mib=1e6, gpus=resources.visible_gpus({"CUDA_VISIBLE_DEVICES": "2,3"}))
    resources.check(_topology(gpu={"limits": 2}), machine)
    with pytest.raises(ResourceUnavailable, match=r"requests 3 GPUs, but the GPUs visible here are 2 \(2, 3\)"):
        resources.check(_topology(gpu={"limits": 3}), machine)
    assert resources.visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == ()
    assert resources.visible_gpus({"CUDA_VISIBLE_DEVICES": "-1"}) == ()


def test_submit_refused_before_anything_exists(px_home):
    from jupyter_px.api import submit as api_submit

    topology = {
        "framework": "pytorch",
        "environment": {"replicas": {"n_workers": 1, "default_worker": {"resources": {"cpu": {"requests": 10_000}}}}},
    }
    with pytest.raises(ResourceUnavailable, match="worker-0 requests 10000 cpu cores"):
        api_submit(JOBS / "faults.py", topology)
    assert RunStore().run_ids() == []


def test_placement_spreads_cores_and_gives_gpus():
    topology = parse_topology(
        {
            "framework": "pytorch",
            "environment": {
                "resources": {"cpu": 1, "gpu": 1},
                "replicas": {"n_workers": 3, "default_worker": {"resources": {"cpu": {"limits": 2}}}},
            },
        }
    )
    machine = resources.Machine(cpus=(0, 1, 2, 3), memory_mib=1e6, gpus=("0", "1"))
    placed = resources.place(topology.replicas(), machine)
    assert placed[("master", 0)].cpus == (0,)
    assert placed[("master", 0)].cuda_visible_devices == "0"
    assert placed[("worker", 0)].cpus == (1, 2)
    assert placed[("worker", 1)].cpus == (0, 3)  # round-robin wraps: overlapping is fine
    assert placed[("worker", 2)].cuda_visible_devices == ""  # asks for no GPU: sees none
    unlimited = resources.place(parse_topology({}).replicas(), machine)
    assert unlimited[("master", 0)].cpus is None  # no cpu setting: every core


# ---- ports -------------------------------------------------------------------------------------


def test_reserved_ports_are_locked_against_other_processes(tmp_path):
    lock = tmp_path / "ports.lock"
    reservation = PortReservation(lock)
    taken = reservation.take(5)
    assert len(set(taken)) == 5
    for port in taken:
        reservation.release_socket(port)  # the replica could bind it now; the lock stays
    probe = textwrap.dedent(f"""
        import fcntl, os, sys
        fd = os.open({str(lock)!r}, os.O_RDWR)
        held = 0
        for port in {taken!r}:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, port)
            except OSError:
                held += 1
        print(held)
    """)
    held = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert held.stdout.strip() == "5"
    reservation.close()
    freed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert freed.stdout.strip() == "0"


def test_ports_come_from_below_the_kernels_ephemeral_range(tmp_path):
    """Where nobody's bind(0) or outgoing connection can land between our release and the
    replica's bind; the range is this machine's own."""
    first, _last = ports.ephemeral_range()
    reservation = PortReservation(tmp_path / "ports.lock")
    try:
        taken = reservation.take(64)
    finally:
        reservation.close()
    assert len(set(taken)) == 64
    assert all(max(ports.LOWEST, first - ports.POOL_SIZE) <= port < first for port in taken), (first, taken)


def test_the_pool_is_the_ports_below_the_range_or_the_kernels_choice(tmp_path):
    assert ports.pool((32768, 60999)) == range(16384, 32768)
    assert ports.pool((12000, 65535)) == range(10000, 12000)
    assert ports.pool((10500, 65535)) is None  # too few below it: bind(0), under the lock
    assert ports.pool(None) is None
    wide = PortReservation(tmp_path / "ports.lock", ports=None)  # the kernel picks
    try:
        assert wide.take(2)
    finally:
        wide.close()
    (tmp_path / "range").write_text("40000\t60999\n")
    assert ports.ephemeral_range(tmp_path / "range") == (40000, 60999)
    assert ports.ephemeral_range(tmp_path / "missing") is None


def test_the_port_lock_is_one_per_user_in_a_folder_of_theirs_alone(tmp_path, monkeypatch):
    assert ports.lock_path().parent.name == f"jupyter-px-{os.getuid()}"
    monkeypatch.setattr(ports.tempfile, "gettempdir", lambda: str(tmp_path))
    shared = tmp_path / f"jupyter-px-{os.getuid()}"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)  # another user could plant the lock file
    with pytest.raises(PermissionError, match=r"is not this user's alone \(owner uid \d+, mode 777\)"):
        PortReservation()


# ---- the runner --------------------------------------------------------------------------------


def _runner_run(store: RunStore, source: str, *, language="python", args=(), files=None, workdir=None, env=None):
    """A run directory for the runner alone (no supervisor), and the runner's result."""
    run_id = f"runner-{time.monotonic_ns() % 10**9}"
    code = {"main.py": source, **(files or {})}
    store.create(
        RunRecord(
            run_id=run_id,
            topology={},
            workdir=str(workdir) if workdir else None,
            code=CodeSpec(entrypoint="main.py", language=language, args=list(args), source="test"),
            submitted_from="test",
        ),
        code,
    )
    result = subprocess.run(
        [sys.executable, "-m", "jupyter_px.runner", str(store.paths(run_id).root)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})),
        timeout=120,
    )
    return result


def test_runner_runs_main_with_args_workdir_and_code_dir(px_home, tmp_path):
    (tmp_path / "helper_mod.py").write_text("VALUE = 'from the workdir'\n")
    source = textwrap.dedent("""
        import os, sys
        import sibling, helper_mod
        print(__name__, sys.argv[1:], os.getcwd(), sibling.X, helper_mod.VALUE)
    """)
    result = _runner_run(RunStore(), source, args=["--lr", "3"], files={"sibling.py": "X = 41 + 1\n"}, workdir=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["__main__", "['--lr',", "'3']", str(tmp_path), "42", "from", "the", "workdir"]


@pytest.mark.parametrize(
    "source, code",
    [
        ("import sys\nsys.exit(4)\n", 4),
        ("raise SystemExit('bad input')\n", 1),
        ("raise SystemExit(None)\n", 0),
        (
            "import threading, time\n"
            "threading.Thread(target=lambda: (time.sleep(0.2), print('thread done'))).start()\n",
            0,
        ),
    ],
)
def test_runner_exit_codes(px_home, source, code):
    result = _runner_run(RunStore(), source)
    assert result.returncode == code, result.stderr
    if "thread" in source:
        assert "thread done" in result.stdout  # non-daemon threads are joined, as by the interpreter


def test_runner_reports_exceptions_with_the_users_traceback(px_home):
    result = _runner_run(RunStore(), "def f():\n    raise ValueError('boom 7')\nf()\n")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert "main.py" in lines[1] and "runpy" not in result.stderr and "jupyter_px" not in result.stderr
    assert lines[-1] == "ValueError: boom 7"


def test_runner_runs_atexit_handlers_and_flushes_tracking(px_home, tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    source = textwrap.dedent("""
        import atexit
        from jupyter_px import tracking
        tracking.FLUSH_INTERVAL_S = 3600  # only the runner's exit flush can write it in time
        atexit.register(lambda: print("atexit ran", flush=True))
        tracking.log_metrics(step=3, loss=0.25)
    """)
    result = _runner_run(RunStore(), source, env={"PX_RUN_ID": "runner-metrics", "PX_METRICS_PATH": str(metrics)})
    assert result.returncode == 0 and "atexit ran" in result.stdout, result.stderr
    lines = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert len(lines) == 1 and lines[0]["step"] == 3 and lines[0]["metrics"] == {"loss": 0.25}


def test_runner_ipython_magics_shell_and_failures(px_home):
    ok = _runner_run(
        RunStore(), "x = 20 + 1\n%time y = x * 2\n!echo shell says $y\nprint('y is', y)\n", language="ipython"
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "shell says 42" in ok.stdout and "y is 42" in ok.stdout
    failing = _runner_run(RunStore(), "print('before')\n1 / 0\nprint('after')\n", language="ipython")
    assert failing.returncode == 1
    assert "ZeroDivisionError" in failing.stdout + failing.stderr and "after" not in failing.stdout.splitlines()
    exits = _runner_run(RunStore(), "import sys\nsys.exit(6)\n", language="ipython")
    assert exits.returncode == 6


def test_runner_loads_pushed_values(px_home):
    import pickle

    result = _runner_run(
        RunStore(), "print(lr * 10, names)\n", files={"pushed.pkl": pickle.dumps({"lr": 0.5, "names": ["a", "b"]})}
    )
    assert result.returncode == 0 and result.stdout.strip() == "5.0 ['a', 'b']"


# ---- runs through the backend (real processes) --------------------------------------------------


@pytest.mark.jobs
def test_environment_contract_affinity_and_status_right_after_submit(px_home, tmp_path):
    topology = {
        "framework": "pytorch",
        "environment": {"replicas": {"n_workers": 2, "default_worker": {"resources": {"cpu": {"limits": 1}}}}},
    }
    run = submit("faults.py", topology, args=["env"], workdir=tmp_path)
    first = run.status()  # submit recorded the supervisor's pid and the replicas before it returned
    assert first.owner and first.owner.kind == "supervisor" and first.state.value in ("Pending", "Running", "Succeeded")
    assert [r.key for r in first.replicas] == ["master-0", "worker-0", "worker-1"]
    status = wait(run)
    assert status.state.value == "Succeeded", describe(run)
    seen = outputs(run)
    cores = sorted(os.sched_getaffinity(0))
    addresses = {r.key: r.address for r in status.replicas}
    for key, (rank, affinity) in {"master-0": ("0", cores), "worker-0": ("1", None), "worker-1": ("2", None)}.items():
        data = seen[key]
        env = data["env"]
        assert data["name"] == "__main__" and data["cwd"] == str(tmp_path)
        assert data["path"][0] == str(run.paths.code_dir)
        assert env["PX_RUN_ID"] == run.run_id and env["RANK"] == rank and env["WORLD_SIZE"] == "3"
        assert env["PX_OUTPUTS_PATH"] == str(run.paths.outputs_dir)
        role, index = key.rsplit("-", 1)
        assert env["PX_METRICS_PATH"] == str(run.paths.metrics(role, int(index)))
        assert env["MASTER_ADDR"] + ":" + env["MASTER_PORT"] == addresses["master-0"]
        assert env["CUDA_VISIBLE_DEVICES"] == ""
        assert json.loads(env["PX_CLUSTER"])["worker"] == [addresses["worker-0"], addresses["worker-1"]]
        if affinity is not None:
            assert data["affinity"] == affinity  # no cpu setting: every core
        else:
            assert len(data["affinity"]) == 1 and env["OMP_NUM_THREADS"] == "1"  # limits: 1 -> one core
    assert seen["worker-0"]["affinity"] != seen["worker-1"]["affinity"] or len(cores) == 1


@pytest.mark.jobs
@pytest.mark.cold_only  # processes_per_replica > 1: a warm round starts it cold too (test_warm checks the reason)
def test_processes_per_replica_start_torchrun_style_ranks(px_home):
    topology = {"framework": "pytorch", "environment": {"processes_per_replica": 2, "replicas": {"n_workers": 1}}}
    status = wait(run := submit("faults.py", topology, args=["env"]))
    assert status.state.value == "Succeeded", describe(run)
    seen = outputs(run)
    ranks = {key: (v["env"]["RANK"], v["env"]["LOCAL_RANK"], v["env"]["WORLD_SIZE"]) for key, v in seen.items()}
    assert ranks == {
        "master-0-local0": ("0", "0", "4"),
        "master-0-local1": ("1", "1", "4"),
        "worker-0-local0": ("2", "0", "4"),
        "worker-0-local1": ("3", "1", "4"),
    }


@pytest.mark.jobs
def test_run_outlives_the_process_that_submitted_it(px_home):
    code = textwrap.dedent(f"""
        from jupyter_px.api import submit
        topology = {{"framework": "pytorch", "environment": {{"replicas": {{"n_workers": 1}}}}}}
        run = submit({str(JOBS / "faults.py")!r}, topology, args=["flaky", "worker-0", "0"])
        print(run.run_id)
    """)
    child = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    from jupyter_px.api import Run

    run = Run(child.stdout.strip())
    status = wait(run)
    assert status.state.value == "Succeeded", describe(run)


@pytest.mark.jobs
def test_pytorch_gloo_allreduce_and_ddp(px_home):
    run = submit("torch_ddp.py", PYTORCH_4)
    status = wait(run)
    assert status.state.value == "Succeeded", describe(run)
    assert all(r.state.value == "Succeeded" and r.exit_code == 0 for r in status.replicas), describe(run)
    results = outputs(run)
    assert sorted(results) == ["master-0", "worker-0", "worker-1", "worker-2"]
    assert sorted(r["rank"] for r in results.values()) == [0, 1, 2, 3]
    assert {r["world_size"] for r in results.values()} == {4}
    assert {r["allreduce"] for r in results.values()} == {6.0}  # 0 + 1 + 2 + 3
    weights = [r["weights"] for r in results.values()]
    assert all(w == weights[0] for w in weights)  # DDP kept every rank identical
    assert results["master-0"]["rank"] == 0 and results["worker-2"]["rank"] == 3
    assert "all_reduce=6" in run.logs("worker", 1)


@pytest.mark.jobs
@pytest.mark.cold_only  # mpirun: a warm round starts it cold too (test_warm checks the reason)
def test_mpi_job_three_ranks(px_home):
    run = submit("mpi_allreduce.py", {"framework": "mpi", "environment": {"replicas": {"n_workers": 3}}})
    status = wait(run)
    assert status.state.value == "Succeeded", describe(run)
    results = outputs(run)
    assert sorted(results) == ["rank-0", "rank-1", "rank-2"]
    assert {r["sum"] for r in results.values()} == {3} and {r["size"] for r in results.values()} == {3}
    for rank in range(3):  # each rank took on its worker's identity (for tracking)
        data = results[f"rank-{rank}"]
        assert (data["task_type"], data["task_index"]) == ("worker", str(rank))
        assert data["metrics_path"] == str(run.paths.metrics("worker", rank))
    assert (run.paths.root / "mpi" / "hostfile").read_text() == "127.0.0.1 slots=3\n"
    assert "allreduce of ranks = 3" in run.logs("master", 0)  # ranks' output: the launcher's log
    for key in ("worker-0", "worker-1", "worker-2"):
        assert replica(status, key).state.value == "Succeeded"


@pytest.mark.jobs
def test_an_environment_value_over_128_kib_reaches_the_replica(px_home):
    """Linux refuses an exec whose one environment string is over 128 KiB (E2BIG): a topology's
    `env` may hold one (it is under the 2 MiB a topology may be). It reaches the replica whole."""
    from jupyter_px.api import submit as api_submit

    big = "0123456789abcdef" * (200 * 1024 // 16)
    code = (
        "import os, pathlib\n"
        "out = pathlib.Path(os.environ['PX_OUTPUTS_PATH'], 'big.json')\n"
        "out.write_text(str([len(os.environ['BIG'])]))\n"
    )
    run = api_submit(code, {"framework": "pytorch", "environment": {"env": {"BIG": big}}})
    assert wait(run).state.value == "Succeeded", describe(run)
    assert outputs(run)["big"] == [len(big)]
