"""The warm template's environment fingerprint (`backends/local/fingerprint.py`): what a template
must have been started with to serve a run. What an import can find changing (a new module,
package, `.pth`, an install or upgrade) changes it; what only sits beside the modules (a run's
logs, a docs build, the `__pycache__` Python writes at a first import) keeps it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from warm_support import template_env

from jupyter_px.backends.local import warm


def test_a_file_written_beside_the_modules_on_pythonpath_keeps_the_template(tmp_path):
    """A PYTHONPATH folder also holds what its code writes (logs, checkpoints, CSVs): those keep
    the fingerprint; a new module, package or `.pth` there changes it (an import may differ)."""
    folder = tmp_path / "code"
    folder.mkdir()
    (folder / "model.py").write_text("x = 1\n")
    (folder / "docs").mkdir()  # a checkout's folder that is no package
    env = {**template_env(), "PYTHONPATH": str(folder)}
    before = warm.fingerprint(None, env)
    time.sleep(0.01)  # a new mtime for whatever is written next
    for name in ("train.log", "metrics.csv", "ckpt.pt"):
        (folder / name).write_text("written by the run\n")
    (folder / "__pycache__").mkdir()
    (folder / "outputs-2").mkdir()  # not a name an import can take
    (folder / "docs" / "_build").mkdir()  # a docs build (in CI, beside the tests: a warm test ran cold)
    assert warm.fingerprint(None, env) == before
    (folder / "helpers.py").write_text("y = 2\n")
    assert warm.fingerprint(None, env) != before
    after_module = warm.fingerprint(None, env)
    (folder / "pkg").mkdir()
    assert warm.fingerprint(None, env) != after_module


def test_a_packages_first_import_keeps_the_template_and_its_upgrade_does_not(tmp_path):
    """Where the install compiled nothing (pip's `--no-compile`, uv's default), a package's first
    import creates its `__pycache__`, which changes the package folder's mtime: a kernel's first
    `import` of it must keep the template (in CI every such import retired it, 13 s of CPU each
    time). A new version (a new `__init__.py` and `.dist-info`) changes the fingerprint."""
    folder = tmp_path / "site"
    (folder / "pkg").mkdir(parents=True)
    (folder / "pkg" / "__init__.py").write_text("x = 1\n")
    (folder / "pkg-1.0.dist-info").mkdir()
    env = {**template_env(), "PYTHONPATH": str(folder)}
    before = warm.fingerprint(None, env)
    time.sleep(0.01)  # a new mtime for whatever is written next
    subprocess.run([sys.executable, "-c", "import pkg"], env={**os.environ, "PYTHONPATH": str(folder)}, check=True)
    assert (folder / "pkg" / "__pycache__").is_dir()
    assert warm.fingerprint(None, env) == before
    (folder / "pkg" / "__init__.py").write_text("x = 2\n")  # pip writes the new version's files
    upgraded = warm.fingerprint(None, env)
    assert upgraded != before
    time.sleep(0.01)  # file times tick coarsely (a jiffy): the new version's files, a tick later
    (folder / "pkg-1.0.dist-info").rename(folder / "pkg-2.0.dist-info")
    (folder / "pkg-2.0.dist-info" / "RECORD").write_text("pkg/__init__.py,,\n")
    assert warm.fingerprint(None, env) != upgraded
