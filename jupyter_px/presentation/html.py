"""Runs as HTML for a notebook's output area: tables, state badges, the TensorBoard embed.

Plain functions returning strings (no ipywidgets, no IPython), so the magics, the monitor and
`tensorboard.embed` render the same facts the same way, and a terminal IPython loads none of
the widget stack to print a table.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

from .colors import STATE_COLORS, state_color
from .text import CELL_WIDTH, LAST_CELL_WIDTH, printable

__all__ = ["STATE_COLORS", "escape", "state_badge", "table", "TextAndHtml", "tensorboard_html"]


def escape(text: object, width: int | None = None) -> str:
    """User text for HTML: control characters escaped and clipped as on a terminal, then quoted."""
    return html.escape(printable(text, width), quote=True)


def state_badge(state: str) -> str:
    return f"<span style='color:{state_color(state)};font-weight:600'>{html.escape(state)}</span>"


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], title: str = "") -> str:
    """The HTML twin of `text.table` (same cells, same clipping)."""
    last = len(headers) - 1
    head = "".join(f"<th style='text-align:left'>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td style='text-align:left'>{escape(cell, LAST_CELL_WIDTH if i == last else CELL_WIDTH)}</td>"
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    caption = "<br>".join(f"<b>{escape(line)}</b>" for line in title.split("\n")) if title else ""
    return f"<div>{caption}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


class TextAndHtml:
    """Something a notebook shows as HTML and a terminal as text (IPython picks the richest)."""

    def __init__(self, text: str, html_text: str):
        self.text, self.html = text, html_text

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return self.html


def tensorboard_html(
    result: Any, label: str = "", height: int = 600, base_url: str | None = None, dark: bool | None = None
) -> str:
    """A started/reused TensorBoard embedded (an iframe through the Jupyter server's proxy, plus a
    link to open it in a tab), or why it could not start with the tail of its output. `dark`:
    TensorBoard's dark mode (default: whether the user's JupyterLab shows a dark theme, `theme`)."""
    from .. import tensorboard
    from .theme import jupyterlab_dark, tensorboard_page

    if isinstance(result, tensorboard.Failed):
        output = f"<pre>{html.escape(result.output[-4000:])}</pre>" if result.output else ""
        return (
            "<div class='px-tensorboard-failed'><b>TensorBoard could not start:</b> "
            f"{html.escape(result.reason)}{output}</div>"
        )
    plain = result.info.url(base_url)
    url = html.escape(plain, quote=True)
    page = html.escape(tensorboard_page(plain, jupyterlab_dark() if dark is None else dark), quote=True)
    verb = "started" if isinstance(result, tensorboard.Launched) else "reused"
    what = f" for {escape(label)}" if label else ""
    return (
        f"<div class='px-tensorboard' data-url='{url}'>TensorBoard ({verb}){what}: "
        f"<a href='{page}' target='_blank'>open in a new tab</a><br>"
        f"<iframe src='{page}' width='100%' height='{int(height)}' frameborder='0'></iframe></div>"
    )
