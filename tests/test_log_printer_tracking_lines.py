"""What `jupyter px logs` and `%px_logs` print of a replica's log: on Kubernetes the tracking's
metrics travel in the pod's log as `@px-metrics {...}` lines (kept in the stored log, parsed into
the metrics), and a reader sees the training code's output without them, verbatim or prefixed,
however the log was cut into chunks."""

from __future__ import annotations

import io

import pytest

from jupyter_px.presentation.follow import LogPrinter
from jupyter_px.runstore import RunStore

PYTORCH_2 = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}
LOG = (
    "epoch 1\n"
    '@px-metrics {"step": 1, "metrics": {"loss": 0.5}}\n'
    "progress 50%\rprogress 100%\n"
    '@px-params {"lr": 0.1}\n'
    "@px is not a marker\n"
    "done"
)


@pytest.mark.parametrize("chunk_size", [3, 7, 1 << 16])
@pytest.mark.parametrize("prefixed", [False, True])
def test_tracking_lines_are_kept_in_the_store_and_not_printed(px_home, synthetic_run, chunk_size, prefixed):
    root = synthetic_run("tracked-1", PYTORCH_2, state="Succeeded", log_lines=0)
    (root / "logs" / "worker-0.log").write_text(LOG)
    out = io.StringIO()
    printer = LogPrinter(RunStore(), "tracked-1", [("worker", 0)], out, prefixed=prefixed, chunk_size=chunk_size)
    printer.pump(final=True)
    shown = ["epoch 1", "progress 50%\rprogress 100%", "@px is not a marker", "done"]
    if prefixed:
        assert out.getvalue() == "".join(f"[worker.0] {line}\n" for line in shown)
    else:
        assert out.getvalue() == "\n".join(shown) + "\n"
    assert "@px-metrics" in (root / "logs" / "worker-0.log").read_text()
