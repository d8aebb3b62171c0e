"""The official Kubeflow SDKs run their default jobs, unchanged, on the simulated cluster: a client
nobody here wrote, as a user with a real cluster would run it.

- kubeflow-training 1.9.4: `TrainingClient().create_job(train_func=..., num_workers=2)` (a
  PyTorchJob whose pods run `bash -c ... torchrun` in a `pytorch/pytorch` image),
  `wait_for_job_conditions`, `get_job_logs`, `delete_job`;
- the Kubeflow SDK 0.5.0: `TrainerClient().train(trainer=CustomTrainer(func=..., num_nodes=2))`
  (a TrainJob on the `torch-distributed` runtime), `wait_for_job_status`, `get_job_logs`,
  `delete_job`.

Both SDKs pin `kubernetes<36` and jupyter-px's tests run on 37, so they are installed in an
environment of their own layered on the test environment (`--system-site-packages`): jupyter-px is
beside them there, their kubernetes 35 in front of the 37 underneath. It is made once per test
environment (in its folder), with pip, from the package index; a machine that cannot reach it skips
with the reason (CI fails instead). The images map to this machine's Python (torch, torchrun)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kube_sim import Cluster
from kube_sim_support import require

#: How long one SDK script may take (the SDK itself waits up to 300 s for the job's conditions):
#: past it, the test fails naming every pod's phase, container states and log tail.
SCRIPT_TIMEOUT_S = 400
#: The first test also installs the SDKs (the module's fixture, up to 600 s on a fresh clone):
#: pytest's own timeout must come after the script's, or a slow job fails with no word of its pods.
pytestmark = [pytest.mark.kube, pytest.mark.timeout(600 + SCRIPT_TIMEOUT_S + 60)]

SDKS = ("kubeflow-training==1.9.4", "kubeflow==0.5.0")
CHECK = "import kubeflow.training, kubeflow.trainer, jupyter_px, kubernetes; print(kubernetes.__version__)"

TRAINING_CLIENT = """
from kubeflow.training import TrainingClient

def train_func():
    import torch.distributed as dist
    dist.init_process_group("gloo")
    import sys  # one write a line: torchrun's ranks share the pod's unbuffered stdout
    sys.stdout.write(f"rank {dist.get_rank()} of {dist.get_world_size()}\\n")
    dist.destroy_process_group()

client = TrainingClient()
client.create_job(name="sdk-job", train_func=train_func, num_workers=2)
job = client.wait_for_job_conditions("sdk-job", timeout=300)
print("CONDITIONS", [c.type for c in job.status.conditions if c.status == "True"])
logs, _ = client.get_job_logs("sdk-job")
print("LOGS", logs)
client.delete_job("sdk-job")
"""

TRAINER_CLIENT = """
from kubeflow.trainer import CustomTrainer, TrainerClient

def train_func():
    import torch.distributed as dist
    dist.init_process_group("gloo")
    import sys  # one write a line: torchrun's ranks share the pod's unbuffered stdout
    sys.stdout.write(f"node rank {dist.get_rank()} of {dist.get_world_size()}\\n")
    dist.destroy_process_group()

client = TrainerClient()
name = client.train(trainer=CustomTrainer(func=train_func, num_nodes=2))
job = client.wait_for_job_status(name, timeout=300)
print("STATUS", job.status)
print("LOGS", "".join(client.get_job_logs(name)))
client.delete_job(name)
print("DELETED", name)
"""


@pytest.fixture(scope="module")
def sdk_python() -> str:
    """The SDKs' environment: made once in the test environment's folder, reused while it holds."""
    folder = Path(sys.prefix) / "kubeflow-sdks"
    python = folder / "bin" / "python"
    if python.exists() and subprocess.run([str(python), "-c", CHECK], capture_output=True).returncode == 0:
        return str(python)
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--clear", str(folder)], check=True)
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", *SDKS], capture_output=True, text=True, timeout=600
    )
    require(done.returncode == 0, f"cannot install the Kubeflow SDKs ({', '.join(SDKS)}): {done.stderr.strip()[-400:]}")
    version = subprocess.run([str(python), "-c", CHECK], capture_output=True, text=True, check=True).stdout.strip()
    assert version.startswith("35."), f"the SDKs' environment has kubernetes {version}"
    return str(python)


@pytest.fixture(scope="module")
def cluster():
    with Cluster(namespaces=("default",), kubelet={"backoff_base": 0.5}) as sim:
        yield sim


def run_sdk(python: str, cluster: Cluster, tmp_path: Path, script: str) -> str:
    (tmp_path / "job.py").write_text(script)
    env = {**os.environ, "KUBECONFIG": cluster.kubeconfig(tmp_path / "kubeconfig", tls=True), "HOME": str(tmp_path)}
    try:
        done = subprocess.run(
            [python, "job.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as timeout:
        raise AssertionError(f"{timeout}; the pods: {pod_states(cluster)}") from None
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:] + f"\nthe pods: {pod_states(cluster)}"
    return done.stdout


def pod_states(cluster: Cluster) -> list[tuple[str, str, list, str]]:
    """Each pod's phase, its containers' states (the last one's too, with the restart count), and
    the end of its log, and of its previous container's where the kubelet restarted it: what a
    failure needs (a restarted master names why it ended)."""
    out = []
    for pod in cluster.list("pods"):
        containers = pod["status"].get("containerStatuses") or []
        states = [{k: c.get(k) for k in ("state", "lastState", "restartCount") if c.get(k)} for c in containers]
        tail = _log_tail(cluster, pod, {"tailLines": "5"})
        if any(c.get("restartCount") for c in containers):
            tail = f"previous: {_log_tail(cluster, pod, {'tailLines': '12', 'previous': 'true'})}\nnow: {tail}"
        out.append((pod["metadata"]["name"], pod["status"].get("phase", ""), states, tail))
    return out


def _log_tail(cluster: Cluster, pod: dict, query: dict[str, str]) -> str:
    try:
        return b"".join(cluster.kubelet.logs(pod, pod["spec"]["containers"][0]["name"], query)).decode(errors="replace")
    except Exception as error:  # a pod that never started has no log
        return str(error)


def test_the_training_sdks_default_pytorchjob_runs_unchanged(sdk_python, cluster, tmp_path):
    out = run_sdk(sdk_python, cluster, tmp_path, TRAINING_CLIENT)
    assert "'Succeeded'" in out.split("CONDITIONS", 1)[1].splitlines()[0], out
    logs = out.split("LOGS", 1)[1]
    assert "rank 0 of" in logs, out  # the master's torchrun ranks (the SDK reads the master's log)
    assert cluster.get("pytorchjobs", "sdk-job") is None  # delete_job


def test_the_kubeflow_sdks_default_trainjob_runs_unchanged(sdk_python, cluster, tmp_path):
    out = run_sdk(sdk_python, cluster, tmp_path, TRAINER_CLIENT)
    assert "STATUS Complete" in out, out
    assert "node rank 0 of 2" in out.split("LOGS", 1)[1], out
    name = out.split("DELETED", 1)[1].strip()
    assert cluster.get("trainjobs", name) is None
