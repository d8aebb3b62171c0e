"""A simulated Kubernetes cluster for tests: an API server whose rules come from the upstream
sources (each rule cites its file and tag), the controllers that act on it, and a kubelet that
runs pods as local processes. See README.md in this folder."""

from .apiserver import ApiServer, Fault
from .cluster import Cluster
from .errors import ApiError

__all__ = ["ApiError", "ApiServer", "Cluster", "Fault"]
