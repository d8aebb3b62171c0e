"""Files of the store written whole, and the ids its entries are published under: what the run
store, the sweep store beside it and every backend's own records share.

A reader never sees a half-written file: each write goes to a temporary file beside its target,
then is renamed over it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import tempfile
import time
from pathlib import Path

from .layout import validate_run_id


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_json(path: Path, data: object) -> None:
    atomic_write_bytes(path, json.dumps(data, indent=1, default=str).encode())


def new_run_id(name: str | None = None) -> str:
    """`<name>-<6 hex>`, or `run-<yymmdd>-<6 hex>`: unique, sortable-ish, valid everywhere."""
    suffix = secrets.token_hex(3)
    if name:
        slug = "".join(c if c.isascii() and c.isalnum() else "-" for c in name.lower()).strip("-")
        slug = "-".join(part for part in slug.split("-") if part)[:30].strip("-")
        if slug:
            return validate_run_id(f"{slug}-{suffix}")
    return f"run-{time.strftime('%y%m%d')}-{suffix}"
