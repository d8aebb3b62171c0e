"""A security context that namespaces enforcing the `restricted` Pod Security Standard admit.

Pod Security admission (kubernetes staging/src/k8s.io/pod-security-admission/policy,
check_runAsNonRoot.go, check_allowPrivilegeEscalation.go, check_capabilities_restricted.go,
check_seccompProfile_restricted.go) refuses a pod in such a namespace unless it runs as non-root,
drops every capability, forbids privilege escalation and uses the runtime's seccomp profile. Most
framework images run as root and name no user, so `runAsNonRoot` alone would make the kubelet
refuse to start them: a numeric user (`run_as_user`, 1000 by default) goes with it, and
`fsGroup` makes the run's volumes writable for it. Applied on `native` unless
`restricted_security_context` is turned off (an image that needs root, or a cluster policy that
sets its own context).
"""

from __future__ import annotations

from typing import Any

from .settings import KubernetesSettings


def restrict(pod_spec: dict[str, Any], settings: KubernetesSettings) -> dict[str, Any]:
    """`pod_spec` with the restricted-compatible contexts set (in place; returned)."""
    if not settings.restricted_security_context:
        return pod_spec
    uid = settings.run_as_user
    pod_spec["securityContext"] = {
        "runAsNonRoot": True,
        "runAsUser": uid,
        "runAsGroup": uid,
        "fsGroup": uid,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    for container in pod_spec.get("initContainers", []) + pod_spec["containers"]:
        container["securityContext"] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    return pod_spec
