"""jupyter_px.tracking inside simulated replicas: real subprocesses with the PX_* environment."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import make_replica_folders

from jupyter_px import tracking
from jupyter_px.runstore.layout import RunPaths

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def px_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PX_HOME", str(tmp_path / "home"))
    for var in (
        "PX_RUN_ID",
        "PX_TASK_TYPE",
        "PX_TASK_INDEX",
        "PX_CLUSTER",
        "PX_OUTPUTS_PATH",
        "PX_TENSORBOARD_PATH",
        "PX_METRICS_PATH",
        "PX_PARAMS_PATH",
    ):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "home"


def replica_env(
    paths: RunPaths, role: str = "worker", index: int = 0, shared_disk: bool = True, cluster: dict | None = None
) -> dict[str, str]:
    make_replica_folders(paths, role, index)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PX_") or k == "PX_HOME"}
    env.update(
        PYTHONPATH=str(REPO),
        PYTHONUNBUFFERED="1",
        PX_RUN_ID=paths.run_id,
        PX_TASK_TYPE=role,
        PX_TASK_INDEX=str(index),
        PX_CLUSTER=json.dumps(cluster or {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}),
        PX_OUTPUTS_PATH=str(paths.outputs_dir),
        PX_TENSORBOARD_PATH=str(paths.tensorboard(role, index)),
    )
    if shared_disk:
        env.update(PX_METRICS_PATH=str(paths.metrics(role, index)), PX_PARAMS_PATH=str(paths.params(role, index)))
    return env


def run_replica(script: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True, text=True, timeout=timeout
    )


@contextmanager
def ready_replica(script: str, env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """A replica running `script`, yielded once it has printed "ready"; killed on the way out."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    """What TensorBoard itself reads from a log directory."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_replica_writes_jsonl_params_and_tensorboard_scalars(px_home):
    paths = RunPaths("run-1")
    result = run_replica(
        """
        import sys
        from jupyter_px import tracking
        tracking.log_params(lr=0.01, layers=[64, 32], name="mlp")
        tracking.log_params(lr=0.02)
        for i in range(50):
            tracking.log_metrics(step=i, total_steps=50, loss=1.0 / (i + 1), acc=i)
        tracking.log_metrics(note=3)
        assert "tensorflow" not in sys.modules, "tracking must not import TensorFlow"
        """,
        replica_env(paths),
    )
    assert result.returncode == 0, result.stderr
    lines = read_jsonl(paths.metrics("worker", 0))
    assert len(lines) == 51
    assert lines[0]["step"] == 0 and lines[0]["total_steps"] == 50
    assert lines[0]["metrics"] == {"loss": 1.0, "acc": 0.0}
    assert isinstance(lines[0]["time"], float)
    assert lines[-1]["step"] is None and "total_steps" not in lines[-1]
    assert json.loads(paths.params("worker", 0).read_text()) == {"lr": 0.02, "layers": [64, 32], "name": "mlp"}

    tb = scalars(paths.tensorboard("worker", 0))
    assert set(tb) == {"loss", "acc", "note"}
    assert [s for s, _ in tb["loss"]] == list(range(50))
    assert tb["loss"][3][1] == pytest.approx(0.25)
    assert tb["acc"][49] == (49, 49.0)
    assert tb["note"] == [(50, 3.0)]  # a call without a step gets the call count as its step
    event_files = list(paths.tensorboard("worker", 0).iterdir())
    assert len(event_files) == 1 and event_files[0].name.endswith(tracking.EVENTS_FILE_SUFFIX)


def test_kubernetes_mode_prints_metrics_lines(px_home):
    from jupyter_px.runstore.log_metrics import parse_log_metrics

    paths = RunPaths("run-k")
    result = run_replica(
        """
        from jupyter_px import tracking
        print("starting", end="")   # a partial line must not swallow ours
        tracking.log_params(lr=0.5)
        tracking.log_metrics(step=1, loss=0.5)
        tracking.log_metrics(step=2, loss=0.25)
        """,
        replica_env(paths, shared_disk=False),
    )
    assert result.returncode == 0, result.stderr
    assert not paths.metrics("worker", 0).exists()
    found = parse_log_metrics(result.stdout.splitlines())
    assert [(r["step"], r["metrics"]) for r in found.metrics] == [(1, {"loss": 0.5}), (2, {"loss": 0.25})]
    assert found.params == {"lr": 0.5}
    assert scalars(paths.tensorboard("worker", 0))["loss"] == [(1, 0.5), (2, 0.25)]


def test_sigterm_still_flushes(px_home):
    paths = RunPaths("run-term")
    script = """
        import time
        from jupyter_px import tracking
        tracking.FLUSH_INTERVAL_S = 3600   # only the SIGTERM handler can write
        for i in range(1000):
            tracking.log_metrics(step=i, loss=float(i))
        print("ready", flush=True)
        time.sleep(60)
        """
    with ready_replica(script, replica_env(paths)) as proc:
        assert not paths.metrics("worker", 0).exists()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == -signal.SIGTERM  # still dies the way SIGTERM kills
    lines = read_jsonl(paths.metrics("worker", 0))
    assert [line["step"] for line in lines] == list(range(1000))
    assert len(scalars(paths.tensorboard("worker", 0))["loss"]) == 1000


def test_existing_sigterm_handler_is_left_alone(px_home):
    paths = RunPaths("run-own")
    script = """
        import signal, sys, time
        from jupyter_px import tracking
        def mine(signum, frame):
            print("mine", flush=True)
            sys.exit(3)   # a normal exit: atexit flushes
        signal.signal(signal.SIGTERM, mine)
        tracking.FLUSH_INTERVAL_S = 3600
        tracking.log_metrics(step=0, loss=1.0)
        assert signal.getsignal(signal.SIGTERM) is mine
        print("ready", flush=True)
        time.sleep(60)
        """
    with ready_replica(script, replica_env(paths)) as proc:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 3
        assert proc.stdout is not None and proc.stdout.read().strip() == "mine"
    assert read_jsonl(paths.metrics("worker", 0))[0]["metrics"] == {"loss": 1.0}


def test_flush_before_os_exit_and_fork_children(px_home):
    paths = RunPaths("run-fork")
    result = run_replica(
        """
        import os
        from jupyter_px import tracking
        tracking.FLUSH_INTERVAL_S = 3600
        tracking.log_metrics(step=0, parent=1.0)     # queued, not yet written, when we fork
        pid = os.fork()
        if pid == 0:
            tracking.log_metrics(step=0, child=2.0)
            tracking.flush()
            os._exit(0)
        os.waitpid(pid, 0)
        tracking.log_metrics(step=1, parent=1.5)
        tracking.flush()
        os._exit(0)                                  # what a runner does after flushing
        """,
        replica_env(paths),
    )
    assert result.returncode == 0, result.stderr
    lines = read_jsonl(paths.metrics("worker", 0))
    names = sorted((name, line["step"]) for line in lines for name in line["metrics"])
    assert names == [("child", 0), ("parent", 0), ("parent", 1)]  # the child did not repeat the parent's queue
    assert len(list(paths.tensorboard("worker", 0).iterdir())) == 2  # one event file per process


def test_a_replica_forked_from_a_template_keeps_its_own_ledger_and_a_childs_is_its_parents(px_home):
    """A warm replica is forked from a template that is no run's process (its environment has no
    PX_RUN_ID; it takes its run's after the fork): its ledger is its own, as a cold replica's, so
    its owner can count what a kill lost. A child the replica forks in turn (a DataLoader worker)
    leaves the ledger to it."""
    from jupyter_px.runstore.ledger import replica_ledgers

    paths = RunPaths("run-template")
    env = replica_env(paths)
    template = {k: v for k, v in env.items() if k != "PX_RUN_ID"}
    result = run_replica(
        f"""
        import json, os
        from jupyter_px import tracking                # imported by the template, as its preload does
        replica = os.fork()
        if replica == 0:
            os.environ.update({json.dumps(env)})        # the run's environment, after the fork
            tracking.FLUSH_INTERVAL_S = 3600
            tracking.log_metrics(step=0, loss=1.0)      # accepted, never written: the ledger says so
            worker = os.fork()
            if worker == 0:
                tracking.log_metrics(step=0, from_worker=1.0)
                os._exit(0)
            os.waitpid(worker, 0)
            print(os.getpid(), flush=True)
            os._exit(0)                                 # as a SIGKILL would: nothing flushed
        os.waitpid(replica, 0)
        """,
        template,
    )
    assert result.returncode == 0, result.stderr
    (ledger,) = replica_ledgers(paths.metrics_dir, "worker-0")
    assert ledger.pid == int(result.stdout.split()[0])  # the replica's, not its worker's
    assert (ledger.accepted, ledger.written, ledger.unwritten) == (1, 0, 1)


def test_multiprocessing_child_is_flushed(px_home):
    paths = RunPaths("run-mp")
    result = run_replica(
        """
        import multiprocessing as mp
        from jupyter_px import tracking
        tracking.FLUSH_INTERVAL_S = 3600
        def work():
            tracking.log_metrics(step=7, from_child=1.0)   # the child ends with os._exit
        if __name__ == "__main__":
            p = mp.get_context("fork").Process(target=work)
            p.start(); p.join()
            assert p.exitcode == 0
        """,
        replica_env(paths),
    )
    assert result.returncode == 0, result.stderr
    assert read_jsonl(paths.metrics("worker", 0))[0]["metrics"] == {"from_child": 1.0}


def test_task_info(monkeypatch):
    monkeypatch.setenv("PX_RUN_ID", "run-1")
    monkeypatch.setenv("PX_TASK_TYPE", "worker")
    monkeypatch.setenv("PX_TASK_INDEX", "0")
    monkeypatch.setenv("PX_CLUSTER", json.dumps({"worker": ["h:1", "h:2"], "ps": ["h:3"]}))
    info = tracking.get_task_info()
    assert (info.run_id, info.role, info.index, info.is_master) == ("run-1", "worker", 0, True)
    assert info.cluster["worker"] == ("h:1", "h:2")
    with pytest.raises(AttributeError):
        info.role = "ps"  # type: ignore[misc]

    monkeypatch.setenv("PX_CLUSTER", json.dumps({"master": ["h:0"], "worker": ["h:1"]}))
    assert tracking.get_task_info().is_master is False  # there is a master: worker 0 is not it
    monkeypatch.setenv("PX_TASK_TYPE", "master")
    assert tracking.get_task_info().is_master is True

    monkeypatch.setenv("PX_TASK_INDEX", "one")
    with pytest.raises(ValueError, match="PX_TASK_INDEX.*'one'"):
        tracking.get_task_info()
    monkeypatch.setenv("PX_TASK_INDEX", "1")
    monkeypatch.setenv("PX_CLUSTER", "[1, 2]")
    with pytest.raises(ValueError, match="PX_CLUSTER"):
        tracking.get_task_info()


def test_paths_inside_a_run(monkeypatch, tmp_path):
    monkeypatch.setenv("PX_RUN_ID", "run-1")
    monkeypatch.setenv("PX_OUTPUTS_PATH", str(tmp_path / "out"))
    monkeypatch.setenv("PX_TENSORBOARD_PATH", str(tmp_path / "tb"))
    assert tracking.get_outputs_path() == str(tmp_path / "out")
    assert tracking.get_tensorboard_path() == str(tmp_path / "tb")
    assert (tmp_path / "out").is_dir() and (tmp_path / "tb").is_dir()


def test_outside_a_run_is_a_noop_that_warns_once(px_home):
    result = run_replica(
        """
        import os, warnings
        warnings.simplefilter("always")
        with warnings.catch_warnings(record=True) as caught:
            from jupyter_px import tracking
            for i in range(3):
                tracking.log_metrics(step=i, loss=0.5)
            tracking.log_params(lr=1)
            out = tracking.get_outputs_path()
            assert os.path.isdir(out) and os.path.isdir(tracking.get_tensorboard_path())
            info = tracking.get_task_info()
            assert info.run_id is None and info.is_master
            tracking.flush()
        print(len(caught), caught[0].message)
        """,
        {k: v for k, v in os.environ.items() if not k.startswith("PX_") or k == "PX_HOME"} | {"PYTHONPATH": str(REPO)},
    )
    assert result.returncode == 0, result.stderr
    count, message = result.stdout.split(" ", 1)
    assert count == "1" and "PX_RUN_ID" in message
    assert not (px_home / "runs").exists()


def test_bad_values_name_the_metric(px_home):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError, match=r"'loss'.*str 'high'"):
            tracking.log_metrics(step=1, loss="high")
        with pytest.raises(TypeError, match=r"'acc'.*None"):
            tracking.log_metrics(acc=None)
        with pytest.raises(TypeError, match=r"'flag'.*bool"):
            tracking.log_metrics(flag=True)
        with pytest.raises(TypeError, match=r"'grad'.*list"):
            tracking.log_metrics(grad=[1.0, 2.0])
        with pytest.raises(TypeError, match=r"step must be an integer.*1.5"):
            tracking.log_metrics(step=1.5, loss=1.0)  # type: ignore[arg-type]  # what is checked
        with pytest.raises(ValueError, match=r"step must be >= 0, got -1"):
            tracking.log_metrics(step=-1, loss=1.0)
        with pytest.raises(ValueError, match=r"step must be < 2\*\*63"):
            tracking.log_metrics(step=2**63, loss=1.0)
        with pytest.raises(ValueError, match=r"'big' is too large for a float"):
            tracking.log_metrics(big=10**400)
        with pytest.raises(ValueError, match=r"total_steps must be >= 1, got 0"):
            tracking.log_metrics(step=0, total_steps=0, loss=1.0)
        with pytest.raises(ValueError, match="at least one metric"):
            tracking.log_metrics(step=1)
        with pytest.raises(TypeError, match=r"param 'fn'.*function"):
            tracking.log_params(fn=print)


def test_scalar_like_values_are_converted_to_the_numbers_they_hold(px_home):
    """numpy scalars, 0-d and one-element tensors and arrays, ints: the run store gets floats
    with the same values (and a numpy step becomes an int)."""
    paths = RunPaths("run-conv")
    result = run_replica(
        """
        import numpy as np, torch
        from jupyter_px import tracking
        tracking.log_metrics(
            step=np.int64(3), a=np.float32(0.5), b=torch.tensor(2.0), c=np.array([1.5]), d=7,
            e=torch.tensor([0.25], dtype=torch.float64), f=np.float64(-3.75),
        )
        try:
            tracking.log_metrics(t=torch.tensor([1.0, 2.0]))
        except TypeError as error:
            print(error)
        """,
        replica_env(paths),
    )
    assert result.returncode == 0, result.stderr
    assert "'t' must be a single real number, got Tensor of shape (2,)" in result.stdout
    assert "loss.item()" in result.stdout
    [line] = read_jsonl(paths.metrics("worker", 0))
    assert line["step"] == 3
    assert line["metrics"] == {"a": 0.5, "b": 2.0, "c": 1.5, "d": 7.0, "e": 0.25, "f": -3.75}
    assert all(type(v) is float for v in line["metrics"].values())
    assert scalars(paths.tensorboard("worker", 0))["c"] == [(3, 1.5)]
