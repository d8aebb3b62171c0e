"""Whether the user's JupyterLab shows a dark theme, for what the notebook embeds from elsewhere.

An embedded TensorBoard is a page of its own: JupyterLab's theme does not reach into its iframe.
TensorBoard has a dark mode, and two ways in: it follows the browser's `prefers-color-scheme`
(its feature flag `isAutoDarkModeAllowed`), and its URL's `?darkMode` query parameter turns it on
(feature flag `defaultEnableDarkMode`, `queryParamOverride: "darkMode"`, any value but "false";
the user's own toggle in TensorBoard's settings still wins). So a TensorBoard embedded while
JupyterLab shows a dark theme gets `?darkMode=true`.

The kernel learns JupyterLab's theme from the user's JupyterLab settings (the file JupyterLab
writes when the theme is changed, on this machine): `theme` in
`@jupyterlab/apputils-extension/themes.jupyterlab-settings` under `$JUPYTERLAB_SETTINGS_DIR`,
else `<jupyter config dir>/lab/user-settings`. A theme that follows the system's
(`adaptive-theme`) is left to TensorBoard's own `prefers-color-scheme` handling, as is a user
who never changed the theme (JupyterLab Light).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

THEMES_SETTINGS = Path("@jupyterlab") / "apputils-extension" / "themes.jupyterlab-settings"
#: TensorBoard's URL query parameter for its dark mode.
TENSORBOARD_DARK_QUERY = "darkMode=true"

_LINE_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)


def settings_dir() -> Path:
    explicit = os.environ.get("JUPYTERLAB_SETTINGS_DIR")
    if explicit:
        return Path(explicit)
    from jupyter_core.paths import jupyter_config_dir

    return Path(jupyter_config_dir()) / "lab" / "user-settings"


def jupyterlab_dark(directory: Path | None = None) -> bool:
    """Does the user's JupyterLab show a dark theme (by its name: "JupyterLab Dark", "... Dark
    High Contrast", a third-party "... Dark")? False when unknown or adaptive."""
    path = (directory or settings_dir()) / THEMES_SETTINGS
    try:
        settings = json.loads(_LINE_COMMENT.sub("", path.read_text()))  # JupyterLab writes // comments
    except (OSError, ValueError):
        return False
    if not isinstance(settings, dict) or settings.get("adaptive-theme"):
        return False
    theme = settings.get("theme")
    return isinstance(theme, str) and "dark" in theme.lower()


def tensorboard_page(url: str, dark: bool) -> str:
    """TensorBoard's page at `url`, in its dark mode when `dark`."""
    if not dark:
        return url
    return url + ("&" if "?" in url else "?") + TENSORBOARD_DARK_QUERY
