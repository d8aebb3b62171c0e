"""`python replica_kill.py DUMPS_DIR KEY SIGNUM`: end one replica on purpose where it runs (a
Kubernetes pod, by an exec; an SSH host, over ssh), for `jupyter px kill`. Prints its answer as
a line of JSON (`answer_of` reads it back):

    {"pid": 42, "signal": "SIGKILL"}       sent to the replica's process group (said just before,
                                            a line saying it failed after it where it did)
    {"absent": "no worker-1 here"}          this pod or host has no such replica
    {"failed": "worker-1 (pid 42) has ..."} it has, but it cannot be signalled now

The replica is found as `jupyter px stacks` finds it: the runner writes its pid beside its stack
dumps (`stack_signal.PID_SUFFIX`, in `PX_STACKS_DIR`). A pid is signalled only when its process
started before that file was written (the kernel may have given an ended replica's pid to another
process since). The signal goes to the replica's process group, which the runner leads (the SSH
entry and the pod entry start it so), so its DataLoader workers go with it, as on a lost node.

A container's first process ignores every signal it has no handler for, SIGKILL included, when
it comes from inside its own container: the pod entry stays first and runs the runner as its child
(`pod/entry.py`), and a replica that is somehow pid 1 is refused here, not signalled in vain.

Standard library only: shipped to every pod.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

#: As `diagnostics/stack_signal.PID_SUFFIX` (not imported: this file runs alone in a pod).
PID_SUFFIX = ".pid"


def _started_at(pid: int) -> float | None:
    """When process `pid` started (Linux's /proc), in seconds since the epoch; None if unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        boot = next(line for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime "))
    except (OSError, IndexError, StopIteration):
        return None
    return int(boot.split()[1]) + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def kill(dumps: Path, key: str, signum: int) -> dict[str, object]:
    """Send `signum` to replica `key`'s process group; what was done (see the module's doc)."""
    path = dumps / f"{key}{PID_SUFFIX}"
    try:
        pid = int(path.read_text().strip())
        written = path.stat().st_mtime
    except (OSError, ValueError):
        return {"absent": f"no {key} here"}
    if pid == 1:
        return {"failed": f"{key} is its container's first process, which ignores signals sent from inside it"}
    started = _started_at(pid)
    if started is None or started > written + 1.0:  # /proc's start time is in clock ticks
        return {"failed": f"{key} (pid {pid}) has ended"}
    sent = {"pid": pid, "signal": signal.Signals(signum).name}
    # Said before it is done: a signal that ends the container ends this program with it (its
    # PID namespace goes), maybe before it could say anything after. A failure is said after.
    said(sent)
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)
    except ProcessLookupError:
        return {"failed": f"{key} (pid {pid}) has ended"}
    except PermissionError as error:
        return {"failed": f"{key} (pid {pid}) cannot be signalled: {error.strerror}"}
    return sent


def said(answer: dict[str, object]) -> None:
    print(json.dumps(answer), flush=True)


def answer_of(output: str) -> dict[str, object] | None:
    """What the program answered: its last line that is a JSON object (None: it said nothing)."""
    for line in reversed(output.strip().splitlines()):
        try:
            answer = json.loads(line)
        except ValueError:
            continue
        if isinstance(answer, dict):
            return answer
    return None


def main(argv: list[str]) -> int:
    if len(argv) != 3 or not argv[2].isdigit():
        print("usage: python replica_kill.py DUMPS_DIR KEY SIGNUM", file=sys.stderr)
        return 2
    answer = kill(Path(argv[0]), argv[1], int(argv[2]))
    if "pid" not in answer:  # (a signal sent was said before it was sent)
        said(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
