"""The suite never touches what lies outside it: a user's cluster, or data beside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jupyter_px.backends import BackendError
from jupyter_px.backends.kubernetes.shared.client import connect
from jupyter_px.backends.kubernetes.shared.settings import load_settings


def test_no_test_can_reach_a_users_cluster(monkeypatch, tmp_path):
    """Even with a kubeconfig in the user's home, the Kubernetes client finds no configuration."""
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    monkeypatch.setenv("HOME", str(home))
    assert not Path(os.environ["KUBECONFIG"]).exists()
    assert not any(name.startswith("KUBERNETES_SERVICE") for name in os.environ)
    with pytest.raises(BackendError, match="no Kubernetes configuration"):
        connect(load_settings())


def test_settings_come_from_nowhere():
    """The user's ~/.jupyter_px/kubernetes.yaml and PX_K8S_* variables are out of reach."""
    assert not Path(os.environ["PX_K8S_CONFIG"]).exists()
    assert [name for name in os.environ if name.startswith("PX_K8S_") and name != "PX_K8S_CONFIG"] == []


#: The tests that read JupyterLab's theme through the user's settings before every Jupyter location
#: was moved (conftest.py `_no_user_jupyter_settings`): a Dark theme in the user's home failed both.
THEME_SENSITIVE = (
    "tests/test_tensorboard.py::test_embed",
    "tests/test_widgets.py::test_monitor_tensorboard_button_embeds_the_proxied_url",
)


def test_a_dark_theme_in_the_users_home_changes_no_result(tmp_path):
    """A user who chose JupyterLab Dark runs the suite: the theme-sensitive tests still pass.

    They run in a pytest of their own whose HOME holds the Dark theme where JupyterLab keeps it,
    with no Jupyter location set, as on the user's machine."""
    import subprocess
    import sys

    from jupyter_px.presentation.theme import THEMES_SETTINGS

    home = tmp_path / "home"
    settings = home / ".jupyter" / "lab" / "user-settings" / THEMES_SETTINGS
    settings.parent.mkdir(parents=True)
    settings.write_text('{\n    // Theme\n    "theme": "JupyterLab Dark"\n}')
    env = {name: value for name, value in os.environ.items() if not name.startswith(("JUPYTER", "IPYTHONDIR"))}
    env["HOME"] = str(home)
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *THEME_SENSITIVE],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout, done.stdout[-2000:]
