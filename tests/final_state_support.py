"""How soon the page shows a finished run's final state: the target, and where the figures go.

The browser tests (`test_browser_notebooks.py`) measure, in the page, the time from a run's
recorded end (`finished_at`) to its final state being shown, and append one line per notebook
to `final_state_latency.txt` in the artifacts folder; `benchmarks/bench_final_state.py` reads
those lines back and holds them against `FINAL_STATE_TARGET_S`. Both import this module (the
benchmark does not import a test module).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from browser_support import artifacts_dir

#: From the last replica's exit (the run's finished_at) to Succeeded in the page.
FINAL_STATE_TARGET_S = 1.0

_LINE = re.compile(r"^\S+ \S+ (?P<label>.+): (?P<seconds>-?[\d.]+) s$")


def latency_file() -> Path:
    """The figures file: one `<date> <time> <label>: <seconds> s` line per measurement."""
    return artifacts_dir() / "final_state_latency.txt"


def record_latency(label: str, seconds: float) -> None:
    """Append one measurement (`label`: the notebook and theme) to `latency_file()`."""
    with open(latency_file(), "a") as out:
        out.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {label}: {seconds:.3f} s\n")


def read_latencies() -> dict[str, list[float]]:
    """Every measurement in `latency_file()`, by label, in the order they were recorded."""
    by_label: dict[str, list[float]] = {}
    for line in latency_file().read_text().splitlines():
        match = _LINE.match(line)
        if match:
            by_label.setdefault(match["label"], []).append(float(match["seconds"]))
    return by_label
