"""Kubernetes names for a run: valid whatever run name the user typed, and stable.

Objects of a run are named `<base>-<role>-<index>` (Kubeflow's naming), and a pod's hostname and
its headless Service must be DNS-1035 labels: lowercase letters, digits and '-', starting with a
letter, at most 63 characters. Run ids of the store may start with a digit and a name typed for
`jupyter px render --name` may be anything, so the base name is derived here, once: the name as
typed when it already fits, else a cleaned-up, shortened form plus a short hash of the original
(so two long names that share a prefix do not collide, and the same name always gives the same
base).
"""

from __future__ import annotations

import hashlib
import re

#: DNS-1035 label: what a Service name and a pod hostname must be.
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MAX_LABEL = 63

#: Longest base name: `<base>-evaluator-<index>` stays a DNS label even with 10,000 replicas.
MAX_BASE = 40

#: Labels every object of a run carries: `stop` and the follower select by them.
LABEL_RUN = "px.jupyter.org/run"
LABEL_ROLE = "px.jupyter.org/role"
LABEL_INDEX = "px.jupyter.org/index"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "jupyter-px"


def base_name(run_name: str) -> str:
    """The DNS-1035 base of a run's object names (<= 40 characters), stable for a given input."""
    if not isinstance(run_name, str) or not run_name.strip():
        raise ValueError(f"run name {run_name!r} is empty")
    if DNS_1035.match(run_name) and len(run_name) <= MAX_BASE:
        return run_name
    slug = re.sub(r"[^a-z0-9]+", "-", run_name.lower()).strip("-")
    if not slug or not slug[0].isalpha():
        slug = f"px-{slug}".rstrip("-")
    digest = hashlib.sha256(run_name.encode()).hexdigest()[:6]
    slug = slug[: MAX_BASE - len(digest) - 1].rstrip("-")
    return f"{slug}-{digest}"


def replica_name(base: str, role: str, index: int) -> str:
    """`<base>-<role>-<index>`: a pod (native) or the operator's pod/service name (Kubeflow)."""
    name = f"{base}-{role}-{index}"
    if len(name) > MAX_LABEL or not DNS_1035.match(name):
        raise ValueError(f"{name!r} is not a valid Kubernetes name (DNS-1035, at most {MAX_LABEL} characters)")
    return name


def run_labels(base: str) -> dict[str, str]:
    return {LABEL_RUN: base, LABEL_MANAGED_BY: MANAGED_BY}


def run_selector(base: str) -> str:
    """The label selector of every object of a run (for list, watch and delete)."""
    return f"{LABEL_RUN}={base}"
