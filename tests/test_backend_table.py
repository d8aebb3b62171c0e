"""A backend is one folder and one row: no layer above `backends/` tests a backend's name or
family (import-linter's contract "only backends/ imports a backend and names a backend family"
covers the imports; this walks the code for the names), and what a surface needs comes from the
row: the server's pools, the image, a sweep's inherited settings, the dry run."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from jupyter_px import backend_table
from jupyter_px.server.pools import POOL_THREADS, Pools, change_kind
from jupyter_px.server.settings import PxSettings
from jupyter_px.topology import parse_topology

PACKAGE = Path(__file__).resolve().parents[1] / "jupyter_px"
NAMES = {name for e in backend_table.BACKENDS for name in (e.name, e.family, *e.aliases)}
PREFIXES = backend_table.settings_prefixes()


def _named(node: ast.AST) -> list[str]:
    """String constants `node` compares with or tests a prefix against."""
    found = []
    if isinstance(node, ast.Compare):
        for side in (node.left, *node.comparators):
            items = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
            found += [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "startswith":
        for arg in node.args:
            items = arg.elts if isinstance(arg, ast.Tuple) else [arg]
            found += [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
    return found


def test_no_module_outside_backends_tests_a_backend_name_family_or_settings_prefix():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in ("backends", "backend_table.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            for value in _named(node):
                if value in NAMES or value.startswith(PREFIXES):
                    offenders.append(f"{relative}:{node.lineno}: {value!r}")  # type: ignore[attr-defined]
    assert not offenders, "ask the backend table's row instead:\n" + "\n".join(offenders)


def test_every_backend_row_has_its_pool_in_the_server():
    pools = Pools()
    try:
        for entry in backend_table.BACKENDS:
            kind = change_kind(entry.name)
            assert kind == entry.pool and kind in pools.executors and POOL_THREADS[kind] == entry.pool_threads
    finally:
        pools.shutdown()
    assert change_kind("ssh") == "ssh"  # a fourth family once raised a KeyError in Pools.run


@pytest.mark.parametrize(
    ("backend", "filled"), [("native", True), ("kubeflow", True), ("slurm", False), ("ssh", False)]
)
def test_the_servers_image_fills_only_a_backend_that_runs_images(backend, filled):
    settings = PxSettings(home=Path("/nowhere"), tensorboard_idle_timeout=60, kubernetes_image="registry/train:1")
    topology = parse_topology({"version": 1, "kind": "experiment", "backend": backend})
    image = settings.with_image(topology).environment.image
    assert image == ("registry/train:1" if filled else None)


def test_a_sweeps_controller_keeps_every_backends_settings_and_tunables():
    from jupyter_px.sweeps.service import _kept

    for name in ("PX_K8S_NAMESPACE", "PX_SLURM_PARTITION", "PX_SSH_HOSTS", "PX_LOCAL_CONFIG", "PX_STOP_GRACE_S"):
        assert _kept(name), name
    for name in ("PX_RUN_ID", "PX_TASK_TYPE", "PX_OUTPUTS_PATH"):  # a replica's own: never inherited
        assert not _kept(name), name


def test_the_kubernetes_alias_is_mapped_in_the_table_only():
    from jupyter_px.backends.kubernetes.shared.replica_pods import replica_pods

    assert backend_table.canonical("kubernetes") == "native"
    assert replica_pods("kubernetes").backend == "native"
    sources = [p for p in PACKAGE.rglob("*.py") if p.name != "backend_table.py"]
    mapped = [
        str(p) for p in sources if '== "kubernetes"' in p.read_text() or "('kubernetes', 'native')" in p.read_text()
    ]
    assert not mapped, mapped


def test_the_forms_offer_every_backend_of_the_table_ssh_too():
    from jupyter_px.topology import json_schema
    from jupyter_px.widgets.form_parts import BACKENDS

    assert [e.name for e in backend_table.BACKENDS] == BACKENDS  # the widget's choices
    node = json_schema()["properties"]["backend"]  # what the sidebar's form is built from
    enum = node.get("enum") or next(o["enum"] for o in node.get("anyOf", []) if "enum" in o)
    assert "ssh" in enum
