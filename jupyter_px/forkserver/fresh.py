"""Making a forked copy of the template into the process `python -m module ARGS` would have been.

A fork keeps everything of its parent; a fresh interpreter has none of it. What differs, and
what is done about it (the leak test in tests/test_warm_isolation.py checks each against a
process started cold):

* **Signals.** The template catches SIGTERM and SIGCHLD and has a wakeup fd; the child gets
  back the dispositions a fresh interpreter has (recorded by the template before it did
  anything: SIGINT raises KeyboardInterrupt, SIGPIPE and SIGXFSZ ignored, the rest default),
  no wakeup fd, and an empty signal mask.
* **Open files.** Everything but 0, 1 and 2 is closed (the template's sockets, the zygote's
  control socket), except what the preloaded libraries opened themselves (`library_fds`);
  stdin is /dev/null and stdout+stderr go to the log, as a cold start's.
* **Environment, working directory, argv, umask.** Replaced wholesale: `os.environ` cleared
  and filled (which also sets the C-level environment), `sys.argv` and `sys.path[0]` as `-m`
  sets them.
* **Random state.** A fresh interpreter seeds every generator from the OS. `random` reseeds
  itself after a fork; NumPy's legacy global generator and torch's CPU generator do not (every
  replica of every run would draw the same numbers, `torch.initial_seed()` the template's), so
  they are reseeded from the OS, and torch's CUDA generators get the same fresh seed when CUDA
  is initialised later (`torch.seed()` queues it; nothing initialises CUDA here).
* **Thread pools.** OpenMP read OMP_NUM_THREADS and the CPU affinity when the template loaded
  it; torch's intra-op pool is sized again from the child's own (`torch.set_num_threads`).
  No pool has threads yet: the template never runs an operation.
* **Import caches.** `importlib.invalidate_caches()`, so files that appeared since the
  template started (the run's code directory) are found.

What stays the template's: modules imported before the fork (the preloaded set, listed in the
template's state file), `sys.flags`, and the string hash seed (`PYTHONHASHSEED` is part of the
fingerprint, so a run that sets it gets a template that has it).
"""

from __future__ import annotations

import gc
import importlib
import logging
import os
import random
import signal
import sys
import time
from collections.abc import Collection, Mapping
from typing import Any, NoReturn

#: Catchable signals, the dispositions they get back in a fresh child.
_SIGNALS = [s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP) and s < signal.NSIG]

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
PR_SET_CHILD_SUBREAPER = 36

_libc: Any = None


def prctl(option: int, value: int) -> bool:
    """`prctl(option, value)`; False where it failed (not Linux)."""
    global _libc
    try:
        if _libc is None:
            import ctypes

            _libc = ctypes.CDLL(None, use_errno=True)
        return _libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def process_name() -> str:
    """This process's name as `ps` shows it (`/proc/self/comm`)."""
    try:
        with open("/proc/self/comm") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def set_process_name(name: str) -> None:
    """Rename this process for `ps` (`comm`, at most 15 bytes)."""
    global _libc
    try:
        if _libc is None:
            import ctypes

            _libc = ctypes.CDLL(None, use_errno=True)
        _libc.prctl(PR_SET_NAME, name.encode()[:15], 0, 0, 0)
    except (OSError, AttributeError):
        pass


def initial_dispositions() -> dict[int, Any]:
    """The signal dispositions of this interpreter now: call it first thing, before any handler."""
    found: dict[int, Any] = {}
    for signum in _SIGNALS:
        try:
            found[signum] = signal.getsignal(signum)
        except (OSError, ValueError):
            continue
    return found


def restore_signals(dispositions: Mapping[int, Any]) -> None:
    """Back to `dispositions` (handlers installed from C, shown as None, are left alone), no
    wakeup fd, nothing blocked."""
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:
        pass
    for signum, disposition in dispositions.items():
        if disposition is None:
            continue
        try:
            if signal.getsignal(signum) is not disposition:
                signal.signal(signum, disposition)
        except (OSError, ValueError, TypeError):
            continue
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


def open_fds() -> set[int]:
    """The descriptors open now (not counting the one the listing itself used)."""
    try:
        listed = {int(name) for name in os.listdir("/proc/self/fd")}
    except OSError:
        return set()
    found = set()
    for fd in listed:
        try:
            os.fstat(fd)
        except OSError:
            continue
        found.add(fd)
    return found


def close_fds(keep: Collection[int]) -> None:
    """Close every descriptor above 2 that is not in `keep`."""
    keep = sorted({fd for fd in keep if fd > 2})
    low = 3
    for fd in keep:
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, _max_fd())


def _max_fd() -> int:
    try:
        return os.sysconf("SC_OPEN_MAX")
    except (OSError, ValueError):
        return 65536


def redirect_stdio(log_path: str | None) -> None:
    """stdin from /dev/null; stdout and stderr appended to `log_path` (kept where None)."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    if log_path is not None:
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)


def replace_environment(env: Mapping[str, str], cwd: str, argv0: str, args: list[str]) -> None:
    """The environment, working directory and argv of `python -m <module at argv0> ARGS` in `cwd`."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = [argv0, *args]
    sys.orig_argv = [sys.executable, "-m", *sys.argv]
    if sys.path:
        sys.path[0] = os.getcwd()  # `python -m` puts the working directory first


def refresh_libraries() -> None:
    """Every generator reseeded from the OS, as at a fresh start; torch's thread pool sized for
    this process; the import system's cached directory listings forgotten."""
    random.seed()
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        try:
            numpy_random.seed()  # from the OS's entropy, as at NumPy's import in a fresh process
        except Exception:
            pass
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            torch.seed()  # the CPU generator now; CUDA's, lazily, when it is initialised
        except Exception:
            pass
        try:
            wanted = os.environ.get("OMP_NUM_THREADS", "")
            threads = int(wanted) if wanted.isdigit() and int(wanted) > 0 else len(os.sched_getaffinity(0))
            torch.set_num_threads(threads)
        except Exception:
            pass
    importlib.invalidate_caches()


def forget_logging(names: Collection[str]) -> None:
    """Drop the handlers the template's loggers have: a fresh process has none."""
    for name in names:
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)


def wait_for_parent(owner: int, timeout: float = 10.0) -> bool:
    """After a double fork: wait until this process has been handed to `owner` (its child
    subreaper). False if that does not happen in time."""
    deadline = time.monotonic() + timeout
    delay = 0.0002
    while os.getppid() != owner:
        if time.monotonic() > deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.01)
    return True


def call_entry(entry: str, args: list[str]) -> NoReturn:
    """Run `module:function(args)` and leave with its return value as the exit code (the way
    `sys.exit(main())` would, without the interpreter's teardown, which a forked copy of the
    template must not run: its atexit handlers and finalizers are the template's)."""
    module_name, _, function = entry.partition(":")
    code = 1
    try:
        result = getattr(importlib.import_module(module_name), function)(args)
        code = result if isinstance(result, int) else 0
    except SystemExit as error:
        code = error.code if isinstance(error.code, int) else (0 if error.code is None else 1)
        if not isinstance(error.code, (int, type(None))):
            print(error.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
    os._exit(code & 0xFF)


def freeze_heap() -> None:
    """Before serving forks: collect, then move every object to the permanent generation, so
    the children's garbage collector never writes to (and so copies) the template's pages."""
    gc.collect()
    gc.freeze()
