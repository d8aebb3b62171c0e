"""The simulated kubelet's warm Python containers (`kube_sim/zygotes.py`): a container whose
program is forked from a warm interpreter is, to its pod and to whoever watches it, what a cold
one is: its own hostname, environment, volumes and log; its exit code; a stop's SIGTERM (143), a
grace period's SIGKILL (137), and no process left after either. A container with a memory limit
starts cold, so its memory is its own."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest
from kube_sim import Cluster
from kube_sim.zygotes import ZYGOTES
from kube_sim_support import core_api, fresh_namespace, require, wait_for
from kubernetes import client, watch

pytestmark = pytest.mark.kube

#: Prints how it started (forked by a zygote: warm), its pid, hostname, a variable and a file of
#: its volume; ends with exit code 3.
REPORT = (
    "import os, socket\n"
    "parent = open(f'/proc/{os.getppid()}/cmdline', 'rb').read()\n"
    "how = 'warm' if b'kube_sim/zygote.py' in parent else 'cold'\n"
    "print(how, os.getpid(), socket.gethostname(), os.environ['POD'], open('/etc/px/word.txt').read(), flush=True)\n"
    "raise SystemExit(3)\n"
)


@pytest.fixture(scope="module")
def cluster():
    with Cluster(namespaces=("default",), kubelet={"backoff_base": 0.2}) as sim:
        why = f"containers start warm only in namespaces of their own: {sim.kubelet.not_isolated_because}"
        require(sim.kubelet.isolated, why)
        yield sim


@pytest.fixture
def ns(cluster, request):
    return fresh_namespace(cluster, request.node.name, "w")


@pytest.fixture
def core(cluster, tmp_path):
    yield from core_api(cluster, tmp_path)


def python_pod(name: str, code: str, **container) -> dict:
    return {
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": "python:3.11",
                    "command": ["python3", "-u", "-c", code],
                    "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                    "volumeMounts": [{"name": "words", "mountPath": "/etc/px"}],
                    **container,
                }
            ],
            "volumes": [{"name": "words", "configMap": {"name": "words"}}],
        },
    }


def forked_by_a_zygote(pid: int) -> bool:
    return any("kube_sim/zygote.py" in " ".join(parent.cmdline()) for parent in psutil.Process(pid).parents())


def log_of(core, ns: str, name: str) -> str:
    def check():
        try:
            return core.read_namespaced_pod_log(name, ns) or None
        except client.ApiException as error:
            if error.status != 400:  # not started yet
                raise
            return None

    return wait_for(check, f"pod {name}'s log")


def terminated(core, ns: str, name: str):
    def check():
        statuses = core.read_namespaced_pod(name, ns).status.container_statuses or []
        return statuses[0].state.terminated if statuses and statuses[0].state.terminated else None

    return wait_for(check, f"pod {name} to end")


def warm_from_now_on(core, ns: str) -> None:
    """Run a first container, which starts its environment's zygote, and wait for it (and any
    other this process started) to take offers."""
    core.create_namespaced_pod(ns, python_pod("first", "print('cold')"))
    terminated(core, ns, "first")
    wait_for(lambda: ZYGOTES.all_ready(), "a zygote taking offers", timeout=120)


def test_a_warm_container_has_its_own_hostname_env_volume_log_and_exit_code(core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "words"}, "data": {"word.txt": "hello"}})
    warm_from_now_on(core, ns)
    core.create_namespaced_pod(ns, python_pod("second", REPORT))
    state = terminated(core, ns, "second")
    how, pid, hostname, pod, word = log_of(core, ns, "second").split()
    assert (how, hostname, pod, word, state.exit_code) == ("warm", "second", "second", "hello", 3)
    assert not Path("/etc/px/word.txt").exists()  # mounted in the container's namespace only
    assert not psutil.pid_exists(int(pid))  # reaped: no zombie, no process left


def test_a_stop_ends_a_warm_container_143_or_after_its_grace_137_and_leaves_no_process(core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "words"}, "data": {"word.txt": "x"}})
    warm_from_now_on(core, ns)
    stays = "import os, time; print(os.getpid(), flush=True); time.sleep(600)"
    ignores = (
        "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print(os.getpid(), flush=True); time.sleep(600)"
    )
    pids = {}
    for name, code in (("stops", stays), ("ignores", ignores)):
        core.create_namespaced_pod(ns, python_pod(name, code))
        pids[name] = int(log_of(core, ns, name).split()[0])
        assert forked_by_a_zygote(pids[name]), f"{name} was not forked warm"
    codes = {}
    for name in pids:
        start = core.read_namespaced_pod(name, ns).metadata.resource_version
        core.delete_namespaced_pod(name, ns)
        for event in watch.Watch().stream(
            core.list_namespaced_pod,
            ns,
            resource_version=start,
            timeout_seconds=60,
            field_selector=f"metadata.name={name}",
        ):
            ended = event["object"].status.container_statuses[0].state.terminated
            if ended:
                codes[name] = ended.exit_code
            if event["type"] == "DELETED":
                break
    assert codes == {"stops": 143, "ignores": 137}
    for name, pid in pids.items():
        wait_for(lambda pid=pid: not psutil.pid_exists(pid), f"{name}'s program to be gone")


def test_a_container_with_a_memory_limit_starts_cold(core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "words"}, "data": {"word.txt": "x"}})
    warm_from_now_on(core, ns)
    code = "import os, time; print(os.getpid(), flush=True); time.sleep(600)"
    core.create_namespaced_pod(ns, python_pod("limited", code, resources={"limits": {"memory": "512Mi"}}))
    pid = int(log_of(core, ns, "limited").split()[0])
    assert not forked_by_a_zygote(pid)
    core.delete_namespaced_pod("limited", ns)
