"""jupyter_px.runstore.event_writer: the one TensorBoard scalar writer (tracking's and the
Kubernetes follower's), read back by TensorBoard itself."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from jupyter_px.backends.kubernetes.follower.tensorboard_events import EventsWriter
from jupyter_px.runstore.event_writer import ScalarEventWriter
from jupyter_px.runstore.layout import EVENTS_FILE_SUFFIX

REPO = Path(__file__).resolve().parents[1]


def scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    accumulator.Reload()
    return {
        tag: [(event.step, event.value) for event in accumulator.Scalars(tag)] for tag in accumulator.Tags()["scalars"]
    }


def test_tensorboard_reads_what_it_writes(tmp_path):
    writer = ScalarEventWriter(tmp_path / "tb", source="test")
    assert not (tmp_path / "tb").exists()  # nothing on disk before the first write
    writer.write([(0, 1.0, {"loss": 1.0, "acc": 0.5}), (1, 2.0, {"loss": 0.5, "acc": 0.75})])
    writer.write([(2, 3.0, {"loss": 0.25})])  # another set of names: another template
    (event_file,) = (tmp_path / "tb").iterdir()
    assert event_file.name.startswith("events.out.tfevents.") and event_file.name.endswith(EVENTS_FILE_SUFFIX)
    assert scalars(tmp_path / "tb") == {"loss": [(0, 1.0), (1, 0.5), (2, 0.25)], "acc": [(0, 0.5), (1, 0.75)]}


def test_the_followers_records_number_the_calls_without_a_step(tmp_path):
    writer = EventsWriter(tmp_path / "tb")
    writer.write(
        [{"step": None, "time": 1.0, "metrics": {"loss": 3.0}}, {"step": 7, "time": 2.0, "metrics": {"loss": 2.0}}]
    )
    writer.write([{"step": None, "time": 3.0, "metrics": {"loss": 1.0}}])
    assert scalars(tmp_path / "tb") == {"loss": [(0, 3.0), (7, 2.0), (2, 1.0)]}


def test_writing_never_loads_tensorflow(tmp_path):
    """A replica pays for the protos and the framing, not for TensorFlow (installed in the test
    environment, so this can fail: `EventFileWriter` would load it)."""
    script = textwrap.dedent(
        f"""
        import sys
        from jupyter_px.runstore.event_writer import ScalarEventWriter
        ScalarEventWriter({str(tmp_path)!r}, source="test").write([(0, 1.0, {{"loss": 1.0}})])
        print(sorted(m for m in sys.modules if m.split(".")[0] == "tensorflow"))
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
