"""The suite never touches what lies outside it: a user's cluster, or data beside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jupyter_px.backends import BackendError
from jupyter_px.backends.kubernetes.client import connect
from jupyter_px.backends.kubernetes.settings import load_settings


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
