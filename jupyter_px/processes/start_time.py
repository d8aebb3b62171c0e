"""When a process started, as a value no clock adjustment moves: what identifies a process
(`detached.ProcessIdentity`) together with its pid.

psutil's `Process.create_time()` is the kernel's start tick plus the boot time, and psutil 7
reads the boot time afresh on every call (giampaolo/psutil#2541, #2544) from /proc/stat's `btime`,
which Linux recomputes on every read as the wall clock minus the time since boot, in whole
seconds. When NTP slews the wall clock across a second boundary, every process's create_time
moves by a second. A supervisor's recorded creation time then no longer matched its own live
process: the Jupyter server's keeper took it for gone, recorded its run Lost and killed the run's
cgroup (a CI run saw all three replicas of a live run SIGKILLed at once while their supervisor
went on), and a TensorBoard whose owner "was gone" stopped itself as it started.

So an identity records the start in seconds since boot (the kernel's `starttime`, clock ticks
since boot, field 22 of /proc/<pid>/stat): fixed for the process's life, the same whoever reads
it. A record written before (a wall-clock creation time, far larger than any time since boot)
is still compared, with a tolerance of the boot time's whole second.
"""

from __future__ import annotations

import os
import sys
import time

import psutil

#: A recorded start above this is a wall-clock time (seconds since 1970), written by an older
#: version: no machine has been up for three years.
SINCE_BOOT_MAX_S = 1e8
#: Two readings of one process's start since boot agree to the clock tick (10 ms).
TICK_TOLERANCE_S = 0.05
#: Two wall-clock readings of one process's creation may differ by the boot time's whole second
#: (and what the clock was slewed by in between).
WALL_TOLERANCE_S = 1.5

_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def since_boot(pid: int) -> float:
    """Seconds from boot to the start of process `pid`; psutil.NoSuchProcess when there is none.
    Elsewhere than Linux (no /proc), psutil's creation time, which is what there is."""
    if not sys.platform.startswith("linux"):
        return psutil.Process(pid).create_time()
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()  # after the command's name, which may hold spaces
    except (FileNotFoundError, ProcessLookupError):
        raise psutil.NoSuchProcess(pid) from None
    return int(fields[19]) / _TICKS_PER_S  # field 22, counted from field 3 (the state)


def matches(recorded: float, pid: int) -> bool:
    """Whether process `pid` is the one recorded as started at `recorded` (seconds since boot, or
    an older record's wall-clock creation time); psutil.NoSuchProcess when there is none."""
    if recorded < SINCE_BOOT_MAX_S:
        return abs(since_boot(pid) - recorded) <= TICK_TOLERANCE_S
    return abs(psutil.Process(pid).create_time() - recorded) <= WALL_TOLERANCE_S


def same_start(a: float, b: float) -> bool:
    """Whether two recorded starts are one process's (either may be an older wall-clock record)."""
    if (a < SINCE_BOOT_MAX_S) == (b < SINCE_BOOT_MAX_S):
        return abs(a - b) <= (TICK_TOLERANCE_S if a < SINCE_BOOT_MAX_S else WALL_TOLERANCE_S)
    booted = time.time() - time.clock_gettime(getattr(time, "CLOCK_BOOTTIME", time.CLOCK_MONOTONIC))  # boot, now
    wall, relative = (a, b) if a >= SINCE_BOOT_MAX_S else (b, a)
    return abs(wall - (relative + booted)) <= WALL_TOLERANCE_S
