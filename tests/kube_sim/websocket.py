"""The remote command protocol over WebSocket (`v5.channel.k8s.io`, `v4.channel.k8s.io`), which
kubectl 1.30+ tries first for exec, attach and cp (client-go tools/remotecommand/websocket.go);
kube-apiserver v1.33.0 serves it (pkg/registry/core/pod/rest/subresources.go with the
TranslateStreamCloseWebsocketRequests feature, on by default since v1.30).

RFC 6455 framing, server side (the client's frames are masked, ours are not); each binary message
starts with its channel: 0 stdin, 1 stdout, 2 stderr, 3 error (the Status at the end), 4 resize,
and with v5, 255 followed by a channel the client closes (its stdin at EOF)
(apimachinery pkg/util/remotecommand/constants.go, apiserver pkg/util/wsstream)."""

from __future__ import annotations

import base64
import hashlib
import queue
import struct
import threading
from typing import Any, BinaryIO

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
#: port-forward's SPDY session tunnelled in WebSocket binary messages (client-go
#: tools/portforward/tunneling_connection.go; apiserver pkg/util/proxy/streamtunnel.go)
TUNNEL_PROTOCOL = "SPDY/3.1+portforward.k8s.io"
GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
CHANNELS = {"stdin": 0, "stdout": 1, "stderr": 2, "error": 3, "resize": 4}
CLOSE_SIGNAL = 255


def accept_key(key: str) -> str:
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


class Channel:
    """One channel, with the SPDY Stream's interface (read / write / close)."""

    def __init__(self, session: Session, kind: str):
        self.session, self.kind = session, kind
        self.number = CHANNELS[kind]
        self._incoming: queue.Queue[bytes | None] = queue.Queue()

    def read(self, timeout: float | None = None) -> bytes | None:
        try:
            return self._incoming.get(timeout=timeout)
        except queue.Empty:
            return b""

    def write(self, data: bytes) -> None:
        for at in range(0, len(data), 32 * 1024):
            self.session.send(bytes([self.number]) + data[at : at + 32 * 1024])

    def close(self) -> None:
        pass  # the connection's close frame ends every channel


class Session:
    def __init__(self, reader: BinaryIO, writer: BinaryIO, kinds: set[str], protocol: str):
        self.reader, self.writer, self.protocol = reader, writer, protocol
        self.channels = {kind: Channel(self, kind) for kind in kinds}
        self.ended = threading.Event()
        self._lock = threading.Lock()

    def _frame(self, opcode: int, payload: bytes) -> bytes:
        size = len(payload)
        if size < 126:
            head = struct.pack(">BB", 0x80 | opcode, size)
        elif size < 1 << 16:
            head = struct.pack(">BBH", 0x80 | opcode, 126, size)
        else:
            head = struct.pack(">BBQ", 0x80 | opcode, 127, size)
        return head + payload

    def _write(self, frame: bytes) -> None:
        with self._lock:
            try:
                self.writer.write(frame)
                self.writer.flush()
            except (OSError, ValueError):
                self.ended.set()

    def send(self, message: bytes) -> None:
        self._write(self._frame(0x2, message))

    def close(self) -> None:
        self._write(self._frame(0x8, struct.pack(">H", 1000)))

    def _read(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.reader.read(size - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def serve(self) -> None:
        """Read the client's messages until it closes; channel data goes to each channel."""
        try:
            message = b""
            while not self.ended.is_set():
                first, second = self._read(2)
                opcode, size = first & 0x0F, second & 0x7F
                if size == 126:
                    (size,) = struct.unpack(">H", self._read(2))
                elif size == 127:
                    (size,) = struct.unpack(">Q", self._read(8))
                mask = self._read(4) if second & 0x80 else b"\0\0\0\0"
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(self._read(size)))
                if opcode == 0x8:
                    break
                if opcode == 0x9:
                    self._write(self._frame(0xA, payload))
                    continue
                if opcode in (0x1, 0x2, 0x0):
                    message += payload
                    if not first & 0x80:
                        continue
                    self._dispatch(message)
                    message = b""
        except (EOFError, OSError, ValueError):
            pass
        finally:
            self.ended.set()
            for channel in self.channels.values():
                channel._incoming.put(None)

    def _dispatch(self, message: bytes) -> None:
        if not message:
            return
        number, data = message[0], message[1:]
        if number == CLOSE_SIGNAL and data:  # v5: the client closed one of its channels
            for channel in self.channels.values():
                if channel.number == data[0]:
                    channel._incoming.put(None)
            return
        for channel in self.channels.values():
            if channel.number == number and data:
                channel._incoming.put(data)


def handshake_headers(headers: Any, protocol: str) -> dict[str, str]:
    return {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Accept": accept_key(headers.get("Sec-WebSocket-Key") or ""),
        "Sec-WebSocket-Protocol": protocol,
    }


def offered(headers: Any) -> list[str]:
    values = headers.get_all("Sec-WebSocket-Protocol") or []
    return [p.strip() for value in values for p in value.split(",") if p.strip()]


class Tunnel:
    """A byte stream over WebSocket binary messages (reader and writer for spdy.Session): what
    the client writes arrives in messages, what we write goes out as one message each."""

    def __init__(self, reader: BinaryIO, writer: BinaryIO):
        self.session = Session(reader, writer, set(), TUNNEL_PROTOCOL)
        self._buffer = b""

    def read(self, size: int) -> bytes:
        while not self._buffer:
            message = self._message()
            if message is None:
                return b""
            self._buffer = message
        out, self._buffer = self._buffer[:size], self._buffer[size:]
        return out

    def _message(self) -> bytes | None:
        session = self.session
        message = b""
        try:
            while True:
                first, second = session._read(2)
                opcode, size = first & 0x0F, second & 0x7F
                if size == 126:
                    (size,) = struct.unpack(">H", session._read(2))
                elif size == 127:
                    (size,) = struct.unpack(">Q", session._read(8))
                mask = session._read(4) if second & 0x80 else b"\0\0\0\0"
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(session._read(size)))
                if opcode == 0x8:
                    return None
                if opcode == 0x9:
                    session._write(session._frame(0xA, payload))
                    continue
                message += payload
                if first & 0x80 and message:
                    return message
        except (EOFError, OSError, ValueError):
            return None

    def write(self, data: bytes) -> None:
        self.session.send(data)

    def flush(self) -> None:
        pass
