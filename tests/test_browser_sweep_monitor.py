"""The notebook's sweep monitor in JupyterLab, in headless Chromium, in Light and then Dark (the
theme switched live, as a user does: one server, page and kernel for both).

A finished sweep of four trials is written into the server's store through the stores' own code
(`ui-tests/make_sweep.py`, which the sidebar's browser tests use too); a notebook attaches to it
with `%px_attach SWEEP`, and the monitor is looked at as a person would: the header says the
sweep's state, trials and best trial, the trials table has a row per trial (the best in bold),
the objective plot draws a line per trial and the parallel-coordinates plot is there, both on the
theme's background with readable text, and Stop is off for a finished sweep.
Screenshots: `test-artifacts/sweep-monitor-<theme>.png`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from functools import partial

import nbformat
import pytest
from browser_support import (
    CHROMIUM,
    REPO,
    JupyterLab,
    artifacts_dir,
    chromium_page,
    drawn,
    in_each_theme,
    open_notebook,
    run_all_cells,
)
from test_browser_notebooks import EFFECTIVE_BACKGROUND, contrast, luminance, parse_rgb
from waiting import wait_for

pytestmark = pytest.mark.browser

MAKE_SWEEP = REPO / "ui-tests" / "make_sweep.py"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not CHROMIUM.exists():  # a missing test dependency fails, it does not skip
        pytest.fail("the browser tests drive Debian's Chromium: apt-get install chromium (.ci/run does)")
    server = JupyterLab(tmp_path_factory.mktemp("sweep-monitor"))
    yield server
    server.stop()


def _ticks_read(plot, ticks: str) -> bool:
    """Whether the plot's first tick label reads on the background behind it (contrast 3:1)."""
    fill = plot.locator(ticks).first.evaluate("(el) => getComputedStyle(el).fill")
    return contrast(parse_rgb(fill), plot.evaluate(EFFECTIVE_BACKGROUND)) >= 3


def make_sweep(lab: JupyterLab, name: str, trials: int) -> str:
    done = subprocess.run(
        [sys.executable, str(MAKE_SWEEP), name, str(trials)],
        env={**os.environ, "PX_HOME": str(lab.px_home)},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_the_sweep_monitor(lab):
    sweep_id = make_sweep(lab, "lr search", 4)
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("%load_ext jupyter_px"), nbformat.v4.new_code_cell(f"%px_attach {sweep_id}")],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    nbformat.write(notebook, lab.work / "sweep_monitor.ipynb")
    with chromium_page(1400, 1200) as (page, log):
        open_notebook(page, lab, "sweep_monitor.ipynb")
        run_all_cells(page)
        output = page.locator(".jp-CodeCell", has=page.locator(".px-sweep-header"))
        header = output.locator(".px-sweep-header")
        header.wait_for(timeout=120_000)
        # The objective by step, and the tuning views' parallel coordinates (each view in its section).
        objective = output.locator(".px-sweep-objective .js-plotly-plot").first
        parallel = output.locator(".px-sweep-view-parallel .js-plotly-plot").first
        parallel.wait_for(timeout=60_000)
        text = header.inner_text()
        assert f"sweep {sweep_id}: Succeeded" in text
        assert "trials: 4/4 done, 4 succeeded; best: trial 3: loss 0.25" in text

        rows = output.locator("table tbody tr")
        assert rows.count() == 4
        bold = rows.evaluate_all("rows => rows.map(r => getComputedStyle(r.cells[0]).fontWeight)")
        assert bold == ["400", "400", "400", "700"]
        assert output.get_by_role("button", name="Stop sweep").is_disabled()

        # A line per trial, on the theme's background, with ticks that read on it.
        drawn(objective.locator("g.trace.scatter"), 4)
        drawn(parallel.locator(".parcoords"), 1)
        # The other tuning views drawn too: the history (the trials and the best so far), the
        # importance bars, the contour, a slice per param; no reason shown in their place.
        history = output.locator(".px-sweep-view-history .js-plotly-plot").first
        drawn(history.locator("g.trace.scatter"), 2)
        drawn(output.locator(".px-sweep-view-importance g.trace.bars"), 1)
        drawn(output.locator(".px-sweep-view-contour g.contour"), 1)
        drawn(output.locator(".px-sweep-view-slices g.trace.scatter"), 2)
        assert output.locator(".px-sweep-missing").count() == 0

        def look(theme: str) -> None:
            for plot, ticks in ((objective, ".ytick text"), (parallel, ".axis .tick text")):
                plot.scroll_into_view_if_needed()
                background = plot.evaluate(EFFECTIVE_BACKGROUND)
                if theme == "dark":
                    assert luminance(background) < 0.1, f"background {background} is not dark"
                else:
                    assert luminance(background) > 0.8, f"background {background} is not light"
                # ticks that read on it, once the plot has redrawn in the theme
                wait_for(partial(_ticks_read, plot, ticks), f"{ticks} that read on the {theme} background", 30)
            # No halo behind the parallel plot's axis text (plotly's default is white: a blur on Dark).
            halos = parallel.locator(".axis .tick text").evaluate_all(
                "texts => [...new Set(texts.map(t => getComputedStyle(t).textShadow))]"
            )
            assert halos == ["none"], halos
            objective.scroll_into_view_if_needed()
            page.screenshot(path=str(artifacts_dir() / f"sweep-monitor-{theme}.png"), full_page=False)

        in_each_theme(page, look)
        assert output.locator("text=model not found").count() == 0
        assert log.console_errors == [], log.console_errors
