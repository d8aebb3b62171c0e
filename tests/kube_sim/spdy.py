"""A SPDY/3.1 session, server side: what `kubectl exec`, `attach`, `cp` and `port-forward` speak to
an API server after `Upgrade: SPDY/3.1` (client-go's transport/spdy and
apimachinery pkg/util/httpstream/spdy, over moby/spdystream v0.5.0, whose framer is the SPDY/3
draft's: control frames with version 3, zlib-compressed header blocks with the draft's
dictionary and one compression context per direction, data frames per stream, FIN to half-close).

The client opens every stream (SYN_STREAM with its headers, e.g. `streamtype: stdout`); the server
answers each with SYN_REPLY, as apimachinery's spdy connection does (newSpdyStream), then both
sides send DATA frames on it. PING is echoed; SETTINGS and WINDOW_UPDATE are read and ignored
(spdystream keeps no flow-control window)."""

from __future__ import annotations

import logging
import queue
import struct
import threading
import zlib
from collections.abc import Callable
from typing import Any, BinaryIO

log = logging.getLogger(__name__)

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
MAX_DATA = 32 * 1024

#: The SPDY/3 draft's header dictionary (section 2.6.10.1): length-prefixed words, then a tail.
_WORD_TEXT = (
    "options head post put delete trace accept accept-charset accept-encoding accept-language accept-ranges age "
    "allow authorization cache-control connection content-base content-encoding content-language content-length "
    "content-location content-md5 content-range content-type date etag expect expires from host if-match "
    "if-modified-since if-none-match if-range if-unmodified-since last-modified location max-forwards pragma "
    "proxy-authenticate proxy-authorization range referer retry-after server te trailer transfer-encoding upgrade "
    "user-agent vary via warning www-authenticate method get status"
)
_WORDS = _WORD_TEXT.split() + ["200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"]
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.encode() for w in _WORDS) + _TAIL.encode()


class Stream:
    """One stream the client opened: its headers, what it sent (`read`), what we send (`write`)."""

    def __init__(self, session: Session, stream_id: int, headers: dict[str, str]):
        self.session = session
        self.id = stream_id
        self.headers = headers
        self._incoming: queue.Queue[bytes | None] = queue.Queue()
        self.closed_by_peer = False
        self.closed = False

    @property
    def kind(self) -> str:
        return self.headers.get("streamtype", "")

    def read(self, timeout: float | None = None) -> bytes | None:
        """The next data the client sent; None once it half-closed (FIN) or reset the stream."""
        try:
            return self._incoming.get(timeout=timeout)
        except queue.Empty:
            return b""

    def write(self, data: bytes) -> None:
        for at in range(0, len(data), MAX_DATA):
            self.session.send_data(self.id, data[at : at + MAX_DATA], fin=False)

    def close(self) -> None:
        """Half-close our side (an empty DATA frame with FIN)."""
        if not self.closed:
            self.closed = True
            self.session.send_data(self.id, b"", fin=True)


class Session:
    """Frames on one upgraded connection; `on_stream(stream)` for each stream the client opens."""

    def __init__(self, reader: BinaryIO, writer: BinaryIO, on_stream: Callable[[Stream], None]):
        self.reader, self.writer = reader, writer
        self.on_stream = on_stream
        self.streams: dict[int, Stream] = {}
        self._write_lock = threading.Lock()
        self._compress = zlib.compressobj(
            zlib.Z_BEST_COMPRESSION, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, DICTIONARY
        )
        self._decompress = zlib.decompressobj(zdict=DICTIONARY)
        self.ended = threading.Event()

    # ---- writing -------------------------------------------------------------------------------

    def _send(self, frame: bytes) -> None:
        with self._write_lock:
            try:
                self.writer.write(frame)
                self.writer.flush()
            except (OSError, ValueError):
                self.ended.set()

    def _control(self, kind: int, flags: int, payload: bytes) -> None:
        head = struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload))
        self._send(head + payload)

    def _header_block(self, headers: dict[str, str]) -> bytes:
        raw = struct.pack(">I", len(headers))
        for name, value in headers.items():
            raw += struct.pack(">I", len(name)) + name.encode() + struct.pack(">I", len(value)) + value.encode()
        with self._write_lock:  # one compression context, in the order blocks go out
            return self._compress.compress(raw) + self._compress.flush(zlib.Z_SYNC_FLUSH)

    def reply(self, stream: Stream) -> None:
        self._control(SYN_REPLY, 0, struct.pack(">I", stream.id) + self._header_block({}))

    def send_data(self, stream_id: int, data: bytes, fin: bool) -> None:
        head = struct.pack(">II", stream_id & 0x7FFFFFFF, ((FLAG_FIN if fin else 0) << 24) | len(data))
        self._send(head + data)

    def go_away(self) -> None:
        last = max(self.streams, default=0)
        self._control(GOAWAY, 0, struct.pack(">II", last, 0))

    # ---- reading -------------------------------------------------------------------------------

    def _read(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.reader.read(size - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def _headers(self, block: bytes) -> dict[str, str]:
        raw = self._decompress.decompress(block)
        (count,) = struct.unpack(">I", raw[:4])
        at, out = 4, {}
        for _ in range(count):
            (size,) = struct.unpack(">I", raw[at : at + 4])
            name = raw[at + 4 : at + 4 + size].decode().lower()
            at += 4 + size
            (size,) = struct.unpack(">I", raw[at : at + 4])
            out[name] = raw[at + 4 : at + 4 + size].decode()
            at += 4 + size
        return out

    def serve(self) -> None:
        """Read frames until the client goes away; returns then."""
        try:
            while not self.ended.is_set():
                head = self._read(8)
                flags, length = head[4], int.from_bytes(head[5:8], "big")
                payload = self._read(length) if length else b""
                if head[0] & 0x80:
                    self._on_control(int.from_bytes(head[2:4], "big"), flags, payload)
                else:
                    stream = self.streams.get(int.from_bytes(head[0:4], "big") & 0x7FFFFFFF)
                    if stream is None:
                        continue
                    if payload:
                        stream._incoming.put(payload)
                    if flags & FLAG_FIN:
                        stream.closed_by_peer = True
                        stream._incoming.put(None)
        except (EOFError, OSError, ValueError):
            pass
        finally:
            self.ended.set()
            for stream in self.streams.values():
                stream._incoming.put(None)

    def _on_control(self, kind: int, flags: int, payload: bytes) -> None:
        if kind == SYN_STREAM:
            stream_id = int.from_bytes(payload[0:4], "big") & 0x7FFFFFFF
            stream = Stream(self, stream_id, self._headers(payload[10:]))
            self.streams[stream_id] = stream
            self.reply(stream)
            if flags & FLAG_FIN:
                stream.closed_by_peer = True
                stream._incoming.put(None)
            self.on_stream(stream)
        elif kind == PING:
            self._control(PING, 0, payload)
        elif kind == RST_STREAM:
            stream = self.streams.get(int.from_bytes(payload[0:4], "big") & 0x7FFFFFFF)
            if stream is not None:
                stream.closed_by_peer = True
                stream.closed = True
                stream._incoming.put(None)
        elif kind == GOAWAY:
            self.ended.set()
        elif kind == HEADERS:
            self._headers(payload[4:])  # keep the decompression context in step
        # SETTINGS, WINDOW_UPDATE: nothing to do


def negotiate(offered: list[str], supported: tuple[str, ...]) -> str | None:
    """apimachinery pkg/util/httpstream/httpstream.go Handshake: the first protocol the client
    offers that the server supports."""
    for protocol in offered:
        if protocol in supported:
            return protocol
    return None


def offered_protocols(headers: Any) -> list[str]:
    values = headers.get_all("X-Stream-Protocol-Version") or []
    return [p.strip() for value in values for p in value.split(",") if p.strip()]
