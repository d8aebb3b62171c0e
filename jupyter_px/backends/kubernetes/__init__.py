"""Kubernetes backends: `native` pods, Kubeflow training-operator jobs, Kubeflow Trainer v2.

Modules, one job each: names (DNS-1035 names), settings (namespace, image, ... from a file and
PX_K8S_* variables), payload (the ConfigMap with code and runner), podspec + manifests_* (pure
render functions), render (dispatch + YAML), client (kubeconfig / in-cluster), preflight,
resources (per-kind API calls), create (all or nothing), pod_state (pod -> replica state),
follower (the per-run process writing the store), backend (the Backend classes).

The backend classes are imported on first use: `jupyter px render` needs only the pure render
modules, and the official client (imported by `backend`) costs more than a second to import.
"""

from __future__ import annotations

from ...lazy import lazy_attributes

_LAZY = dict.fromkeys(("KubernetesBackend", "KubeflowBackend", "KubeflowTrainerBackend"), f"{__name__}.backend")

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())
