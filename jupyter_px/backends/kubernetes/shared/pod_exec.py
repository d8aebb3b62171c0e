"""A shipped program run inside a running pod, as `kubectl exec POD -- python PROGRAM ARGS` runs it:
how `jupyter px stacks` (`stacks.py`) and `jupyter px kill` (`replica_kill.py`) reach the
replica's processes where they are.

The program is one of the package's files the run's ConfigMap ships (`payload.py`), run with the
interpreter the replica was started with. Each exec gets its own API client: the official client's
`stream` swaps its client's request method while it runs, so two streams must not share one.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client
from kubernetes.stream import stream

from .client import Cluster
from .handle import RunHandle
from .names import run_selector
from .payload import APP_DIR, ENTRY
from .pod_state import main_container_name


def running_pods(cluster: Cluster, handle: RunHandle) -> list[dict[str, Any]]:
    """The run's pods that are Running (an exec needs a running container), as plain dicts."""
    pods = cluster.api.sanitize_for_serialization(
        cluster.core.list_namespaced_pod(handle.namespace, label_selector=run_selector(handle.base)).items
    )
    return [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]


class ExecFailed(Exception):
    """The exec could not be made (refused, no container, a lost connection), in words."""


def program_argv(pod: dict[str, Any], container: str, program: str, *args: str) -> list[str]:
    """`[python, <the shipped program>, *args]`: the interpreter the replica was started with (the
    container's command names our entry), else `python`. `program`: its path inside `jupyter_px/`."""
    spec: dict[str, Any] = next((c for c in pod["spec"].get("containers") or [] if c.get("name") == container), {})
    argv = [*(spec.get("command") or []), *(spec.get("args") or [])]
    python = argv[0] if ENTRY in argv and argv[0] != ENTRY else "python"
    return [python, f"{APP_DIR}/lib/jupyter_px/{program}", *args]


def run_program(
    configuration: client.Configuration, namespace: str, pod: dict[str, Any], program: str, *args: str, timeout: float
) -> tuple[str, str, int | None]:
    """Run the shipped `program` in the pod's main container; (stdout, stderr, exit code; None
    when the exec ended without one: its container ended meanwhile)."""
    name = pod["metadata"]["name"]
    container = main_container_name(pod)
    if container is None:
        raise ExecFailed(f"pod {name} has no container")
    api = client.ApiClient(configuration)
    try:
        response = stream(
            client.CoreV1Api(api).connect_get_namespaced_pod_exec,
            name,
            namespace,
            container=container,
            command=program_argv(pod, container, program, *args),
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
            _preload_content=False,
        )
        response.run_forever(timeout=timeout)
        out, err, code = response.read_stdout(), response.read_stderr(), response.returncode
        response.close()
    except Exception as error:  # a refusal (ApiException), a lost connection
        raise ExecFailed(f"cannot exec in pod {name}: {str(error).strip() or type(error).__name__}") from None
    finally:
        api.close()
    return out, err, code
