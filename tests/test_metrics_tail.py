"""The last step logged, read from the end of the metrics files (what an attempt records as where
the one before it got to, locally and on Slurm)."""

from __future__ import annotations

import json

from jupyter_px.runstore import metrics_tail


def test_the_greatest_last_step_of_the_files_skipping_a_partly_written_line(tmp_path):
    first, second, empty = tmp_path / "master-0.jsonl", tmp_path / "worker-0.jsonl", tmp_path / "worker-1.jsonl"
    first.write_text("".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in range(1, 41)) + '{"step": 41, "lo')
    second.write_text("".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in range(1, 38)))
    empty.write_text("")
    assert metrics_tail.tail_step(first) == 40  # the half-written 41 is not a step yet
    assert metrics_tail.last_step([first, second, empty, tmp_path / "gone.jsonl"]) == 40
    assert metrics_tail.last_step([empty]) is None


def test_a_long_files_last_step_comes_from_its_end(tmp_path):
    long = tmp_path / "master-0.jsonl"
    long.write_text("".join(json.dumps({"step": s, "loss": 0.5, "pad": "x" * 200}) + "\n" for s in range(5000)))
    assert long.stat().st_size > 100 * metrics_tail.TAIL_BYTES
    assert metrics_tail.tail_step(long) == 4999


def test_the_last_step_before_a_time_leaves_out_what_a_new_group_logged_after(tmp_path):
    """A group torchrun formed again logs again from its checkpoint: where the group before got to
    is the greatest step logged before the new one began."""
    rank0 = tmp_path / "master-0.jsonl"
    points = [(step, 100.0 + step) for step in range(1, 13)] + [(step, 200.0 + step) for step in range(11, 15)]
    rank0.write_text("".join(json.dumps({"step": s, "time": t, "metrics": {}}) + "\n" for s, t in points) + '{"st')
    assert metrics_tail.step_at([rank0, tmp_path / "gone.jsonl"], 150.0) == 12
    assert metrics_tail.step_at([rank0], 213.5) == 13 and metrics_tail.step_at([rank0], 50.0) is None
