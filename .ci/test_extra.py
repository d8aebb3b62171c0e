"""Print the test extra's requirements for the packages named, as pyproject.toml states them.

    python3 .ci/test_extra.py pytest trustme   # -> pytest>=8, trustme>=1.1, a line each

The floors' lane (`.ci/run`) installs the product at its lowest versions with only the test tools
its four test files use, at their lowest too: not the whole extra, whose TensorFlow, PyTorch and
JupyterLab those files never import (some 3 GB of disk and a minute of CPU beside the tests).
Taking the ranges from the extra keeps one place that states them. Standard library only: it runs
before any virtualenv exists.
"""

from __future__ import annotations

import re
import sys
import tomllib


def name_of(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0]


def main(names: list[str]) -> None:
    with open("pyproject.toml", "rb") as f:
        extra = tomllib.load(f)["project"]["optional-dependencies"]["test"]
    chosen = [requirement for requirement in extra if name_of(requirement) in names]
    missing = sorted(set(names) - {name_of(requirement) for requirement in chosen})
    if missing:
        sys.exit(f"not in pyproject.toml's test extra: {', '.join(missing)}")
    print("\n".join(chosen))


if __name__ == "__main__":
    main(sys.argv[1:])
