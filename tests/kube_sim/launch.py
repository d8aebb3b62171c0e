"""Start one container's process inside its own mount and UTS namespaces (run under
`unshare -m -u --propagation private`): a fresh /run, bind-mount the pod's volumes at their mount
paths, the pod's generated hosts file over /etc/hosts (and its resolv.conf, on the pod network),
set the pod's hostname, then exec the command.

A standalone script (no imports from the simulation), given one JSON file:
{"mounts": [[host_path, mount_path, read_only], ...], "hosts": path, "resolv": path or "", "hostname": name,
 "workdir": path, "argv": [...], "env": {...}, "dirs": [path, ...]}
"""

import ctypes
import json
import os
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
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as error:
        # containerd's message for a missing executable, and its exit code (128 in the CRI status)
        sys.stderr.write(f'exec: "{argv[0]}": {error.strerror}\n')
        sys.exit(128)


if __name__ == "__main__":
    main()
