"""Attributes a package imports on first use (PEP 562), for packages whose `__init__` must stay light.

Every replica imports `jupyter_px` (the runner, `tracking`) and `jupyter_px.runstore.layout`, so
neither package's `__init__` may import pydantic, IPython or ipywidgets up front. Standard
library only: this module is shipped into Kubernetes pods with the runner.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(
    package: str, names: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`: `names` maps a public name to the module that
    defines it; a name is imported once, then kept in the package's `namespace`."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *names})

    return __getattr__, __dir__
