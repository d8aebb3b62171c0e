"""An opt-in pod network for the simulated kubelet (`Cluster(pod_network=True)`): each pod gets its
own network namespace and its own address on a bridge, as a container runtime calling the CNI
`bridge` and `loopback` plugins with `host-local` IPAM does. Without it pods share this
machine's network namespace (127.0.x.y addresses), and two servers that bind the wildcard
address on one port (TensorFlow's gRPC server on 2222) collide.

What is modelled, from containernetworking/plugins v1.9.1:
- one bridge `cni0` (plugins/main/bridge/bridge.go `defaultBrName`) holding the gateway, the
  subnet's first address (`isGateway`: calcGatewayIP, the address set on the bridge);
- per pod a veth pair: the host end `veth<8 hex>` (pkg/ip/link_linux.go RandomVethName) on the
  bridge, the pod end `eth0` (the runtime's IfName) in the pod's namespace, the pod's address on
  it and a default route via the gateway (`isDefaultGateway`: calcGateways);
- addresses from `host-local` IPAM (plugins/ipam/host-local/backend/allocator/range.go
  Canonicalize: the gateway is the subnet's .1, the range starts after it;
  allocator.go GetIter: round-robin from the last reserved address, so a released address is not
  handed out again until the range has been run through);
- the `loopback` plugin (plugins/main/loopback/loopback.go): `lo` up in every pod.
The kubelet reports the sandbox's address as `status.podIP`/`podIPs` (kubernetes v1.33.0
pkg/kubelet/kuberuntime/kuberuntime_sandbox.go determinePodSandboxIPs, kubelet_pods.go
sortPodIPs), and its generated /etc/hosts and the Services' names resolve to it.

Where it lives: the bridge is inside a private "node" network namespace, never on this machine's,
which other test runs share; pods cannot reach this machine's 127.0.0.1. Every namespace is held
by a process (`unshare -n cat`, reading a pipe only the kubelet holds) and none is bind-mounted
under /run/netns: when the kubelet stops, or its process dies, the holders end; a namespace goes
with the last process in it (the node's at once; a pod's once its containers, which the kubelet
kills on stop, have ended too), and the bridge and veths with them. Commands are `ip`
(iproute2), `unshare` and `nsenter`, as argument lists.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass

#: The node's pod CIDR (kubeadm's and flannel's customary 10.244.0.0/16, one /24 per node).
POD_CIDR = "10.244.0.0/24"
#: plugins/main/bridge/bridge.go defaultBrName
BRIDGE = "cni0"
#: the interface a runtime asks the plugin for inside the pod (CNI_IFNAME)
POD_INTERFACE = "eth0"
COMMANDS = ("ip", "unshare", "nsenter")


class PodNetworkUnavailable(RuntimeError):
    """The machine does not permit pod network namespaces (not root, no CAP_NET_ADMIN, no `ip`)."""


def pod_network_permitted() -> tuple[bool, str]:
    """Whether this machine lets the kubelet build pod networks, and if not, why: `ip`, `unshare`
    and `nsenter` installed, and a bridge and a veth pair can be made in a throwaway network
    namespace (gone with the command)."""
    for command in COMMANDS:
        if not shutil.which(command):
            return False, f"the `{command}` command is not installed"
    for probe in (
        ["unshare", "-n", "ip", "link", "add", BRIDGE, "type", "bridge"],
        ["unshare", "-n", "ip", "link", "add", "probe0", "type", "veth", "peer", "name", "probe1"],
    ):
        try:
            done = subprocess.run(probe, capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as error:
            return False, f"{' '.join(probe)} failed: {error}"
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip()
            return False, f"`{' '.join(probe)}` is not permitted here (needs root or CAP_NET_ADMIN): {why}"
    return True, ""


class _Holder:
    """A network namespace held open by a process: `unshare -n cat` reading a pipe that only the
    kubelet holds, so the namespace ends when the kubelet closes it or dies."""

    def __init__(self) -> None:
        own = os.readlink("/proc/self/ns/net")
        self.process = subprocess.Popen(
            ["unshare", "-n", "cat"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while True:  # the process exists before it has left this namespace
            try:
                if os.readlink(self.path) != own:
                    break
            except OSError:
                pass
            if self.process.poll() is not None:
                why = self.process.stderr.read().decode(errors="replace").strip() if self.process.stderr else ""
                raise PodNetworkUnavailable(f"unshare -n failed: {why}")
            if time.monotonic() > deadline:
                self.close()
                raise PodNetworkUnavailable("unshare -n did not make a network namespace within 30 s")
            time.sleep(0.005)
        self.inode = os.readlink(self.path)

    @property
    def path(self) -> str:
        return f"/proc/{self.process.pid}/ns/net"

    def run(self, *argv: str) -> None:
        """One command inside the namespace; a failure is an error naming it."""
        full = ["nsenter", f"--net={self.path}", *argv]
        done = subprocess.run(full, capture_output=True, timeout=60)
        if done.returncode != 0:
            raise PodNetworkUnavailable(f"{' '.join(argv)}: {done.stderr.decode(errors='replace').strip()}")

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stderr:
            self.process.stderr.close()


@dataclass
class PodSandbox:
    """One pod's network: its namespace (held), the host end of its veth, its address."""

    uid: str
    ip: str
    veth: str
    holder: _Holder

    @property
    def netns(self) -> str:
        """The path a container process joins (`nsenter --net=<path>`)."""
        return self.holder.path


class PodNetwork:
    """The node's bridge and its pods' sandboxes (a Kubelet part)."""

    def __init__(self, cidr: str = POD_CIDR) -> None:
        permitted, why = pod_network_permitted()
        if not permitted:
            raise PodNetworkUnavailable(f"pod_network=True cannot be met here: {why}")
        self.subnet = ipaddress.ip_network(cidr)
        if self.subnet.num_addresses < 4:
            raise ValueError(f"pod_network cidr: {cidr!r} is too small to allocate from")
        hosts = list(self.subnet.hosts())
        self.gateway = hosts[0]  # range.go Canonicalize: "If the gateway is nil, claim .1"
        self._range = hosts[1:]  # the iterator skips the gateway
        self._last: ipaddress.IPv4Address | ipaddress.IPv6Address | None = None
        self.sandboxes: dict[str, PodSandbox] = {}
        self.node: _Holder | None = None
        #: every namespace this network made (`net:[inode]`), for checks that none outlives it
        self.namespaces: list[str] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        """The node's namespace and bridge, the gateway address on it (bridge.go setupBridge,
        ensureAddr when isGateway)."""
        self.node = _Holder()
        self.namespaces.append(self.node.inode)
        prefix = self.subnet.prefixlen
        self.node.run("ip", "link", "set", "lo", "up")
        self.node.run("ip", "link", "add", BRIDGE, "type", "bridge")
        self.node.run("ip", "addr", "add", f"{self.gateway}/{prefix}", "dev", BRIDGE)
        self.node.run("ip", "link", "set", BRIDGE, "up")

    def attach(self, uid: str) -> PodSandbox:
        """The pod's sandbox network (CNI ADD): namespace, veth on the bridge, address, routes."""
        with self._lock:
            found = self.sandboxes.get(uid)
            if found is not None:
                return found
            if self.node is None:
                raise PodNetworkUnavailable("the pod network is not started")
            ip = self._allocate()
            pod = _Holder()
            self.namespaces.append(pod.inode)
            veth = "veth" + os.urandom(4).hex()
            try:
                self.node.run(
                    "ip", "link", "add", veth, "type", "veth", "peer", "name", POD_INTERFACE,
                    "netns", str(pod.process.pid),
                )  # fmt: skip
                self.node.run("ip", "link", "set", veth, "master", BRIDGE, "up")
                pod.run("ip", "link", "set", "lo", "up")
                pod.run("ip", "addr", "add", f"{ip}/{self.subnet.prefixlen}", "dev", POD_INTERFACE)
                pod.run("ip", "link", "set", POD_INTERFACE, "up")
                pod.run("ip", "route", "add", "default", "via", str(self.gateway), "dev", POD_INTERFACE)
            except PodNetworkUnavailable:
                pod.close()
                raise
            sandbox = PodSandbox(uid, str(ip), veth, pod)
            self.sandboxes[uid] = sandbox
            return sandbox

    def detach(self, uid: str) -> None:
        """CNI DEL: the pod's namespace ends, its veth with it, and its address is free again."""
        with self._lock:
            sandbox = self.sandboxes.pop(uid, None)
        if sandbox is not None:
            sandbox.holder.close()

    def stop(self) -> None:
        for uid in list(self.sandboxes):
            self.detach(uid)
        if self.node is not None:
            self.node.close()
            self.node = None

    def _allocate(self) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
        """host-local's round-robin: the first free address after the last one handed out."""
        used = {ipaddress.ip_address(s.ip) for s in self.sandboxes.values()}
        start = 0 if self._last is None else self._range.index(self._last) + 1
        for step in range(len(self._range)):
            candidate = self._range[(start + step) % len(self._range)]
            if candidate not in used:
                self._last = candidate
                return candidate
        raise PodNetworkUnavailable(f"no IP addresses available in range set: {self._range[0]}-{self._range[-1]}")
