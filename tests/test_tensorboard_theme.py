"""The embedded TensorBoard follows JupyterLab's dark theme: its page gets TensorBoard's
`?darkMode=true` when the user's JupyterLab settings name a dark theme (see
`jupyter_px.presentation.theme` for where TensorBoard reads it)."""

from __future__ import annotations

import re

import pytest

from jupyter_px import tensorboard
from jupyter_px.presentation.html import tensorboard_html
from jupyter_px.presentation.theme import THEMES_SETTINGS, jupyterlab_dark

#: What JupyterLab 4 writes when the user picks a theme (comments included).
SETTINGS = """{
    // Theme
    // @jupyterlab/apputils-extension:themes
    // Theme manager settings.
    // *************************************

    // Selected Theme
    // Application-level visual styling theme
    "theme": "%s"%s
}"""


@pytest.fixture
def lab_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTERLAB_SETTINGS_DIR", str(tmp_path / "user-settings"))

    def choose(theme: str, adaptive: bool = False) -> None:
        path = tmp_path / "user-settings" / THEMES_SETTINGS
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(SETTINGS % (theme, ',\n    "adaptive-theme": true' if adaptive else ""))

    return choose


def _embedded() -> tuple[str, str, str]:
    info = tensorboard.ServerInfo(
        key="k" * 8, pid=1, port=6123, logdirs={}, logdir_spec="", started=0.0, create_time=0.0
    )
    page = tensorboard_html(tensorboard.Launched(info), base_url="/user/x/")
    iframe = re.search(r"<iframe src='([^']+)'", page).group(1)
    link = re.search(r"<a href='([^']+)'", page).group(1)
    data_url = re.search(r"data-url='([^']+)'", page).group(1)
    return iframe, link, data_url


def test_dark_theme_gives_tensorboard_its_dark_mode(lab_settings):
    lab_settings("JupyterLab Dark")
    assert jupyterlab_dark()
    iframe, link, data_url = _embedded()
    assert iframe == link == "/user/x/px/tensorboard/6123/?darkMode=true"
    assert data_url == "/user/x/px/tensorboard/6123/"  # the server's address itself is unchanged


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark High Contrast"])
def test_light_and_other_themes(lab_settings, theme):
    lab_settings(theme)
    iframe, _, _ = _embedded()
    assert iframe.endswith("?darkMode=true") == ("Dark" in theme)


def test_no_settings_or_a_theme_following_the_system_is_left_to_tensorboard(lab_settings, tmp_path):
    assert not jupyterlab_dark()  # never changed: JupyterLab Light
    assert _embedded()[0] == "/user/x/px/tensorboard/6123/"
    lab_settings("JupyterLab Dark", adaptive=True)  # TensorBoard follows prefers-color-scheme itself
    assert _embedded()[0] == "/user/x/px/tensorboard/6123/"
    (tmp_path / "user-settings" / THEMES_SETTINGS).write_text("{ not json")
    assert not jupyterlab_dark()
