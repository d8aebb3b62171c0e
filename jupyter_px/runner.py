"""`python -m jupyter_px.runner <run dir>`: what every replica process executes.

It turns a run directory into a running `__main__`: change to the run's workdir, put the code
directory (then the workdir) on `sys.path`, load `code/pushed.pkl` (values shipped from the
notebook with --push) into the globals, set `sys.argv = [entrypoint, *args]` and run the
entrypoint as `__main__` (plain Python through `runpy`, or under an IPython shell for code with
`%magics` and `!commands`).

How it ends is deliberate. After the code returns, the runner joins the code's non-daemon
threads and runs `atexit` handlers (as the interpreter would), flushes `jupyter_px.tracking`
and stdio, then leaves with `os._exit(code)`. That skips only the C++ static destructors, which
is where torch.distributed sometimes aborts a finished process (`terminate called without an
active exception`, exit 134); a replica that did its work is never reported failed for that.
Real failures are never hidden: an exception prints its traceback and exits 1,
`SystemExit(n)` exits n, a signal kills the process as usual.

Two more modes, both used only by the local backend:

* `--mpi-host`: a worker of a Horovod/MPI run. On Kubernetes MPI workers are sshd hosts; here
  all ranks run on this machine under the launcher's `mpirun`, so a worker replica only holds
  its place (it is up before the launcher starts and stopped when the run ends).
* An MPI rank (started by `mpirun`, `OMPI_COMM_WORLD_RANK` set): takes on the identity the
  supervisor wrote for that rank in `mpi/ranks.json` (PX_TASK_TYPE=worker, its index, metrics
  and TensorBoard paths, cores), so tracking files land under the worker, not the launcher.
* PyTorch with `processes_per_replica: N > 1`: the replica process starts N copies of itself
  with LOCAL_RANK/RANK/WORLD_SIZE set as torchrun would, and fails if any of them fails.
  Variables too large for an exec (a 5,000-replica PX_CLUSTER) reach them through a file.

This module must stay light to import: it runs in every replica before the user's code, so it
uses only the standard library (no pydantic, no jupyter_px.runstore).
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import pickle
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

USAGE = "usage: python -m jupyter_px.runner [--mpi-host] RUN_DIR"

#: `jupyter_px.runstore.layout.ROUND_LOG_PREFIX` (not imported: the runner stays off pydantic).
ROUND_LOG_PREFIX = "@px-round "

#: The run's result secret, read before the user's code runs (`function_calls`: results are signed).
_RESULT_KEY: bytes | None = None


def _read_record(run_dir: Path) -> dict[str, Any]:
    try:
        return json.loads((run_dir / "record.json").read_text())
    except (OSError, ValueError) as error:
        _die(f"cannot read the run record in {run_dir}: {error}", 2)


def _read_result_key(run_dir: Path) -> bytes | None:
    """The secret that signs this run's results (`jupyter_px.code.function_calls`); None for a run
    made before results were signed."""
    try:
        with open(run_dir / "result.key", "rb") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def _die(message: str, code: int) -> NoReturn:
    print(f"jupyter_px.runner: {message}", file=sys.stderr, flush=True)
    os._exit(code)


def _set_parent_death_signal() -> None:
    """End with the parent (mpirun or a local-group runner) even if it is SIGKILLed: SIGTERM, so
    that tracking writes what it holds first (the supervisor's watchdog kills what remains)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


# ---- special modes --------------------------------------------------------------------------


def _mpi_host() -> NoReturn:
    role, index = os.environ.get("PX_TASK_TYPE", "worker"), os.environ.get("PX_TASK_INDEX", "0")
    print(
        f"{role}-{index}: MPI host ready. On this machine every rank is started by the launcher's mpirun; "
        f"the ranks' output is in the master-0 log.",
        flush=True,
    )
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    while True:
        signal.pause()


def _adopt_mpi_rank(run_dir: Path) -> None:
    """Under mpirun: become the worker this rank belongs to (see mpi/ranks.json)."""
    rank = os.environ.get("OMPI_COMM_WORLD_RANK")
    if rank is None or os.environ.get("PX_FRAMEWORK") not in ("horovod", "mpi"):
        return
    _set_parent_death_signal()
    try:
        ranks = json.loads((run_dir / "mpi" / "ranks.json").read_text())
    except (OSError, ValueError):
        return
    entry = ranks.get(rank) or {}
    os.environ.update({str(k): str(v) for k, v in (entry.get("env") or {}).items()})
    cpus = entry.get("cpus")
    if cpus:
        try:
            os.sched_setaffinity(0, cpus)
        except OSError:
            pass


def _local_rank_env(local_rank: int, nproc: int) -> dict[str, str]:
    node_rank = int(os.environ.get("PET_NODE_RANK", os.environ.get("RANK", "0")))
    nodes = int(os.environ.get("PET_NNODES", os.environ.get("WORLD_SIZE", "1")))
    return {
        "LOCAL_RANK": str(local_rank),
        "LOCAL_WORLD_SIZE": str(nproc),
        "GROUP_RANK": str(node_rank),
        "RANK": str(node_rank * nproc + local_rank),
        "WORLD_SIZE": str(nodes * nproc),
    }


#: Linux refuses an exec whose single environment string exceeds 32 pages (128 KiB, MAX_ARG_STRLEN):
#: a large run's PX_CLUSTER can. Values above this size reach the local ranks through a file.
SPILL_ABOVE = 64 * 1024
#: The variable naming that file (JSON object of the spilled variables) in a local rank's environment.
SPILLED_ENV = "PX_SPILLED_ENV"


def _spill_large_values(env: dict[str, str]) -> str | None:
    """Move `env`'s oversized values into a private temporary file named by PX_SPILLED_ENV (the
    rank restores them with `_restore_spilled_env` before any user code runs). Returns its path."""
    import tempfile

    large = {name: value for name, value in env.items() if len(name) + len(value) + 1 > SPILL_ABOVE}
    if not large:
        return None
    fd, path = tempfile.mkstemp(prefix="px-env-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        json.dump(large, file)
    for name in large:
        del env[name]
    env[SPILLED_ENV] = path
    return path


def _restore_spilled_env() -> None:
    path = os.environ.pop(SPILLED_ENV, None)
    if path:
        with open(path, encoding="utf-8") as file:
            os.environ.update(json.load(file))


def _run_local_group(run_dir: Path, nproc: int) -> int:
    """Start `nproc` processes of this replica (torchrun-style ranks); fail fast if one fails."""
    import subprocess
    import time

    procs = []
    spilled: list[str] = []
    for local_rank in range(nproc):
        env = dict(os.environ, **_local_rank_env(local_rank, nproc))
        if path := _spill_large_values(env):
            spilled.append(path)
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "jupyter_px.runner", str(run_dir)], env=env, preexec_fn=_set_parent_death_signal
            )
        )

    def forward(signum: int, _frame: object) -> None:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGURG, forward)  # a request for stacks (`stack_signal`): the ranks answer
    code = 0
    while any(p.poll() is None for p in procs):
        failed = [p for p in procs if p.returncode not in (None, 0)]
        if failed:
            code = failed[0].returncode
            for p in procs:
                if p.poll() is None:
                    p.terminate()
            break
        time.sleep(0.1)
    for p in procs:
        p.wait()
        if code == 0 and p.returncode != 0:
            code = p.returncode
    for path in spilled:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return code if code >= 0 else 128 - code


# ---- running the user's code ----------------------------------------------------------------


def _say_round() -> None:
    """Rank 0 of a group that torchrun's elastic agents formed says when the group began and how
    big it is, in one `@px-round {json}` line: the engine's own numbers (`GROUP_WORLD_SIZE`: its
    agents, one per pod; `WORLD_SIZE`: its processes). torchrun forms the group again inside the
    pods when a node leaves or joins (an elastic PyTorchJob), and the run's follower makes each
    new group the run's next attempt. Every group has one rank 0, so one line per group."""
    env = os.environ
    if env.get("TORCHELASTIC_RUN_ID") is None or env.get("RANK") != "0":
        return
    try:
        said = {"time": time.time(), "nodes": int(env["GROUP_WORLD_SIZE"]), "world": int(env["WORLD_SIZE"])}
    except (KeyError, ValueError):
        return  # not an agent of ours to describe
    print(f"{ROUND_LOG_PREFIX}{json.dumps(said)}", flush=True)


def _exit_code(error: SystemExit) -> int:
    code = error.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF  # what the OS reports for sys.exit(n)
    print(code, file=sys.stderr)
    return 1


def _user_frames(tb, entrypoint: str):
    """Drop the runner's and runpy's frames so a traceback starts in the user's file."""
    start = tb
    while start is not None and start.tb_frame.f_code.co_filename != entrypoint:
        start = start.tb_next
    return start or tb


def _load_pushed(code_dir: Path) -> dict[str, Any]:
    pushed = code_dir / "pushed.pkl"
    if not pushed.exists():
        return {}
    with open(pushed, "rb") as handle:
        values = pickle.load(handle)
    if not isinstance(values, dict):
        raise TypeError(f"{pushed} must hold a dict of names to values, not {type(values).__name__}")
    return values


def _run_python(entrypoint: str, init_globals: dict[str, Any], run_dir: Path, returns: bool = False) -> int:
    import runpy

    def run() -> None:
        if returns:  # a notebook cell's code: its last expression is this replica's result
            from jupyter_px.code import function_calls

            value = function_calls.run_keeping_last_expression(entrypoint, init_globals)
            function_calls.keep(run_dir, value=value, key=_RESULT_KEY)
        else:
            runpy.run_path(entrypoint, init_globals=init_globals, run_name="__main__")

    return _exit_status(run, run_dir, keep=returns, frames=lambda tb: _user_frames(tb, entrypoint))


def _run_function(run_dir: Path) -> int:
    """Call the function shipped by `jupyter_px.submit(fn, ...)` and keep what it returned."""
    from jupyter_px.code import function_calls

    def ours(tb: Any) -> Any:  # the frames of this module and function_calls are not the user's
        first = tb
        while tb is not None and tb.tb_frame.f_code.co_filename in (__file__, function_calls.__file__):
            tb = tb.tb_next
        return tb or first

    def run() -> None:
        function_calls.keep(run_dir, value=function_calls.call(run_dir / "code"), key=_RESULT_KEY)

    return _exit_status(run, run_dir, keep=True, frames=ours)


def _exit_status(run: Callable[[], None], run_dir: Path, *, keep: bool, frames: Callable[[Any], Any]) -> int:
    """Run the replica's code and turn how it ended into the process's exit status: SystemExit's
    code, 130 for ^C, 1 for an exception (reported with `frames`, the user's part of its traceback)."""
    try:
        run()
    except SystemExit as error:
        return _exit_code(error)
    except KeyboardInterrupt:
        traceback.print_exc()
        return 130
    except BaseException as error:
        _report(error, frames(error.__traceback__), run_dir, keep=keep)
        return 1
    return 0


def _report(error: BaseException, tb: Any, run_dir: Path, *, keep: bool = False, aliases: tuple[str, ...] = ()) -> None:
    """Print the traceback with shipped code named by its notebook cell ("cell [5], line 8"), and
    keep the failure record the supervisor puts in the replica's status (and, for a function's
    or a cell's result, the exception as the outcome)."""
    from jupyter_px.code.source_map import SourceMap, alias_shipped_lines, keep_failure

    source_map = SourceMap.load(run_dir / "code")
    source_map.install()
    if aliases:
        alias_shipped_lines(source_map, run_dir / "code" / "main.py", aliases)
    text = source_map.format_exception(error, tb)
    sys.stderr.write(text)
    sys.stderr.flush()
    record = source_map.failure_record(error, tb)
    from jupyter_px.diagnostics import collective_timeout, flight_recorder

    if collective_timeout.is_timeout(record["exception"]):
        record["collectives"] = flight_recorder.last_collectives()
    keep_failure(run_dir, record)
    if keep:
        from jupyter_px.code import function_calls

        function_calls.keep(run_dir, error=error, traceback_text=text, key=_RESULT_KEY)


def _run_ipython(entrypoint: str, init_globals: dict[str, Any], run_dir: Path) -> int:
    """Run the source as one IPython cell, so `%magics` and `!commands` work."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.colors = "nocolor"
    except Exception:
        pass

    def report(shell: Any, kind: type, error: BaseException, tb: Any, tb_offset: Any = None) -> None:
        while tb is not None and "/IPython/" in tb.tb_frame.f_code.co_filename:
            tb = tb.tb_next  # from the cell's own frame on
        frames = traceback.extract_tb(tb)
        _report(error, tb, run_dir, aliases=tuple({frame.filename for frame in frames}))

    shell.set_custom_exc((Exception,), report)
    shell.user_ns.update(init_globals)
    shell.user_ns.update(__name__="__main__", __file__=entrypoint)
    source = Path(entrypoint).read_text()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="To exit: use")  # IPython's hint for sys.exit in a cell
        result = shell.run_cell(source, store_history=False)
    if isinstance(result.error_in_exec, SystemExit):
        return _exit_code(result.error_in_exec)
    if result.error_before_exec is not None or result.error_in_exec is not None:
        return 1
    return 0


def _finalize_mpi() -> None:
    """mpi4py finalizes MPI from a C exit hook, which os._exit skips; mpirun would then report
    the rank as having exited without MPI_Finalize and fail the job."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None:
        return
    try:
        if mpi.Is_initialized() and not mpi.Is_finalized():
            mpi.Finalize()
    except Exception:
        traceback.print_exc()


def _finish(code: int) -> NoReturn:
    """Exit like the interpreter would, minus the C++ static destructors (see the module doc)."""
    try:
        current = threading.current_thread()
        for thread in threading.enumerate():
            if thread is not current and not thread.daemon and thread.is_alive():
                thread.join()
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
        code = code or 1
    _finalize_mpi()
    tracking = sys.modules.get("jupyter_px.tracking")
    if tracking is not None:
        try:
            tracking.flush()
        except Exception:
            traceback.print_exc()
    flush_standard_streams()
    os._exit(code)


def flush_standard_streams() -> None:
    """Flush stdout and stderr before `os._exit` (which skips it), whatever state they are in."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or its pipe is gone
            pass


def _write_whole_lines() -> None:
    """Send stdout and stderr out a whole line at a time, as on a terminal.

    Replicas run with PYTHONUNBUFFERED so nothing waits in a buffer, but then `print` writes
    each of its pieces separately. The ranks of an MPI job share one stdout (mpirun's), so two
    ranks' lines could interleave mid-line, and a rank's `@px-metrics` line glued after
    another's fragment would be lost. A line under PIPE_BUF written in one call is atomic."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):  # not replaced by an embedding host
            stream.reconfigure(line_buffering=True, write_through=False)


def main(argv: list[str] | None = None) -> NoReturn:
    args = list(sys.argv[1:] if argv is None else argv)
    _write_whole_lines()
    if args and args[0] == "--mpi-host":
        _mpi_host()
    if len(args) != 1:
        _die(USAGE, 2)
    _restore_spilled_env()
    run_dir = Path(args[0]).resolve()
    record = _read_record(run_dir)
    global _RESULT_KEY
    _RESULT_KEY = _read_result_key(run_dir)
    _adopt_mpi_rank(run_dir)

    topology = record.get("topology") or {}
    nproc = int((topology.get("environment") or {}).get("processes_per_replica") or 1)
    if topology.get("framework") == "pytorch" and nproc > 1 and "LOCAL_RANK" not in os.environ:
        _finish(_run_local_group(run_dir, nproc))
    from jupyter_px.diagnostics import collective_timeout, flight_recorder, group_teardown, stack_signal

    stack_signal.install(run_dir)  # its stacks on request, even from native code (`jupyter px stacks`)
    collective_timeout.install()  # a missing rank fails its peers' collectives in minutes, not half an hour
    flight_recorder.install()  # which collective a timed-out rank was in, for its failure record
    group_teardown.install()  # a DDP model freed after destroy_process_group() cannot hang the replica
    _say_round()

    code_spec = record.get("code") or {}
    code_dir = run_dir / "code"
    entrypoint = str(code_dir / code_spec.get("entrypoint", "main.py"))
    workdir = record.get("workdir") or str(code_dir)
    try:
        os.chdir(workdir)
    except OSError as error:
        _die(f"cannot change to the run's workdir {workdir!r}: {error.strerror}", 2)
    sys.path[:1] = [str(code_dir), workdir]
    sys.argv = [entrypoint, *[str(a) for a in code_spec.get("args") or []]]
    try:
        init_globals = _load_pushed(code_dir)
    except Exception as error:
        _die(f"cannot load the values pushed with the code (code/pushed.pkl): {error!r}", 1)

    if code_spec.get("language") == "function":
        code = _run_function(run_dir)
    elif code_spec.get("language") == "ipython":
        code = _run_ipython(entrypoint, init_globals, run_dir)
    else:
        code = _run_python(entrypoint, init_globals, run_dir, returns=bool(code_spec.get("returns")))
    _finish(code)


if __name__ == "__main__":
    main()
