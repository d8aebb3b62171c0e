"""Scalars out of TensorBoard event files that the training code wrote itself.

A Keras `TensorBoard` callback, a torch `SummaryWriter` or `tf.summary` write TFRecord-framed
`Event` protos. They are read here with TensorBoard's own protos and tensor decoding, but the
framing is read directly rather than through `event_file_loader`: that loader resolves
`tensorboard.compat.tf`, which imports all of TensorFlow where it is installed (seconds, in the
Jupyter server), and it cannot resume from a byte offset kept between polls.

TF2 scalars (`tf.summary.scalar`, Keras) are tensors whose plugin is named only in the first
event of each tag, so a reader that resumes mid-file passes the `plugins` it learned earlier.
"""

from __future__ import annotations

import struct
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

__all__ = ["EventsRead", "read_scalar_events"]

_HEADER = struct.Struct("<QI")  # TFRecord: uint64 length, uint32 masked CRC of the length
_FOOTER = 4  # uint32 masked CRC of the data
#: Records bigger than this are images, graphs or histograms, never a scalar: skipped unread.
MAX_SCALAR_RECORD = 1 << 20


@dataclass
class EventsRead:
    """What one `read_scalar_events` call got to."""

    offset: int  # after the last complete record read: where the next read starts
    bad_records: int = 0  # framed correctly but not an Event
    broken: bool = False  # a corrupt length: nothing after it can be framed, stop reading the file


def read_scalar_events(
    path: str,
    start: int,
    end: int,
    plugins: dict[str, str],
    emit: Callable[[str, int, float, float], None],
    *,
    limit: int | None = None,
    opener: Callable[[str], BinaryIO] | None = None,
) -> EventsRead:
    """Hand each scalar of the complete records in bytes [start, end) to `emit(tag, step, value,
    wall_time)`; with `limit`, stop after the record that reaches `start + limit` bytes.

    `plugins` (tag -> plugin name) is updated from events that carry metadata. The length's CRC
    is checked, so that garbage is not taken for a length; the data CRC is not (where the CRC is
    TensorBoard's pure Python, it would cost seconds over big records): a damaged record fails to
    parse as an Event and is counted in `bad_records`.
    """
    from tensorboard.compat.proto import event_pb2

    from .record_crc import masked_crc32c

    stop = end if limit is None else min(end, start + max(1, limit))
    read = EventsRead(start)
    pos = start
    with opener(path) if opener else open(path, "rb") as f:
        f.seek(pos)
        while pos < stop and pos + _HEADER.size <= end:
            header = f.read(_HEADER.size)
            length, length_crc = _HEADER.unpack(header)
            if masked_crc32c(header[:8]) != length_crc:
                warnings.warn(
                    f"{path}: corrupt event record; not reading this file further", RuntimeWarning, stacklevel=3
                )
                read.broken = True
                break
            record_end = pos + _HEADER.size + length + _FOOTER
            if record_end > end:
                break  # the writer has not finished this record yet
            if length > MAX_SCALAR_RECORD:
                f.seek(record_end)
                pos = read.offset = record_end
                continue
            record = f.read(length + _FOOTER)[:length]
            pos = read.offset = record_end
            try:
                event = event_pb2.Event.FromString(record)
            except Exception:  # damaged: the framing still says where the next one starts
                read.bad_records += 1
                continue
            if event.HasField("summary"):
                for tag, value in scalars(event, plugins):
                    emit(tag, event.step, value, event.wall_time)
    return read


def scalars(event: Any, plugins: dict[str, str]) -> Iterator[tuple[str, float]]:
    """(tag, value) of each scalar in an event: `simple_value`s (TF1 style, torch, tensorboardX)
    and one-element tensors of the scalars plugin (TF2 `tf.summary.scalar`, Keras)."""
    for value in event.summary.value:
        kind = value.WhichOneof("value")
        if kind == "simple_value":
            yield value.tag, float(value.simple_value)
        elif kind == "tensor":
            if value.HasField("metadata") and value.metadata.plugin_data.plugin_name:
                plugins[value.tag] = value.metadata.plugin_data.plugin_name
            if plugins.get(value.tag) != "scalars":
                continue
            from tensorboard.util import tensor_util

            try:
                array = tensor_util.make_ndarray(value.tensor)
            except Exception:
                continue
            if array.size == 1:
                yield value.tag, float(array.reshape(()))
