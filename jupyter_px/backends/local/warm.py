"""Warm replicas on the local backend: which runs start warm, and the templates' lifecycle.

A warm run's supervisor and replicas are forked from a template process that has already
imported the framework and the replica runner (`jupyter_px.forkserver`), so a second run of a
cell skips four interpreter starts and four imports of torch. Everything else is the cold path's:
the same supervisor, the same runner `main()`, the same logs, limits and stops.

**Which runs.** PyTorch runs and runs without a framework, unless the run asked for `--cold`,
the settings say `warm: false` (`settings.py`), or one of these holds (the run starts cold and
its status says why, `RunStatus.launch`):

* TensorFlow: not fork-safe once imported (its runtime's thread pools and gRPC must start in the
  process that uses them); MXNet: its engine starts threads (not checked here: not installed);
  Horovod/MPI: the ranks are started by `mpirun`, which a fork cannot stand in for.
* `processes_per_replica > 1`: each replica starts its own ranks.
* a run submitted from inside a replica of another run (its template would be that run's to kill).

**One template per environment (`sys.prefix`) + framework** (`key`), checked against the **environment
fingerprint** at every submit: the interpreter, the framework's preload, the mtime of every
site-packages directory (any install or removal changes it), this package's own files, and the
variables read when an interpreter or a framework starts (PYTHON*, LD_*, OMP_*, MKL_*, TORCH_*...).
A template whose fingerprint differs is stopped and a new one started.

**Lifecycle.** The first run that can use one starts the template (`jupyter_px.processes.detached`, its
own session) and itself starts cold; later runs are warm once it is ready (`jupyter px warm
start` starts one and waits). The template belongs to the Jupyter server that the starting
process belongs to (`$JUPYTER_PX_SERVER_PID`, set for its kernels) and ends with it; otherwise it
is detached and ends on its own. Either way it stops after `warm_idle_s` (600 s,
`$JUPYTER_PX_WARM_IDLE_S`) without a start. Its state (`<key>.json`) and log are in
`$JUPYTER_PX_WARM_DIR` (default `$PX_HOME/warm`), which `jupyter px warm` reads.

**Failing is a cold start.** A template that cannot start (an import fails), cannot be reached,
or refuses: the run starts cold, the reason is in its status, and it is said once (a warning,
and `noticed` in the state file, so each failure is reported by the first process to meet it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...forkserver.client import StartedOwner, TemplateHung, TemplateUnavailable, ask
from ...forkserver.client import start as start_through_template
from ...processes import detached, file_lock
from ...runstore import RunRecord, px_home
from ...topology import Topology
from ..preload import BASE_PRELOAD, COLD_FRAMEWORKS, FRAMEWORK_PRELOAD, POOL_OPTIONAL, POOL_PRELOAD
from .config import SUPERVISOR_MODULE, TUNABLES
from .fingerprint import changed_facts, environment_facts, environment_fingerprint
from .settings import LocalSettings

log = logging.getLogger(__name__)

TEMPLATE_MODULE = "jupyter_px.forkserver.template"
WARM_DIR_ENV = "JUPYTER_PX_WARM_DIR"
SERVER_PID_ENV = "JUPYTER_PX_SERVER_PID"

#: The standby owner imports the supervisor ahead of need. This package's modules read these
#: variables at import (`config.py`, `capacity.py`): a run whose environment gives them other
#: values than the template's has them imported again (`REIMPORT`).
STANDBY_IMPORTS = (SUPERVISOR_MODULE,)
REIMPORT = {"vars": [*TUNABLES, "PX_MAX_LOCAL_PROCESSES"], "modules": ["jupyter_px.backends.local"]}
SUPERVISOR_ENTRY = f"{SUPERVISOR_MODULE}:main"

#: Seconds a `start` waits for a template to be ready.
READY_TIMEOUT_S = 120.0
#: A socket path longer than this does not fit `sockaddr_un` (108 bytes with its terminator).
_MAX_SOCKET_PATH = 100

_said: set[str] = set()


def warm_dir() -> Path:
    return Path(os.environ.get(WARM_DIR_ENV) or px_home() / "warm").expanduser()


def template_key(framework: str | None) -> str:
    """`pytorch-1a2b3c4d5e`: the framework and this environment (`sys.prefix`: two virtual
    environments made from one base interpreter share its real path, and would take turns
    stopping each other's template) and interpreter."""
    where = f"{os.path.realpath(sys.prefix)}\0{os.path.realpath(sys.executable)}"
    return f"{framework or 'python'}-{hashlib.sha256(where.encode()).hexdigest()[:10]}"


def preload(framework: str | None) -> list[str]:
    return [*BASE_PRELOAD, *FRAMEWORK_PRELOAD[framework]]


def _imported(framework: str | None) -> list[str]:
    """What a template and its spawn-ahead pool (`POOL_PRELOAD`) may import."""
    return [*preload(framework), *POOL_PRELOAD.get(framework, ()), *POOL_OPTIONAL.get(framework, ())]


def fingerprint(framework: str | None, env: Mapping[str, str]) -> str:
    """What a template must have been started with to serve a run in `env` (`fingerprint.py`)."""
    return environment_fingerprint(_imported(framework), env)


def fingerprint_facts(framework: str | None, env: Mapping[str, str]) -> dict[str, Any]:
    return environment_facts(_imported(framework), env)


def pool_hint_path(key: str) -> Path:
    """What the next spawn-ahead pool of template `key` is made of (`spawn_ahead.py` writes it)."""
    return warm_dir() / f"{key}.pool-hint"  # not `.json`: that names a template's state


def socket_path(directory: Path, key: str) -> str:
    beside = directory / f"{key}.sock"
    if len(str(beside)) <= _MAX_SOCKET_PATH:
        return str(beside)
    digest = hashlib.sha256(str(directory).encode()).hexdigest()[:12]
    return f"/tmp/jupyter-px-{os.getuid()}/{digest}-{key}.sock"


# ---- state --------------------------------------------------------------------------------------


def _state_path(key: str) -> Path:
    return warm_dir() / f"{key}.json"


def read_state(key: str) -> dict[str, Any] | None:
    try:
        state = json.loads(_state_path(key).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _write_state(key: str, state: Mapping[str, Any]) -> None:
    path = _state_path(key)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(dict(state), indent=1))
    os.replace(tmp, path)


def _update_state(key: str, **fields: Any) -> None:
    state = read_state(key) or {}
    state.update(fields)
    _write_state(key, state)


def _identity(state: Mapping[str, Any]) -> detached.ProcessIdentity:
    return detached.ProcessIdentity(int(state.get("pid") or 0), state.get("started_at"))


def alive(state: Mapping[str, Any] | None) -> bool:
    return state is not None and state.get("state") in ("starting", "ready") and _identity(state).alive()


@contextlib.contextmanager
def _locked(key: str) -> Iterator[None]:
    """One process at a time decides about a template (two submits must not start two)."""
    directory = warm_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    with file_lock.locked(directory / f"{key}.lock"):
        yield


def _say_once(key: str, text: str) -> None:
    """A failure, said once: by the first process that meets it (the state file remembers)."""
    state = read_state(key) or {}
    if text in _said or state.get("noticed") == text:
        return
    _said.add(text)
    with contextlib.suppress(OSError):
        _update_state(key, noticed=text)
    log.warning("jupyter_px: %s", text)


# ---- choosing and starting ----------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """How a run starts: warm through the template in `state`, or cold, and why (`launch`)."""

    launch: str
    key: str | None = None
    state: dict[str, Any] | None = None

    @property
    def warm(self) -> bool:
        return self.state is not None


def cold_reason(record: RunRecord, topology: Topology, settings: LocalSettings) -> str | None:
    """Why this run starts cold whatever the template does, or None."""
    if record.cold:
        return "asked for (--cold)"
    if not settings.warm:
        return f"warm starts are off ({settings.warm_source})"
    framework = topology.framework
    if framework in COLD_FRAMEWORKS:
        return COLD_FRAMEWORKS[framework]
    if framework not in FRAMEWORK_PRELOAD:
        return f"framework {framework!r} has no template"
    if topology.environment.processes_per_replica > 1:
        return "processes_per_replica > 1: each replica starts its own ranks"
    if os.environ.get("PX_RUN_ID"):
        return f"submitted from inside run {os.environ['PX_RUN_ID']}, whose processes are that run's to stop"
    return None


def plan(record: RunRecord, topology: Topology, env: Mapping[str, str], settings: LocalSettings) -> Plan:
    """Warm through a ready template whose fingerprint matches; else cold, saying why (and
    starting or restarting the template for the runs after this one). With `warm_wait_s`, a
    template that is starting is waited for that long instead."""
    reason = cold_reason(record, topology, settings)
    if reason is not None:
        return Plan(f"cold: {reason}")
    chosen = _plan(topology.framework, env, settings)
    if chosen.warm or chosen.key is None or settings.warm_wait_s <= 0 or "failed" in chosen.launch:
        return chosen
    deadline = time.monotonic() + settings.warm_wait_s
    while time.monotonic() < deadline:
        state = read_state(chosen.key)
        if state is None or not alive(state):
            break
        if state.get("state") == "ready":
            return Plan(f"warm (template pid {state['pid']}, waited for it to start)", chosen.key, state)
        time.sleep(0.05)
    return chosen


def _plan(framework: str | None, env: Mapping[str, str], settings: LocalSettings) -> Plan:
    key = template_key(framework)
    wanted = fingerprint(framework, env)
    with _locked(key):
        state = read_state(key)
        if alive(state) and state is not None and state.get("fingerprint") != wanted:
            what = changed_facts(state.get("facts"), fingerprint_facts(framework, env))
            stop_template(key, f"the environment changed ({what})")
            _start_template(key, framework, env, wanted, settings)
            return Plan(
                f"cold: the environment changed since the template started ({what}); a new one is starting", key
            )
        if alive(state) and state is not None:
            if state.get("state") == "ready":
                return Plan(f"warm (template pid {state['pid']})", key, state)
            return Plan(f"cold: the template (pid {state['pid']}) is still starting", key)
        if state is not None and state.get("state") == "failed" and state.get("fingerprint") == wanted:
            text = f"warm start unavailable, starting cold: {state.get('error')} (see {warm_dir() / (key + '.log')})"
            _say_once(key, text)
            return Plan(f"cold: the template failed: {state.get('error')}", key)
        _start_template(key, framework, env, wanted, settings)
        return Plan("cold: the template is starting (first use); later runs start warm", key)


def start_supervisor(chosen: Plan, run_dir: Path, env: Mapping[str, str]) -> StartedOwner:
    """The run's supervisor, forked from the template's standby (TemplateUnavailable: start cold)."""
    assert chosen.state is not None
    return start_through_template(
        chosen.state["socket"],
        SUPERVISOR_ENTRY,
        [str(run_dir)],
        argv0=str(Path(__file__).with_name("supervisor.py")),
        log_path=run_dir / "supervisor.log",
        cwd=run_dir,
        env=env,
        fingerprint=chosen.state["fingerprint"],
        reimport=REIMPORT,
    )


def fell_back(chosen: Plan, error: TemplateUnavailable, env: Mapping[str, str], settings: LocalSettings) -> Plan:
    """A warm start that failed: the run starts cold. A template that did not answer in time
    (stopped, hung) is killed and a new one started at once, so the next run is warm again;
    one that refused is recorded failed (a later submit or `jupyter px warm start` starts
    another), said once."""
    assert chosen.key is not None and chosen.state is not None
    reason = str(error)
    if isinstance(error, TemplateHung):
        return _replace_hung(chosen.key, chosen.state, reason, env, settings)
    if chosen.state is not None and _identity(chosen.state).alive():
        stop_template(chosen.key, f"a start through it failed: {reason}")
    with contextlib.suppress(OSError):
        _update_state(chosen.key, state="failed", error=reason, stopped_at=time.time())
    _say_once(chosen.key, f"warm start failed, starting cold: {reason}")
    return Plan(f"cold: the warm start failed: {reason}", chosen.key)


def _replace_hung(
    key: str, state: Mapping[str, Any], reason: str, env: Mapping[str, str], settings: LocalSettings
) -> Plan:
    """Kill the template that did not answer (SIGKILL: a stopped process handles no SIGTERM; its
    standby and zygote end with it by their parent-death signal) and start another."""
    identity = _identity(state)
    if identity.alive():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(identity.pid, 9)
    with _locked(key):
        current = read_state(key)
        if current is not None and current.get("pid") == state.get("pid"):
            _update_state(key, state="stopped", stopped_at=time.time(), stop_reason=f"it hung: {reason}")
            framework = state.get("framework")
            _start_template(key, framework, env, fingerprint(framework, env), settings)
    log.warning(
        "jupyter_px: the %s template (pid %s) hung (%s): replaced; this run starts cold", key, state.get("pid"), reason
    )
    return Plan(f"cold: the template (pid {state.get('pid')}) hung ({reason}); a new one is starting", key)


def _owner() -> detached.ProcessIdentity | None:
    """The Jupyter server the template ends with: this process's (a kernel's, or the server
    itself), else none (a detached template, ended by its idle time)."""
    text = os.environ.get(SERVER_PID_ENV, "")
    if not text.isdigit():
        return None
    try:
        return detached.ProcessIdentity.of(int(text))
    except Exception:
        return None


def _start_template(
    key: str, framework: str | None, env: Mapping[str, str], wanted: str, settings: LocalSettings
) -> dict[str, Any]:
    """Start a template (the caller holds the lock); its state says `starting` until it is ready."""
    directory = warm_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    sock = socket_path(directory, key)
    Path(sock).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    owner = _owner()
    args = [
        str(_state_path(key)),
        sock,
        "--fingerprint",
        wanted,
        "--idle",
        repr(settings.warm_idle_s),
        "--preload",
        ",".join(preload(framework)),
        "--standby-import",
        ",".join(STANDBY_IMPORTS),
    ]
    if owner is not None:
        args += ["--owner-pid", str(owner.pid), "--owner-started", repr(owner.started_at)]
    if framework in POOL_PRELOAD:  # replicas from interpreters spawned ahead, not forked
        pool_log = str(directory / f"{key}.pool.log")
        args += ["--pool-imports", ",".join(POOL_PRELOAD[framework]), "--pool-hint", str(pool_hint_path(key))]
        args += ["--pool-log", pool_log]
    template_env = {k: v for k, v in env.items() if k != SERVER_PID_ENV}
    log_path = directory / f"{key}.log"
    with detached.start(TEMPLATE_MODULE, args, log_path=log_path, cwd=directory, env=template_env) as child:
        state = {
            "key": key,
            "framework": framework,
            "python": sys.executable,
            "fingerprint": wanted,
            "state": "starting",
            "pid": child.pid,
            "started_at": child.identity.started_at,
            "socket": sock,
            "log": str(log_path),
            "idle_s": settings.warm_idle_s,
            "owner": {"kind": "server", "pid": owner.pid, "started_at": owner.started_at}
            if owner
            else {"kind": "detached"},
            "preload": preload(framework),
            "facts": fingerprint_facts(framework, env),
        }
        _write_state(key, state)
        child.go()
    log.info("started the %s template (pid %d)", key, child.pid)
    return state


def stop_template(key: str, reason: str, timeout: float = 10.0) -> bool:
    """Ask a template to stop and wait until it has; whether one was running."""
    state = read_state(key)
    if not alive(state) or state is None:
        return False
    identity = _identity(state)
    try:
        ask(state["socket"], "stop", reason=reason)
    except TemplateUnavailable:
        detached.request_stop(identity)
    deadline = time.monotonic() + timeout
    while identity.alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if identity.alive():
        detached.terminate(identity)
    if (read_state(key) or {}).get("state") != "stopped":
        _update_state(key, state="stopped", stopped_at=time.time(), stop_reason=reason)
    return True


# ---- what `jupyter px warm` does ---------------------------------------------------------------


def start(framework: str | None, env: Mapping[str, str], settings: LocalSettings, timeout: float = READY_TIMEOUT_S):
    """Start (or keep) the template for `framework` and wait until it is ready; its state.
    RuntimeError naming the reason when it cannot start."""
    if framework in COLD_FRAMEWORKS:
        raise RuntimeError(f"{framework} runs start cold: {COLD_FRAMEWORKS[framework]}")
    if framework not in FRAMEWORK_PRELOAD:
        raise RuntimeError(f"framework {framework!r} has no template (known: pytorch, tensorflow, or none)")
    key = template_key(framework)
    wanted = fingerprint(framework, env)
    with _locked(key):
        state = read_state(key)
        if alive(state) and state is not None and state.get("fingerprint") != wanted:
            stop_template(key, "the environment changed (its fingerprint)")
            state = None
        if not alive(state):
            _start_template(key, framework, env, wanted, settings)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = read_state(key) or {}
        if state.get("state") == "ready":
            return state
        if state.get("state") in ("failed", "stopped") or not _identity(state).alive():
            raise RuntimeError(
                f"the {key} template did not start: {state.get('error') or state.get('stop_reason') or 'it exited'} "
                f"(see {state.get('log')})"
            )
        time.sleep(0.05)
    raise RuntimeError(f"the {key} template was not ready within {timeout:g} s (see {warm_dir() / (key + '.log')})")


def _memory(pid: int | None) -> dict[str, float] | None:
    """RSS, USS and PSS of a process in MiB (None when it is gone)."""
    if not pid:
        return None
    import psutil

    try:
        info = psutil.Process(pid).memory_full_info()
    except (psutil.Error, OSError):
        return None
    return {
        "rss_mib": round(info.rss / 2**20, 1),
        "uss_mib": round(info.uss / 2**20, 1),
        "pss_mib": round(getattr(info, "pss", 0) / 2**20, 1),
    }


def templates() -> list[dict[str, Any]]:
    """Every template this warm directory knows, newest first: its state, whether it runs, and
    for a running one its memory and its standby owner's (a pure read: nothing is started)."""
    found = []
    directory = warm_dir()
    for path in sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime if p.exists() else 0.0, reverse=True):
        state = read_state(path.stem)
        if state is None or "key" not in state:
            continue
        running = alive(state)
        entry = {**{k: v for k, v in state.items() if k != "preloaded"}, "running": running}
        entry["preloaded_count"] = len(state.get("preloaded") or [])
        if running:
            entry["memory"] = _memory(state.get("pid"))
            try:
                live = ask(state["socket"], "status", timeout=2.0)
            except TemplateUnavailable:
                live = {}
            standby = live.get("standby_pid")
            entry["standby_pid"] = standby
            entry["active_owners"] = live.get("owners", [])
            entry["standby_memory"] = _memory(standby)
            if live.get("pool") is not None:  # a spawn-ahead pool's hint (`templates.py` adds its interpreters)
                entry["pool"] = live["pool"]
            if state.get("state") == "ready" and state.get("idle_s"):
                used = float(live.get("last_used") or state.get("last_used") or state.get("ready_at") or time.time())
                entry["stops_in_s"] = max(0.0, float(state["idle_s"]) - (time.time() - used))
        found.append(entry)
    return found


def stop_all(reason: str = "stopped on request (jupyter px warm stop)") -> list[str]:
    """Stop every running template; the keys of those that were running."""
    stopped = []
    for entry in templates():
        if entry["running"] and stop_template(entry["key"], reason):
            stopped.append(entry["key"])
    return stopped
