"""What the reference-workload tests share (examples/workloads/): submitting a workload at its tiny
size on a backend, and checking what the job computed, not only how it ended.

Each workload prints `RESULT {json}` as each replica's last line (its final evaluation loss,
all-reduced, so the same on every replica) and logs every step through `jupyter_px.tracking`;
the synchronous ones (PyTorch DDP, MultiWorkerMirroredStrategy) are a function of the seed and
the world size only, so the same seed gives the same final loss on every backend. The loss to
compare with is the PyTorch scripts' under `torchrun --standalone` (the launcher a user would
otherwise pick), computed once per test session (a file under pytest's shared base temp, so the
xdist workers share it), and for MultiWorkerMirroredStrategy the local backend's cold run's.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from jupyter_px.runstore import RunStore
from jupyter_px.runstore.event_records import read_scalar_events
from jupyter_px.runstore.layout import EVENTS_FILE_SUFFIX
from jupyter_px.service import RunService, ScriptFile, Submission

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS_DIR = ROOT / "examples" / "workloads"

#: Generous: real training processes on a shared, loaded two-core machine (a Keras job on
#: parameter servers took over 290 s in the project's CI on a slow one, beside the browser tests).
DEADLINE_S = 480.0
#: "the same final loss": CPU, one thread per rank, deterministic ops.
SAME_LOSS = 1e-6
#: The scripts' own default: the workloads notebook's cells run with no arguments
#: (tests/test_workloads.py), and every backend's run compares with the same references.
SEED = 0


@dataclass(frozen=True)
class Workload:
    script: str
    topology: str
    steps: int  # optimizer steps at the tiny size (each logged)
    synchronous: bool  # the final loss is a function of the seed and the world size
    checkpoints: str  # what each training replica saves into outputs/checkpoints/<rank folder>/
    trainers: tuple[str, ...]  # the roles that train (and checkpoint)

    @property
    def path(self) -> Path:
        return WORKLOADS_DIR / self.script


WORKLOADS = {
    "torch_cnn": Workload("torch_cnn.py", "torch.yaml", 12, True, "step-*.pt", ("master", "worker")),
    "torch_lm": Workload("torch_lm.py", "torch.yaml", 15, True, "step-*.pt", ("master", "worker")),
    "tf_mwms": Workload("tf_mwms.py", "tf_mwms.yaml", 12, True, "step-*.weights.h5", ("master", "worker")),
    "tf_ps": Workload("tf_ps.py", "tf_ps.yaml", 12, False, "step-*", ("master",)),
}


def topology(name: str, backend: str, workers: int = 1) -> dict[str, Any]:
    """The workload's topology file as written, on `backend`, with `workers` workers (the tests'
    size: fewer replicas than the file's, the same resources)."""
    spec = yaml.safe_load((WORKLOADS_DIR / WORKLOADS[name].topology).read_text())
    spec["backend"] = backend
    spec["environment"]["replicas"]["n_workers"] = workers
    return spec


def submit(service: RunService, name: str, backend: str, workers: int = 1, seed: int = SEED, cold: bool = False) -> str:
    workload = WORKLOADS[name]
    submission = Submission(
        ScriptFile(workload.path),
        topology(name, backend, workers),
        name=name.replace("_", "-"),
        args=("--size", "tiny", "--seed", str(seed)),
        cold=cold,
    )
    return service.submit(submission)


def results(service: RunService, run_id: str) -> dict[tuple[str, int], dict[str, Any]]:
    """Each replica's `RESULT {json}` line, by (role, index); replicas that print none are left out."""
    found = {}
    for role, index in service.replicas(run_id):
        lines = [line for line in service.log_tail(run_id, role, index, tail=None).splitlines() if "RESULT {" in line]
        if lines:
            found[(role, index)] = json.loads(lines[-1].split("RESULT ", 1)[1])
    return found


def final_loss(service: RunService, run_id: str, name: str) -> float:
    """The run's final evaluation loss: the same on every replica that trained."""
    found = results(service, run_id)
    trainers = [key for key in service.replicas(run_id) if key[0] in WORKLOADS[name].trainers]
    assert set(found) >= set(trainers), f"replicas without a RESULT line: {set(trainers) - set(found)}"
    losses = {key: found[key]["eval_loss"] for key in trainers}
    first = losses[trainers[0]]
    assert all(abs(loss - first) <= SAME_LOSS for loss in losses.values()), losses
    return first


def check_run(
    service: RunService, run_id: str, name: str, *, checkpoints: bool = True, expected: float | None = None
) -> float:
    """Succeeded; every training replica's final loss the same (and `expected`'s, if given); every
    replica's metrics and tracking's TensorBoard events have every step; every training replica's
    checkpoints on disk (where the run store shares a disk with the replicas)."""
    workload = WORKLOADS[name]
    status = service.status(run_id)
    logs = {key: service.log_tail(run_id, *key) for key in service.replicas(run_id)}
    assert status.state.value == "Succeeded", (status.message, logs)
    loss = final_loss(service, run_id, name)
    if expected is not None:
        assert abs(loss - expected) <= SAME_LOSS, f"final loss {loss!r}, expected {expected!r} (the same seed)"

    steps = list(range(1, workload.steps + 1))
    trainers = [key for key in service.replicas(run_id) if key[0] in workload.trainers]
    metrics = service.metrics(run_id)
    paths = RunStore().paths(run_id)
    for role, index in trainers:
        replica = f"{role}-{index}"
        series = metrics[replica]["loss"]
        assert list(series.steps) == steps, (replica, list(series.steps))
        assert all(value == value for value in series.values), (replica, list(series.values))  # no NaN
        assert list(metrics[replica]["eval_loss"].values) == [loss] or not workload.synchronous
        events = tensorboard_steps(paths.tensorboard(role, index), "loss")
        assert events == steps, (replica, events)
        if checkpoints:
            folder = paths.outputs_dir / "checkpoints" / rank_folder(name, role, index, trainers)
            saved = sorted(p.name for p in folder.glob(workload.checkpoints))
            assert len(saved) == len(range(5, workload.steps + 1, 5)) + (workload.steps % 5 != 0), (folder, saved)
    return loss


def rank_folder(name: str, role: str, index: int, trainers: list[tuple[str, int]]) -> str:
    """Where a replica's checkpoints go: `rank-<RANK>` (PyTorch), `<task type>-<index>` (TensorFlow)."""
    if name.startswith("torch"):
        return f"rank-{0 if role == 'master' else index + 1}"
    return f"{'chief' if role == 'master' else role}-{index}"


def tensorboard_steps(folder: Path, tag: str) -> list[int]:
    """The steps of `tag` in tracking's own event files under `folder`."""
    steps: list[int] = []
    for path in sorted(folder.glob(f"*{EVENTS_FILE_SUFFIX}")):
        read_scalar_events(
            str(path), 0, path.stat().st_size, {}, lambda t, step, v, w: steps.append(step) if t == tag else None
        )
    return sorted(steps)


def _cached(shared: Path, key: str, compute: Any) -> float:
    """`compute()` once per test session and script version: the first caller of any xdist
    worker computes it under a lock, the others read it (`shared`: pytest's base temp's parent)."""
    shared.mkdir(parents=True, exist_ok=True)
    cache = shared / f"workload-loss-{key}.json"
    with open(shared / "workload-loss.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if cache.exists():
            return float(json.loads(cache.read_text()))
        loss = float(compute())
        cache.write_text(json.dumps(loss))
        return loss


def _key(name: str, *parts: object) -> str:
    digest = hashlib.sha256(WORKLOADS[name].path.read_bytes()).hexdigest()[:12]
    return "-".join([name, digest, *map(str, parts)])


def torchrun_loss(name: str, world: int, shared: Path, seed: int = SEED) -> float:
    """The final loss of `name` under `torchrun --standalone --nproc_per_node=world`."""

    def compute() -> float:
        workdir = shared / f"torchrun-{_key(name, world, seed)}"
        workdir.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PX_")}
        out = subprocess.run(
            [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world}"]
            + [str(WORKLOADS[name].path), "--size", "tiny", "--seed", str(seed)],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        # torchrun's ranks share one stdout, and print() writes its text and its newline apart
        # (PYTHONUNBUFFERED): two ranks' RESULTs may share a line, so each is read where it starts
        decoder = json.JSONDecoder()
        found = [decoder.raw_decode(out.stdout, m.end())[0] for m in re.finditer(r"RESULT (?=\{)", out.stdout)]
        assert len(found) == world and len({r["eval_loss"] for r in found}) == 1, found
        return found[0]["eval_loss"]

    return _cached(shared, _key(name, "torchrun", world, seed), compute)


def local_loss(name: str, workers: int, shared: Path, seed: int = SEED) -> float:
    """The final loss of `name` on the local backend, started cold (the TensorFlow workloads'
    reference: TensorFlow has no launcher of its own)."""

    def compute() -> float:
        service = RunService()
        run_id = submit(service, name, "local", workers, seed, cold=True)
        service.wait(run_id, timeout=DEADLINE_S)
        return check_run(service, run_id, name)

    return _cached(shared, _key(name, "local", workers, seed), compute)


def shared_folder(tmp_path_factory: Any) -> Path:
    """This test session's folder for the references: under xdist, the parent of the worker's
    base temp (one per session, every worker sees it); without, the base temp itself (its parent
    outlives the session)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "workload-references"


def record_local_loss(name: str, workers: int, shared: Path, loss: float, seed: int = SEED) -> float:
    """`loss` of a local run of `name` kept as the session's reference, or the reference another
    test kept first (which `loss` must equal)."""
    return _cached(shared, _key(name, "local", workers, seed), lambda: loss)


def reference_loss(name: str, workers: int, shared: Path) -> float:
    """What every backend's run of `name` (seed SEED, `workers` workers) must end with."""
    if name.startswith("torch"):
        return torchrun_loss(name, workers + 1, shared)
    return local_loss(name, workers, shared)
