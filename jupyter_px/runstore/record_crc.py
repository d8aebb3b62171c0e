"""TFRecord framing with its masked CRC-32C, computed in C where google-crc32c is installed.

A TensorBoard event file frames every record as: uint64 length, uint32 masked CRC-32C of the
length, the data, uint32 masked CRC-32C of the data (TFRecord; tensorboard 2.x
`summary/writer/record_writer.py`, the mask of `compat/tensorflow_stub/pywrap_tensorflow.py`).
TensorBoard's own CRC is pure Python: 15 µs for a 40-byte scalar event, most of what writing a
point cost a replica's tracking thread. google-crc32c computes the same checksum in C. A pod
whose image lacks it, or a platform without its wheel, falls back to TensorBoard's.

Imports the standard library and google-crc32c (a C extension: 2 ms) at import time, and
TensorBoard only for the fallback: it is shipped to pods beside `tracking/`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

__all__ = ["frame", "masked_crc32c"]

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8


def _masked_in_c() -> Callable[[bytes], int] | None:
    try:
        import google_crc32c
    except ImportError:
        return None
    if google_crc32c.implementation != "c":  # its pure-Python fallback is no faster than TensorBoard's
        return None
    value = google_crc32c.value

    def masked(data: bytes) -> int:
        crc = value(data)
        return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF

    return masked


def _masked_in_python(data: bytes) -> int:
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as tensorboards

    return tensorboards(data)


#: TFRecord's masked CRC-32C of `data` (what TensorBoard checks a record against).
masked_crc32c: Callable[[bytes], int] = _masked_in_c() or _masked_in_python


def frame(data: bytes) -> bytes:
    """One TFRecord: `data` with its length and both checksums, as TensorBoard's RecordWriter writes it."""
    header = _LENGTH.pack(len(data))
    return header + _CRC.pack(masked_crc32c(header)) + data + _CRC.pack(masked_crc32c(data))
