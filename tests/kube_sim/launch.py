"""Start one container's process inside its own mount and UTS namespaces (run under
`unshare -m -u --propagation private`): a fresh /run, bind-mount the pod's volumes at their mount
paths, the pod's generated hosts file over /etc/hosts (and its resolv.conf, on the pod network),
set the pod's hostname, then exec the command; or, for this Python on a script or `-c`, with a warm
interpreter for it (`zygote.py`: "zygote" names its socket), hand the program to it and stay the
container's process: signals passed on to it, and its exit as this process's own.

A standalone script (no imports from the simulation), given one JSON file:
{"mounts": [[host_path, mount_path, read_only], ...], "hosts": path, "resolv": path or "", "hostname": name,
 "workdir": path, "argv": [...], "env": {...}, "dirs": [path, ...],
 "zygote": socket path or "", "python": this Python's real path, "warm_pid": path}
"""

import array
import ctypes
import json
import os
import shutil
import signal
import socket
import sys

MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096


def _mount(source: str, target: str, read_only: bool) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(source.encode(), target.encode(), None, MS_BIND, None) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"bind mount {source} -> {target}: {os.strerror(error)}")
    if read_only:
        libc.mount(None, target.encode(), None, MS_BIND | MS_REMOUNT | MS_RDONLY, None)


def _tmpfs(target: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"tmpfs", target.encode(), b"tmpfs", 0, b"mode=755") != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"tmpfs on {target}: {os.strerror(error)}")


def _program_of(argv: list, env: dict, python: str) -> dict:
    """What `python [-u] SCRIPT ARGS` or `python [-u] -c CODE ARGS` with this Python runs (the
    zygote's offer), or {} for another command."""
    program = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=env.get("PATH", ""))
    if not program or os.path.realpath(program) != python:
        return {}
    rest, unbuffered = list(argv[1:]), False
    while rest and rest[0] == "-u":
        rest, unbuffered = rest[1:], True
    if len(rest) >= 2 and rest[0] == "-c":
        return {"code": rest[1], "args": rest[2:], "unbuffered": unbuffered}
    if not rest or rest[0].startswith("-"):
        return {}
    return {"script": rest[0], "args": rest[1:], "unbuffered": unbuffered}


def _hand_over(spec: dict, argv: list, env: dict) -> None:
    """Run the program forked from the zygote, if there is one for it; returns only if not."""
    program = _program_of(argv, env, spec.get("python", "")) if spec.get("zygote") else {}
    if not program:
        return
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(spec["zygote"])
        offer = {**program, "env": env, "cwd": os.getcwd()}
        data = json.dumps(offer).encode() + b"\n"
        conn.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
        replies = conn.makefile("rb")
        pid = json.loads(replies.readline())["pid"]
    except (OSError, ValueError, KeyError):
        conn.close()
        return  # started cold
    with open(spec["warm_pid"], "w") as handle:
        handle.write(str(pid))

    def pass_on(number: int, _frame: object) -> None:
        try:
            os.killpg(pid, number)
        except OSError:
            pass

    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(number, pass_on)
    line = replies.readline()
    if not line:  # the zygote is gone, and with it the program
        sys.stderr.write("the warm interpreter this container's program ran in ended\n")
        os._exit(137)
    said = json.loads(line)
    if "signal" in said:
        if said["signal"] not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(said["signal"], signal.SIG_DFL)
        os.kill(os.getpid(), said["signal"])
    os._exit(said.get("exit", 1))


def main() -> None:
    with open(sys.argv[1]) as handle:
        spec = json.load(handle)
    # the container's own /run (a container's is not the machine's): what is made under it (the
    # service account's mount point, sshd's directory) stays in the container
    _tmpfs("/run")
    for folder in spec.get("dirs") or []:  # directories the image has
        os.makedirs(folder, exist_ok=True)
    for source, target, read_only in spec["mounts"]:
        if os.path.isdir(source):
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.exists(target):
                open(target, "a").close()
        _mount(source, target, read_only)
    if spec.get("hosts"):
        _mount(spec["hosts"], "/etc/hosts", True)
    if spec.get("resolv"):
        _mount(spec["resolv"], os.path.realpath("/etc/resolv.conf"), True)
    if spec.get("hostname"):
        socket.sethostname(spec["hostname"])
    workdir = spec.get("workdir") or "/"
    os.makedirs(workdir, exist_ok=True)
    os.chdir(workdir)
    argv = spec["argv"]
    env = spec["env"]
    _hand_over(spec, argv, env)
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as error:
        # containerd's message for a missing executable, and its exit code (128 in the CRI status)
        sys.stderr.write(f'exec: "{argv[0]}": {error.strerror}\n')
        sys.exit(128)


if __name__ == "__main__":
    main()
