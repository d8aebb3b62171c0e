"""The OpenSSH commands the backend runs: argument lists, never a shell string built from input.

Every command is `ssh [-F config] -o ... HOST -- WORDS`, where WORDS are quoted one by one with
`shlex.quote` (ssh joins what follows the host into one line for the remote user's shell: quoting
each word is what keeps a path with a space one word there). The host is checked to be a host
name, an alias or `user@host` (`hosts.py`), so it is never read as an option.

Connections are shared (ControlMaster=auto, ControlPersist): the first command to a host opens
one connection, every later one (each replica, the probes, the copy) is a session on it, so a run
of 16 replicas on two hosts authenticates twice. ssh itself reads `~/.ssh/config` and the user's
keys and agent as always; BatchMode: a command that would ask for a password fails instead of
waiting for an answer nobody gives.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Sequence

from ..base import BackendError
from .settings import SshSettings

#: Seconds an idle shared connection stays open after its last session.
CONTROL_PERSIST_S = 120


def ssh_argv(settings: SshSettings, host: str, words: Sequence[str]) -> list[str]:
    """`ssh ... HOST -- <words, each quoted>` as an argument list."""
    argv = ["ssh"]
    if settings.ssh_config:
        argv += ["-F", settings.ssh_config]
    argv += [
        "-o",
        "BatchMode=yes",
        "-o",
        f"ConnectTimeout={max(1, round(settings.connect_timeout_s))}",
        "-o",
        "ControlMaster=auto",
        "-o",
        f"ControlPath={settings.control_path()}",
        "-o",
        f"ControlPersist={CONTROL_PERSIST_S}",
        "-o",
        "ServerAliveInterval=15",
        "-o",
        "LogLevel=ERROR",
    ]
    for option in settings.ssh_options:
        argv += ["-o", option]
    return [*argv, host, "--", " ".join(shlex.quote(word) for word in words)]


def with_setup(settings: SshSettings, words: Sequence[str]) -> list[str]:
    """`words` run after the settings' `setup` lines (a virtualenv activated, a module loaded):
    `bash -c SETUP; exec "$@"` with `words` as its arguments, so they stay words."""
    if not settings.setup:
        return list(words)
    script = "\n".join([*settings.setup, 'exec "$@"'])
    return ["bash", "-c", script, "px-setup", *words]


def prepare_control_dir(settings: SshSettings) -> None:
    """The folder of the shared connections' sockets, private to this user."""
    folder = os.path.dirname(settings.control_path())
    os.makedirs(folder, mode=0o700, exist_ok=True)


def run(settings: SshSettings, host: str, words: Sequence[str], *, stdin: bytes | None = None, timeout: float = 120.0):
    """Run `words` on `host` and wait; the completed process (its output as bytes)."""
    prepare_control_dir(settings)
    try:
        return subprocess.run(
            ssh_argv(settings, host, words), input=stdin, capture_output=True, timeout=timeout, check=False
        )
    except FileNotFoundError:
        raise BackendError("ssh is not on PATH: install OpenSSH's client (Debian: openssh-client)") from None
    except subprocess.TimeoutExpired:
        raise BackendError(f"{host}: ssh did not answer within {timeout:g} s") from None


def said(completed: subprocess.CompletedProcess) -> str:
    """The last line ssh or the remote command wrote to stderr (what went wrong, in its words)."""
    lines = (completed.stderr or b"").decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else f"exit code {completed.returncode}"


def check_reachable(settings: SshSettings, host: str) -> None:
    """`ssh HOST -- true`: the host answers, this user's keys are accepted (BackendError in ssh's words)."""
    done = run(settings, host, ["true"], timeout=settings.connect_timeout_s + 15)
    if done.returncode != 0:
        raise BackendError(f"host {host}: ssh failed: {said(done)}")


def resolved_hostname(settings: SshSettings, host: str) -> str:
    """The name or address ssh connects to for `host` (`ssh -G`: its HostName after
    ~/.ssh/config), which the other replicas use to reach the replicas there."""
    argv = ["ssh"] + (["-F", settings.ssh_config] if settings.ssh_config else []) + ["-G", host]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return host.rpartition("@")[2]
    for line in out.stdout.splitlines():
        key, _, value = line.partition(" ")
        if key == "hostname" and value.strip():
            return value.strip()
    return host.rpartition("@")[2]


def exit_control_masters(settings: SshSettings, hosts: Sequence[str]) -> None:
    """Close the shared connections to `hosts` (`ssh -O exit`): nothing of ours stays on them."""
    for host in hosts:
        argv = ["ssh"] + (["-F", settings.ssh_config] if settings.ssh_config else [])
        argv += ["-o", f"ControlPath={settings.control_path()}", "-O", "exit", host]
        try:
            subprocess.run(argv, capture_output=True, timeout=15, check=False)
        except (OSError, subprocess.TimeoutExpired):
            pass
