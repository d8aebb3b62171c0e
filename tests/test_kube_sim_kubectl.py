"""Real kubectl against the simulated cluster, as against a real API server: kubectl 1.27, 1.31 and
1.33 (the Google Cloud SDK installs `kubectl.1.27` ... `kubectl.1.33` next to its `gcloud`; these
machines and CI have them) through create, apply (client-side, server-side, the documented
`jupyter px render ... | kubectl apply -f -` of the docs), explain, OpenAPI, Tables, short names and
categories, auth can-i (1.32+ sends protobuf), a wrong token, the default ServiceAccount, the
kubelet's events, and the streaming subresources: exec, attach, cp (WebSocket v5 from kubectl 1.30,
SPDY/3.1 before), port-forward (SPDY/3.1, tunnelled in WebSocket from 1.31).

A missing kubectl skips its version with the reason, except under CI=true, where it fails."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from kube_sim import Cluster
from kube_sim_support import fresh_namespace, wait_for

pytestmark = pytest.mark.kube

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = ("1.27", "1.31", "1.33")


def kubectl_binary(version: str) -> str | None:
    """`kubectl.<version>` on PATH or next to gcloud's or kubectl's real location."""
    name = f"kubectl.{version}"
    found = shutil.which(name)
    if found:
        return found
    for tool in ("gcloud", "kubectl"):
        where = shutil.which(tool)
        if where:
            candidate = Path(os.path.realpath(where)).parent / name
            if candidate.is_file():
                return str(candidate)
    return None


def binary_or_skip(version: str) -> str:
    found = kubectl_binary(version)
    if found is None:
        reason = f"kubectl {version} is not installed here (no kubectl.{version} on PATH or beside gcloud)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


@pytest.fixture(scope="module")
def cluster():
    with Cluster(namespaces=("default",), kubelet={"backoff_base": 0.5}) as sim:
        yield sim


class Kubectl:
    def __init__(self, binary: str, kubeconfig: str, namespace: str, version: str):
        self.binary, self.kubeconfig, self.namespace = binary, kubeconfig, namespace
        self.version = tuple(int(x) for x in version.split("."))

    def run(
        self, *args: str, stdin: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess:
        env = {**os.environ, "KUBECONFIG": self.kubeconfig, "HOME": str(Path(self.kubeconfig).parent)}
        done = subprocess.run(
            [self.binary, "-n", self.namespace, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
        return done

    def out(self, *args: str, stdin: str | None = None) -> str:
        return self.run(*args, stdin=stdin).stdout


@pytest.fixture(params=VERSIONS)
def kubectl(request, cluster, tmp_path):
    """kubectl of one version, its kubeconfig (HTTPS, the namespace of the test) in tmp_path."""
    binary = binary_or_skip(request.param)
    namespace = fresh_namespace(cluster, request.node.name, "kc")
    kubeconfig = cluster.kubeconfig(tmp_path / "kubeconfig", namespace=namespace, tls=True)
    return Kubectl(binary, kubeconfig, namespace, request.param)


def _columns(text: str) -> list[str]:
    return text.splitlines()[0].split()


def test_objects_tables_discovery_and_openapi(kubectl, cluster):
    k = kubectl
    ns = k.namespace
    # create configmap / namespace (kubectl 1.32+ send these as protobuf)
    assert k.out("create", "configmap", "settings", "--from-literal=a=1").strip() == "configmap/settings created"
    other = f"{ns}-other"
    assert k.out("create", "namespace", other).strip() == f"namespace/{other} created"
    # the default ServiceAccount of each namespace
    assert "default" in k.out("get", "sa", "-o", "name", "-n", other)
    assert k.out("get", "serviceaccount", "default", "-o", "jsonpath={.metadata.name}") == "default"
    # auth can-i, allowed and denied (protobuf SelfSubjectAccessReview from 1.32)
    assert k.out("auth", "can-i", "create", "pods").strip() == "yes"
    cluster.deny("delete", "secrets", "", ns)
    denied = k.run("auth", "can-i", "delete", "secrets", check=False)
    assert (denied.returncode, denied.stdout.strip()) == (1, "no"), denied
    # create -f
    pod = """
apiVersion: v1
kind: Pod
metadata: {name: sleeper, labels: {app: sleeper}}
spec:
  restartPolicy: Never
  containers: [{name: main, image: busybox, command: [sh, -c, "echo started; sleep 600"]}]
"""
    assert k.out("create", "-f", "-", stdin=pod).strip() == "pod/sleeper created"
    wait_for(lambda: "Running" in k.out("get", "pod", "sleeper"), "sleeper running")
    # Tables: the pod's columns; short names; categories
    table = k.out("get", "po")
    assert _columns(table) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"], table
    assert re.search(r"^sleeper\s+1/1\s+Running\s+0\s+\d+s$", table, re.M), table
    wide = k.out("get", "pods", "-o", "wide")
    assert _columns(wide)[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"], wide
    assert _columns(k.out("get", "cm")) == ["NAME", "DATA", "AGE"]
    assert _columns(k.out("get", "ns")) == ["NAME", "STATUS", "AGE"]
    assert "pytorchjobs.kubeflow.org" in k.out("get", "crd")
    service = "apiVersion: v1\nkind: Service\nmetadata: {name: sleeper}\n"
    service += "spec: {selector: {app: sleeper}, ports: [{port: 80}]}\n"
    k.out("create", "-f", "-", stdin=service)
    services = k.out("get", "svc")
    assert _columns(services) == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"], services
    assert re.search(r"^sleeper\s+ClusterIP\s+\S+\s+<none>\s+80/TCP\s+\d+s$", services, re.M), services
    everything = k.out("get", "all")
    assert "pod/sleeper" in everything and "service/sleeper" in everything, everything
    # explain and the OpenAPI documents
    explained = k.out("explain", "pod.spec")
    assert "KIND:" in explained and "Pod" in explained and "containers" in k.out("explain", "pod.spec.containers")
    assert "pytorchjob" in k.out("explain", "pytorchjobs").lower()
    assert '"swagger":"2.0"' in k.out("get", "--raw", "/openapi/v2").replace(" ", "")
    assert '"api/v1"' in k.out("get", "--raw", "/openapi/v3")
    # a CRD's printer columns (PyTorchJob: State, Age)
    job = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pj}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers: [{name: pytorch, image: python:3.11, command: [python, -c, "print('done')"]}]
"""
    assert k.out("apply", "-f", "-", stdin=job).strip() == "pytorchjob.kubeflow.org/pj created"
    crd = cluster.api.get(
        cluster.api.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), "", "pytorchjobs.kubeflow.org"
    )
    printer = [c["name"].upper() for c in crd["spec"]["versions"][0].get("additionalPrinterColumns") or []]
    assert _columns(k.out("get", "pytorchjobs")) == ["NAME", *printer] if printer else ["NAME", "AGE"]
    # server-side apply: created, re-applied, a conflict with another manager, forced
    config = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: applied, namespace: {ns}}}\ndata: {{code: v1}}\n"
    assert "serverside-applied" in k.out("apply", "--server-side", "-f", "-", stdin=config)
    assert "serverside-applied" in k.out("apply", "--server-side", "-f", "-", stdin=config)
    k.out("patch", "configmap", "applied", "-p", '{"data":{"code":"edited"}}')
    conflict = k.run("apply", "--server-side", "-f", "-", stdin=config, check=False)
    assert conflict.returncode != 0 and "conflict" in conflict.stderr.lower() and ".data.code" in conflict.stderr
    k.out("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=config)
    assert k.out("get", "cm", "applied", "-o", "jsonpath={.data.code}") == "v1"
    # the kubelet's events, then Killing on delete
    events = k.out("get", "events")
    for reason in ("Scheduled", "Pulling", "Pulled", "Created", "Started"):
        assert re.search(rf"\s{reason}\s+pod/sleeper\s", events), (reason, events)
    k.out("delete", "pod", "sleeper", "--wait=false")
    wait_for(lambda: "Killing" in k.out("get", "events"), "the Killing event")


def test_a_wrong_token_is_401(kubectl):
    done = kubectl.run("--token=not-a-token", "get", "pods", check=False)
    # kubectl's words for a 401: `(Unauthorized)`, or, when discovery is what gets it, `(the server has
    # asked for the client to provide credentials)`
    assert done.returncode == 1 and "error: You must be logged in to the server" in done.stderr, done


def test_the_documented_render_pipe_to_kubectl_apply_works_as_written(kubectl, cluster, tmp_path):
    """The docs' (docs/kubernetes.md, once the README's) `jupyter px render train.py -f
    topology.yaml --backend native | kubectl apply -f -`, read from the page and run as written."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    line = next(
        line.split("#")[0].strip()
        for page in pages
        if page.exists()
        for line in page.read_text().splitlines()
        if "| kubectl apply -f -" in line and line.startswith("jupyter px render")
    )
    (tmp_path / "train.py").write_text("import os\nprint('rendered and applied on', os.environ['HOSTNAME'])\n")
    (tmp_path / "topology.yaml").write_text("framework: pytorch\nenvironment:\n  replicas:\n    n_workers: 1\n")
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "kubectl").symlink_to(kubectl.binary)
    env = {
        **os.environ,
        "PATH": f"{tools}:{Path(sys.executable).parent}:{os.environ['PATH']}",
        "KUBECONFIG": kubectl.kubeconfig,
        "HOME": str(tmp_path),
        "PX_K8S_NAMESPACE": kubectl.namespace,  # render runs offline: the namespace is a setting
    }
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    created = [out for out in done.stdout.splitlines() if out.endswith(" created")]
    kinds = {out.split("/")[0] for out in created}
    assert {"pod", "configmap"} <= kinds, done.stdout
    # the pods it made run the script
    pods = cluster.list("pods", kubectl.namespace)
    assert pods, "no pod was applied in the namespace"
    wait_for(
        lambda: all(p["status"].get("phase") == "Succeeded" for p in cluster.list("pods", kubectl.namespace)),
        "the applied pods to succeed",
    )
    name = pods[0]["metadata"]["name"]
    assert f"rendered and applied on {name}" in kubectl.out("logs", name)


def test_exec_attach_cp_and_port_forward(kubectl, tmp_path):
    k = kubectl
    ticker = "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done"
    k.out("run", "ticker", "--image=busybox", "--restart=Never", "--", "sh", "-c", ticker)
    with socket.socket() as probe:  # pods share this machine's network unless on a pod network
        probe.bind(("127.0.0.1", 0))
        served = probe.getsockname()[1]
    k.out("run", "web", "--image=python:3.11", "--restart=Never", "--", "python", "-m", "http.server", str(served))
    wait_for(
        lambda: k.out("get", "pod", "ticker", "web", "-o", "jsonpath={.items[*].status.phase}") == "Running Running",
        "both pods running",
    )
    # exec: stdout, stderr, the exit code; stdin
    done = k.run("exec", "ticker", "--", "sh", "-c", "echo out; echo err >&2; exit 3", check=False)
    assert (done.returncode, done.stdout, "err" in done.stderr) == (3, "out\n", True), done
    assert k.out("exec", "-i", "ticker", "--", "cat", stdin="through stdin\n") == "through stdin\n"
    # the protocol each version speaks: WebSocket v5 from 1.30 (client-go websocket.go), SPDY before
    verbose = k.run("exec", "ticker", "-v=7", "--", "true").stderr
    if k.version >= (1, 30):
        assert "The subprotocol is v5.channel.k8s.io" in verbose, verbose[-2000:]
    else:
        assert "101 Switching Protocols" in verbose and "v5.channel.k8s.io" not in verbose, verbose[-2000:]
    # cp in and out (tar through exec)
    source = tmp_path / "in.txt"
    source.write_text("copied in\n")
    # a path no other test's pod shares: the simulated pods see this machine's /tmp, and a tar
    # extracting there (unlink, then create) while another test's `kubectl cp` reads the same file
    # leaves `tar cf` nothing to read, which kubectl takes as an empty copy (kubernetes/kubectl#980)
    target = str(tmp_path / "in-the-pod.txt")
    k.out("cp", str(source), f"ticker:{target}")
    assert k.out("exec", "ticker", "--", "cat", target) == "copied in\n"
    k.out("cp", f"ticker:{target}", str(tmp_path / "out.txt"))
    assert (tmp_path / "out.txt").read_text() == "copied in\n"
    # attach: the running container's output from now on
    attach = subprocess.Popen(
        [k.binary, "-n", k.namespace, "attach", "ticker"],
        env={**os.environ, "KUBECONFIG": k.kubeconfig, "HOME": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        lines = [line for line in (attach.stdout.readline() for _ in range(6)) if line.startswith("tick ")]
    finally:
        attach.kill()
        attach.wait()
    assert len(lines) >= 3 and lines == sorted(lines, key=lambda line: int(line.split()[1])), lines
    # port-forward to the pod's server
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    forward = subprocess.Popen(
        [k.binary, "-n", k.namespace, "port-forward", "pod/web", f"{port}:{served}"],
        env={**os.environ, "KUBECONFIG": k.kubeconfig, "HOME": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert "Forwarding from 127.0.0.1" in forward.stdout.readline()

        def fetch() -> str:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
                    return answer.read().decode()
            except OSError:
                return ""

        assert "Directory listing" in wait_for(fetch, "a page through the forwarded port")
        assert "Directory listing" in fetch()  # a second connection on the same session
    finally:
        forward.kill()
        forward.wait()
