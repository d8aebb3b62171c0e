"""The kubelet's volumes and names: ConfigMap, Secret and emptyDir volumes as directories under
the pod's folder (kubernetes v1.33.0 pkg/volume/configmap/configmap.go: one file per key or
`items` entry, mode `defaultMode` 0644; a missing ConfigMap keeps the pod in ContainerCreating
with a FailedMount event), hostPath as the host's path, a PersistentVolumeClaim as the host
directory of the volume it is bound to (the kubelet's `claims`: a hostPath PersistentVolume per
claim, as kind's local-path provisioner binds them; every pod of the node shares it, as a
ReadWriteMany claim is shared); each pod's generated /etc/hosts with the cluster DNS names it
stands in for, and on the pod network its /etc/resolv.conf (`resolv_conf`)."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

from .events import record
from .kubelet_parts import KubeletPart
from .kubelet_pods import PodRun

HOST_RESOLV = "/etc/resolv.conf"
#: pkg/kubelet/network/dns/dns.go (kubernetes v1.33.0) defaultDNSOptions
DEFAULT_DNS_OPTIONS = ("ndots:5",)
#: the cluster's DNS domain (the kubelet's `clusterDomain`), in the hosts file's names and the search path
CLUSTER_DOMAIN = "cluster.local"


class VolumesAndHosts(KubeletPart):
    """Materialising a pod's volumes and writing its hosts file (a Kubelet part)."""

    _hosts_text: dict[str, str]
    claims: dict[str, str]

    def _mount_volumes(self, run: PodRun) -> bool:
        volumes_dir = run.directory / "volumes"
        configmaps = self.api.resource("", "v1", "configmaps")
        secrets = self.api.resource("", "v1", "secrets")
        for volume in run.pod["spec"].get("volumes") or []:
            target = volumes_dir / volume["name"]
            if "emptyDir" in volume:
                target.mkdir(parents=True, exist_ok=True)
            elif "configMap" in volume or "secret" in volume:
                source = volume.get("configMap") or volume.get("secret")
                is_secret = "secret" in volume
                name = source.get("name") if not is_secret else source.get("secretName")
                found = self.api.try_get(secrets if is_secret else configmaps, run.namespace, name or "")
                if found is None:
                    if source.get("optional"):
                        target.mkdir(parents=True, exist_ok=True)
                        continue
                    kind = "secret" if is_secret else "configmap"
                    record(
                        self.api,
                        run.pod,
                        "FailedMount",
                        f'MountVolume.SetUp failed for volume "{volume["name"]}" : {kind} "{name}" not found',
                        "Warning",
                        "kubelet",
                        self.node,
                    )
                    return False
                data = {k: v.encode() for k, v in (found.get("data") or {}).items()}
                if is_secret:
                    data = {k: base64.b64decode(v) for k, v in data.items()}
                data.update({k: base64.b64decode(v) for k, v in (found.get("binaryData") or {}).items()})
                target.mkdir(parents=True, exist_ok=True)
                items = source.get("items")
                chosen = (
                    [(i["key"], i["path"], i.get("mode")) for i in items] if items else [(k, k, None) for k in data]
                )
                default_mode = source.get("defaultMode", 0o644)
                for key, path, mode in chosen:
                    if key not in data:
                        continue
                    out = target / path
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(data[key])
                    out.chmod(mode if mode is not None else default_mode)
            elif "persistentVolumeClaim" in volume:
                claim = volume["persistentVolumeClaim"]["claimName"]
                if claim not in self.claims:  # upstream: the pod is not scheduled (VolumeBinding)
                    message = f'persistentvolumeclaim "{claim}" not found'
                    record(self.api, run.pod, "FailedMount", message, "Warning", "kubelet", self.node)
                    return False
            elif "hostPath" in volume:
                continue
        return True

    def _mounts(self, run: PodRun, container: dict[str, Any]) -> list[tuple[str, str, bool]]:
        by_name = {v["name"]: v for v in run.pod["spec"].get("volumes") or []}
        out = []
        for mount in container.get("volumeMounts") or []:
            volume = by_name.get(mount["name"])
            if volume is None:
                continue
            if "hostPath" in volume:
                source = volume["hostPath"]["path"]
            elif "persistentVolumeClaim" in volume:
                source = self.claims[volume["persistentVolumeClaim"]["claimName"]]
            else:
                source = str(run.directory / "volumes" / mount["name"])
            if mount.get("subPath"):
                source = os.path.join(source, mount["subPath"])
            out.append((source, mount["mountPath"], bool(mount.get("readOnly"))))
        return out

    def _hosts_path(self, run: PodRun) -> Path:
        path = run.directory / "etc-hosts"
        if not path.exists():
            path.write_text(self._hosts_for(run))
        return path

    def _hosts_for(self, run: PodRun) -> str:
        """The pod's /etc/hosts: localhost, its own name (pkg/kubelet/kubelet_pods.go
        managedHostsFileContent: `<ip> <hostname>.<subdomain>.<ns>.svc.<domain> <hostname>`), and
        - where the simulation stands in for cluster DNS - every name CoreDNS would answer in the
        namespace (cluster-addons dns specification): `<svc>.<ns>.svc.cluster.local` for a
        Service (a headless one: its selected pods' addresses), `<hostname>.<subdomain>.<ns>.svc`
        for a pod with a hostname and subdomain naming a headless Service, with the shorter
        forms the pod's search path (`<ns>.svc.cluster.local svc.cluster.local cluster.local`)
        would complete."""
        lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
        hostname = run.pod["spec"].get("hostname") or run.name
        subdomain = run.pod["spec"].get("subdomain")
        own = [hostname]
        if subdomain:
            own.insert(0, f"{hostname}.{subdomain}.{run.namespace}.svc.{CLUSTER_DOMAIN}")
        lines.append(f"{run.ip}\t{' '.join(own)}")
        for ip, names in self._cluster_names(run.namespace):
            lines.append(f"{ip}\t{' '.join(names)}")
        return "\n".join(lines) + "\n"

    def _resolv_path(self, run: PodRun) -> Path | None:
        """The pod's /etc/resolv.conf where it has a network namespace of its own, whose cluster
        DNS address is the pod network's gateway: nothing serves port 53 there, so a name the hosts
        file does not hold fails at once (port unreachable), as CoreDNS answers a name it does not
        serve at once. The machine's resolver cannot be reached from a pod's namespace: with its
        resolv.conf every such lookup waited out two 5 s timeouts (resolv.conf(5)), and gloo's
        reverse lookup of each peer added 10 s to every job's start. Pods that share this
        machine's network keep its resolv.conf."""
        if self.network is None or not run.netns:
            return None
        path = run.directory / "etc-resolv.conf"
        if not path.exists():
            path.write_text(resolv_conf(run.pod, run.namespace, str(self.network.gateway), Path(HOST_RESOLV)))
        return path

    def _cluster_names(self, namespace: str) -> list[tuple[str, list[str]]]:
        services = self.api.list(self.api.resource("", "v1", "services"), namespace)["items"]
        pods = [r for r in self.pods.values() if r.namespace == namespace and not r.done]
        out: list[tuple[str, list[str]]] = []

        def forms(name: str) -> list[str]:
            return [f"{name}.{namespace}.svc.{CLUSTER_DOMAIN}", f"{name}.{namespace}.svc", f"{name}.{namespace}", name]

        for service in services:
            selector = (service.get("spec") or {}).get("selector") or {}
            if not selector:
                continue
            name = service["metadata"]["name"]
            chosen = [
                r for r in pods if all((r.pod["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
            ]
            for r in chosen:
                out.append((r.ip, forms(name)))
                hostname, subdomain = r.pod["spec"].get("hostname"), r.pod["spec"].get("subdomain")
                if hostname and subdomain == name:
                    out.append((r.ip, forms(f"{hostname}.{name}")))
        return out

    def _write_hosts(self) -> None:
        for run in self.pods.values():
            path = run.directory / "etc-hosts"
            if not path.exists():
                continue
            text = self._hosts_for(run)
            if self._hosts_text.get(run.uid) != text:
                with open(path, "r+") as handle:  # in place: the bind mount follows the inode
                    handle.write(text)
                    handle.truncate()
                self._hosts_text[run.uid] = text


def resolv_conf(pod: dict[str, Any], namespace: str, cluster_dns: str, host: Path) -> str:
    """A pod's resolv.conf as the kubelet writes it (kubernetes v1.33.0 pkg/kubelet/network/dns/
    dns.go GetPodDNS): by `dnsPolicy` (getPodDNSType: ClusterFirst, or ClusterFirstWithHostNet,
    the cluster's DNS with the namespace's search path and `ndots:5`; ClusterFirst on the host's
    network, and Default, the node's resolv.conf; None, nothing), then `dnsConfig` appended
    (appendDNSConfig: nameservers and searches appended without duplicates, an option of the same
    name replaced)."""
    spec = pod.get("spec") or {}
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    host_network = bool(spec.get("hostNetwork"))
    nameservers: list[str] = []
    searches: list[str] = []
    options: list[str] = []
    host_servers, host_searches, host_options = _parse_resolv(host)
    if policy == "ClusterFirstWithHostNet" or (policy == "ClusterFirst" and not host_network):
        nameservers = [cluster_dns]
        searches = [f"{namespace}.svc.{CLUSTER_DOMAIN}", f"svc.{CLUSTER_DOMAIN}", CLUSTER_DOMAIN, *host_searches]
        options = list(DEFAULT_DNS_OPTIONS)
    elif policy != "None":
        nameservers, searches, options = host_servers, host_searches, host_options
    config = spec.get("dnsConfig") or {}
    nameservers = _unique([*nameservers, *(config.get("nameservers") or [])])
    searches = _unique([*searches, *(config.get("searches") or [])])
    named = {option.split(":", 1)[0]: option for option in options}
    for option in config.get("options") or []:
        value = option.get("value")
        named[option["name"]] = f"{option['name']}:{value}" if value is not None else option["name"]
    lines = [f"nameserver {server}" for server in nameservers]
    if searches:
        lines.append("search " + " ".join(searches))
    if named:
        lines.append("options " + " ".join(named.values()))
    return "".join(line + "\n" for line in lines)


def _parse_resolv(path: Path) -> tuple[list[str], list[str], list[str]]:
    """nameserver, search and options lines of a resolv.conf (the last search line wins)."""
    servers: list[str] = []
    searches: list[str] = []
    options: list[str] = []
    try:
        text = path.read_text()
    except OSError:
        return servers, searches, options
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) < 2:
            continue
        if fields[0] == "nameserver":
            servers.append(fields[1])
        elif fields[0] in ("search", "domain"):
            searches = fields[1:]
        elif fields[0] == "options":
            options += fields[1:]
    return servers, searches, options


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
