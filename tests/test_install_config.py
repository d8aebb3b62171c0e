"""What our install switches on in a Jupyter server: jupyter_px, and not jupyter-server-proxy's
generic `/proxy/<port>/` (every local port to anyone with the token). Our TensorBoard route uses
the proxy's handler class, not its extension.

The configuration is read the way `jupyter server` reads it: our file beside the one
jupyter-server-proxy installs for itself, in the same `jupyter_server_config.d` (pip puts both
under `<prefix>/etc/jupyter`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jupyter_server_proxy
import pytest
from jupyter_server.serverapp import ServerApp

REPO = Path(__file__).resolve().parent.parent
OURS = REPO / "jupyter-config" / "jupyter_server_config.d" / "jupyter_px.json"
PROXYS_OWN = (
    Path(jupyter_server_proxy.__file__).parent / "etc" / "jupyter_server_config.d" / "jupyter-server-proxy.json"
)


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """A prefix with both packages' server configs, and an empty user config directory."""
    prefix, user = tmp_path / "prefix", tmp_path / "user"
    (prefix / "jupyter_server_config.d").mkdir(parents=True)
    user.mkdir()
    shutil.copy(OURS, prefix / "jupyter_server_config.d")
    shutil.copy(PROXYS_OWN, prefix / "jupyter_server_config.d")
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(user))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(prefix))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "0")
    return prefix, user


def enabled_extensions() -> dict[str, bool]:
    app = ServerApp()
    app.find_server_extensions()
    return dict(app.jpserver_extensions)


def test_our_install_does_not_switch_on_the_generic_proxy(installed):
    assert json.loads(PROXYS_OWN.read_text())["ServerApp"]["jpserver_extensions"] == {"jupyter_server_proxy": True}
    extensions = enabled_extensions()
    assert extensions.get("jupyter_px") is True
    assert extensions.get("jupyter_server_proxy") is False


def test_an_admin_can_switch_the_generic_proxy_back_on(installed):
    """What docs/tensorboard.md says: `jupyter server extension enable jupyter_server_proxy`, which
    writes `jupyter_server_proxy.json` beside ours (sys-prefix is its default); read after ours,
    it wins."""
    prefix, _ = installed
    (prefix / "jupyter_server_config.d" / "jupyter_server_proxy.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"jupyter_server_proxy": True}}})
    )
    assert enabled_extensions().get("jupyter_server_proxy") is True
