"""`SlurmCluster`: munged, slurmctld and N slurmd nodes on this machine, in a folder of their own.

    with SlurmCluster(nodes=3, site="own") as cluster:   # or site="accounting-enforced" (config.Site)
        cluster.env            # {"SLURM_CONF": ...}: what a Slurm client needs to talk to it
        cluster.nodes          # node names (unique per cluster, so concurrent clusters' cgroups differ)
        cluster.run(["sinfo"]) # a client command against it

Everything it starts it stops (by the pids the daemons wrote), then the running jobs' processes
(found in the nodes' cgroups) and the cgroup folders slurmd leaves; the folder is deleted.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

try:
    from free_ports import free_ports
except ImportError:  # `python -m tests.slurm_cluster` from the checkout: tests/ is a package there
    from tests.free_ports import free_ports

from .accounting import Accounting
from .config import OWN, SITES, ClusterLayout, NodeSpec, Site, cgroup_conf, gres_conf, slurm_conf
from .daemons import (
    SlurmUnavailable,
    alive,
    cgroup_pids,
    cgroups_v1_usable,
    node_cgroups,
    read_pid,
    remove_cgroups,
    run,
    stop_pids,
    wait_for_pid_file,
)

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "squeue", "scontrol", "scancel", "sinfo", "munge")


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for folder in ("/usr/sbin", "/usr/bin"):
        if os.access(Path(folder, name), os.X_OK):
            return str(Path(folder, name))
    return None


def why_unavailable() -> str | None:
    """Why no cluster can be started here (one line), or None."""
    missing = [name for name in DAEMONS + CLIENTS if _binary(name) is None]
    if missing:
        return f"Slurm is not installed ({', '.join(missing)} missing): apt-get install slurm-wlm munge"
    if os.geteuid() != 0:
        return "starting slurmd needs root (it runs every job as its user)"
    return None


class SlurmCluster:
    def __init__(
        self,
        nodes: int = 3,
        cpus: int = 4,
        memory_mib: int = 4000,
        *,
        site: Site | str = OWN,
        accounting: bool = False,
        cgroups: bool | None = None,
        gpus: int = 0,
        min_job_age_s: int = 60,
        ready_timeout: float = 60.0,
        cred_expire_s: int | None = None,
        epilog: str | None = None,
    ):
        self.node_count, self.cpus, self.memory_mib = nodes, cpus, memory_mib
        self.site = SITES[site] if isinstance(site, str) else site
        self.accounting = accounting or self.site.accounting
        self.cgroups = cgroups
        self.gpus = gpus  # fake GPUs per node (config.gres_conf)
        self.min_job_age_s = min_job_age_s
        self.cred_expire_s = cred_expire_s  # config.ClusterLayout.cred_expire_s
        #: a shell script each node's slurmd runs as a job ends (slurm.conf's Epilog): the job
        #: stays COMPLETING until it has run, as at a site whose epilog checks or cleans the node
        self.epilog = epilog
        self.ready_timeout = ready_timeout
        self.root: Path | None = None
        self.layout: ClusterLayout | None = None
        self._accounting: Accounting | None = None
        self._munged_pid: int | None = None

    # ---- what clients need -----------------------------------------------------------------
    @property
    def conf(self) -> Path:
        assert self.layout is not None, "the cluster is not started"
        return self.layout.conf

    @property
    def env(self) -> dict[str, str]:
        """The variables a Slurm client needs to use this cluster."""
        return {"SLURM_CONF": str(self.conf)}

    @property
    def nodes(self) -> list[str]:
        assert self.layout is not None, "the cluster is not started"
        return [node.name for node in self.layout.nodes]

    @property
    def partition(self) -> str:
        assert self.layout is not None
        return self.layout.partition

    @property
    def name(self) -> str:
        assert self.layout is not None
        return self.layout.name

    def client_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        return {**(os.environ if base is None else base), **self.env}

    def run(self, argv: list[str], timeout: float = 60.0) -> str:
        """A client command against this cluster; its stdout (SlurmUnavailable when it fails)."""
        return run(argv, self.client_env(), " ".join(argv[:2]), timeout)

    def _epilog_lines(self, root: Path) -> tuple[str, ...]:
        if self.epilog is None:
            return ()
        script = root / "epilog.sh"
        script.write_text("#!/bin/sh\n" + self.epilog + "\nexit 0\n")
        script.chmod(0o755)
        return (f"Epilog={script}",)

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self) -> SlurmCluster:
        problem = why_unavailable()
        if problem:
            raise SlurmUnavailable(problem)
        cgroup_problem = cgroups_v1_usable()
        use_cgroups = self.cgroups if self.cgroups is not None else self.site.uses_cgroups(cgroup_problem is None)
        if use_cgroups and cgroup_problem:
            raise SlurmUnavailable(f"cgroups asked for, but {cgroup_problem}")
        # munged refuses a socket whose folders others cannot traverse: /tmp, 0711 (not pytest's 0700 folders)
        self.root = Path(tempfile.mkdtemp(prefix="px-slurm-", dir="/tmp"))
        self.root.chmod(0o711)
        try:
            self._start(use_cgroups)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, use_cgroups: bool) -> None:
        assert self.root is not None
        root = self.root
        for folder in ("state", "spool", "run", "log", "munge"):
            (root / folder).mkdir()
        (root / "munge").chmod(0o711)
        token = secrets.token_hex(2)
        ports = free_ports(self.node_count + 4)
        nodes = tuple(
            NodeSpec(f"px{token}n{i + 1}", ports[4 + i], self.cpus, self.memory_mib, self.gpus)
            for i in range(self.node_count)
        )
        self.layout = ClusterLayout(
            root=root,
            name=f"px{token}",
            host=socket.gethostname().split(".")[0],
            ctld_port=ports[0],
            slurmd_port=ports[1],
            munge_socket=root / "munge" / "munge.socket",
            nodes=nodes,
            cgroups=use_cgroups,
            min_job_age_s=self.min_job_age_s,
            accounting_port=ports[2] if self.accounting else None,
            site=self.site,
            cred_expire_s=self.cred_expire_s,
            extra=self._epilog_lines(root),
        )
        self.conf.write_text(slurm_conf(self.layout))
        (root / "cgroup.conf").write_text(cgroup_conf())
        if self.gpus:
            (root / "gpus").mkdir()
            for node in nodes:
                for index in range(self.gpus):  # character devices, as slurmd demands: /dev/null's numbers
                    os.mknod(root / "gpus" / f"{node.name}-{index}", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            (root / "gres.conf").write_text(gres_conf(self.layout))
        env = self.client_env()
        self._start_munged(env)
        if self.accounting:
            self._accounting = Accounting(root, self.layout.munge_socket, ports[2], ports[3])
            self._accounting.start(env)
            self._accounting.register(self.layout.name, env)
        run([str(_binary("slurmctld")), "-i"], env, "slurmctld")
        wait_for_pid_file(root / "run" / "slurmctld.pid", "slurmctld", root / "log" / "slurmctld.log")
        for node in nodes:
            run([str(_binary("slurmd")), "-N", node.name], env, f"slurmd -N {node.name}")
        for node in nodes:
            wait_for_pid_file(root / "run" / f"slurmd-{node.name}.pid", f"slurmd {node.name}", None)
        self._wait_idle(env)

    def _start_munged(self, env: Mapping[str, str]) -> None:
        assert self.root is not None and self.layout is not None
        munge = self.root / "munge"
        key = munge / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o600)
        run(
            [
                str(_binary("munged")),
                f"--socket={self.layout.munge_socket}",
                f"--key-file={key}",
                f"--log-file={munge / 'munged.log'}",
                f"--pid-file={munge / 'munged.pid'}",
                f"--seed-file={munge / 'munged.seed'}",
            ],
            env,
            "munged",
        )
        self._munged_pid = wait_for_pid_file(munge / "munged.pid", "munged", munge / "munged.log")

    def _wait_idle(self, env: Mapping[str, str]) -> None:
        deadline = time.monotonic() + self.ready_timeout
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            done = subprocess.run(
                ["sinfo", "--noheader", "--Node", "--format=%N %t"], env=dict(env), capture_output=True, text=True
            )
            states = dict(line.split()[:2] for line in done.stdout.splitlines() if len(line.split()) >= 2)
            if done.returncode == 0 and all(states.get(name) == "idle" for name in self.nodes):
                return
            time.sleep(0.1)
        raise SlurmUnavailable(f"the nodes were not idle within {self.ready_timeout:g} s: {states}")

    def stop(self) -> list[str]:
        """Stop everything this cluster started; what could not be cleaned (normally nothing)."""
        if self.root is None:
            return []
        root = self.root
        problems: list[str] = []
        if self.layout is not None:
            if alive(read_pid(root / "run" / "slurmctld.pid") or 0):
                subprocess.run(
                    ["scancel", "--full", "--quiet", "--partition", self.layout.partition],
                    env=self.client_env(),
                    capture_output=True,
                    timeout=30,
                )
            stop_pids([read_pid(root / "run" / f"slurmd-{node.name}.pid") or 0 for node in self.layout.nodes])
            stop_pids([read_pid(root / "run" / "slurmctld.pid") or 0])
            if self._accounting is not None:
                self._accounting.stop()
            for node in self.layout.nodes:
                problems += _empty_and_remove(node_cgroups(node.name))
        stop_pids([self._munged_pid or 0])
        shutil.rmtree(root, ignore_errors=True)
        self.root = None
        return problems

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _empty_and_remove(folders: list[Path], timeout: float = 15.0) -> list[str]:
    """End the processes left in a node's cgroups, then remove them; again until they are gone or
    `timeout` s have passed. A cgroup cannot be removed while a process is in it (EBUSY), and on a
    loaded machine a task killed a moment ago may still be leaving it, or a step's last process
    may just have been started into it."""
    deadline = time.monotonic() + timeout
    while True:
        stop_pids({pid for folder in folders for pid in cgroup_pids(folder)}, timeout=5)
        problems = remove_cgroups(folders)
        if not problems or time.monotonic() > deadline:
            return problems
        time.sleep(0.2)
