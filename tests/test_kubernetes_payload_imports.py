"""Every module of jupyter_px that a pod's shipped code imports is shipped too: a pod has no
jupyter_px installed, only the files of the run's ConfigMap (`payload._SHIPPED`). A runner that
imported one more module (the stacks' signal handler) failed in every pod with an ImportError."""

from __future__ import annotations

import ast
from pathlib import Path

from jupyter_px.backends.kubernetes.shared.payload import _SHIPPED

PACKAGE = Path(__file__).resolve().parents[1] / "jupyter_px"

#: Imports of shipped modules that a pod never reaches, each with why.
NEVER_IN_A_POD = {
    # the package's facade imports these on first use of a name a replica never uses
    ("__init__.py", "jupyter_px.magics"),
    ("__init__.py", "jupyter_px.server"),
    # only for type checking (`if TYPE_CHECKING:`): the pod builds its contract from cluster.json
    ("cluster.py", "jupyter_px.topology"),
    # the run store's facade imports these on first use (the submitter's side)
    ("runstore/__init__.py", "jupyter_px.runstore.models"),
    ("runstore/__init__.py", "jupyter_px.runstore.store"),
    ("runstore/__init__.py", "jupyter_px.runstore.errors"),
    ("runstore/__init__.py", "jupyter_px.runstore.files"),
}


def _module_file(name: str) -> Path | None:
    base = PACKAGE.joinpath(*name.split(".")[1:])
    return next((path.resolve() for path in (base.with_suffix(".py"), base / "__init__.py") if path.exists()), None)


def _imported(path: Path) -> set[str]:
    """The jupyter_px modules `path` imports anywhere in it (also inside functions)."""
    relative = path.relative_to(PACKAGE)
    package = ["jupyter_px", *relative.parent.parts]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("jupyter_px"))
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            if module.startswith("jupyter_px"):
                found.add(module)
                found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_what_the_shipped_code_imports_is_shipped():
    shipped = {Path(source).resolve() for _, source in _SHIPPED.values()}
    missing = sorted(
        (str(path.relative_to(PACKAGE)), name)
        for path in shipped
        if PACKAGE in path.parents
        for name in _imported(path)
        if (target := _module_file(name)) is not None and target not in shipped
    )
    assert [pair for pair in missing if pair not in NEVER_IN_A_POD] == []
