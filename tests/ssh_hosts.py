"""Real OpenSSH servers on this machine for the SSH backend's tests: each "host" is its own sshd
(Debian's /usr/sbin/sshd) on 127.0.0.1 with a port, host key and authorized key of its own, all
generated in a temporary folder, and an ssh configuration naming them `host-a`, `host-b`, ...
(`ssh -F`, the backend's `ssh_config` setting), as a user's ~/.ssh/config would.

    from ssh_hosts import ssh_hosts_fixture, use_ssh_fixture  # noqa: F401 (fixtures)

`ssh_hosts` (module-scoped) starts the servers once per test file; `use_ssh` points one test's
backend at them (PX_SSH_* variables, a short stop grace). Where sshd cannot start here (not
installed) the tests skip with the reason; under CI (`CI=true`, whose `.ci/run` installs
openssh-server) they fail instead. `processes_of(run_id)` finds every process on the machine
that belongs to a run (by its `PX_RUN_ID`): what a stop must leave none of.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest
from free_ports import free_port
from outside_data import under_ci
from waiting import wait_for

SSHD = "/usr/sbin/sshd"


class SshUnavailable(RuntimeError):
    """sshd cannot be started here."""


@dataclass
class SshHost:
    name: str
    port: int
    process: subprocess.Popen | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid


@dataclass
class SshHosts:
    """Running sshd servers and the client configuration that reaches them."""

    folder: Path
    hosts: list[SshHost] = field(default_factory=list)

    @property
    def config(self) -> Path:
        return self.folder / "ssh_config"

    @property
    def key(self) -> Path:
        return self.folder / "id_ed25519"

    @property
    def warm(self) -> Path:
        """Where the hosts' warm templates listen (`warm_dir`): short, as a socket's path must be."""
        return self.folder / "warm"

    def names(self) -> list[str]:
        return [host.name for host in self.hosts]

    def ssh(self, host: str, *words: str) -> subprocess.CompletedProcess:
        """A command on `host` through the test configuration (a fresh connection)."""
        argv = ["ssh", "-F", str(self.config), "-o", "ControlMaster=no", host, "--", *words]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)

    def session_processes(self) -> list[psutil.Process]:
        """Every process an sshd of these hosts started that is still there (their sessions')."""
        found = []
        for host in self.hosts:
            with contextlib.suppress(psutil.NoSuchProcess):
                found += psutil.Process(host.pid).children(recursive=True)
        return found


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True, capture_output=True)


def start_hosts(count: int = 2) -> SshHosts:
    """`count` sshd servers and their client configuration; SshUnavailable when sshd cannot run."""
    if not os.path.exists(SSHD) or shutil.which("ssh") is None:
        raise SshUnavailable(f"{SSHD} or ssh is not installed (Debian: openssh-server openssh-client)")
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    folder = Path(tempfile.mkdtemp(prefix="pxssh-", dir="/tmp"))  # short: ControlPath sockets live under it
    hosts = SshHosts(folder)
    _keygen(hosts.key)
    (folder / "authorized_keys").write_text((folder / "id_ed25519.pub").read_text())
    user = getpass.getuser()
    client = [
        "Host *",
        f"  User {user}",
        f"  IdentityFile {hosts.key}",
        "  IdentitiesOnly yes",
        f"  UserKnownHostsFile {folder / 'known_hosts'}",
        "  StrictHostKeyChecking accept-new",
        "  LogLevel ERROR",
    ]
    for number in range(count):
        name = f"host-{chr(ord('a') + number)}"
        host = SshHost(name, free_port())
        key = folder / f"host_key_{name}"
        _keygen(key)
        config = folder / f"sshd_{name}"
        config.write_text(
            "\n".join(
                [
                    f"Port {host.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {key}",
                    f"AuthorizedKeysFile {folder / 'authorized_keys'}",
                    f"PidFile {folder / f'{name}.pid'}",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PubkeyAuthentication yes",
                    "PermitRootLogin prohibit-password",
                    "StrictModes no",
                    "UsePAM no",
                    "MaxSessions 64",
                    "MaxStartups 64",
                    "LogLevel ERROR",
                ]
            )
            + "\n"
        )
        with open(folder / f"{name}.log", "wb") as log:  # sshd keeps its own copy of the descriptor
            host.process = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=log
            )
        hosts.hosts.append(host)
        client += [f"Host {name}", "  HostName 127.0.0.1", f"  Port {host.port}", f"  HostKeyAlias {name}"]
    hosts.config.write_text("\n".join(client) + "\n")
    try:
        for host in hosts.hosts:
            wait_for(lambda h=host: _answers(hosts, h), f"sshd of {host.name} to answer", timeout=60, poll=0.2)
    except AssertionError as error:
        logs = " ".join((folder / f"{h.name}.log").read_text()[-300:] for h in hosts.hosts)
        stop_hosts(hosts)
        raise SshUnavailable(f"{error}: {logs}") from None
    return hosts


def _answers(hosts: SshHosts, host: SshHost) -> bool:
    assert host.process is not None
    if host.process.poll() is not None:
        raise AssertionError(f"sshd of {host.name} exited with {host.process.returncode}")
    return hosts.ssh(host.name, "true").returncode == 0


def templates(hosts: SshHosts) -> list[psutil.Process]:
    """The hosts' warm templates (`host_template.py`, their sockets in the hosts' warm folder), not
    their forks (a warm replica's entry, whose command line is its template's)."""

    def is_template(process: psutil.Process) -> bool:
        line = process.cmdline()
        return "jupyter_px.backends.ssh.host_template" in line and str(hosts.warm) in " ".join(line)

    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            parent = process.parent()
            if is_template(process) and not (parent is not None and is_template(parent)):
                found.append(process)
    return found


def template_children(hosts: SshHosts) -> list[psutil.Process]:
    """What the templates forked that still runs (a warm replica's entry and what it started)."""
    found = []
    for template in templates(hosts):
        with contextlib.suppress(psutil.Error):
            found += template.children(recursive=True)
    return found


def template_listening(hosts: SshHosts) -> bool:
    """Whether a template takes connections on the hosts' warm folder: a socket file alone says
    nothing, since a template killed with SIGKILL (`stop_templates`) leaves its own behind, and a
    run started on such a file alone found no template (a new one was still importing)."""
    for path in hosts.warm.glob("*.sock"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(path))
            except OSError:
                continue
            return True
    return False


def stop_templates(hosts: SshHosts) -> None:
    for template in templates(hosts):
        with contextlib.suppress(psutil.Error):
            template.kill()
            template.wait(30)


def stop_hosts(hosts: SshHosts) -> None:
    stop_templates(hosts)  # the next tests' hosts start their own
    for host in hosts.hosts:
        if host.process is not None and host.process.poll() is None:
            with contextlib.suppress(psutil.NoSuchProcess):
                for child in psutil.Process(host.pid).children(recursive=True):
                    child.kill()
            host.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                host.process.wait(10)
    shutil.rmtree(hosts.folder, ignore_errors=True)


@pytest.fixture(scope="module", name="ssh_hosts")
def ssh_hosts_fixture() -> Iterator[SshHosts]:
    """Two hosts, `host-a` and `host-b`, for the whole test module."""
    try:
        hosts = start_hosts(2)
    except SshUnavailable as error:
        if under_ci():
            pytest.fail(f"sshd cannot be started here: {error} (.ci/run installs openssh-server)")
        pytest.skip(f"sshd cannot be started here: {error}")
    try:
        yield hosts
    finally:
        stop_hosts(hosts)


@pytest.fixture(name="use_ssh")
def use_ssh_fixture(ssh_hosts: SshHosts, px_home: Path, tmp_path: Path, monkeypatch) -> Iterator[SshHosts]:
    """This test's backend on the module's hosts: their ssh configuration, 2 slots each, no
    settings file, a short stop grace. Afterwards no process of this test's runs is left."""
    monkeypatch.setenv("PX_SSH_CONFIG", str(tmp_path / "no-ssh-settings.yaml"))
    monkeypatch.setenv("PX_SSH_SSH_CONFIG", str(ssh_hosts.config))
    monkeypatch.setenv("PX_SSH_HOSTS", "host-a slots=2,host-b slots=2")
    monkeypatch.setenv("PX_SSH_CONTROL_DIR", str(ssh_hosts.folder / "cm"))
    monkeypatch.setenv("PX_SSH_REMOTE_DIR", str(tmp_path / "remote"))
    monkeypatch.setenv("PX_STOP_GRACE_S", "5")
    monkeypatch.setenv("PX_SSH_WARM_DIR", str(ssh_hosts.warm))  # the module's templates, stopped with its hosts
    yield ssh_hosts
    from jupyter_px.service import RunService

    service = RunService()
    for run_id in service.run_ids():  # a test that failed midway: its runs go too
        if not service.status(run_id).state.finished:
            service.stop(run_id)
    wait_for(lambda: not processes_of_home(px_home), "no process of the test's runs left", timeout=60)
    # a warm replica's processes carry its run in the environment they were forked with, not in
    # the one /proc shows (the template's): none of them is left either
    wait_for(lambda: not template_children(ssh_hosts), "no warm replica left", timeout=60)


def processes_of(run_id: str) -> list[psutil.Process]:
    """Every process on this machine whose environment says it is a replica of `run_id`."""
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if process.environ().get("PX_RUN_ID") == run_id:
                found.append(process)
    return found


def processes_of_home(home: Path) -> list[psutil.Process]:
    """Every process whose environment or command line names the run store `home`."""
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if process.pid == os.getpid():
                continue
            if process.environ().get("PX_HOME") == str(home) or any(str(home) in part for part in process.cmdline()):
                found.append(process)
    return found
