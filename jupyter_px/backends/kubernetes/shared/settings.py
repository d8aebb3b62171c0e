"""What the Kubernetes backends need beyond the topology: where and as whom pods run.

Read as every backend family reads its settings (`backends/settings_file.py`): defaults (below),
then a YAML file (`$PX_K8S_CONFIG`, else `$PX_HOME/kubernetes.yaml`), then `PX_K8S_<FIELD>`
variables, each bad value one line naming it. What is Kubernetes' own is here: the fields, and
how a variable's text reads: lists comma-separated (`PX_K8S_IMAGE_PULL_SECRETS=regcred,other`),
mappings `k=v,k=v` (`PX_K8S_LABELS=team=ml`), `PX_K8S_TOLERATIONS` as JSON.

The topology's own `image` and `node_selector` win over these per replica.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...base import BackendError
from ...settings_file import (
    SettingsFile,
    check_bool,
    check_choice,
    env_bool,
    env_comma_list,
    env_int,
    env_json,
    env_mapping,
)

ENV_PREFIX = "PX_K8S_"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"

#: Image per framework when neither the topology nor the settings name one: pinned tags of the
#: frameworks' own images, each with Python and the framework (pin yours with PX_K8S_IMAGE).
#: MXNet, Horovod and plain MPI share Horovod's image (OpenMPI's mpirun, Python, TensorFlow,
#: PyTorch and MXNet 1.9); a bare python image would start and then fail on `import mxnet`.
DEFAULT_IMAGES = {
    "tensorflow": "tensorflow/tensorflow:2.21.0",
    "pytorch": "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",  # CUDA inside; runs on CPU nodes too
    "mxnet": "horovod/horovod:0.28.1",
    "horovod": "horovod/horovod:0.28.1",
    "mpi": "horovod/horovod:0.28.1",
    None: "python:3.11-slim",
}
#: The image to use instead when the replica requests GPUs (where the CPU image has no CUDA).
GPU_IMAGES = {"tensorflow": "tensorflow/tensorflow:2.21.0-gpu"}


@dataclass(frozen=True)
class KubernetesSettings:
    """Cluster-side settings of the native, kubeflow and kubeflow-trainer backends."""

    namespace: str | None = None  # None: the kubeconfig context's namespace, else "default"
    context: str | None = None  # kubeconfig context (None: the current one)
    image: str | None = None
    image_pull_secrets: list[str] = field(default_factory=list)
    service_account: str | None = None
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    queue: str | None = None  # Kueue LocalQueue: sets the kueue.x-k8s.io/queue-name label
    gpu_resource: str = "nvidia.com/gpu"
    trainer_runtime: str = "torch-distributed"
    trainer_mpi_runtime: str = "deepspeed-distributed"
    #: Which TrainJob API to render: "auto" asks the cluster (the TrainJob CRD's fields; offline
    #: rendering assumes the newest); "v2.2" (runtimePatches, Trainer v2.2 and later) or "v2.1"
    #: (podTemplateOverrides). Trainer v2.0 cannot label the pods of a TrainJob and is refused.
    trainer_version: str = "auto"
    #: Kubeflow runPolicy.cleanPodPolicy. "None" (the operators' own default: training-operator
    #: v1.9.0 pkg/apis/kubeflow.org/v1/{tensorflow,pytorch,mpi}_defaults.go, mpi-operator v0.6.0
    #: v2beta1/default.go; kubeflow-training 1.9's SDK sends it too): the operator deletes no pod
    #: when the job ends, and the run's follower deletes those still running or pending (parameter
    #: servers, MXNet servers, MPI workers never end by themselves) once it has stored their logs;
    #: the finished ones stay (with their logs, holding no node resources) until `jupyter px stop`
    #: or Delete. "Running": the operator deletes what still runs at the job's end, "All" every
    #: pod, whether or not their logs were read yet (a follower that started late loses them).
    clean_pod_policy: str = "None"
    ttl_seconds_after_finished: int | None = None
    #: Which MPIJob API to render: "auto" asks the cluster (the MPIJob CRD's served version; offline
    #: rendering assumes the training operator's); "v1" (Kubeflow training operator) or "v2beta1"
    #: (mpi-operator). Both name their CRD mpijobs.kubeflow.org: a cluster has one or the other.
    mpijob_version: str = "auto"
    shared_claim: str | None = None  # a PVC mounted in the notebook at shared_mount_path too
    shared_mount_path: str | None = None
    create_parallelism: int = 16
    #: native: pods the `restricted` Pod Security Standard admits (non-root user `run_as_user`, no
    #: capabilities, no privilege escalation, RuntimeDefault seccomp); off for images that need root.
    restricted_security_context: bool = True
    run_as_user: int = 1000
    #: A run's follower ends after this many seconds without any answer from the API server
    #: (refused, timed out); the run stays as it was and the next look at it follows it again.
    follower_give_up_s: int = 180

    def image_for(self, framework: str | None, topology_image: str | None, gpus: bool = False) -> str:
        """The topology's image, else the settings', else the framework's default (its GPU variant
        when the replica requests GPUs)."""
        if topology_image or self.image:
            return str(topology_image or self.image)
        if gpus and framework in GPU_IMAGES:
            return GPU_IMAGES[framework]
        return DEFAULT_IMAGES.get(framework, DEFAULT_IMAGES[None])

    def object_labels(self) -> dict[str, str]:
        labels = dict(self.labels)
        if self.queue:
            labels[KUEUE_QUEUE_LABEL] = self.queue
        return labels


_LISTS = {"image_pull_secrets"}
_MAPS = {"node_selector", "labels", "annotations"}
_INTS = {"ttl_seconds_after_finished", "create_parallelism", "follower_give_up_s", "run_as_user"}
_POSITIVE = {"create_parallelism", "follower_give_up_s", "run_as_user"}
_BOOLS = {"restricted_security_context"}
_CHOICES = {
    "clean_pod_policy": ("Running", "All", "None"),
    "trainer_version": ("auto", "v2.2", "v2.1", "v2.0"),
    "mpijob_version": ("auto", "v1", "v2beta1"),
}


def _check(name: str, value: Any, where: str) -> Any:
    if name in _LISTS and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise BackendError(f"{where}: {name}: {value!r} is not a list of names")
    if name in _MAPS:
        if not isinstance(value, dict):
            raise BackendError(f"{where}: {name}: {value!r} is not a mapping")
        return {str(k): str(v) for k, v in value.items()}
    if name == "tolerations" and not (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
        raise BackendError(f"{where}: tolerations: {value!r} is not a list of tolerations")
    if name in _BOOLS:
        return check_bool(name, value, where)
    counts = isinstance(value, int) and not isinstance(value, bool)
    if name in _INTS and (not counts or value < (1 if name in _POSITIVE else 0)):
        raise BackendError(f"{where}: {name}: {value!r} is not a valid count")
    if name in _CHOICES:
        return check_choice(name, value, where, _CHOICES[name])
    return value


#: How each `PX_K8S_*` variable that is not plain text reads.
_ENV_TEXT: dict[str, Callable[[str, str], Any]] = {
    **dict.fromkeys(_LISTS, env_comma_list),
    **dict.fromkeys(_MAPS, env_mapping),
    "tolerations": env_json,
    **dict.fromkeys(_BOOLS, env_bool),
    **dict.fromkeys(_INTS, env_int),
}
SETTINGS_FILE = SettingsFile("Kubernetes", KubernetesSettings, ENV_PREFIX, "kubernetes.yaml", _check, _ENV_TEXT)


def config_path() -> Path:
    return SETTINGS_FILE.path()


def load_settings(**overrides: Any) -> KubernetesSettings:
    """Defaults < config file < PX_K8S_* variables < `overrides` (e.g. the CLI's --context)."""
    return SETTINGS_FILE.load(**overrides)
