"""The streaming subresources of pods over SPDY/3.1: `exec`, `attach` (remote command protocol
`v4.channel.k8s.io` and older) and `portforward` (`portforward.k8s.io`).

kube-apiserver proxies these upgrades to the kubelet, which serves them (kubernetes v1.33.0
pkg/kubelet/cri/streaming/remotecommand/{httpstream.go,exec.go,attach.go},
pkg/kubelet/cri/streaming/portforward/httpstream.go); the client sees one protocol:
- remote command: the client opens an `error` stream and `stdin` / `stdout` / `stderr` (as asked
  in the query) and `resize` with a tty; the server waits for them (streamCreationTimeout 30 s),
  runs the command, copies the streams, and ends by writing a Status to the error stream (v4:
  JSON, `Success`, or `Failure` / `NonZeroExitCode` with an `ExitCode` cause), then closes;
- port forward: per forwarded connection an `error` and a `data` stream sharing a `requestid`
  and naming the `port`; the data stream carries the bytes both ways, the error stream a text
  message when the connection to the pod fails.

exec and attach are also served over WebSocket (`v5.channel.k8s.io` / `v4.channel.k8s.io`,
websocket.py), which kubectl 1.30+ tries first, and port-forward's SPDY session tunnelled in
WebSocket messages (`SPDY/3.1+portforward.k8s.io`, kubectl 1.31+).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from typing import Any

from . import websocket
from .kubelet_streams import StreamError
from .spdy import Session, Stream

log = logging.getLogger(__name__)

REMOTE_COMMAND_PROTOCOLS = ("v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io")
PORT_FORWARD_PROTOCOLS = ("portforward.k8s.io",)
#: remotecommand.go DefaultStreamCreationTimeout
STREAM_CREATION_TIMEOUT = 30.0
#: What a WebSocket remote command waits before its command starts. kube-apiserver answers
#: kubectl's WebSocket itself and reaches the kubelet over SPDY (k8s.io/apiserver v1.30
#: pkg/util/proxy/streamtranslator.go), whose remote command waits for those streams first, so
#: the command's first output comes round trips after the upgrade. client-go reads the
#: connection before it has made its streams (tools/remotecommand/websocket.go StreamWithContext
#: starts readDemuxLoop beside streamer.stream) and drops a message for a stream it has not made
#: yet ("Unknown stream id N, discarding message"): served at once, a busy machine lost `cat`'s
#: output and a `kubectl cp` tar stream with exit 0 (kubernetes/kubernetes#124571 is the same
#: loss on real clusters).
TRANSLATOR_SETUP_S = 0.1


class _Streams:
    """The streams a remote command waits for, as they arrive."""

    def __init__(self, expected: set[str]):
        self.expected = expected
        self.by_kind: dict[str, Stream] = {}
        self.ready = threading.Event()
        self._lock = threading.Lock()

    def add(self, stream: Stream) -> None:
        with self._lock:
            self.by_kind[stream.kind] = stream
            if self.expected <= set(self.by_kind):
                self.ready.set()


def remote_command(
    reader: Any, writer: Any, kubelet: Any, namespace: str, pod: str, container: str, argv: list[str] | None,
    options: dict[str, bool], protocol: str,
) -> None:  # fmt: skip
    """exec (argv given) or attach (argv None) on an upgraded connection."""
    expected = {"error"} | {k for k in ("stdin", "stdout", "stderr") if options.get(k)}
    if options.get("tty") and protocol != "channel.k8s.io":
        expected.add("resize")
    if options.get("tty"):
        expected.discard("stderr")  # with a tty stderr goes to stdout
    streams = _Streams(expected)
    session = Session(reader, writer, streams.add)
    reading = threading.Thread(target=session.serve, name="spdy-read", daemon=True)
    reading.start()
    if not streams.ready.wait(STREAM_CREATION_TIMEOUT) or session.ended.is_set() and not streams.ready.is_set():
        log.info("remote command: streams never came (%s of %s)", sorted(streams.by_kind), sorted(expected))
        session.go_away()
        return
    error = streams.by_kind["error"]
    try:
        if argv is not None:
            code = _exec(kubelet, namespace, pod, container, argv, streams.by_kind, session)
            _status(error, code, argv)
        else:
            _attach(kubelet, namespace, pod, container, streams.by_kind, session)
            _status(error, 0, [])
    except StreamError as refused:
        error.write(json.dumps(_failure(str(refused))).encode())
    for stream in streams.by_kind.values():
        stream.close()
    session.go_away()
    reading.join(timeout=1)


def remote_command_websocket(
    reader: Any, writer: Any, kubelet: Any, namespace: str, pod: str, container: str, argv: list[str] | None,
    options: dict[str, bool], protocol: str,
) -> None:  # fmt: skip
    """exec or attach over WebSocket (websocket.py): the channels are there from the start."""
    kinds = {"error"} | {k for k in ("stdin", "stdout", "stderr") if options.get(k)}
    if options.get("tty"):
        kinds = (kinds | {"resize"}) - {"stderr"}
    session = websocket.Session(reader, writer, kinds, protocol)
    reading = threading.Thread(target=session.serve, name="websocket-read", daemon=True)
    reading.start()
    time.sleep(TRANSLATOR_SETUP_S)  # the streams to the kubelet, before the command runs
    channels: dict[str, Any] = dict(session.channels)
    error = channels["error"]
    try:
        if argv is not None:
            _status(error, _exec(kubelet, namespace, pod, container, argv, channels, session), argv)
        else:
            _attach(kubelet, namespace, pod, container, channels, session)
            _status(error, 0, [])
    except StreamError as refused:
        error.write(json.dumps(_failure(str(refused))).encode())
    session.close()
    reading.join(timeout=1)


def _failure(message: str) -> dict[str, Any]:
    return {"metadata": {}, "status": "Failure", "message": message, "reason": "InternalError", "code": 500}


def _status(error: Stream, code: int, argv: list[str]) -> None:
    """httpstream.go v4WriteStatusFunc; exec.go ServeExec's NonZeroExitCode Status."""
    if code == 0:
        body: dict[str, Any] = {"metadata": {}, "status": "Success"}
    else:
        body = {
            "metadata": {},
            "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing command "
            f"[{' '.join(argv)}], exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
        }
    error.write(json.dumps(body, separators=(",", ":")).encode())


def _pump_out(pipe: Any, stream: Stream | None) -> None:
    for chunk in iter(lambda: pipe.read1(32 * 1024) if hasattr(pipe, "read1") else pipe.read(32 * 1024), b""):
        if stream is not None:
            stream.write(chunk)
    pipe.close()


def _pump_in(stream: Stream, pipe: Any) -> None:
    try:
        while True:
            data = stream.read()
            if data is None:
                break
            if data:
                pipe.write(data)
                pipe.flush()
    except (BrokenPipeError, OSError, ValueError):
        pass
    finally:
        try:
            pipe.close()
        except OSError:
            pass


def _exec(
    kubelet: Any,
    namespace: str,
    pod: str,
    container: str,
    argv: list[str],
    streams: dict[str, Stream],
    session: Session,
) -> int:
    try:
        process = kubelet.exec_process(namespace, pod, container, argv, "stdin" in streams)
    except OSError as error:
        raise StreamError(f"error executing command in container: {error}") from None
    errors_to = streams.get("stderr") or streams.get("stdout")
    pumps = [
        threading.Thread(target=_pump_out, args=(process.stdout, streams.get("stdout")), daemon=True),
        threading.Thread(target=_pump_out, args=(process.stderr, errors_to), daemon=True),
    ]
    if "stdin" in streams:
        threading.Thread(target=_pump_in, args=(streams["stdin"], process.stdin), daemon=True).start()
    for pump in pumps:
        pump.start()
    while process.poll() is None:
        if session.ended.is_set():  # the client went away: the exec'd process goes too
            process.kill()
        time.sleep(0.02)
    for pump in pumps:
        pump.join(timeout=10)
    code = process.returncode
    return 128 - code if code < 0 else code


def _attach(
    kubelet: Any, namespace: str, pod: str, container: str, streams: dict[str, Stream], session: Session
) -> None:
    if "stdin" in streams:
        pipe = kubelet.attach_stdin(namespace, pod, container)
        if pipe is not None:
            threading.Thread(target=_pump_in, args=(streams["stdin"], pipe), daemon=True).start()
    for stream_name, data in kubelet.attach_output(namespace, pod, container):
        if session.ended.is_set():
            return
        target = streams.get(stream_name) or streams.get("stdout")
        if target is not None:
            target.write(data)


def port_forward(reader: Any, writer: Any, kubelet: Any, namespace: str, pod: str) -> None:
    """portforward/httpstream.go: pair each request's error and data streams, connect, copy."""
    pairs: dict[str, dict[str, Stream]] = {}
    lock = threading.Lock()

    def on_stream(stream: Stream) -> None:
        request = stream.headers.get("requestid", stream.headers.get("port", ""))
        with lock:
            pair = pairs.setdefault(request, {})
            pair[stream.kind] = stream
            complete = "error" in pair and "data" in pair
        if complete:
            threading.Thread(target=_forward, args=(kubelet, namespace, pod, pair), daemon=True).start()

    session = Session(reader, writer, on_stream)
    session.serve()


def _forward(kubelet: Any, namespace: str, pod: str, pair: dict[str, Stream]) -> None:
    data, error = pair["data"], pair["error"]
    port = int(data.headers.get("port") or 0)
    try:
        connection = kubelet.port_connect(namespace, pod, port)
    except (StreamError, OSError) as failure:
        message = f"error forwarding port {port} to pod {pod}: {failure}"
        error.write(message.encode())
        error.close()
        data.close()
        return
    connection.settimeout(None)

    def inward() -> None:
        while True:
            chunk = data.read()
            if chunk is None:
                break
            if chunk:
                try:
                    connection.sendall(chunk)
                except OSError:
                    break
        try:
            connection.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    threading.Thread(target=inward, daemon=True).start()
    try:
        while True:
            chunk = connection.recv(32 * 1024)
            if not chunk:
                break
            data.write(chunk)
    except OSError:
        pass
    finally:
        connection.close()
        data.close()
        error.close()
