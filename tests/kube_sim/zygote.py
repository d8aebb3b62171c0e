"""A warm interpreter for the simulated kubelet's Python containers: it imports torch once, then
forks each container's program in that container's own namespaces.

Why: a pod's `python /px/app/lib/px_entry.py` imports torch again in every container, some 2 s of
CPU each, about 4 of the suite's 37 core-minutes (docs/testing.md). A real node pays it too, but
the tests are about what the cluster and the product do, not about an interpreter's start.

How (the kubelet's side is `zygotes.py`, the container's `launch.py`):

- `launch.py`, already in the container's mount, UTS and network namespaces, offers the
  container's program (`python [-u] SCRIPT ARGS` or `python [-u] -c CODE ARGS`) here over a Unix
  socket: its arguments, environment and working directory, and
  its stdin, stdout and stderr (SCM_RIGHTS).
- The fork joins the offering process's namespaces (`setns` on `/proc/PID/ns/*`), takes the
  descriptors, the environment and the directory, and runs the script or code as `__main__`, as
  the interpreter would, in a session of its own.
- `launch.py` stays the container's process for the kubelet: it passes signals on to the fork's
  process group and exits as the fork did (the code, or the same signal), which this process
  reports when it reaps the fork. If `launch.py` is killed (SIGKILL: a stop's end, OOMKilled), the
  fork's group is killed here.

Only what the interpreter and torch read as they start must match (the kubelet keys zygotes by
it); what the container reads later comes from its own environment. Standard library only, but
for what it imports ahead (`argv[3:]`; `argv[1]` is its socket's path). It ends when the
kubelet's process does: `argv[2]` is a pipe's descriptor whose other end only that process holds.
Run with `-P`: its own folder on `sys.path` would shadow the standard library (`selectors.py`).
"""

from __future__ import annotations

import array
import atexit
import builtins
import ctypes
import gc
import importlib
import io
import json
import os
import runpy
import select
import signal
import socket
import struct
import sys
import threading
import traceback
import types

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWNET = 0x00020000, 0x04000000, 0x40000000


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """One offer: a JSON line, and the descriptors sent with its first bytes."""
    fds = array.array("i")
    data = b""
    while not data.endswith(b"\n"):
        chunk, ancillary, _, _ = conn.recvmsg(1 << 20, socket.CMSG_SPACE(3 * fds.itemsize))
        if not chunk:
            raise ConnectionError("the offer ended early")
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
        data += chunk
    return json.loads(data), list(fds)


def _join_namespaces(pid: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for kind, flag in (("net", CLONE_NEWNET), ("uts", CLONE_NEWUTS), ("mnt", CLONE_NEWNS)):
        if os.stat(f"/proc/{pid}/ns/{kind}").st_ino == os.stat(f"/proc/self/ns/{kind}").st_ino:
            continue
        fd = os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY)
        try:
            if libc.setns(fd, flag) != 0:
                error = ctypes.get_errno()
                raise OSError(error, f"setns {kind}: {os.strerror(error)}")
        finally:
            os.close(fd)


def _stdio(unbuffered: bool) -> None:
    """sys.stdin, stdout and stderr over fds 0-2, as the interpreter makes them at its start."""

    def writer(fd: int, errors: str, line_buffering: bool) -> io.TextIOWrapper:
        raw = io.FileIO(fd, "w", closefd=False)
        stream: io.RawIOBase | io.BufferedWriter = raw if unbuffered else io.BufferedWriter(raw)
        return io.TextIOWrapper(
            stream,  # type: ignore[arg-type]
            encoding="utf-8",
            errors=errors,
            line_buffering=line_buffering,
            write_through=unbuffered,
        )

    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8")
    sys.stdout = sys.__stdout__ = writer(1, "strict", os.isatty(1))
    sys.stderr = sys.__stderr__ = writer(2, "backslashreplace", True)


def _run(offer: dict, fds: list[int], offered_by: int) -> int:
    """In the fork: become the container's program. Its exit code."""
    for number in (signal.SIGTERM, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)
    os.setsid()
    _join_namespaces(offered_by)
    os.chdir(offer["cwd"])
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(offer["env"])
    script, source, args = offer.get("script"), offer.get("code"), offer["args"]
    _stdio(offer["unbuffered"] or bool(os.environ.get("PYTHONUNBUFFERED")))
    # sys.argv and sys.path[0] as `python -c CODE` or `python SCRIPT` sets them (the zygote runs with -P)
    sys.argv = ["-c" if source is not None else script, *args]
    sys.path.insert(0, "" if source is not None else os.path.dirname(os.path.realpath(script)))
    # what the zygote found missing on sys.path (the container's folders) is there now
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    code = 0
    try:
        if source is not None:
            main = types.ModuleType("__main__")
            main.__dict__["__builtins__"] = builtins
            sys.modules["__main__"] = main
            exec(compile(source, "<string>", "exec"), main.__dict__)
        else:
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exit:
        if exit.code is None:
            code = 0
        elif isinstance(exit.code, int):
            code = exit.code
        else:
            print(exit.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # the non-daemon threads, as at exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return code


def main() -> None:
    path, parent_fd = sys.argv[1], int(sys.argv[2])
    for name in sys.argv[3:]:
        __import__(name)
    # What it imported stays out of the collector's passes, so a fork's first collection does not
    # write to (and copy) every page of the heap it shares (as jupyter_px/forkserver/fresh.py does)
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".new")
    listener.listen(64)
    os.rename(path + ".new", path)  # offered to only once it takes offers
    forks: dict[int, tuple[socket.socket, int, int]] = {}  # fork pid -> (its offer, its pidfd, the offerer's pidfd)

    def end(*_: object) -> None:
        for pid in forks:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        os._exit(0)

    signal.signal(signal.SIGTERM, end)
    while True:
        watched: list[int] = [listener.fileno(), parent_fd]
        for _, fork_fd, offerer_fd in forks.values():
            watched += [fork_fd, offerer_fd]
        ready, _, _ = select.select(watched, [], [])
        if parent_fd in ready:
            end()
        for pid, (conn, fork_fd, offerer_fd) in list(forks.items()):
            if fork_fd in ready:
                _, status = os.waitpid(pid, 0)
                if os.WIFSIGNALED(status):
                    said = {"signal": os.WTERMSIG(status)}
                else:
                    said = {"exit": os.waitstatus_to_exitcode(status)}
                try:
                    conn.sendall(json.dumps(said).encode() + b"\n")
                except OSError:
                    pass
                for fd in (fork_fd, offerer_fd):
                    os.close(fd)
                conn.close()
                del forks[pid]
            elif offerer_fd in ready:  # the container's process is gone (SIGKILL): so is its program
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
        if listener.fileno() in ready:
            conn, _ = listener.accept()
            try:
                offer, fds = _receive(conn)
                # struct ucred: pid, uid, gid
                offered_by, _, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
                offerer_fd = os.pidfd_open(offered_by)
            except (OSError, ValueError, ConnectionError):
                conn.close()
                continue
            pid = os.fork()
            if pid == 0:
                listener.close()
                conn.close()
                os.close(parent_fd)
                os.close(offerer_fd)
                for other, other_fork_fd, other_offerer_fd in forks.values():
                    other.close()
                    os.close(other_fork_fd)
                    os.close(other_offerer_fd)
                code = 1
                try:
                    code = _run(offer, fds, offered_by)
                except BaseException:
                    traceback.print_exc()
                finally:
                    os._exit(code)
            for fd in fds:
                os.close(fd)
            forks[pid] = (conn, os.pidfd_open(pid), offerer_fd)
            try:
                conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
            except OSError:  # the offerer is gone already: its pidfd says so next round
                pass


if __name__ == "__main__":
    main()
