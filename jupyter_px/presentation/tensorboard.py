"""A TensorBoard start result as a notebook shows it: TensorBoard in an iframe through the Jupyter
server (HTML; `TensorBoard: <url>` as text), or the reason it could not start.

Display sits above `jupyter_px.tensorboard` (which starts servers and returns data), as
TensorBoard's own `notebook.py` sits above its `manager.py`.
"""

from __future__ import annotations

from ..tensorboard import StartResult
from .html import TextAndHtml, tensorboard_html
from .text import tensorboard_text


def embed(result: StartResult, height: int = 800, base_url: str | None = None, label: str = "") -> TextAndHtml:
    """What a notebook shows for a start result (see the module's docstring)."""
    return TextAndHtml(
        tensorboard_text(result, base_url), tensorboard_html(result, label=label, height=height, base_url=base_url)
    )
