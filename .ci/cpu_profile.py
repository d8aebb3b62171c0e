"""Where CI's CPU goes: samples every process once a second and sums its CPU time by kind.

    python .ci/cpu_profile.py ci-cpu.txt &   # ... the tests ...; kill -INT it: it writes the table

On a two-core machine the README's test command and the browser tests beside it are bound by
the CPU (a load average of 14), so what makes CI slow is which processes use it: Chromium, the
Jupyter servers and kernels, replicas importing torch or TensorFlow, the Slurm daemons, the
simulated cluster. `--durations` says which tests wait longest, not who computes; this says who.

Each process's `utime + stime` (from `/proc/PID/stat`) is read every `INTERVAL_S`. A process that
started since the first scan is counted whole (its CPU when first seen, then what it adds until it
ends); one already running then, from then on. Processes that start and end between two scans are
missed: the table's total is a lower bound, and it says how far below the machine's own count
(`/proc/stat`) it is. Standard library only; one scan costs a few milliseconds. A line says how
many cores the machine kept busy in each minute: where it is well under two, tests wait more than
they compute, and more of them could run at once. Another says how much disk was free, the least
in each minute, on the checkout's filesystem and the temporary one (pytest's `tmp_path`s), where
they differ: a run once failed on a full disk ("No space left on
device" from pytest's own report), and the line says how near the next one comes.

A second table sums it by test file: a process started during a test carries pytest's
`PYTEST_CURRENT_TEST` in the environment it was started with (`/proc/PID/environ`), and so do its
children. What it cannot place: the pytest workers themselves (their environment is the one they
started with), a process started with an environment of its own (a simulated pod's), and a warm
template's replicas, which count for the test that started the template.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
from collections import defaultdict

INTERVAL_S = 1.0
TICKS = os.sysconf("SC_CLK_TCK")

#: (kind, what to find in the command line), first match wins.
KINDS = (
    ("Chromium", ("chromium", "chrome")),
    # (the program's name, not "node" anywhere: Slurm's `node_entry` and `--nodes` have it)
    ("Node.js (Playwright, jest, the build)", ("/node ", "jlpm", "yarn")),
    ("Slurm daemons and steps", ("slurmctld", "slurmd", "slurmdbd", "slurmstepd", "mariadbd", "munged")),
    ("sshd and ssh", ("sshd", "/ssh ", "ssh ")),
    ("Kubernetes follower", ("kubernetes.follower",)),
    ("Slurm and SSH followers", ("slurm.follower", "ssh.follower")),
    ("sweep controllers", ("sweeps.controller",)),
    ("simulated cluster", ("kube_sim",)),
    ("kubectl", ("kubectl",)),
    ("TensorBoard", ("tensorboard",)),
    ("kernels", ("ipykernel",)),
    ("Jupyter servers", ("jupyter-lab", "jupyter_server", "jupyter lab", "jupyterlab", "ServerApp")),
    ("warm templates and their replicas", ("jupyter_px.forkserver",)),
    ("Slurm and SSH replicas' entries", ("task_entry", "node_entry", "requeue_entry")),
    ("run supervisors", ("backends.local.supervisor", "jupyter_px.supervisor")),
    ("replicas (cold)", ("jupyter_px.runner", "px_entry.py", "jupyter_px/runner.py")),
    ("torchrun and mpirun", ("torchrun", "mpirun", "orted", "prterun")),
    ("the jupyter px CLI", ("jupyter-px", "jupyter_px.cli")),
    # (not "pytest" alone: every path under a test's tmp_path has it)
    ("pytest workers", ("-m pytest", "bin/pytest", "execnet", "xdist", "exec(eval(sys.stdin")),
    ("pip, uv (the floors' install)", ("pip", "/uv ")),
    ("lint and types", ("ruff", "mypy", "lint-imports", "sphinx")),
)


def kind_of(cmdline: str) -> str:
    program = os.path.basename(cmdline.split(" ", 1)[0])
    if program in ("node", "nodejs"):
        return "Node.js (Playwright, jest, the build)"
    for kind, needles in KINDS:
        if any(needle in cmdline for needle in needles):
            return kind
    first = cmdline.split(" ", 1)[0]
    return f"other: {os.path.basename(first) or '?'}"


def cpu_ticks(pid: str) -> tuple[str, str, int] | None:
    """(the process's identity: its pid and start time, its command's name, its CPU ticks so far).

    A process that execs another program keeps its pid and start time: a simulated pod's
    `launch.py`, or a shell, becoming the replica it starts. Its CPU from then on is the new
    program's (the command line is read again at each scan to see it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            head, tail = f.read().rsplit(b")", 1)
    except OSError:
        return None
    fields = tail.split()
    # utime, stime and starttime: fields 14, 15 and 22 of proc(5)'s stat, counted from the state (3)
    comm = head.split(b"(", 1)[-1].decode(errors="replace")
    return f"{pid}@{fields[19].decode()}", comm, int(fields[11]) + int(fields[12])


def cmdline_of(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def test_file_of(pid: str) -> str:
    """The test file whose test started the process (pytest's `PYTEST_CURRENT_TEST`), or ""."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = f.read().split(b"\0")
    except OSError:
        return ""
    for entry in environ:
        if entry.startswith(b"PYTEST_CURRENT_TEST="):
            return entry.split(b"=", 1)[1].split(b"::", 1)[0].decode(errors="replace")
    return ""


def machine_ticks() -> int:
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    return sum(int(v) for v in fields[:3]) + sum(int(v) for v in fields[5:8])  # user nice system irq softirq steal


def watched_filesystems() -> dict[str, int]:
    """The checkout's folder and the temporary folder, one per filesystem: {path: device}."""
    paths: dict[str, int] = {}
    for path in (".", tempfile.gettempdir()):
        device = os.stat(path).st_dev
        if device not in paths.values():
            paths[path] = device
    return paths


def free_disk_gb(paths: dict[str, int]) -> dict[str, float]:
    free = {}
    for path in paths:
        stat = os.statvfs(path)
        free[path] = stat.f_bavail * stat.f_frsize / 1e9
    return free


def main(out: str) -> None:
    # identity -> (kind, ticks at the last sample, command, test file, command's name)
    seen: dict[str, tuple[str, int, str, str, str]] = {}
    by_kind: dict[str, int] = defaultdict(int)
    by_file: dict[str, int] = defaultdict(int)
    other: dict[str, int] = defaultdict(int)  # the unclassified, by command line
    unplaced: dict[str, int] = defaultdict(int)  # cold replicas no test could be found for, by command
    started, machine_start = time.monotonic(), machine_ticks()
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    first_scan = True
    minutes: list[float] = []  # cores busy in each minute (the machine's count): is there room for more?
    minute_began, minute_ticks = started, machine_start
    filesystems = watched_filesystems()
    disk_free: list[dict[str, float]] = []  # the least free disk (GB) in each minute, by filesystem
    least_free = free_disk_gb(filesystems)
    while not stop:
        if time.monotonic() - minute_began >= 60:
            now_ticks = machine_ticks()
            minutes.append((now_ticks - minute_ticks) / TICKS / (time.monotonic() - minute_began))
            minute_began, minute_ticks = time.monotonic(), now_ticks
            disk_free.append(least_free)
            least_free = free_disk_gb(filesystems)
        least_free = {path: min(gb, least_free[path]) for path, gb in free_disk_gb(filesystems).items()}
        alive = set()
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            sample = cpu_ticks(pid)
            if sample is None:
                continue
            identity, comm, ticks = sample
            alive.add(identity)
            if identity in seen:
                kind, last, cmdline, test_file, was = seen[identity]
                added = max(0, ticks - last)
                now_cmdline = cmdline_of(pid) if comm == was else ""
                if comm != was or (now_cmdline and now_cmdline != cmdline):
                    # it exec'd another program (python to python keeps the name, not the command
                    # line): what it adds from now on is that one's
                    by_kind[kind] += added
                    by_file[test_file or f"(no test: {kind})"] += added
                    added = 0
                    cmdline = now_cmdline or cmdline_of(pid) or cmdline
                    kind = kind_of(cmdline)
            else:
                cmdline = cmdline_of(pid)
                if not cmdline:  # a kernel thread
                    continue
                kind, test_file = kind_of(cmdline), test_file_of(pid)
                added = 0 if first_scan else ticks  # one started since: all its CPU is this run's
            by_kind[kind] += added
            by_file[test_file or f"(no test: {kind})"] += added
            if kind.startswith("other"):
                other[cmdline[:120]] += added
            elif not test_file and kind == "replicas (cold)":
                unplaced[cmdline[:120]] += added
            seen[identity] = (kind, ticks, cmdline, test_file, comm)
        for identity in set(seen) - alive:
            del seen[identity]
        first_scan = False
        time.sleep(INTERVAL_S)
    wall = time.monotonic() - started
    machine = (machine_ticks() - machine_start) / TICKS
    counted = sum(by_kind.values()) / TICKS
    lines = [
        f"CPU by kind of process over {wall / 60:.1f} min (core-minutes; the machine counted "
        f"{machine / 60:.1f}, these samples {counted / 60:.1f})",
    ]
    lines.append("cores busy, minute by minute: " + " ".join(f"{cores:.1f}" for cores in minutes))
    for path in filesystems:
        lines.append(
            f"disk free on {os.path.abspath(path)}'s filesystem (GB), the least in each minute: "
            + " ".join(f"{free[path]:.1f}" for free in disk_free)
        )
    for kind, ticks in sorted(by_kind.items(), key=lambda item: -item[1]):
        seconds = ticks / TICKS
        if seconds >= 1:
            lines.append(f"{seconds / 60:7.1f} {100 * seconds / max(counted, 1e-9):5.1f} %  {kind}")
    lines.append("the unclassified, by command line:")
    for cmdline, ticks in sorted(other.items(), key=lambda item: -item[1])[:8]:
        lines.append(f"{ticks / TICKS / 60:7.2f}  {cmdline}")
    lines.append("cold replicas no test could be placed for (a pod's, an ssh session's), by command line:")
    for cmdline, ticks in sorted(unplaced.items(), key=lambda item: -item[1])[:8]:
        lines.append(f"{ticks / TICKS / 60:7.2f}  {cmdline}")
    lines.append("by the test file whose test started the process (the 30 heaviest):")
    for test_file, ticks in sorted(by_file.items(), key=lambda item: -item[1])[:30]:
        lines.append(f"{ticks / TICKS / 60:7.2f}  {test_file}")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "ci-cpu.txt")
