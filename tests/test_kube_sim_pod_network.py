"""The simulated kubelet's pod network (the default where the machine permits it; required with
`Cluster(pod_network=True)`, kube_sim/kubelet_network.py): each pod in its own network namespace
with its address on a bridge, as the CNI bridge plugin with host-local IPAM gives it;
`status.podIP`, the downward API and the cluster DNS names all name that address; nothing it made
outlives the cluster. Skipped, with the reason, where the machine permits no network namespaces;
failed under CI=true (CI machines permit them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kube_sim import Cluster
from kube_sim.kubelet_network import PodNetworkUnavailable, pod_network_permitted
from kube_sim.kubelet_processes import namespaces_permitted
from kube_sim_support import core_api, fresh_namespace, wait_for

pytestmark = pytest.mark.kube  # the simulated cluster: HTTP servers, controllers, processes


def _unavailable(why: str) -> None:
    """Skip with the reason; under CI (whose machines permit it, as these do) fail instead."""
    message = f"pods cannot have their own network namespaces here: {why}"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def _cluster() -> Cluster:
    try:
        return Cluster(namespaces=("default",), kubelet={"backoff_base": 0.2}, pod_network=True)
    except PodNetworkUnavailable as error:
        _unavailable(str(error))
        raise


def test_pods_have_their_own_network_by_default_where_the_machine_permits_it(tmp_path):
    with Cluster(namespaces=("default",), controllers=("scheduler", "kubelet")) as sim:
        if sim.kubelet.network is None:
            _unavailable(sim.kubelet.no_pod_network_because)
        assert sim.kubelet.no_pod_network_because == ""
    with Cluster(namespaces=("default",), controllers=("scheduler", "kubelet"), pod_network=False) as sim:
        assert sim.kubelet.network is None and "pod_network=False" in sim.kubelet.no_pod_network_because


@pytest.fixture(scope="module")
def cluster():
    with _cluster() as sim:
        yield sim


@pytest.fixture
def ns(cluster, request):
    return fresh_namespace(cluster, request.node.name, "n")


@pytest.fixture
def core(cluster, tmp_path):
    yield from core_api(cluster, tmp_path)


def python_pod(name: str, code: str, **spec) -> dict:
    env = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    container = {"name": "main", "image": "python:3.11", "command": ["python3", "-u", "-c", code], "env": env}
    labels = spec.pop("labels", {})
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"restartPolicy": "Never", "containers": [container], **spec},
    }


def finished(core, ns: str, name: str):
    return wait_for(
        lambda: (pod := core.read_namespaced_pod(name, ns)).status.phase in ("Succeeded", "Failed") and pod,
        f"pod {name} to finish",
    )


def namespaces_in_use() -> set[str]:
    """Every network namespace some process of this machine is in (`net:[inode]`)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.add(os.readlink(entry / "ns" / "net"))
            except OSError:
                continue
    return found


def host_links() -> list[str]:
    done = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True)
    return sorted(line.split(":")[1].strip().split("@")[0] for line in done.stdout.splitlines())


#: A pod's view of its network: its eth0 address and default route (from `ip`), its downward
#: API address, a listener on the wildcard address of port 2222 (which two pods on one network
#: namespace could not both have), its own loopback, and whether this machine's 127.0.0.1
#: (where the API server listens) is reachable from it.
INSPECT = """
import json, os, socket, subprocess, sys, time
api_port = int(sys.argv[1])
def ip(*args):
    return subprocess.run(["ip", "-o", "-4", *args], capture_output=True, text=True, check=True).stdout.split()
server = socket.socket(); server.bind(("0.0.0.0", 2222)); server.listen()
loop = socket.socket(); loop.bind(("127.0.0.1", 0)); loop.listen()
loopback = socket.create_connection(loop.getsockname(), timeout=5) is not None
try:
    socket.create_connection(("127.0.0.1", api_port), timeout=2).close(); host = True
except OSError:
    host = False
peer = os.environ.get("PEER")
answer = None
if peer:
    for _ in range(600):
        try:
            answer = socket.create_connection((peer, 2222), timeout=5).recv(64).decode(); break
        except OSError:
            time.sleep(0.1)
else:
    connection, _ = server.accept(); connection.sendall(os.environ["POD_IP"].encode()); connection.close()
print(json.dumps({"eth0": ip("addr", "show", "dev", "eth0")[3], "route": ip("route", "show", "default")[:3],
    "env": os.environ["POD_IP"], "loopback": loopback, "host": host, "answer": answer,
    "resolved": socket.gethostbyname(peer) if peer else None}))
"""


def test_pods_have_their_own_namespace_and_address_and_reach_each_other_by_name(cluster, core, ns):
    core.create_namespaced_service(
        ns, {"metadata": {"name": "job"}, "spec": {"clusterIP": "None", "selector": {"job": "j"}}}
    )
    port = str(int(cluster.url.rsplit(":", 1)[1]))
    for name, peer in (("b", ""), ("a", f"b.job.{ns}.svc")):
        pod = python_pod(name, INSPECT, labels={"job": "j"}, hostname=name, subdomain="job")
        pod["spec"]["containers"][0]["args"] = [port]
        pod["spec"]["containers"][0]["env"].append({"name": "PEER", "value": peer})
        core.create_namespaced_pod(ns, pod)
    a, b = finished(core, ns, "a"), finished(core, ns, "b")
    assert (a.status.phase, b.status.phase) == ("Succeeded", "Succeeded"), (
        core.read_namespaced_pod_log("a", ns),
        core.read_namespaced_pod_log("b", ns),
    )
    # the log as sent (older clients, 34.1 the floor, read a log that is JSON as a dict and hand back its repr)
    seen = {name: json.loads(core.read_namespaced_pod_log(name, ns, _preload_content=False).data) for name in "ab"}
    for name, pod in (("a", a), ("b", b)):
        # status.podIP is the sandbox's address (determinePodSandboxIPs), on eth0 inside the pod
        assert seen[name]["eth0"] == f"{pod.status.pod_ip}/24" and seen[name]["env"] == pod.status.pod_ip
        sent = core.api_client.sanitize_for_serialization(pod)  # podIPs is `pod_i_ps` in older clients' models
        assert [ip["ip"] for ip in sent["status"]["podIPs"]] == [pod.status.pod_ip]
        assert seen[name]["route"] == ["default", "via", "10.244.0.1"]  # the bridge's gateway address
        assert seen[name]["loopback"] is True  # the loopback plugin: lo is up
        assert seen[name]["host"] is False  # this machine's 127.0.0.1 is not the pod's
    assert a.status.pod_ip != b.status.pod_ip
    assert {a.status.pod_ip, b.status.pod_ip} <= {f"10.244.0.{i}" for i in range(2, 255)}
    # both listened on 0.0.0.0:2222; a reached b at its DNS name, which names b's address
    assert seen["a"]["resolved"] == seen["a"]["answer"] == b.status.pod_ip


def test_a_finished_pod_gives_its_namespace_back_and_addresses_go_round_robin(cluster, core, ns):
    network = cluster.kubelet.network
    code = "import os; print(os.environ['POD_IP'])"
    core.create_namespaced_pod(ns, python_pod("first", code))
    first = finished(core, ns, "first")
    made = wait_for(lambda: network.namespaces[-1], "the first pod's namespace")
    wait_for(lambda: made not in namespaces_in_use(), "the finished pod's namespace to end")
    assert first.status.pod_ip  # kept in the status after the sandbox is gone
    core.create_namespaced_pod(ns, python_pod("second", code))
    second = finished(core, ns, "second")
    # host-local's allocator: the address after the last one handed out, not the one just freed
    last = int(first.status.pod_ip.rsplit(".", 1)[1])
    assert second.status.pod_ip == f"10.244.0.{last + 1}"
    assert core.read_namespaced_pod_log("second", ns) == second.status.pod_ip + "\n"


def test_nothing_the_pod_network_made_outlives_the_cluster(tmp_path):
    links, run_netns = host_links(), sorted(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else []
    sim = _cluster()
    with sim:
        clients = core_api(sim, tmp_path)
        core = next(clients)
        core.create_namespaced_pod("default", python_pod("sleeper", "import time; time.sleep(600)"))
        wait_for(lambda: core.read_namespaced_pod("sleeper", "default").status.phase == "Running", "a running pod")
        network = sim.kubelet.network
        assert network is not None and len(network.namespaces) == 2  # the node's and the pod's
        assert set(network.namespaces) <= namespaces_in_use()
        holders = [network.node.process.pid, *(s.holder.process.pid for s in network.sandboxes.values())]
        assert host_links() == links  # the bridge and veths live in the node's namespace only
        clients.close()
    assert not set(network.namespaces) & namespaces_in_use()  # with them their veths and bridge
    assert not [pid for pid in holders if os.path.exists(f"/proc/{pid}")]
    assert host_links() == links
    assert (sorted(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else []) == run_netns


#: A process that starts a cluster with the pod network, says which namespaces it made, and waits.
HOLDS_A_NETWORK = """
import sys, time
sys.path.insert(0, sys.argv[1])
from kube_sim import Cluster
cluster = Cluster(namespaces=("default",), kubelet={"root": sys.argv[2]}, pod_network=True).start()
print(" ".join(cluster.kubelet.network.namespaces), flush=True)
time.sleep(600)
"""


def test_a_killed_test_process_leaves_no_node_network_behind(tmp_path):
    """The namespaces are held by processes reading a pipe only the kubelet's process holds:
    SIGKILL it (no teardown runs) and they end with it."""
    for permitted, why in (namespaces_permitted(), pod_network_permitted()):
        if not permitted:
            pytest.skip(f"pods cannot have their own network namespaces here: {why}")
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDS_A_NETWORK, str(Path(__file__).parent), str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        made = process.stdout.readline().split() if process.stdout else []
        assert len(made) == 1 and set(made) <= namespaces_in_use(), made  # the node's
    finally:
        process.kill()
        process.wait()
    wait_for(lambda: not set(made) & namespaces_in_use(), "the node's namespace to end with its kubelet")


def test_a_machine_without_ip_refuses_the_pod_network_with_the_reason(tmp_path, monkeypatch):
    """Where the pod network cannot be built the cluster says why instead of starting without it
    (the tests above then skip with that reason)."""
    permitted, why = namespaces_permitted()
    if not permitted:
        pytest.skip(f"pods cannot have their own mount namespaces here: {why}")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for command in ("unshare", "nsenter", "true"):
        found = subprocess.run(["which", command], capture_output=True, text=True).stdout.strip()
        if not found:
            pytest.skip(f"`{command}` is not installed")
        (bin_dir / command).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(PodNetworkUnavailable, match="the `ip` command is not installed"):
        Cluster(namespaces=("default",), pod_network=True)


#: What a pod's resolver is given, and how a name nobody serves fares.
RESOLVER = """
import json, socket
try:
    socket.getaddrinfo("nobody-serves-this.example", 80); unknown = "resolved"
except socket.gaierror as error:
    unknown = "failed"
print(json.dumps({"resolv": open("/etc/resolv.conf").read(), "unknown": unknown}))
"""


def test_a_pods_resolver_is_the_cluster_dns_with_the_namespaces_search_path(cluster, core, ns):
    """ClusterFirst (the default policy): the cluster's DNS address, the namespace's search path
    before the node's, `ndots:5` (pkg/kubelet/network/dns/dns.go, v1.33.0). Here that address is
    the gateway, where nothing serves DNS: a name the hosts file does not hold fails there at once,
    where the machine's resolver, out of the pod's reach, took two timeouts per lookup. With
    `dnsPolicy: None` the pod's `dnsConfig` is all there is."""
    core.create_namespaced_pod(ns, python_pod("cluster-first", RESOLVER))
    none = python_pod("none", RESOLVER, dnsPolicy="None")
    none["spec"]["dnsConfig"] = {"nameservers": ["10.244.0.1"], "searches": ["a.example"],
                                 "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}]}  # fmt: skip
    core.create_namespaced_pod(ns, none)
    seen = {}
    for name in ("cluster-first", "none"):
        pod = finished(core, ns, name)
        log = core.read_namespaced_pod_log(name, ns, _preload_content=False).data
        assert pod.status.phase == "Succeeded", log
        seen[name] = json.loads(log)
    lines = seen["cluster-first"]["resolv"].splitlines()
    assert lines[0] == "nameserver 10.244.0.1"
    assert lines[1].split()[:4] == ["search", f"{ns}.svc.cluster.local", "svc.cluster.local", "cluster.local"]
    assert lines[2] == "options ndots:5"
    assert seen["cluster-first"]["unknown"] == "failed"
    assert seen["none"]["resolv"] == "nameserver 10.244.0.1\nsearch a.example\noptions ndots:2 edns0\n"


def test_the_resolv_conf_of_each_dns_policy(tmp_path):
    """resolv_conf against dns.go's rules: ClusterFirst on the host's network is Default (the
    node's file); ClusterFirstWithHostNet keeps the cluster's; dnsConfig is appended without
    duplicates and its option replaces one of the same name."""
    from kube_sim.kubelet_volumes import resolv_conf

    host = tmp_path / "resolv.conf"
    host.write_text("# the node's\nnameserver 192.0.2.53\nsearch corp.example\noptions timeout:2\n")

    def conf(**spec):
        return resolv_conf({"spec": spec}, "ml", "10.96.0.10", host).splitlines()

    cluster = ["nameserver 10.96.0.10", "search ml.svc.cluster.local svc.cluster.local cluster.local corp.example",
               "options ndots:5"]  # fmt: skip
    node = ["nameserver 192.0.2.53", "search corp.example", "options timeout:2"]
    assert conf() == conf(dnsPolicy="ClusterFirst") == cluster
    assert conf(dnsPolicy="ClusterFirst", hostNetwork=True) == conf(dnsPolicy="Default") == node
    assert conf(dnsPolicy="ClusterFirstWithHostNet", hostNetwork=True) == cluster
    assert conf(dnsPolicy="None") == []
    merged = conf(dnsConfig={"nameservers": ["10.96.0.10", "192.0.2.1"], "searches": ["launcher.ml.svc.cluster.local"],
                             "options": [{"name": "ndots", "value": "1"}]})  # fmt: skip
    assert merged == [
        "nameserver 10.96.0.10",
        "nameserver 192.0.2.1",
        "search ml.svc.cluster.local svc.cluster.local cluster.local corp.example launcher.ml.svc.cluster.local",
        "options ndots:1",
    ]
