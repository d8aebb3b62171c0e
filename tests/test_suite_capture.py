"""The suite's own footing: a worker's captured output outlives what the tests do in-process.

pytest captures an xdist worker's output in one file for the whole session; whatever closes it
fails every later test of that worker with "I/O operation on closed file"."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

#: TensorBoard's import brings absl's logging handler (holding the sys.stderr of that moment);
#: a later Jupyter server's start configures logging again (traitlets' `dictConfig`) while a
#: test's `capsys` has swapped sys.stderr; a third test still prints.
SEQUENCE = """
import sys

def test_tensorboard_imported():
    import absl.logging
    assert absl.logging.get_absl_handler() is not None

def test_a_server_configures_logging(capsys):
    from traitlets.config import Application
    Application(log_level="DEBUG")
    print("under capsys")
    assert capsys.readouterr().out == "under capsys\\n"

def test_output_still_captured():
    print("captured")
    print("captured too", file=sys.stderr)
"""


def test_absl_then_a_server_start_leaves_the_capture_open(tmp_path: Path) -> None:
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_sequence.py").write_text(SEQUENCE)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-W",
            "error::pytest.PytestWarning",
            f"--basetemp={tmp_path / 'basetemp'}",  # never the machine's numbered ones (nor their clean-up)
            "test_sequence.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "3 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
