"""Data that lives outside the repository: the workspace's `shared/` folder (the source documents
the topology fixtures were cut from, the CRDs the copies in `tests/data/crds/` came from).

Tests never need it to check the product: everything they validate against is in the repository.
What needs `shared/` is provenance (the copies still match their sources). A user's clone has
nothing beside it, so those tests skip there with a one-line reason; under CI (`CI=true`), where
`shared/` is laid beside the clone, a missing folder fails instead, so CI keeps checking them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def shared_folder(*parts: str) -> Path:
    """`shared/<parts>` beside the repository or one of its parent folders (`PX_SHARED_DIR` names
    `shared/` itself); skips the calling test when it is absent, fails it under CI."""
    candidates = [Path(os.environ["PX_SHARED_DIR"])] if os.environ.get("PX_SHARED_DIR") else []
    candidates += [folder / "shared" for folder in REPOSITORY.parents]
    for shared in candidates:
        if shared.joinpath(*parts).is_dir():
            return shared.joinpath(*parts)
    reason = f"shared/{'/'.join(parts)} is not beside this checkout"
    if under_ci():
        pytest.fail(f"{reason}: CI lays shared/ beside the clone, so its absence is a fault")
    pytest.skip(reason)
