"""What the magics' tests share: a real IPython shell with the extension loaded and no topology
left over from another test, a cell run with its output captured, and the one-line UsageError a
bad cell must give (no traceback)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from jupyter_px.topology.registry import topologies


def magic_shell(forget: Iterable[str] = ()) -> Iterator[InteractiveShell]:
    """The body of a test's shell fixture (`yield from magic_shell(...)`): the process's shell,
    `jupyter_px` loaded, the topology registry empty before and after, and the names in `forget`
    (what earlier tests' cells defined) gone from its namespace."""
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "jupyter_px")
    topologies.clear()
    for name in forget:
        shell.user_ns.pop(name, None)
    yield shell
    topologies.clear()


def run(shell: InteractiveShell, source: str):
    """Run one cell; (result, captured stdout, stderr, rich outputs)."""
    with capture_output() as captured:
        result = shell.run_cell(source, store_history=True)
    return result, captured


def usage_error(shell: InteractiveShell, source: str) -> str:
    """The cell's error, which must be a UsageError shown as one line (no traceback)."""
    result, captured = run(shell, source)
    error = result.error_in_exec or result.error_before_exec
    assert isinstance(error, UsageError), f"expected a UsageError, got {error!r}\n{captured.stdout}\n{captured.stderr}"
    assert "Traceback" not in captured.stdout + captured.stderr
    return str(error)
