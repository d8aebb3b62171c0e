"""Which library draws the plots: plotly.js against uPlot on many long curves, in Chromium.

    python benchmarks/bench_plot_libraries.py [--curves 200] [--points 2000] [--repeat 5]

The question (issue: one plotting library in the notebook and the sidebar): how long does each
library take to draw `--curves` lines of `--points` points each (the comparison of a sweep's 200
trials, or the metrics of a 200-replica run), to add 20 points to every line (a live update), and
to redraw in the other theme (JupyterLab Light -> Dark), and to load the library itself (the
script parsed and run, from a local file)? Measured in headless Chromium (Debian's
`/usr/bin/chromium`, Playwright; WebGL is SwiftShader's software renderer here, so `scattergl` is
at its slowest), from the call to the next frame painted, median of `--repeat` fresh pages each:

* plotly.js (`plotly.js-dist-min`, the version the sidebar bundles; the notebook's plotly renders
  the same library) with `scatter` (SVG paths) and `scattergl` (WebGL);
* uPlot 1.6 (canvas 2D), the light candidate (it would draw in the notebook through anywidget);
  taken with `npm pack` into a temporary folder when node_modules has none.

Prints a table and one JSON line. No target: the figures choose the library (docs/ui.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
UPLOT_VERSION = "1.6.32"

PAGE = """<!doctype html><html><head><meta charset="utf-8">
<style>body{margin:0;background:var(--bg)} #plot{width:1200px;height:700px}</style>
</head><body><div id="plot"></div></body></html>"""

# The page's half: data made once (seeded), each case timed from the call to the frame after it.
SCRIPT = r"""
async ([library, kind, curves, points]) => {
  let seed = 7;
  const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
  const xs = Array.from({ length: points }, (_, i) => i);
  const ys = [];
  for (let c = 0; c < curves; c++) {
    const rate = 0.5 + random() * 3;
    ys.push(xs.map(x => Math.exp(-rate * x / points) + 0.05 * random()));
  }
  const painted = () => new Promise(resolve => requestAnimationFrame(() => setTimeout(resolve)));
  const node = document.getElementById('plot');
  const theme = dark => ({ fg: dark ? '#d5d5d5' : '#333', grid: dark ? '#444' : '#ddd' });
  const out = {};
  let t0 = performance.now();
  if (library === 'plotly') {
    const traces = ys.map((y, c) => ({ type: kind, mode: 'lines', x: xs, y, line: { width: 1 }, name: 'run ' + c }));
    const layout = dark => ({
      width: 1200, height: 700, showlegend: false, hovermode: 'x',
      paper_bgcolor: 'rgba(0,0,0,0)', plot_bgcolor: 'rgba(0,0,0,0)',
      font: { color: theme(dark).fg },
      xaxis: { gridcolor: theme(dark).grid }, yaxis: { gridcolor: theme(dark).grid, type: 'log' }
    });
    await Plotly.newPlot(node, traces, layout(false), { responsive: false });
    await painted();
    out.draw = performance.now() - t0;
    const more = 20;
    const ex = ys.map(() => Array.from({ length: more }, (_, i) => points + i));
    const ey = ys.map(() => Array.from({ length: more }, () => 0.05 + 0.01 * random()));
    t0 = performance.now();
    await Plotly.extendTraces(node, { x: ex, y: ey }, ys.map((_, c) => c));
    await painted();
    out.update = performance.now() - t0;
    t0 = performance.now();
    await Plotly.relayout(node, layout(true));
    await painted();
    out.theme = performance.now() - t0;
  } else {
    const data = [xs, ...ys];
    const options = dark => ({
      width: 1200, height: 700, legend: { show: false },
      scales: { x: { time: false }, y: { distr: 3 } },
      axes: [
        { stroke: theme(dark).fg, grid: { stroke: theme(dark).grid } },
        { stroke: theme(dark).fg, grid: { stroke: theme(dark).grid } }
      ],
      series: [{}, ...ys.map((_, c) => ({ label: 'run ' + c, stroke: `hsl(${(c * 37) % 360},60%,50%)`, width: 1 }))]
    });
    let plot = new uPlot(options(false), data, node);
    await painted();
    out.draw = performance.now() - t0;
    const more = 20;
    const x2 = xs.concat(Array.from({ length: more }, (_, i) => points + i));
    const data2 = [x2, ...ys.map(y => y.concat(Array.from({ length: more }, () => 0.05 + 0.01 * random())))];
    t0 = performance.now();
    plot.setData(data2);
    await painted();
    out.update = performance.now() - t0;
    t0 = performance.now();
    plot.destroy();  // uPlot's axis and grid colors are fixed at creation: a theme is a new plot
    plot = new uPlot(options(true), data2, node);
    await painted();
    out.theme = performance.now() - t0;
  }
  return out;
}
"""


def uplot_file(work: Path) -> Path:
    installed = REPO / "node_modules" / "uplot" / "dist" / "uPlot.iife.min.js"
    if installed.exists():
        return installed
    subprocess.run(["npm", "pack", f"uplot@{UPLOT_VERSION}", "--silent"], cwd=work, check=True, capture_output=True)
    subprocess.run(["tar", "xzf", f"uplot-{UPLOT_VERSION}.tgz"], cwd=work, check=True)
    return work / "package" / "dist" / "uPlot.iife.min.js"


def plotly_file() -> Path:
    installed = REPO / "node_modules" / "plotly.js-dist-min" / "plotly.min.js"
    if installed.exists():
        return installed
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--curves", type=int, default=200)
    parser.add_argument("--points", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        scripts = {"plotly": plotly_file(), "uplot": uplot_file(work)}
        sizes = {name: path.stat().st_size for name, path in scripts.items()}
        (work / "page.html").write_text(PAGE)
        cases = [("plotly", "scatter"), ("plotly", "scattergl"), ("uplot", "canvas")]
        results: dict[str, dict[str, float]] = {}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
            for library, kind in cases:
                samples: dict[str, list[float]] = {"load": [], "draw": [], "update": [], "theme": []}
                for _ in range(args.repeat):
                    page = browser.new_page(viewport={"width": 1300, "height": 800})
                    page.goto((work / "page.html").as_uri())
                    started = time.perf_counter()
                    page.add_script_tag(path=str(scripts[library]))
                    samples["load"].append((time.perf_counter() - started) * 1000)
                    timing = page.evaluate(SCRIPT, [library, kind, args.curves, args.points])
                    for key, value in timing.items():
                        samples[key].append(value)
                    page.close()
                results[f"{library} {kind}"] = {key: statistics.median(value) for key, value in samples.items()}
            browser.close()
    print(f"{args.curves} curves x {args.points} points, median of {args.repeat} pages (ms)")
    print(f"{'library':<20}{'load':>8}{'first draw':>12}{'+20 points':>12}{'theme':>10}")
    for name, f in results.items():
        print(f"{name:<20}{f['load']:>8.0f}{f['draw']:>12.0f}{f['update']:>12.0f}{f['theme']:>10.0f}")
    print(f"bundle sizes (minified bytes): {sizes}")
    print(json.dumps({"curves": args.curves, "points": args.points, "results": results, "sizes": sizes}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
