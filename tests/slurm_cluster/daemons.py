"""Starting and stopping the cluster's daemons, and what they leave behind.

Every Slurm daemon (and munged) daemonizes and writes a pid file: a daemon is known by that pid
and nothing else, so stopping a cluster ends exactly what it started (never by name: other
clusters, of other tests or people, may run on the same machine). slurmd with cgroups leaves
`/sys/fs/cgroup/<controller>/slurm_<node>` folders behind; they are removed (rmdir, deepest
first) once the node's processes are gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


class SlurmUnavailable(RuntimeError):
    """Slurm cannot be started here; the message says why in one line."""


def run(argv: list[str], env: Mapping[str, str], what: str, timeout: float = 60.0) -> str:
    """Run a command to its end; SlurmUnavailable with its error output when it fails."""
    try:
        done = subprocess.run(argv, env=dict(env), capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SlurmUnavailable(f"{what}: {error}") from None
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise SlurmUnavailable(f"{what} failed (exit {done.returncode}): {detail[-1] if detail else 'no output'}")
    return done.stdout


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def wait_for_pid_file(path: Path, what: str, log: Path | None, timeout: float = 20.0) -> int:
    """The pid a daemon wrote into `path` once it is running (SlurmUnavailable with the end of
    its log if it never does)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = read_pid(path)
        if pid is not None and alive(pid):
            return pid
        time.sleep(0.05)
    raise SlurmUnavailable(f"{what} did not start within {timeout:g} s{log_tail(log)}")


def log_tail(log: Path | None, lines: int = 3) -> str:
    if log is None:
        return ""
    try:
        text = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return f"; {log.name} ends: {' | '.join(text[-lines:])}" if text else ""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rpartition(")")[2].split()[0]
        return state != "Z"
    except (OSError, IndexError):
        return False


def stop_pids(pids: Iterable[int], timeout: float = 10.0) -> None:
    """SIGTERM each, then SIGKILL whatever is still there after `timeout` s."""
    pids = [pid for pid in pids if pid and alive(pid)]
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in pids:
        if alive(pid):
            _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def cgroups_v1_usable() -> str | None:
    """None when cgroup v1's memory and freezer controllers are mounted and writable here, else why not."""
    for controller in ("memory", "freezer", "cpuset"):
        folder = CGROUP_ROOT / controller
        if not (folder / "cgroup.procs").exists():
            return f"cgroup v1 controller {controller} is not mounted at {folder}"
        if not os.access(folder, os.W_OK):
            return f"{folder} is not writable"
    return None


def node_cgroups(node: str) -> list[Path]:
    """The cgroup folders slurmd made for `node` (`slurm_<node>` under each v1 controller)."""
    if not CGROUP_ROOT.is_dir():
        return []
    return [folder for folder in CGROUP_ROOT.glob(f"*/slurm_{node}") if folder.is_dir()]


def cgroup_pids(folder: Path) -> list[int]:
    pids: list[int] = []
    for procs in folder.rglob("cgroup.procs"):
        try:
            pids += [int(line) for line in procs.read_text().split()]
        except (OSError, ValueError):
            continue
    return pids


def remove_cgroups(folders: Iterable[Path]) -> list[str]:
    """rmdir each folder's tree, deepest first (cgroup folders cannot be removed recursively).
    Returns what could not be removed."""
    left = []
    for folder in folders:
        for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            try:
                sub.rmdir()
            except OSError:
                pass
        try:
            folder.rmdir()
        except FileNotFoundError:
            pass
        except OSError as error:
            left.append(f"{folder}: {error.strerror}")
    return left
