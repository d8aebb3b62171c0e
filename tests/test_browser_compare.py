"""The sidebar's comparison panel in headless Chromium, in JupyterLab Light and then Dark (the theme
switched live, as a user does: one server and page for both).

JupyterLab runs this checkout's sidebar build (`compare_browser_support.SidebarLab`; the page is
checked to have the command, which an older installed build lacks) over a run store of three
finished runs written through the run store. The panel is opened the way the runs list's
multi-select opens it, with `jupyter-px:compare-runs {runIds}`, and checked as a person would:
the plot of one metric at a time (a picker) with a line per run, the best run's line thick and
drawn over the others, the table sorted best first and re-sorted by a click on a header, the
best values starred, text that reads on the theme's background. Screenshots: `test-artifacts/compare-panel-<theme>.png`.
"""

from __future__ import annotations

import pytest
from browser_support import CHROMIUM, artifacts_dir, chromium_page, in_each_theme, wait_for_app
from compare_browser_support import SidebarLab, build_present, has_compare_command, open_comparison
from compare_support import make_run
from test_browser_notebooks import contrast, parse_rgb

from jupyter_px.runstore import RunStore

pytestmark = pytest.mark.browser

RUNS = {"cmp-a": 0.001, "cmp-b": 0.1, "cmp-c": 0.01}  # run id -> lr: cmp-b learns fastest


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not CHROMIUM.exists():
        pytest.fail("the browser tests drive Debian's Chromium: apt-get install chromium (.ci/run does)")
    if not build_present():
        pytest.fail("the sidebar is not built in this checkout: jlpm build (.ci/run does)")
    root = tmp_path_factory.mktemp("compare")
    store = RunStore(root / "px_home")
    for run_id, lr in RUNS.items():
        make_run(
            store,
            run_id,
            name=f"lr-{lr}",
            curves={"loss": lambda k, lr=lr: 1 / (1 + k * lr), "acc": lambda k, lr=lr: 1 - 1 / (1 + k * lr)},
            steps=2_000,
            params={"lr": lr, "batch": 64},
        )
    server = SidebarLab(root, store.home)
    yield server
    server.stop()


def test_the_comparison_panel(lab):
    with chromium_page(1400, 1000) as (page, log):
        page.goto(lab.lab_url())
        wait_for_app(page)
        assert has_compare_command(page), "the page runs another build of the sidebar"
        shown = open_comparison(page, list(RUNS), timeout_s=120)
        assert shown["state"] == "ready", shown["error"]
        assert shown["plots"] == 1 and shown["lines"] == 3 and shown["rows"] == 3
        assert shown["best"] == "lr-0.1 ★"  # loss, the metric shown first
        panel = page.locator(".jp-px-panel-compare .jp-px-compare")
        # The best line is drawn last (over the others) and thick.
        widths = panel.locator(".jp-px-compare-plot .scatterlayer .trace path.js-line").evaluate_all(
            "paths => paths.map(p => parseFloat(getComputedStyle(p).strokeWidth))"
        )
        assert widths[-1] >= 3 and all(width < 2 for width in widths[:-1])
        panel.locator(".jp-px-compare-metric-select").select_option("acc")
        best = panel.locator(".jp-px-compare-best-line").inner_text()
        assert "best acc: lr-0.1 ★" in best and "highest final value among the 3 runs that succeeded" in best

        def order() -> list[str]:
            return panel.locator("table.jp-px-compare-table tbody tr").evaluate_all(
                "rows => rows.map(r => r.dataset.run)"
            )

        assert order() == ["cmp-b", "cmp-c", "cmp-a"]  # best loss first
        headers = panel.locator("table.jp-px-compare-table th").all_inner_texts()
        assert [h.rstrip(" ▲▼") for h in headers] == [
            "run",
            "state",
            "acc final",
            "acc max",
            "loss final",
            "loss min",
            "lr",
        ]
        panel.locator("th[data-column='param:lr']").click()
        assert order() == ["cmp-a", "cmp-c", "cmp-b"]
        panel.locator("th[data-column='param:lr']").click()
        assert order() == ["cmp-b", "cmp-c", "cmp-a"]
        best_cells = panel.locator("td.jp-px-compare-best-cell").all_inner_texts()
        assert len(best_cells) == 2 and all("★" in text for text in best_cells)

        def look(theme: str) -> None:
            """Text reads on the panel's background in the theme."""
            color, background, light = panel.evaluate(
                "n => [getComputedStyle(n).color, getComputedStyle(n).backgroundColor,"
                " document.body.dataset.jpThemeLight]"
            )
            assert light == ("true" if theme == "light" else "false")
            assert contrast(parse_rgb(color), parse_rgb(background)) >= 4.5, (theme, color, background)
            page.screenshot(path=str(artifacts_dir() / f"compare-panel-{theme}.png"), full_page=False)

        in_each_theme(page, look)
        assert not log.console_errors, log.console_errors
        assert not log.failed_requests, log.failed_requests
