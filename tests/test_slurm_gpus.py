"""GPUs on a real Slurm cluster with fake GPUs (tests/slurm_cluster `gpus=`: two per node, declared
in gres.conf on character devices, as Slurm's own tests do where no GPU exists).

What this covers: how a replica's GPUs are asked for (`--gpus-per-task`, or `--gres` per node),
that Slurm's scheduler counts and allocates them, that each replica's `CUDA_VISIBLE_DEVICES` is the
one Slurm gave its task (and not the submitting machine's), and that a request no node can meet is
refused before anything is queued with Slurm's reason. What it does not: no device is there to
open (no CUDA), and nothing confines a task to its GPUs (`ConstrainDevices` is off here).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from slurm_cluster import SlurmCluster
from slurm_support import DEADLINE_S, job_id, queued, started_cluster, use_slurm_fixture, wait_for  # noqa: F401

from jupyter_px.runstore import RunStore
from jupyter_px.service import ResourceUnavailable, RunService, SourceText, Submission

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module", name="slurm_cluster")
def gpu_cluster() -> Iterator[SlurmCluster]:
    """Two nodes of 4 CPUs, each with two fake GPUs of type `fake`."""
    with started_cluster(nodes=2, gpus=2) as cluster:
        yield cluster


SEES = """
import json, os
me = f"{os.environ['PX_TASK_TYPE']}-{os.environ['PX_TASK_INDEX']}"
seen = {k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "SLURMD_NODENAME", "SLURM_STEP_GPUS")}
with open(os.path.join(os.environ["PX_OUTPUTS_PATH"], me + ".json"), "w") as f:
    json.dump(seen, f)
"""


def _topology(gpus: int, workers: int = 1) -> dict:
    each = {"cpu": 1, "memory": 400, "gpu": gpus}
    return {
        "framework": "pytorch",
        "backend": "slurm",
        "environment": {"resources": each, "replicas": {"n_workers": workers, "default_worker": {"resources": each}}},
    }


def _seen(run_id: str) -> dict[str, dict]:
    outputs = RunStore().paths(run_id).outputs_dir
    return {path.stem: json.loads(path.read_text()) for path in outputs.glob("*.json")}


@pytest.mark.parametrize(
    ("settings", "asked"),
    [("", "#SBATCH --gpus-per-task=1"), ("gres_name: gpu:fake\ngpu_option: gres\n", "#SBATCH --gres=gpu:fake:1")],
    ids=["gpus-per-task", "gres-typed"],
)
def test_each_replica_sees_the_gpus_slurm_gave_its_task(use_slurm, px_home, tmp_path, monkeypatch, settings, asked):
    (tmp_path / "slurm.yaml").write_text(settings or "{}\n")
    monkeypatch.setenv("PX_SLURM_CONFIG", str(tmp_path / "slurm.yaml"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")  # this machine's GPUs are not the tasks'
    service = RunService()
    run_id = service.submit(Submission(SourceText(SEES), _topology(gpus=1), name="gpus"))
    status = service.wait(run_id, timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", status
    script = (RunStore().paths(run_id).root / "slurm" / "job.sh").read_text().splitlines()
    assert script.count(asked) == 1, script
    seen = _seen(run_id)
    assert sorted(seen) == ["master-0", "worker-0"]
    placed = {(s["SLURMD_NODENAME"], s["CUDA_VISIBLE_DEVICES"]) for s in seen.values()}
    assert len(placed) == 2 and {cvd for _, cvd in placed} <= {"0", "1"}, seen  # a GPU each, never shared
    assert all(s["CUDA_VISIBLE_DEVICES"] == s["SLURM_STEP_GPUS"] for s in seen.values()), seen  # Slurm's own
    if "gres" in asked:  # --gres counts per node: each replica alone on its node
        assert len({node for node, _ in placed}) == 2, seen
    wait_for(lambda: not queued(use_slurm, job_id(px_home, run_id)), "the job to leave the queue", timeout=30)


def test_a_gpu_request_no_node_has_is_refused_before_anything_is_queued(use_slurm, px_home):
    service = RunService()
    with pytest.raises(ResourceUnavailable) as refused:
        service.submit(Submission(SourceText(SEES), _topology(gpus=3), name="three"))
    message = str(refused.value)
    assert "sbatch --test-only" in message and "Requested node configuration is not available" in message
    assert "1 CPU, 400 MiB, 3 GPUs" in message and "GRES gpu:fake:2" in message, message  # asked; the largest node
    assert not queued(use_slurm) and RunStore().run_ids() == []
