"""A comparison as front-ends without the JupyterLab extension show it (VS Code, the classic
Notebook, nbviewer): a plotly figure (one panel per metric, a line per run, the best run's line
thick and the others faint), a sortable table, the params' parallel coordinates.

In JupyterLab the extension's comparison panel owns the view (`compare_mime`: every output
carries it). Every plot is plotly's, as everywhere in jupyter-px: the figure goes out as plotly's
own mimetype, and a saved notebook viewed where no plotly renderer runs (GitHub) shows the
table, which holds the values. The table is HTML; clicking a header sorts it where the output
may run scripts; elsewhere it stays sorted by the first metric's best value. Colors and greys
are the monitor's (`presentation.colors`, `presentation.plot_theme`), so both themes read; a run's
color is its own (`run_colors`, from its id), the same as in the sidebar's comparison.
"""

from __future__ import annotations

import html
import secrets
from typing import Any

from ..presentation.colors import run_colors
from ..presentation.plot_theme import plotly_json
from .comparison import Comparison
from .figures import parallel_figure

__all__ = [
    "figure",
    "figure_bundle",
    "parallel_bundle",
    "table_html",
    "table_text",
    "table_bundle",
    "tensorboard_hint",
]

#: Panels drawn at most (one per metric); the table still lists every metric.
MAX_PANELS = 12


def _label(comparison: Comparison, run_id: str) -> str:
    for run in comparison.runs:
        if run.run_id == run_id:
            return f"{run.name} ({run.run_id})" if run.name and run.name != run.run_id else run.run_id
    return run_id


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def figure(comparison: Comparison) -> Any:
    """A plotly Figure: one panel per metric (at most `MAX_PANELS`), one line per run."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from ..presentation.plot_theme import AXIS, GREY, THEME_NEUTRAL

    metrics = comparison.metrics[:MAX_PANELS]
    titles = [
        f"{m.name} ({m.optimization}; best: {_label(comparison, m.best_run) if m.best_run else '–'})" for m in metrics
    ]
    rows = max(1, len(metrics))
    fig = make_subplots(rows=rows, cols=1, subplot_titles=titles, vertical_spacing=0.3 / rows if rows > 1 else 0.0)
    colors = run_colors(list(comparison.run_ids))  # a run's own, as in the sidebar's comparison
    for row, metric in enumerate(metrics, start=1):
        for run_id in comparison.run_ids:
            curve = metric.curves.get(run_id)
            if curve is None:
                continue
            best = run_id == metric.best_run
            fig.add_trace(
                go.Scatter(
                    x=curve.steps.tolist(),
                    y=curve.values.tolist(),
                    mode="lines",
                    name=_label(comparison, run_id),
                    legendgroup=run_id,
                    showlegend=row == 1,
                    opacity=1.0 if best or metric.best_run is None else 0.45,
                    line={"color": colors[run_id], "width": 3.5 if best else 1.2},
                    meta={"run_id": run_id, "best": best},
                ),
                row=row,
                col=1,
            )
    fig.update_xaxes(**AXIS)
    fig.update_yaxes(**AXIS)
    fig.update_xaxes(title_text="step", row=rows, col=1)
    fig.update_annotations(font_color=GREY)
    fig.update_layout(
        **{key: value for key, value in THEME_NEUTRAL.items() if key not in ("xaxis", "yaxis")},
        height=280 * rows + 60,
        margin={"l": 50, "r": 20, "t": 40, "b": 40},
    )
    return fig


def parallel_bundle(comparison: Comparison) -> dict[str, Any] | None:
    """The params' parallel coordinates (`figures.parallel_figure`, as the extension's panel
    draws them) as plotly's mimetype; None where it has nothing to draw."""
    figure = parallel_figure(comparison)
    if figure is None:
        return None
    names = [dimension["label"] for dimension in figure.data[0]["dimensions"]]
    return {
        "application/vnd.plotly.v1+json": plotly_json(figure),
        "text/plain": f"parallel coordinates of {len(comparison.runs)} runs: {', '.join(names)}",
    }


def _headers(comparison: Comparison) -> list[tuple[str, str]]:
    """(column title, kind) of the table: run, state, each metric's final and best, the params."""
    out = [("run", "text"), ("state", "text")]
    for metric in comparison.metrics:
        out.append((f"{metric.name} final", "number"))
        out.append((f"{metric.name} best ({metric.optimization})", "number"))
    out.extend((name, "param") for name in comparison.params)
    return out


def _cells(comparison: Comparison) -> list[tuple[str, list[Any], dict[str, bool]]]:
    """(run id, cell values in header order, {column: is the best}) per row, sorted by the first
    metric's best value (best first; runs without it last)."""
    rows = comparison.rows()
    first = comparison.metrics[0] if comparison.metrics else None

    def order(row: dict[str, Any]) -> tuple[int, float]:
        if first is None or row["best"].get(first.name) is None:
            return (1, 0.0)
        value = row["best"][first.name]
        return (0, value if first.optimization == "min" else -value)

    out = []
    for row in sorted(rows, key=order):
        cells: list[Any] = [_label(comparison, row["run_id"]), row["state"]]
        marks: dict[str, bool] = {}
        for metric in comparison.metrics:
            cells.append(row["final"].get(metric.name))
            cells.append(row["best"].get(metric.name))
            marks[f"{metric.name} best ({metric.optimization})"] = row["run_id"] == metric.best_run
        cells.extend(row["params"].get(name) for name in comparison.params)
        out.append((row["run_id"], cells, marks))
    return out


_SORT_SCRIPT = """<script>(function(){var t=document.getElementById('%s');if(!t)return;
t.querySelectorAll('th').forEach(function(th,i){th.style.cursor='pointer';th.addEventListener('click',function(){
var b=t.tBodies[0],rows=Array.from(b.rows),asc=th.dataset.asc!=='1';th.dataset.asc=asc?'1':'0';
rows.sort(function(r1,r2){var a=r1.cells[i].dataset.sort,c=r2.cells[i].dataset.sort,x=parseFloat(a),y=parseFloat(c);
var d=(isNaN(x)||isNaN(y))?String(a).localeCompare(String(c)):x-y;return asc?d:-d;});
rows.forEach(function(r){b.appendChild(r);});});});})();</script>"""


def table_html(comparison: Comparison) -> str:
    """The table as HTML: a row per run, the best value of each metric in bold; sortable by click."""
    table_id = "px-compare-" + secrets.token_hex(4)
    headers = _headers(comparison)
    head = "".join(
        f"<th style='text-align:left' title='click to sort'>{html.escape(title)}</th>" for title, _ in headers
    )
    body = []
    for run_id, cells, marks in _cells(comparison):
        tds = []
        for (title, _), value in zip(headers, cells, strict=True):
            sort = "" if value is None else (value if isinstance(value, (int, float)) else str(value))
            text = html.escape(_fmt(value))
            if marks.get(title):
                text = f"<b data-best='true'>{text} ★</b>"
            tds.append(f"<td style='text-align:left' data-sort='{html.escape(str(sort), quote=True)}'>{text}</td>")
        body.append(f"<tr data-run='{html.escape(run_id, quote=True)}'>{''.join(tds)}</tr>")
    hidden = comparison.hidden_params
    note = (
        f"<small>{hidden} param(s) are the same in every run and not shown "
        "(all_params=True / --all-params shows them).</small>"
        if hidden and not comparison.all_params
        else ""
    )
    return (
        f"<div class='px-compare-table'><table id='{table_id}'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>{note}</div>" + _SORT_SCRIPT % table_id
    )


def table_text(comparison: Comparison) -> str:
    headers = [title for title, _ in _headers(comparison)]
    rows = [[_fmt(value) for value in cells] for _, cells, _ in _cells(comparison)]
    widths = [min(40, max(len(h), *(len(r[i]) for r in rows))) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w)[:w] for h, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(c.ljust(w)[:w] for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines)


def tensorboard_hint(comparison: Comparison) -> str:
    return "%px_tensorboard " + " ".join(comparison.run_ids)


def figure_bundle(comparison: Comparison) -> dict[str, Any]:
    """The curves as plotly's mimetype (and a line of text where nothing draws)."""
    points = sum(len(curve.values) for m in comparison.metrics for curve in m.curves.values())
    text = (
        f"comparison of {len(comparison.runs)} runs: {', '.join(m.name for m in comparison.metrics) or 'no metrics'} "
        f"({points} points drawn)"
    )
    bundle: dict[str, Any] = {"text/plain": text}
    if comparison.metrics:
        bundle["application/vnd.plotly.v1+json"] = plotly_json(figure(comparison))
    return bundle


def table_bundle(comparison: Comparison) -> dict[str, Any]:
    hint = html.escape(tensorboard_hint(comparison))
    return {
        "text/html": table_html(comparison)
        + f"<div><small>TensorBoard over these runs: <code>{hint}</code></small></div>",
        "text/plain": table_text(comparison) + f"\nTensorBoard over these runs: {tensorboard_hint(comparison)}",
    }
