"""`python -m jupyter_px.forkserver.pool_member FD PARENT IMPORTS`: one interpreter of a
spawn-ahead pool (`pool`), for a framework a fork cannot carry (TensorFlow).

Started (exec'd, not forked) by a template's standby owner with the environment the replica it
will serve is expected to have when it imports (`pool.spawn`), in its own process group. It
imports the framework and nothing else happens: no runtime, no strategy, no device context, no
thread pool of the framework's (TensorFlow creates those when its eager context is built). Then
it says "ready" on its socket and waits for one request: the replica to become, exactly as a
zygote's child does (`zygote.become_child`: signals, parent-death signal, subreaper, cores,
cgroup, log, files, the caller's limits, environment, working directory and argv), then the
runner's `main()`. One request, one replica: after it, the process is that replica until it
exits. The socket closing first (its owner let it go) ends it.
"""

from __future__ import annotations

import importlib
import os
import signal
import socket
import sys
import time

from . import fresh, wire, zygote

#: What `ps` calls a member that has imported and waits (`comm`, at most 15 bytes).
READY_NAME = "px-pool-ready"


def main(argv: list[str] | None = None) -> int:
    dispositions = fresh.initial_dispositions()  # before anything installs a handler
    args = sys.argv[1:] if argv is None else argv
    fd, parent, imports = int(args[0]), int(args[1]), [name for name in args[2].split(",") if name]
    fresh.prctl(fresh.PR_SET_PDEATHSIG, signal.SIGKILL)  # while waiting, it ends with its owner
    if os.getppid() != parent:
        return 0
    sock = socket.socket(fileno=fd)
    os.set_inheritable(fd, False)
    started = time.monotonic()
    for name in imports:
        try:
            importlib.import_module(name)
        except BaseException as error:
            try:
                wire.send(sock, {"error": f"importing {name} failed: {error!r}"})
            finally:
                os._exit(1)
    library_fds = fresh.open_fds() - {0, 1, 2, fd}
    name = fresh.process_name()
    fresh.set_process_name(READY_NAME)  # what `jupyter px warm` tells a ready member by
    try:  # for whoever watches the pool; an owner that already sent its request closed its end
        wire.send(sock, {"ready": True, "pid": os.getpid(), "import_s": round(time.monotonic() - started, 3)})
    except OSError:
        pass
    try:
        request, _ = wire.receive(sock)  # sent while it imported, or now
    except OSError:
        os._exit(0)  # let go unused: nobody waits for this process
    fresh.set_process_name(name)
    zygote.become_child(sock, request, dispositions, library_fds, ())


if __name__ == "__main__":
    sys.exit(main())
