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
* **Process attributes.** A cold process inherits its starter's niceness, resource limits
  (`ulimit`) and umask through fork and exec; a forked one has the template's. The starter's are
  sent with each request (`process_attributes`) and taken on (`take_on`): the supervisor takes
  the submitter's, and each replica its supervisor's.
* **Time zone and locale.** Both are read from the environment when an interpreter starts:
  after the environment is replaced, `time.tzset()` reads TZ again and LC_CTYPE is set from
  LC_ALL/LC_CTYPE/LANG as Python's start-up does (the other categories stay "C", as there).
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
import locale
import logging
import os
import random
import resource
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


#: What a cold start sets back to the default just before its exec (an ignored signal would stay
#: ignored through exec: a submitter under `nohup`, or a background job of a shell, ignores
#: SIGHUP or SIGINT, and its replicas must not).
RESET_BEFORE_EXEC = (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE)


def initial_dispositions() -> dict[int, Any]:
    """The signal dispositions a cold replica starts with: this interpreter's now (call it first
    thing, before any handler), with `RESET_BEFORE_EXEC` as an exec after that reset leaves them
    and Python's start-up then sets them (SIGINT raises KeyboardInterrupt, SIGPIPE ignored)."""
    found: dict[int, Any] = {}
    for signum in _SIGNALS:
        try:
            found[signum] = signal.getsignal(signum)
        except (OSError, ValueError):
            continue
    found.update(dict.fromkeys(RESET_BEFORE_EXEC, signal.SIG_DFL))
    found[signal.SIGINT] = signal.default_int_handler
    found[signal.SIGPIPE] = signal.SIG_IGN
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


#: The resource limits a process passes to what it starts (`ulimit -a`), by name.
_RLIMITS = {name: getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_")}


def process_attributes() -> dict[str, Any]:
    """This process's niceness, resource limits and umask: what a process it exec'd would have."""
    umask = os.umask(0)
    os.umask(umask)
    limits = {}
    for name, which in _RLIMITS.items():
        try:
            limits[name] = list(resource.getrlimit(which))
        except (OSError, ValueError):
            continue
    return {"nice": os.getpriority(os.PRIO_PROCESS, 0), "rlimits": limits, "umask": umask}


def take_on(attributes: Mapping[str, Any]) -> None:
    """Take on another process's `process_attributes()`, as far as this process may: a limit's
    hard value above this one's, or a lower niceness, needs a privilege it may not have (then the
    soft limit is set up to this process's hard one, and the niceness stays)."""
    if "umask" in attributes:
        os.umask(int(attributes["umask"]))
    for name, (soft, hard) in (attributes.get("rlimits") or {}).items():
        which = _RLIMITS.get(name)
        if which is None:
            continue
        try:
            resource.setrlimit(which, (soft, hard))
        except (OSError, ValueError):
            try:
                current = resource.getrlimit(which)[1]
                capped = soft if current == resource.RLIM_INFINITY or 0 <= soft <= current else current
                resource.setrlimit(which, (capped, current))
            except (OSError, ValueError):
                pass
    if "nice" in attributes:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, int(attributes["nice"]))
        except OSError:
            pass


def pin_threads(cpus: Collection[int] | None) -> None:
    """Pin this process to `cpus`: every thread it has (a spawn-ahead interpreter may have
    started some while importing, OpenBLAS's), as the new ones inherit the caller's."""
    if not cpus or not hasattr(os, "sched_setaffinity"):
        return
    try:
        threads = [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:
        threads = [0]
    for tid in threads:
        try:
            os.sched_setaffinity(tid, cpus)
        except OSError:
            continue
    os.sched_setaffinity(0, cpus)


def refresh_libraries() -> None:
    """What an interpreter reads from its environment at start, read again (TZ, the locale, the
    temporary directory `tempfile` caches); every generator reseeded from the OS, as at a fresh
    start; torch's thread pool sized for this process; the import system's cached directory
    listings forgotten."""
    time.tzset()
    tempfile: Any = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = None  # found again from TMPDIR, TEMP, TMP on first use, as in a fresh process
    try:
        locale.setlocale(locale.LC_CTYPE, "")
    except locale.Error:
        pass
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
