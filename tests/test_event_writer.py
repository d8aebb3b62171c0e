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


def test_records_are_framed_byte_for_byte_as_tensorboards_record_writer(tmp_path, monkeypatch):
    """The framing in C (google-crc32c) and the fallback to TensorBoard's pure-Python CRC (a pod
    image without the package) both write exactly what TensorBoard's RecordWriter writes."""
    import io

    from tensorboard.summary.writer.record_writer import RecordWriter

    from jupyter_px.runstore import record_crc

    payloads = [b"", b"x", bytes(range(256)) * 3, b"\x00" * 40]
    expected = io.BytesIO()
    for payload in payloads:
        RecordWriter(expected).write(payload)
    assert record_crc.masked_crc32c is not record_crc._masked_in_python  # the C path is what runs here
    assert b"".join(map(record_crc.frame, payloads)) == expected.getvalue()
    monkeypatch.setattr(record_crc, "masked_crc32c", record_crc._masked_in_python)
    assert b"".join(map(record_crc.frame, payloads)) == expected.getvalue()
    # and without google-crc32c at all, the C path is not taken
    monkeypatch.setitem(sys.modules, "google_crc32c", None)
    assert record_crc._masked_in_c() is None


def test_a_corrupt_length_is_caught_by_the_reader(tmp_path):
    """The reader checks each record's length against its checksum (now computed in C too)."""
    import warnings

    from jupyter_px.runstore.event_records import read_scalar_events

    writer = ScalarEventWriter(tmp_path / "tb", source="test")
    writer.write([(0, 1.0, {"loss": 1.0}), (1, 2.0, {"loss": 0.5})])
    assert writer.path is not None
    data = bytearray(writer.path.read_bytes())
    got: list[tuple[str, int, float]] = []
    read = read_scalar_events(
        str(writer.path), 0, len(data), {}, lambda tag, step, value, _: got.append((tag, step, value))
    )
    assert got == [("loss", 0, 1.0), ("loss", 1, 0.5)] and not read.broken
    first = 12 + int.from_bytes(data[:8], "little") + 4  # the version event's record
    data[first] ^= 0xFF  # the first scalar record's length
    writer.path.write_bytes(bytes(data))
    got.clear()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        read = read_scalar_events(
            str(writer.path), 0, len(data), {}, lambda tag, step, value, _: got.append((tag, step, value))
        )
    assert read.broken and got == []
