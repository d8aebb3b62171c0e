"""Shared fixtures. Keep additions independent of each other (several modules' tests use them)."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

# Bytecode caches on, for this process and every one the tests start: with
# PYTHONDONTWRITEBYTECODE set (as on some CI images) the editable package and the tests were
# compiled again by every replica, supervisor, CLI call and kernel (1.3 s more per process
# that imports the supervisor), and each xdist worker rewrote every test module again.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    sys.dont_write_bytecode = False

#: What points a Kubernetes client at a cluster (or at our settings for one). A test that needs a
#: cluster starts its own (`tests/kubernetes_support.py`) and sets these itself.
KUBERNETES_ENVIRONMENT = ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "PX_K8S_")
#: The same for Slurm: which cluster the Slurm commands talk to, and our settings for it. A test
#: that needs Slurm starts its own cluster (`tests/slurm_support.py`) and sets these itself.
SLURM_ENVIRONMENT = ("SLURM_", "PX_SLURM_")


#: The slow lanes (markers in pyproject.toml). A test in one of them is also `slow`; a test that
#: uses the `kube` fixture (tests/kubernetes_support.py) is in the `kube` lane without saying so.
SLOW_LANES = ("jobs", "kube", "browser", "tensorboard", "slurm", "ssh")


#: Modules whose real jobs (`jobs`) run twice, cold and warm (`launch`): the local backend's
#: guarantees (logs, metrics, limits and OOM, exit codes, restarts, stop, ownership, reads that
#: never act) must hold for replicas forked from a template as for those started cold.
LAUNCH_MODULES = (
    "test_local_backend",
    "test_local_faults",
    "test_local_limits",
    "test_local_reconcile",
    "test_reads_never_act",
    "test_cli_runs",
    "test_warm",
    "test_functions",
    "test_stacks",
    "test_system_metrics",
    "test_resume",
    "test_collective_timeout",
    "test_elastic_workers",
    "test_stop_keeps_metrics",
)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The `jobs` tests of LAUNCH_MODULES (which use the `launch` fixture) run cold and warm,
    but for those marked `cold_only` or `warm_only`."""
    if "launch" not in metafunc.fixturenames or not metafunc.definition.get_closest_marker("jobs"):
        return
    if metafunc.module.__name__ not in LAUNCH_MODULES:
        return
    if metafunc.definition.get_closest_marker("cold_only"):
        modes = ["cold"]
    elif metafunc.definition.get_closest_marker("warm_only"):
        modes = ["warm"]
    else:
        modes = ["cold", "warm"]
    metafunc.parametrize("launch", modes, indirect=True)


@pytest.fixture(autouse=True, scope="session")
def _warm_templates_of_this_session(tmp_path_factory) -> Iterator[None]:
    """Local runs start warm, as a user's do (the local backend's default): templates live in
    this session's own directory and are stopped when the session ends, so none outlives the
    tests. The `launch` fixture runs a test cold, or warm once its template is ready."""
    directory = tmp_path_factory.mktemp("warm")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PX_WARM_DIR", str(directory))
        patch.setenv("JUPYTER_PX_WARM", "1")
        patch.delenv("JUPYTER_PX_WARM_IDLE_S", raising=False)
        patch.delenv("JUPYTER_PX_WARM_WAIT_S", raising=False)
        patch.delenv("PX_LOCAL_CONFIG", raising=False)
        try:
            yield
        finally:
            from jupyter_px.backends.local import warm

            warm.stop_all("the test session ended")


@pytest.fixture
def launch(request, monkeypatch) -> Iterator[str]:
    """`cold` or `warm`: how the local backend starts this test's runs. A warm round starts the
    templates it needs first (once per session) and checks afterwards that its runs were warm."""
    mode = getattr(request, "param", "cold")
    if mode == "warm":
        from warm_support import ensure_templates

        monkeypatch.setenv("JUPYTER_PX_WARM", "1")
        # a submit whose environment another fixture changed (a Jupyter server's PYTHONPATH)
        # finds the template restarting: it waits for it rather than starting cold
        monkeypatch.setenv("JUPYTER_PX_WARM_WAIT_S", "300")
        ensure_templates()
    else:
        monkeypatch.setenv("JUPYTER_PX_WARM", "0")
    yield mode
    if mode == "warm" and os.environ.get("PX_HOME"):
        from warm_support import assert_started_warm

        assert_started_warm(Path(os.environ["PX_HOME"]))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "kube" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.kube)
        if "slurm_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slurm)
        if "ssh_hosts" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ssh)
        if any(item.get_closest_marker(lane) for lane in SLOW_LANES):
            item.add_marker(pytest.mark.slow)
    items[:] = _heaviest_modules_first(items)


#: About how long one test of each slow lane takes on a loaded two-core machine (seconds): the
#: estimate of a file that `DURATIONS` does not hold yet.
LANE_SECONDS = {"browser": 30.0, "kube": 20.0, "slurm": 20.0, "ssh": 20.0, "jobs": 10.0, "tensorboard": 10.0}
#: Each file's time in a CI run (`.ci/suite_time.py --write-durations`).
DURATIONS = Path(__file__).with_name("durations.json")


def _heaviest_modules_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The test modules in order of their time, longest first (each module's tests together and
    in their own order): xdist's `loadfile` hands out modules in collection order (addopts turns
    off its own reordering, by test count, which put a 6-minute file of 5 tests last), and with
    the slow ones last one worker ran them alone for the last minutes while the others had
    nothing left. A file's time is the one recorded in a CI run; a new file's, its lanes'."""
    recorded = json.loads(DURATIONS.read_text())["seconds"] if DURATIONS.exists() else {}
    estimate: dict[str, float] = {}
    for item in items:
        lanes = [LANE_SECONDS[lane] for lane in LANE_SECONDS if item.get_closest_marker(lane)]
        path = item.nodeid.split("::")[0]
        estimate[path] = estimate.get(path, 0.0) + max(lanes, default=0.05)
    weight = {path: recorded.get(path, seconds) for path, seconds in estimate.items()}
    return sorted(items, key=lambda item: -weight[item.nodeid.split("::")[0]])


@pytest.fixture(autouse=True, scope="session")
def _no_outside_cluster(tmp_path_factory) -> Iterator[None]:
    """No test reads the user's kubeconfig, in-cluster service account or jupyter-px Kubernetes
    settings, or reaches a cluster it did not start: for the whole session (servers and kernels
    started by module-scoped fixtures inherit it too), KUBECONFIG names a file that does not
    exist and every PX_K8S_* variable is unset, PX_K8S_CONFIG pointing nowhere. Likewise for
    Slurm: SLURM_CONF and PX_SLURM_CONFIG name files that do not exist, no SLURM_* or PX_SLURM_*
    variable of the caller's (an allocation it runs in) is kept."""
    nowhere = tmp_path_factory.mktemp("no-cluster")
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith(KUBERNETES_ENVIRONMENT):
                patch.delenv(name)
        patch.setenv("KUBECONFIG", str(nowhere / "kubeconfig"))
        patch.setenv("PX_K8S_CONFIG", str(nowhere / "kubernetes.yaml"))
        for name in list(os.environ):
            if name.startswith(SLURM_ENVIRONMENT):
                patch.delenv(name)
        patch.setenv("SLURM_CONF", str(nowhere / "slurm.conf"))
        patch.setenv("PX_SLURM_CONFIG", str(nowhere / "slurm.yaml"))
        for name in list(os.environ):  # and for the SSH backend's hosts: the tests start their own
            if name.startswith("PX_SSH_"):
                patch.delenv(name)
        patch.setenv("PX_SSH_CONFIG", str(nowhere / "ssh.yaml"))
        yield


#: Where Jupyter, JupyterLab and IPython read a user's settings and write their state. Every test
#: session gets its own empty folders for them, so nothing a user chose (a Dark theme in
#: `~/.jupyter/lab/user-settings`, an IPython profile) changes a result, and no test writes there.
JUPYTER_LOCATIONS = (
    "JUPYTER_CONFIG_DIR",
    "JUPYTERLAB_SETTINGS_DIR",
    "JUPYTER_DATA_DIR",
    "JUPYTER_RUNTIME_DIR",
    "IPYTHONDIR",
)


@pytest.fixture(autouse=True, scope="session")
def _no_user_jupyter_settings(tmp_path_factory) -> Iterator[None]:
    """Point every Jupyter location at this session's own folders (as KUBECONFIG is above).

    The installed environment's own folders (`sys.prefix/etc/jupyter`, `share/jupyter`, where the
    server extension is enabled and the lab extension lives) stay on Jupyter's search paths: only
    the user-level ones move. Servers, kernels and TensorBoards started by fixtures inherit it."""
    own = tmp_path_factory.mktemp("jupyter-user")
    with pytest.MonkeyPatch.context() as patch:
        for name in JUPYTER_LOCATIONS:
            folder = own / name.lower()
            folder.mkdir()
            patch.setenv(name, str(folder))
        yield


@pytest.fixture(autouse=True)
def _no_server_environment(monkeypatch):
    """pytest-jupyter runs the Jupyter server in this process, and our extension puts its base URL
    and pid into `os.environ` for the kernels and TensorBoards it starts: without this, one test's
    server would decide the URLs and TensorBoard owners of every later test."""
    for name in ("JUPYTER_PX_BASE_URL", "JUPYTER_PX_SERVER_PID"):
        monkeypatch.delenv(name, raising=False)


#: Who closed a worker's captured sys.stdout / sys.stderr: ("out" or "err") -> (thread, stack).
_CLOSED_BY: dict[str, tuple[str, str]] = {}


def _note_closes(capturing: Any) -> None:
    """Wrap `close` of the capture's files (sys.stdout / sys.stderr are them) so whoever closes
    one is known: its thread and stack."""
    for name in ("out", "err"):
        tmpfile = getattr(getattr(capturing, name, None), "tmpfile", None)
        if tmpfile is None or getattr(tmpfile, "_px_noted", False):
            continue
        original = tmpfile.close

        def close(name: str = name, original: Any = original) -> None:
            stack = "".join(traceback.format_stack(limit=30)[:-1])
            _CLOSED_BY.setdefault(name, (threading.current_thread().name, stack))
            original()

        tmpfile.close, tmpfile._px_noted = close, True


def _absl_writes_to_the_real_stderr() -> None:
    """absl's logging handler (imported in this process with TensorBoard) keeps the `sys.stderr`
    of its import, which is pytest's capture file, and closes that stream whenever logging is
    configured again (every Jupyter server's start calls `dictConfig`, which closes every handler)
    unless it is `sys.stderr` at that moment; under `capsys`, or after a capture was started again,
    it is not, and the worker's capture was closed (absl/logging/__init__.py, `PythonHandler.close`:
    CI's "I/O operation on closed file"). Pointed at `sys.__stderr__`, which absl never closes and
    pytest's fd capture still takes in (tests/test_suite_capture.py)."""
    absl_logging = sys.modules.get("absl.logging")
    handler = absl_logging.get_absl_handler() if absl_logging is not None else None
    if handler is not None and handler.python_handler.stream is not sys.__stderr__:
        handler.python_handler.stream = sys.__stderr__


def _reopen_closed_capture(item: pytest.Item) -> None:
    """Where something closed this worker's captured sys.stdout or sys.stderr (something did in
    3 CI runs of 6, never on a developer's machine), start the capture again and say
    who closed it, as a warning on the test under way: otherwise every later test of the worker
    fails with "I/O operation on closed file" (pytest captures a worker's output in one file for
    the whole session), and the test under way, which rarely is the culprit, is not failed for it."""
    capman = item.config.pluginmanager.getplugin("capturemanager")
    capturing = getattr(capman, "_global_capturing", None)
    closed = [
        name
        for name in ("out", "err")
        if getattr(getattr(getattr(capturing, name, None), "tmpfile", None), "closed", False)
    ]
    if closed:
        with contextlib.suppress(Exception):
            capturing.stop_capturing()
        capman._global_capturing = None
        capman.start_global_capturing()
        who = "; ".join(
            f"sys.std{name} by thread {_CLOSED_BY[name][0]} at:\n{_CLOSED_BY[name][1]}"
            if name in _CLOSED_BY
            else f"sys.std{name} by a close this test cannot see (C code, or before it was watched)"
            for name in closed
        )
        _CLOSED_BY.clear()
        warnings.warn(
            pytest.PytestWarning(f"the worker's captured output was closed, and is captured again: {who}"), stacklevel=2
        )
    _note_closes(capman._global_capturing)


# inside pytest's capture of each phase (trylast: called after it, so run within it), so the
# capture is whole again before pytest reads what the phase printed
@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_setup(item: pytest.Item):
    _absl_writes_to_the_real_stderr()
    try:
        return (yield)
    finally:
        _reopen_closed_capture(item)


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_call(item: pytest.Item):
    try:
        return (yield)
    finally:
        _absl_writes_to_the_real_stderr()  # imported by the test, before its fixtures' teardown
        _reopen_closed_capture(item)


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item: pytest.Item):
    try:
        return (yield)
    finally:
        _reopen_closed_capture(item)


_CPU_BEGAN = pytest.StashKey[tuple[float, float]]()


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem):
    item.stash[_CPU_BEGAN] = (time.process_time(), _children_cpu_s())
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """The CPU a test used in the worker's own process, all its threads (the in-process simulated
    cluster, Jupyter servers, nbclient, the test's polls), as the JUnit property `worker_cpu_s`:
    .ci/cpu_profile.py sees the workers only as a whole, `.ci/suite_time.py` says which tests.
    Beside it, `children_cpu_s`: the CPU of the processes the worker started and reaped during the
    test (the simulated kubelet's containers, CLI calls, kernels), which cpu_profile.py cannot
    place by their environment (a pod's is its own); a long-lived one (a template, a module's
    server) counts whole for the test that reaps it."""
    if call.when == "teardown" and _CPU_BEGAN in item.stash:
        own, children = item.stash[_CPU_BEGAN]
        item.user_properties.append(("worker_cpu_s", round(time.process_time() - own, 2)))
        item.user_properties.append(("children_cpu_s", round(_children_cpu_s() - children, 2)))
    return (yield)


@pytest.fixture(autouse=True)
def _no_monitor_outlives_its_test():
    """A monitor a test started keeps updating until its run ends; one left polling would draw
    into a later test's captured output (IPython's `capture_output` takes every display of the
    process). Stopped after each test, as `%unload_ext jupyter_px` stops them."""
    yield
    live = sys.modules.get("jupyter_px.widgets.live_updates")
    if live is not None:
        live.stop_all()


def make_replica_folders(paths, role: str, index: int) -> None:
    """The folders a run's submission and its backend make before a replica starts (tracking
    writes into them and never makes a run's folders itself): for replicas started by hand."""
    for folder in (paths.root, paths.metrics_dir, paths.params_dir, paths.outputs_dir, paths.tensorboard_dir):
        folder.mkdir(parents=True, exist_ok=True)
    paths.tensorboard(role, index).mkdir(exist_ok=True)


@pytest.fixture
def px_home(tmp_path, monkeypatch) -> Path:
    """A private run store: PX_HOME points at a fresh temporary directory."""
    home = tmp_path / "px_home"
    home.mkdir()
    monkeypatch.setenv("PX_HOME", str(home))
    return home


def make_synthetic_run(
    home: Path,
    run_id: str,
    topology: dict,
    *,
    state: str = "Running",
    replica_states: dict[str, str] | None = None,
    log_lines: int = 10,
    metric_points: int = 0,
    total_steps: int | None = None,
) -> Path:
    """A run directory as a backend would leave it (record, status, logs, metrics JSONL),
    without starting anything: for widgets and magics that only read the store."""
    from jupyter_px.runstore import ReplicaStatus, RunRecord, RunStatus, RunStore
    from jupyter_px.topology import parse_topology, to_dict

    store = RunStore(home)
    topo = parse_topology(topology)
    paths = store.create(RunRecord(run_id=run_id, backend="local", topology=to_dict(topo)), {"main.py": "pass\n"})
    now = time.time()
    replicas = []
    for spec in topo.replicas():
        replica_state = (replica_states or {}).get(
            spec.key, state if state in ("Running", "Succeeded", "Failed") else "Pending"
        )
        replicas.append(
            ReplicaStatus(
                role=spec.role,
                index=spec.index,
                state=replica_state,
                exit_code=0 if replica_state == "Succeeded" else (1 if replica_state == "Failed" else None),
            )
        )
        if log_lines:
            paths.log(spec.role, spec.index).write_text("".join(f"{spec.key} line {i}\n" for i in range(log_lines)))
        if metric_points:
            write_metrics(paths.metrics(spec.role, spec.index), range(metric_points), total_steps)
    finished = state in ("Succeeded", "Failed", "Stopped", "Lost")
    store.write_status(
        RunStatus(
            run_id=run_id, state=state, started_at=now - 10, finished_at=now if finished else None, replicas=replicas
        )
    )
    return paths.root


def write_metrics(
    path: Path, steps: Iterable[int], total_steps: int | None = None, start_time: float | None = None
) -> None:
    """Append tracking-style JSONL lines (one per step, a `loss` and an `acc`)."""
    start_time = start_time or time.time()
    with open(path, "a") as handle:
        for step in steps:
            record = {
                "step": step,
                "time": start_time + step * 0.01,
                "metrics": {"loss": 1.0 / (step + 1), "acc": step / 1000},
            }
            if total_steps:
                record["total_steps"] = total_steps
            handle.write(json.dumps(record) + "\n")


@pytest.fixture
def synthetic_run(px_home):
    """Factory: `synthetic_run("run-id", topology_dict, state=..., metric_points=...)`."""

    def make(run_id: str, topology: dict, **kwargs) -> Path:
        return make_synthetic_run(px_home, run_id, topology, **kwargs)

    return make
