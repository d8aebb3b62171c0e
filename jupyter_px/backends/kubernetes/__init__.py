"""The Kubernetes backends: `native` pods, Kubeflow training-operator jobs, Kubeflow Trainer v2.

One folder per backend, each of the same shape (`manifests.py`: pure render functions named by
its `Flavour`; `backend.py`: its backend class), over what they share:

- `shared/`: names (DNS-1035 names, labels), settings (namespace, image, ... from a file and
  PX_K8S_* variables), payload (the ConfigMap with code and runner), cluster_file (every
  replica's address, once), podspec + security (pod template pieces), run_objects (a flavour's
  objects), client (kubeconfig / in-cluster), preflight, resources (per-kind API calls), create
  (all or nothing), cleanup (delete a run), handle (where a run's objects are, the follower's
  files), replica_pods (which pod is which replica), pod_state (pod -> replica state), contact;
  none of it imports a backend's folder;
- beside it, what ties the folders together: render (a flavour by name, YAML) and dry_run, and
  backend (`KubernetesBackend`, the base of the three, a `FollowedBackend` as the Slurm backend
  is: `backends/followed.py`, which starts the follower);
- `native/`, `kubeflow/`, `trainer/`: the three backends;
- `follower/`: what writes a run's status, logs and metrics into the store: a process per run
  (`python -m jupyter_px.backends.kubernetes.follower RUN_DIR`), or a Jupyter server's followers
  on one watch per namespace (`follower/host.py`); its log sink and log streams;
- `pod/`: what runs inside the pod (`entry.py`, shipped in the run's ConfigMap).

The backend classes are imported on first use: `jupyter px render` needs only the pure render
modules, and the official client (imported by the backends) costs more than a second to import.
"""

from __future__ import annotations

from ...lazy import lazy_attributes

_LAZY = {
    "KubernetesBackend": f"{__name__}.backend",
    "NativeBackend": f"{__name__}.native.backend",
    "KubeflowBackend": f"{__name__}.kubeflow.backend",
    "KubeflowTrainerBackend": f"{__name__}.trainer.backend",
}

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())
