"""A folder that is this user's alone: where a lock file or a socket of ours may live, in a
shared place such as /tmp, without another user being able to plant or replace it.
Standard library only (a Slurm task's or an SSH host's entry imports it)."""

from __future__ import annotations

import os


def private_folder(folder: str) -> str | None:
    """Why `folder` cannot hold this user's files (another's, or writable by others), or None.
    The folder is created (mode 0700) when it does not exist."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    info = os.stat(folder)
    if info.st_uid != os.getuid() or info.st_mode & 0o022:
        return f"{folder} is not this user's alone (owner uid {info.st_uid}, mode {info.st_mode & 0o777:o})"
    return None
