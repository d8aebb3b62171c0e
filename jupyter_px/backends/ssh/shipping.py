"""The run's files on each host: read from a filesystem the host shares, else copied there.

A host shares the run store when it sees the run's directory at the same path: proved per host
by a file with a token only this run knows (`ssh HOST -- test -f RUN/ssh/probe-TOKEN`), not
assumed from a name. A host that does not (or `shared_filesystem: no`) gets a copy of what a
replica reads (the record, the code, the entry) under `remote_dir/<run id>`, sent as one tar
stream on ssh's stdin (`tar -x` there: no scp or sftp server needed), and at the end sends back
its outputs and TensorBoard files the same way; then its copy is removed. Logs and metrics do not
wait for the end: they come back in the replica's output as it runs (`channels.py`).
"""

from __future__ import annotations

import io
import json
import posixpath
import tarfile
from pathlib import Path

from ..base import BackendError
from . import commands
from .settings import SshSettings

#: What a replica reads of its run directory.
SHIPPED = ("record.json", "code", "ssh/entry.py", "ssh/plan.json")
#: What comes back from a host that does not share the run store, at the end.
RETURNED = ("outputs", "tensorboard")


def probe_name(token: str) -> str:
    return f"ssh/probe-{token}"


def shares_run_dir(settings: SshSettings, host: str, run_dir: Path, token: str) -> bool:
    """Whether `host` sees `run_dir` (the probe file of this run) at the same path."""
    if settings.shared_filesystem != "auto":
        return settings.shared_filesystem == "yes"
    done = commands.run(settings, host, ["test", "-f", str(run_dir / probe_name(token))])
    if done.returncode == 255:
        raise BackendError(f"host {host}: ssh failed: {commands.said(done)}")
    return done.returncode == 0


def remote_run_dir(settings: SshSettings, run_id: str) -> str:
    return posixpath.join(settings.remote_dir, run_id)


def _archive(run_dir: Path, remote: str) -> bytes:
    """The shipped files as a tar stream; the record's workdir made the copy's code folder (the
    submitter's folder is not on the host)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in SHIPPED:
            path = run_dir / name
            if name == "record.json":
                record = json.loads(path.read_text())
                record["workdir"] = posixpath.join(remote, "code")
                data = json.dumps(record).encode()
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o600
                tar.addfile(info, io.BytesIO(data))
            elif path.exists():
                tar.add(path, arcname=name)
    return buffer.getvalue()


def copy_to(settings: SshSettings, host: str, run_dir: Path, remote: str) -> None:
    """The run's code, record and entry into `remote` on `host` (BackendError in ssh's or tar's words)."""
    made = commands.run(settings, host, ["mkdir", "-p", "-m", "700", "--", remote])
    if made.returncode != 0:
        raise BackendError(f"host {host}: cannot create {remote}: {commands.said(made)}")
    sent = commands.run(settings, host, ["tar", "-x", "-f", "-", "-C", remote], stdin=_archive(run_dir, remote))
    if sent.returncode != 0:
        raise BackendError(f"host {host}: cannot copy the run's code to {remote}: {commands.said(sent)}")


def copy_back(settings: SshSettings, host: str, remote: str, run_dir: Path) -> str | None:
    """The host's outputs and TensorBoard files into the run directory; what went wrong, or None.
    Only regular files and folders are taken, never outside the run directory."""
    done = commands.run(
        settings, host, ["tar", "-c", "-f", "-", "--ignore-failed-read", "-C", remote, *RETURNED], timeout=600
    )
    if done.returncode not in (0, 2) or not done.stdout:
        return f"host {host}: cannot copy the outputs back: {commands.said(done)}"
    with tarfile.open(fileobj=io.BytesIO(done.stdout), mode="r") as tar:
        members = [m for m in tar.getmembers() if m.isfile() or m.isdir()]
        tar.extractall(run_dir, members=members, filter="data")
    return None


def remove(settings: SshSettings, host: str, remote: str) -> None:
    """The run's copy on `host`, once what it made is back."""
    if posixpath.basename(remote) and remote.startswith(settings.remote_dir):
        commands.run(settings, host, ["rm", "-rf", "--", remote])
