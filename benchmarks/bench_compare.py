"""Comparison of 200 runs x 100,000 points: the REST answer and the sidebar's draw, against peers.

    python benchmarks/bench_compare.py [--runs 200] [--points 100000] [--store /tmp/px-bench-compare]

What is measured (a run store of `--runs` finished runs, each with `--points` steps of two
metrics, loss and acc, written once under `--store` and reused):

* `POST px/api/compare` for every run, through a real Jupyter server (JupyterLab's, with this
  checkout's extension), from a client on the same machine, HTTP included: the first request
  (the server reads every run whole: its digest cache is cold) and then the median and worst of
  `--repeat` requests (runs already read: a few stats each, then the answer: 500 points a curve,
  chosen by MinMaxLTTB);
  the server's own CPU time per answer comes back in a `Server-Timing` header, which tells the
  work apart from waiting for a core on a loaded machine;
* the draw in headless Chromium (Debian's `/usr/bin/chromium`, Playwright): the command
  `jupyter-px:compare-runs` with every run, timed by the panel itself from the answer to the first
  frame painted after it (`data-draw-ms`), medians of `--draws` page loads;
* peers a user would otherwise reach for, on `--peer-runs` of the runs, scaled to all of them:
  - undownsampled over REST: every point of every run through the per-run metrics route the
    metrics panel polls (`GET px/api/runs/<id>/metrics`, paged), which is what a client that
    downsamples for itself must fetch;
  - TensorBoard's own reader: `EventAccumulator.Reload()` over the same points as event files,
    keeping every point (`size_guidance={"scalars": 0}`) and with TensorBoard's default
    reservoir of 10,000 (how TensorBoard itself bounds a series).

Prints a table and one JSON line; exits non-zero when the warm answer takes 300 ms or more or
the draw 1,000 ms or more. `--no-browser` skips Chromium.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from compare_store import ensure_store, write_event_files  # noqa: E402


def post(url: str, token: str, body: dict) -> tuple[float, int, dict, float]:
    """(seconds, bytes, answer, the server's CPU ms from its Server-Timing header)."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        method="POST",
    )
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=900) as response:
        data = response.read()
        timing = response.headers.get("Server-Timing", "")
    elapsed = time.perf_counter() - start
    cpu = float(timing.partition("dur=")[2] or "nan")
    return elapsed, len(data), json.loads(data), cpu


def get(url: str, token: str) -> tuple[int, dict]:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=900) as response:
        data = response.read()
    return len(data), json.loads(data)


def undownsampled(base: str, token: str, ids: list[str]) -> tuple[float, int, int]:
    """(seconds, bytes, points) to fetch every point of `ids` through the per-run metrics route."""
    start = time.perf_counter()
    size = points = 0
    for run_id in ids:
        cursor = None
        while True:
            query = "" if cursor is None else "?since=" + urllib.request.quote(cursor)
            got, page = get(f"{base}/px/api/runs/{run_id}/metrics{query}", token)
            size += got
            points += sum(len(s["values"]) for metrics in page["series"].values() for s in metrics.values())
            cursor = page["cursor"]
            if not page["history_pending"]:
                break
    return time.perf_counter() - start, size, points


def tensorboard_reader(store: Path, ids: list[str], keep_all: bool) -> tuple[float, int]:
    """(seconds, points) for TensorBoard's EventAccumulator to load the runs' event files."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    start = time.perf_counter()
    points = 0
    for run_id in ids:
        accumulator = EventAccumulator(
            str(store / "tb-peer" / run_id), size_guidance={"scalars": 0} if keep_all else None
        )
        accumulator.Reload()
        points += sum(len(accumulator.Scalars(tag)) for tag in accumulator.Tags()["scalars"])
    return time.perf_counter() - start, points


def draw(lab, ids: list[str], repeat: int, points: int | None) -> list[dict]:
    from browser_support import chromium_page, wait_for_app
    from compare_browser_support import has_compare_command, open_comparison

    results = []
    with chromium_page(1600, 1000) as (page, _log):
        for _ in range(repeat):
            page.goto(lab.lab_url())
            wait_for_app(page)
            if not has_compare_command(page):
                raise SystemExit("the page runs another build of the sidebar: `jlpm build` in this checkout first")
            result = open_comparison(page, ids, points)
            if result["state"] != "ready":
                raise SystemExit(f"the panel failed: {result['error']}")
            results.append(result)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--store", type=Path, default=Path(tempfile.gettempdir()) / "px-bench-compare")
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--peer-runs", type=int, default=10)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args(argv)

    from compare_browser_support import SidebarLab, build_present

    started = time.perf_counter()
    ids = ensure_store(args.store, args.runs, args.points)
    print(
        f"store: {args.runs} runs x {args.points:,} points x 2 metrics under {args.store} "
        f"({time.perf_counter() - started:.0f} s to make or find)"
    )
    peers = ids[: args.peer_runs]
    scale = len(ids) / len(peers)
    write_event_files(args.store, peers)

    if not args.no_browser and not build_present():
        raise SystemExit("the sidebar is not built: run `jlpm build` (or pass --no-browser)")
    root = Path(tempfile.mkdtemp(prefix="px-bench-compare-lab-"))
    lab = SidebarLab(root, args.store, theme="light")
    result: dict = {"runs": len(ids), "points_per_series": args.points, "series_per_run": 2}
    try:
        url = f"{lab.url}/px/api/compare"
        cold, size, answer, cold_cpu = post(url, lab.token, {"runs": ids})
        print(f"first request: {cold * 1000:.0f} ms (server CPU {cold_cpu:.0f} ms)", flush=True)
        drawn_points = sum(len(c["values"]) for m in answer["metrics"] for c in m["curves"])
        answers = [post(url, lab.token, {"runs": ids}) for _ in range(args.repeat)]
        warm = [answer[0] for answer in answers]
        warm_cpu = [answer[3] for answer in answers]
        result.update(
            cold_ms=cold * 1000,
            cold_server_cpu_ms=cold_cpu,
            warm_server_cpu_median_ms=statistics.median(warm_cpu),
            warm_median_ms=statistics.median(warm) * 1000,
            warm_max_ms=max(warm) * 1000,
            answer_bytes=size,
            answer_points=drawn_points,
        )
        print(f"warm: {[round(t * 1000, 1) for t in warm]} ms; server CPU {warm_cpu} ms", flush=True)
        raw_s, raw_bytes, raw_points = undownsampled(lab.url, lab.token, peers)
        result.update(
            undownsampled_ms_all=raw_s * scale * 1000,
            undownsampled_bytes_all=int(raw_bytes * scale),
            undownsampled_points_all=int(raw_points * scale),
        )
        for keep_all in (True, False):
            seconds, points = tensorboard_reader(args.store, peers, keep_all)
            key = "tensorboard_all_points" if keep_all else "tensorboard_reservoir"
            result[f"{key}_ms_all"] = seconds * scale * 1000
            result[f"{key}_points_all"] = int(points * scale)
        print("peers:", json.dumps(result), flush=True)
        if not args.no_browser:
            ours = draw(lab, ids, args.draws, None)
            result["draw_median_ms"] = statistics.median(r["draw_ms"] for r in ours)
            result["draw_fetch_median_ms"] = statistics.median(r["fetch_ms"] for r in ours)
            result["draw_lines"] = ours[0]["lines"]
            print("draws:", json.dumps(ours), flush=True)
    finally:
        lab.stop()

    w = result["warm_median_ms"]
    print(f"POST px/api/compare, {len(ids)} runs (HTTP on localhost, this checkout's server):")
    print(f"  first request (every run read whole)     {result['cold_ms']:9.0f} ms")
    print(
        f"  runs already read: median / worst of {args.repeat}  {w:9.1f} / {result['warm_max_ms']:.1f} ms "
        f"({result['answer_bytes'] / 1e6:.1f} MB, {result['answer_points']:,} points)"
    )
    print(
        f"  server CPU per answer (Server-Timing): first {result['cold_server_cpu_ms']:.0f} ms, "
        f"then median {result['warm_server_cpu_median_ms']:.1f} ms"
    )
    print(f"peers, measured on {len(peers)} runs and scaled to {len(ids)}:")
    print(
        f"  every point over REST (metrics route)    {result['undownsampled_ms_all']:9.0f} ms "
        f"({result['undownsampled_bytes_all'] / 1e9:.1f} GB; {result['undownsampled_ms_all'] / w:,.0f} x ours warm, "
        f"{result['undownsampled_ms_all'] / result['cold_ms']:.1f} x ours cold)"
    )
    for key, label in (("tensorboard_all_points", "every point"), ("tensorboard_reservoir", "10k reservoir")):
        value = result[f"{key}_ms_all"]
        print(
            f"  TensorBoard EventAccumulator, {label:13s} {value:9.0f} ms "
            f"({value / w:,.0f} x ours warm, {value / result['cold_ms']:.1f} x ours cold)"
        )
    if "draw_median_ms" in result:
        print(f"headless Chromium, panel drawn from the answer ({result['draw_lines']} lines):")
        print(
            f"  500 points a curve (median of {args.draws})          {result['draw_median_ms']:9.0f} ms "
            f"(its request {result['draw_fetch_median_ms']:.0f} ms)"
        )
    print(json.dumps(result))
    ok = w < 300 and result.get("draw_median_ms", 0) < 1000
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
