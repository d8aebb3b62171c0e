"""Kubernetes backends: `native` pods, Kubeflow training-operator jobs, Kubeflow Trainer v2.

Modules, one job each: names (DNS-1035 names), settings (namespace, image, ... from a file and
PX_K8S_* variables), payload (the ConfigMap with code and runner), podspec + manifests_* (pure
render functions), render (dispatch + YAML), client (kubeconfig / in-cluster), preflight,
resources (per-kind API calls), create (all or nothing), pod_state (pod -> replica state),
follower (the per-run process writing the store), backend (the Backend classes).
"""

from .backend import KubeflowBackend, KubeflowTrainerBackend, KubernetesBackend

__all__ = ["KubernetesBackend", "KubeflowBackend", "KubeflowTrainerBackend"]
