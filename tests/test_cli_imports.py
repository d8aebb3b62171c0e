"""What `jupyter px` imports before a command does its own work: every command builds the whole
parser, so building it must not import what only some commands use (the run store's models and
pydantic, the topology model, the TensorBoard launcher: 0.4 s of a warm run's 1.1 s before).
Each command then imports what its own work needs, and no command imports what none of its
work needs (TensorBoard, a framework, the notebook stack). Checked in a fresh interpreter each,
from `sys.modules` (timings are the benchmark's: benchmarks/bench_launch.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: The parser and the CLI's own modules, and the TensorBoard settings its help text names.
PARSER_MODULES = {
    "jupyter_px",
    "jupyter_px._version",
    "jupyter_px.lazy",
    "jupyter_px.backend_table",
    "jupyter_px.tensorboard",
    "jupyter_px.tensorboard.config",
}
#: What no command outside `tensorboard` and a run's own replicas imports (numpy: only where
#: metrics are read or a sweep's importance computed, 0.12 s of `runs`' 0.5 s before).
NEVER = (
    "tensorboard",
    "jupyter_px.tensorboard.launch",
    "torch",
    "tensorflow",
    "IPython",
    "ipywidgets",
    "plotly",
    "numpy",
)

PROBE = """
import contextlib, io, json, sys
import jupyter_px.cli as cli
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = cli.main(sys.argv[1:])
    except SystemExit as exit:
        code = exit.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _imports(*argv: str, env: dict[str, str] | None = None) -> tuple[int, set[str]]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env
    )
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(out.stdout.splitlines()[-1])
    return found["code"], set(found["modules"])


@pytest.mark.parametrize(
    "command",
    ["--help", "run --help", "status --help", "logs --help", "runs --help", "render --help", "validate --help"]
    + ["tensorboard list --help", "warm --help", "sweep --help"],
)
def test_building_the_parser_imports_only_the_cli(command):
    code, modules = _imports(*command.split())
    assert code == 0
    ours = {m for m in modules if m.startswith("jupyter_px")}
    assert ours - PARSER_MODULES == {m for m in ours if m.startswith("jupyter_px.cli")}, sorted(ours - PARSER_MODULES)
    assert not {"pydantic", "yaml", "psutil"} & modules, sorted({"pydantic", "yaml", "psutil"} & modules)


@pytest.mark.parametrize(
    "command",
    [
        "runs",
        "validate examples/workloads/torch.yaml",
        "render examples/allreduce.py -f examples/pytorch.yaml --backend native",
    ],
)
def test_a_command_imports_what_its_work_needs_and_nothing_heavy(command, px_home):
    import os

    code, modules = _imports(*command.split(), env={**os.environ, "PX_HOME": str(px_home)})
    assert code == 0
    assert not [m for m in NEVER if m in modules], [m for m in NEVER if m in modules]


def test_the_executable_declines_the_manifest_validator_the_client_would_import():
    """kubernetes-validate is installed here (the simulated API server uses it), and the official
    client's package imports it, and jsonschema, whenever it is: the `jupyter-px` executable
    declines it (`cli.entry`), and still has the client. `main` called in-process does not."""
    probe = (
        "import sys\n"
        "from jupyter_px import cli\n"
        "sys.argv = ['jupyter-px', 'runs', '--help']\n"
        "try:\n"
        "    cli.entry()\n"
        "except SystemExit:\n"
        "    pass\n"
        "from kubernetes.dynamic import client\n"
        "print(sorted(m for m in ('kubernetes', 'kubernetes_validate', 'jsonschema') if sys.modules.get(m)),"
        " client.HAS_KUBERNETES_VALIDATE)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == ["['kubernetes']", "False"], done.stdout
    __import__("kubernetes_validate")  # installed: the decline, not its absence, did it
    scripts = (ROOT / "pyproject.toml").read_text()
    assert 'jupyter-px = "jupyter_px.cli:entry"' in scripts  # the executable is `entry`, not `main`
