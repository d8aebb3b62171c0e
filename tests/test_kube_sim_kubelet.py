"""The simulated kubelet and scheduler: pods run as local processes, with the states, restarts,
logs, deletion and names a real node gives them (rules cited in tests/kube_sim/kubelet.py).
Few processes per test, each a few lines of Python."""

from __future__ import annotations

import json
import re
import socket

import pytest
from kube_sim import Cluster
from kube_sim.events import reasons
from kube_sim_support import core_api, fresh_namespace, wait_for
from kubernetes import client, config, watch

pytestmark = pytest.mark.kube  # the simulated cluster: HTTP servers, controllers, processes


@pytest.fixture(scope="module")
def cluster():
    with Cluster(
        namespaces=("default",), kubelet={"backoff_base": 0.2, "log_max_bytes": 4096, "log_max_files": 2}
    ) as sim:
        yield sim


@pytest.fixture
def ns(cluster, request):
    return fresh_namespace(cluster, request.node.name, "k")


@pytest.fixture
def core(cluster, tmp_path):
    yield from core_api(cluster, tmp_path)


def python_pod(name: str, code: str, restart: str = "Never", **extra) -> dict:
    container = {"name": "main", "image": "python:3.11", "command": ["python3", "-u", "-c", code]}
    container.update(extra.pop("container", {}))
    return {
        "metadata": {"name": name, "labels": extra.pop("labels", {})},
        "spec": {"restartPolicy": restart, "containers": [container], **extra},
    }


def logged(core, ns: str, name: str, text: str):
    """Wait until the pod's log is `text` (a 400 while it waits to start is part of waiting)."""

    def check():
        try:
            return core.read_namespaced_pod_log(name, ns) == text
        except client.ApiException as error:
            if error.status != 400:
                raise
            return False

    wait_for(check, f"{name}'s log to be {text!r}")


def phase(core, ns: str, name: str, *wanted: str):
    def check():
        pod = core.read_namespaced_pod(name, ns)
        return pod if pod.status.phase in wanted else None

    return wait_for(check, f"pod {name} in {wanted}")


def test_a_pod_runs_with_its_env_volumes_and_hostname(cluster, core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "code"}, "data": {"greeting.txt": "hello"}})
    code = (
        "import os, socket; print(open('/etc/px/greeting.txt').read(), os.environ['POD'],"
        " os.environ['IP'] == os.environ['SELF'], os.environ['BOTH'],"
        " socket.gethostname() if os.environ.get('ISOLATED') else 'p')"
    )
    env = [
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "SELF", "value": "$(IP)"},
        {"name": "BOTH", "value": "$(POD)-$$(POD)"},
        {"name": "ISOLATED", "value": "1" if cluster.kubelet.isolated else ""},
    ]
    spec = python_pod(
        "p",
        code,
        volumes=[{"name": "code", "configMap": {"name": "code"}}],
        container={"env": env, "volumeMounts": [{"name": "code", "mountPath": "/etc/px"}]},
    )
    core.create_namespaced_pod(ns, spec)
    pod = phase(core, ns, "p", "Succeeded")
    state = pod.status.container_statuses[0].state.terminated
    assert (state.exit_code, state.reason) == (0, "Completed")
    # its own address on the pod network (10.244.0.0/24), or, without one, on this machine's loopback
    assert pod.status.pod_ip.startswith("10.244." if cluster.kubelet.network else "127.")
    assert pod.spec.node_name == "node-1"
    assert core.read_namespaced_pod_log("p", ns) == "hello p True p-$(POD) p\n"
    assert reasons(cluster.api, ns, "p")[:5] == ["Scheduled", "Pulling", "Pulled", "Created", "Started"]
    stamped = core.read_namespaced_pod_log("p", ns, timestamps=True)
    assert stamped.split(" ", 1)[0].endswith("Z") and stamped.split(" ", 1)[1] == "hello p True p-$(POD) p\n"


def test_restarts_follow_the_policy_and_previous_logs_are_kept(core, ns):
    code = (
        "import os; os.makedirs('/scratch', exist_ok=True) if False else None\n"
        "p = '/scratch/runs'\n"
        "n = int(open(p).read()) if os.path.exists(p) else 0\n"
        "open(p, 'w').write(str(n + 1)); print('run', n); raise SystemExit(3 if n == 0 else 0)"
    )
    core.create_namespaced_pod(
        ns,
        python_pod(
            "p",
            code,
            "OnFailure",
            volumes=[{"name": "scratch", "emptyDir": {}}],
            container={"volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]},
        ),
    )
    pod = phase(core, ns, "p", "Succeeded")
    status = pod.status.container_statuses[0]
    assert status.restart_count == 1
    assert status.last_state.terminated.exit_code == 3 and status.last_state.terminated.reason == "Error"
    assert core.read_namespaced_pod_log("p", ns, previous=True) == "run 0\n"
    assert core.read_namespaced_pod_log("p", ns) == "run 1\n"


def test_never_restarts_and_previous_without_one_is_400(core, ns):
    core.create_namespaced_pod(ns, python_pod("p", "print('once'); raise SystemExit(2)"))
    pod = phase(core, ns, "p", "Failed")
    assert pod.status.container_statuses[0].state.terminated.exit_code == 2
    with pytest.raises(client.ApiException) as caught:
        core.read_namespaced_pod_log("p", ns, previous=True)
    assert json.loads(caught.value.body)["message"] == 'previous terminated container "main" in pod "p" not found'


def test_logs_are_400_while_waiting_and_a_missing_configmap_keeps_it_waiting(cluster, core, ns):
    core.create_namespaced_pod(
        ns, python_pod("p", "print(1)", volumes=[{"name": "code", "configMap": {"name": "absent"}}])
    )
    wait_for(lambda: "FailedMount" in reasons(cluster.api, ns, "p"), "a FailedMount event")
    pod = wait_for(lambda: (p := core.read_namespaced_pod("p", ns)).status.container_statuses and p, "a pod status")
    assert (
        pod.status.phase == "Pending" and pod.status.container_statuses[0].state.waiting.reason == "ContainerCreating"
    )
    with pytest.raises(client.ApiException) as caught:
        core.read_namespaced_pod_log("p", ns)
    assert (caught.value.status, json.loads(caught.value.body)["message"]) == (
        400,
        'container "main" in pod "p" is waiting to start: ContainerCreating',
    )


def test_a_deleted_pod_is_stopped_recorded_failed_143_then_removed(core, ns):
    code = "import time; print('up', flush=True); time.sleep(600)"
    core.create_namespaced_pod(ns, python_pod("p", code, "Always"))
    logged(core, ns, "p", "up\n")
    start = core.read_namespaced_pod("p", ns).metadata.resource_version
    core.delete_namespaced_pod("p", ns)
    seen = []
    for event in watch.Watch().stream(core.list_namespaced_pod, ns, resource_version=start, timeout_seconds=60):
        terminated = event["object"].status.container_statuses[0].state.terminated
        seen.append((event["type"], event["object"].status.phase, terminated.exit_code if terminated else None))
        if event["type"] == "DELETED":
            break
    assert seen[-1][0] == "DELETED"
    assert ("MODIFIED", "Failed", 143) in seen  # the final status before the pod goes


def test_a_process_ignoring_sigterm_is_killed_after_the_grace_period(core, ns):
    code = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(600)"
    )
    core.create_namespaced_pod(ns, python_pod("p", code, terminationGracePeriodSeconds=1))
    logged(core, ns, "p", "up\n")
    start = core.read_namespaced_pod("p", ns).metadata.resource_version
    core.delete_namespaced_pod("p", ns)
    codes = []
    for event in watch.Watch().stream(core.list_namespaced_pod, ns, resource_version=start, timeout_seconds=60):
        terminated = event["object"].status.container_statuses[0].state.terminated
        codes.append(terminated.exit_code if terminated else None)
        if event["type"] == "DELETED":
            break
    assert 137 in codes


def test_a_follow_stream_ends_with_the_container_and_rotation_serves_the_newest_file(cluster, core, ns):
    code = "import time\nfor i in range(300): print(f'line {i:04d} ' + 'x' * 40)\ntime.sleep(1); print('last')"
    core.create_namespaced_pod(ns, python_pod("p", code))
    wait_for(lambda: core.read_namespaced_pod("p", ns).status.phase != "Pending" or None, "the pod to start")
    followed = core.read_namespaced_pod_log("p", ns, follow=True, _preload_content=False).read().decode()
    assert followed.endswith("last\n")  # the stream ended when the container did
    served = core.read_namespaced_pod_log("p", ns)
    assert "line 0000" not in served and served.endswith("last\n")  # rotated away: only the newest file
    assert len(served.encode()) <= 4096 + 100
    assert core.read_namespaced_pod_log("p", ns, tail_lines=1) == "last\n"


def test_an_unschedulable_pod_gets_the_schedulers_condition_and_event(cluster, core, ns):
    spec = python_pod("big", "print(1)", container={"resources": {"requests": {"cpu": "100"}}})
    core.create_namespaced_pod(ns, spec)
    message = (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod."
    )

    def condition():
        for c in core.read_namespaced_pod("big", ns).status.conditions or []:
            if c.type == "PodScheduled" and c.reason == "Unschedulable":
                return c
        return None

    assert wait_for(condition, "the Unschedulable condition").message == message
    assert "FailedScheduling" in reasons(cluster.api, ns, "big")


def test_pods_reach_each_other_by_cluster_dns_names(cluster, core, ns):
    if not cluster.kubelet.isolated:
        pytest.skip(f"pods share this machine's names here: {cluster.kubelet.not_isolated_because}")
    core.create_namespaced_service(
        ns, {"metadata": {"name": "job"}, "spec": {"clusterIP": "None", "selector": {"job": "j"}}}
    )
    server = (
        "import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        "s.bind((socket.gethostbyname(socket.gethostname()), 2222)); s.listen()\n"
        "c, _ = s.accept(); print(c.recv(10).decode())"
    )
    client_code = (
        "import socket, time\n"
        f"name = 'b.job.{ns}.svc'\n"
        "for _ in range(600):\n"
        "    try: c = socket.create_connection((name, 2222)); break\n"
        "    except OSError: time.sleep(0.1)\n"
        "c.sendall(b'hi'); print(socket.gethostbyname(name))"
    )
    for name, code in (("b", server), ("a", client_code)):
        core.create_namespaced_pod(ns, python_pod(name, code, labels={"job": "j"}, hostname=name, subdomain="job"))
    a = phase(core, ns, "a", "Succeeded", "Failed")
    b = phase(core, ns, "b", "Succeeded", "Failed")
    assert (a.status.phase, b.status.phase) == ("Succeeded", "Succeeded")
    assert core.read_namespaced_pod_log("b", ns) == "hi\n"
    assert core.read_namespaced_pod_log("a", ns) == b.status.pod_ip + "\n"
    assert a.status.pod_ip != b.status.pod_ip
    assert socket.gethostname() != "b"


def test_a_held_waiting_state_for_what_a_process_cannot_produce(cluster, core, ns):
    core.create_namespaced_pod(ns, python_pod("p", "print(1)", volumes=[{"name": "c", "configMap": {"name": "later"}}]))
    wait_for(lambda: "FailedMount" in reasons(cluster.api, ns, "p"), "the pod admitted")
    cluster.kubelet.set_waiting(ns, "p", "main", "ImagePullBackOff", 'Back-off pulling image "python:3.11"')
    core.create_namespaced_config_map(ns, {"metadata": {"name": "later"}})

    def waiting():
        state = core.read_namespaced_pod("p", ns).status.container_statuses[0].state
        return state.waiting if state.waiting and state.waiting.reason == "ImagePullBackOff" else None

    assert wait_for(waiting, "ImagePullBackOff").message == 'Back-off pulling image "python:3.11"'


def test_a_container_over_its_memory_limit_is_oom_killed(core, ns):
    code = "import time\nblob = bytearray(300 * 1024 * 1024)\nblob[::4096] = b'x' * len(blob[::4096])\ntime.sleep(30)"
    core.create_namespaced_pod(ns, python_pod("p", code, container={"resources": {"limits": {"memory": "64Mi"}}}))
    pod = phase(core, ns, "p", "Failed")
    terminated = pod.status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (137, "OOMKilled")
    assert pod.status.qos_class == "Burstable"


def test_a_sidecar_runs_beside_the_app_and_is_stopped_after_it(core, ns):
    sidecar = {
        "name": "side",
        "image": "python:3.11",
        "restartPolicy": "Always",
        # written beside, then renamed: the app, which waits for the name, never reads it empty
        "command": [
            "python3",
            "-c",
            "import os, time\nopen('/shared/.ready', 'w').write('side up')\n"
            "os.rename('/shared/.ready', '/shared/ready')\ntime.sleep(600)",
        ],
        "volumeMounts": [{"name": "shared", "mountPath": "/shared"}],
    }
    app = (
        "import os, time\n"
        "while not os.path.exists('/shared/ready'): time.sleep(0.05)\n"
        "print(open('/shared/ready').read())"
    )
    spec = python_pod(
        "p",
        app,
        volumes=[{"name": "shared", "emptyDir": {}}],
        container={"volumeMounts": [{"name": "shared", "mountPath": "/shared"}]},
    )
    spec["spec"]["initContainers"] = [sidecar]
    core.create_namespaced_pod(ns, spec)
    pod = phase(core, ns, "p", "Succeeded", "Failed")
    assert pod.status.phase == "Succeeded"  # the sidecar's SIGTERM exit does not fail the pod
    assert core.read_namespaced_pod_log("p", ns, container="main") == "side up\n"
    (side,) = pod.status.init_container_statuses
    assert side.state.terminated.exit_code == 143 and side.restart_count == 0


def test_eviction_fails_the_pod_with_the_kubelets_reason(cluster, core, ns):
    core.create_namespaced_pod(ns, python_pod("p", "import time; print('up', flush=True); time.sleep(600)"))
    logged(core, ns, "p", "up\n")
    cluster.kubelet.evict(ns, "p")
    pod = core.read_namespaced_pod("p", ns)
    assert (pod.status.phase, pod.status.reason) == ("Failed", "Evicted")
    assert pod.status.message == "The node was low on resource: memory. "
    assert {c.type: c.reason for c in pod.status.conditions}["DisruptionTarget"] == "TerminationByKubelet"
    assert "Evicted" in reasons(cluster.api, ns, "p")


def test_a_lost_node_stops_answering(tmp_path):
    with Cluster() as sim:
        core = client.CoreV1Api(config.new_client_from_config(sim.kubeconfig(tmp_path / "kc")))
        core.create_namespaced_pod("default", python_pod("p", "import time; print('up', flush=True); time.sleep(600)"))
        logged(core, "default", "p", "up\n")
        sim.kubelet.lose_node()
        node = core.read_node("node-1")
        assert [(c.status, c.reason) for c in node.status.conditions if c.type == "Ready"] == [
            ("Unknown", "NodeStatusUnknown")
        ]
        pod = core.read_namespaced_pod("p", "default")
        assert pod.status.phase == "Running"  # as last reported: nobody is there to say otherwise
        assert [c.status for c in pod.status.conditions if c.type == "Ready"] == ["False"]
        core.delete_namespaced_pod("p", "default")
        assert core.read_namespaced_pod("p", "default").metadata.deletion_timestamp is not None  # stays Terminating


def test_a_crash_loop_bumps_one_backoff_event_and_a_shell_image_runs_its_command_as_written(cluster, core, ns):
    """client-go tools/record/events_cache.go: the kubelet's identical BackOff events are one Event
    whose count grows (not one Event each); a busybox container's `sh -c ...` runs the host's
    shell (images.py), its default command too."""
    crash = {"name": "main", "image": "busybox", "command": ["sh", "-c", "echo from sh; exit 2"]}
    core.create_namespaced_pod(ns, {"metadata": {"name": "loop"}, "spec": {"containers": [crash]}})
    busybox = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}
    core.create_namespaced_pod(ns, {"metadata": {"name": "default-cmd"}, "spec": busybox})

    def backoff():
        found = [
            e for e in cluster.list("events", ns) if e["reason"] == "BackOff" and e["involvedObject"]["name"] == "loop"
        ]
        return found if found and found[0]["count"] >= 2 else None

    events = wait_for(backoff, "the BackOff event's count to be bumped")
    assert len(events) == 1 and events[0]["lastTimestamp"] >= events[0]["firstTimestamp"]
    assert core.read_namespaced_pod_log("loop", ns).startswith("from sh")
    assert phase(core, ns, "default-cmd", "Succeeded").status.container_statuses[0].state.terminated.exit_code == 0


def test_generated_names_use_the_api_servers_alphabet(cluster, ns):
    """apimachinery pkg/util/rand: 5 characters of `bcdfghjklmnpqrstvwxz2456789` after the base."""
    configmaps = cluster.api.resource("", "v1", "configmaps")
    names = [cluster.api.create(configmaps, {"metadata": {"generateName": "made-"}}, ns)["metadata"]["name"]
             for _ in range(20)]  # fmt: skip
    assert all(re.fullmatch(r"made-[bcdfghjklmnpqrstvwxz2456789]{5}", n) for n in names), names
    assert len(set(names)) == 20
