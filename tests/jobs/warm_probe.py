"""What a replica's process is when the user's code starts, recorded for the warm-start tests:
`warm_probe.py ROUND`. Each replica writes `<PX_OUTPUTS_PATH>/<role>-<index>.json`.

Then it leaves every trace it can, which a later run forked from the same template must not
see: a variable in the environment, a signal handler, an open file, another working directory,
an extra sys.path entry, a module only this round imports, a counter in a module of its own.
"""

import sys

MODULES_AT_START = sorted(sys.modules)  # before this script imports anything

import ctypes  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402

ROUND = int(sys.argv[1])
ME = f"{os.environ['PX_TASK_TYPE']}-{os.environ['PX_TASK_INDEX']}"


def proc_status(field: str) -> str:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return line.split()[1]
    return ""


def parent_death_signal() -> int:
    value = ctypes.c_int(0)
    ctypes.CDLL(None, use_errno=True).prctl(2, ctypes.byref(value), 0, 0, 0)  # PR_GET_PDEATHSIG
    return value.value


fds = {}
for name in os.listdir("/proc/self/fd"):
    try:
        fds[name] = os.readlink(f"/proc/self/fd/{name}")
    except OSError:
        pass  # the listing's own descriptor, closed by now

handlers = {}
for signum in sorted(signal.valid_signals()):
    if signum in (signal.SIGKILL, signal.SIGSTOP):
        continue
    try:
        handler = signal.getsignal(signum)
    except (OSError, ValueError):
        continue
    handlers[signal.Signals(signum).name if signum in signal.Signals._value2member_map_ else str(signum)] = getattr(
        handler, "__name__", None
    ) or str(handler)

umask = os.umask(0)
os.umask(umask)

import numpy  # noqa: E402
import probe_helper  # noqa: E402  (from the workdir)

probe_helper.COUNT += 1

import torch  # noqa: E402

with open("/proc/self/maps") as maps_file:
    MAPS = maps_file.read().splitlines()
record = {
    "round": ROUND,
    "modules_at_start": MODULES_AT_START,
    "torch_at_start": "torch" in MODULES_AT_START,
    "env": dict(os.environ),
    "cwd": os.getcwd(),
    "argv": sys.argv,
    "path": sys.path[:2],
    "fds": fds,
    "handlers": handlers,
    "blocked": proc_status("SigBlk"),
    "ignored": proc_status("SigIgn"),
    "parent_death_signal": parent_death_signal(),
    "pid": os.getpid(),
    "ppid": os.getppid(),
    "pgid": os.getpgid(0),
    "umask": umask,
    "numpy_draw": float(numpy.random.random()),
    "helper_count": probe_helper.COUNT,
    "torch_threads": torch.get_num_threads(),
    "cuda_initialized": torch.cuda.is_initialized(),
    "cuda_bad_fork": torch.cuda._is_in_bad_fork(),
    "maps_cuda": [line.split()[-1] for line in MAPS if "libcuda" in line or "libnvidia" in line],
}
with open(os.path.join(os.environ["PX_OUTPUTS_PATH"], f"{ME}.json"), "w") as handle:
    json.dump(record, handle)

# Traces for the next run to (not) find.
os.environ["PROBE_LEAK"] = str(ROUND)
signal.signal(signal.SIGUSR1, lambda *_: None)
KEPT_OPEN = open(os.path.join(os.environ["PX_OUTPUTS_PATH"], f"{ME}.kept"), "w")  # noqa: SIM115
sys.path.append("/leaked-by-an-earlier-run")
if ROUND == 1:
    import only_in_round_one  # noqa: F401
os.chdir("/")
