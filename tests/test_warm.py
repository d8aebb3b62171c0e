"""Warm replicas: a replica forked from the template is the process a cold start would have made,
nothing of an earlier run reaches a later one, the template never initialises CUDA, and its
lifecycle (start, idle stop, fingerprint restart, its owner's exit, a failed start) is visible.

Real runs throughout: the local backend's supervisor, the template's fork server, the runner.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from local_support import describe, outputs, submit, wait, wait_for
from warm_support import ensure_templates, template_env

from jupyter_px.backends import BackendError
from jupyter_px.backends.local import warm
from jupyter_px.backends.local.settings import load_settings
from jupyter_px.processes.detached import ProcessIdentity

TWO = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}

#: Values of the environment that are a run's own (its id, paths, ports), not a leak.
RUN_SPECIFIC = ("PX_", "MASTER_PORT", "PET_MASTER_PORT")


@pytest.fixture
def warm_on(monkeypatch) -> None:
    monkeypatch.setenv("JUPYTER_PX_WARM", "1")
    ensure_templates()


def _probe(tmp_path: Path, round_no: int, *, cold: bool) -> tuple[object, dict[str, dict]]:
    workdir = tmp_path / f"work{round_no}"
    workdir.mkdir()
    (workdir / "probe_helper.py").write_text("COUNT = 0\n")
    (workdir / "only_in_round_one.py").write_text("LOADED = True\n")
    run = submit("warm_probe.py", TWO, args=[str(round_no)], workdir=workdir, cold=cold)
    status = wait(run)
    assert status.state.value == "Succeeded", describe(run)
    return run, outputs(run)


def _shape(value: str, run) -> str:
    return value.replace(str(run.paths.root), "<run>")


@pytest.mark.jobs
@pytest.mark.parametrize("submitter", ["plain", "ignoring SIGINT and SIGHUP"])
def test_a_warm_replica_is_the_process_a_cold_start_makes_and_nothing_of_an_earlier_run_leaks(
    px_home, tmp_path, monkeypatch, submitter
):
    """`ignoring SIGINT and SIGHUP`: the submitter is a background job under `nohup` (as `nohup
    jupyter lab &` starts a server): its cold replicas get the default dispositions back before
    their exec, and its template's forks must get them too (they kept the template's ignored ones)."""
    # a template of this test's own, started with a variable the runs do not have: not theirs either
    monkeypatch.setenv("JUPYTER_PX_WARM_DIR", str(tmp_path / "warm"))
    monkeypatch.setenv("JUPYTER_PX_WARM", "1")
    monkeypatch.setenv("PROBE_TEMPLATE_ONLY", "the template's")
    ignored = (signal.SIGINT, signal.SIGHUP) if submitter != "plain" else ()
    before = {signum: signal.signal(signum, signal.SIG_IGN) for signum in ignored}
    try:
        try:
            ensure_templates()
        finally:
            monkeypatch.delenv("PROBE_TEMPLATE_ONLY")
        _compare_cold_and_warm(tmp_path)
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
        warm.stop_all("the test ended")


def _compare_cold_and_warm(tmp_path: Path) -> None:
    cold_run, cold = _probe(tmp_path, 0, cold=True)
    first_run, first = _probe(tmp_path, 1, cold=False)
    second_run, second = _probe(tmp_path, 2, cold=False)
    assert cold_run.status().launch == "cold: asked for (--cold)"
    for run in (first_run, second_run):
        assert run.status().launch.startswith("warm (template pid"), describe(run)
    state = warm.read_state(warm.template_key("pytorch"))
    assert state is not None
    preloaded = set(state["preloaded"])
    assert {"torch", "jupyter_px.runner", "cloudpickle"} <= preloaded

    for key in ("master-0", "worker-0"):
        c, w1, w2 = cold[key], first[key], second[key]
        assert not c["torch_at_start"] and w1["torch_at_start"] and w2["torch_at_start"]  # really forked warm
        for w, run in ((w1, first_run), (w2, second_run)):
            # environment: the same variables, the same values but for the run's own ids and ports
            assert set(w["env"]) == set(c["env"]), set(w["env"]) ^ set(c["env"])
            differ = {k for k in c["env"] if w["env"][k] != c["env"][k] and not k.startswith(RUN_SPECIFIC)}
            assert not differ, {k: (c["env"][k], w["env"][k]) for k in differ}
            assert "PROBE_LEAK" not in w["env"] and "PROBE_TEMPLATE_ONLY" not in w["env"]
            # working directory, argv, sys.path as the runner sets them for this run
            assert w["cwd"] == str(run.record.workdir) and w["argv"][1:] == [str(w["round"])]
            assert w["path"] == [str(run.paths.code_dir), str(run.record.workdir)]
            # open files: stdin /dev/null, stdout and stderr the replica's log, nothing else
            assert {fd: _shape(t, run) for fd, t in w["fds"].items()} == {
                fd: _shape(t, cold_run) for fd, t in c["fds"].items()
            }
            # ...and the file its stacks are dumped into on request (`stack_signal`), kept open
            assert sorted(w["fds"]) == ["0", "1", "2", "3"] and _shape(w["fds"]["3"], run).startswith("<run>/stacks/")
            # signals: a fresh interpreter's dispositions, nothing blocked, the same parent-death signal
            assert w["handlers"] == c["handlers"] and w["handlers"]["SIGUSR1"] == str(signal.SIG_DFL)
            assert (w["blocked"], w["ignored"]) == (c["blocked"], c["ignored"])
            assert w["parent_death_signal"] == c["parent_death_signal"] != 0
            # its own process group, a child of the run's supervisor, the submitter's umask
            assert w["pgid"] == w["pid"] and c["pgid"] == c["pid"]
            assert w["ppid"] == run.status().owner.pid
            assert w["umask"] == c["umask"]
            # modules: beyond what the template preloaded, only what a cold start had imported too
            assert set(w["modules_at_start"]) - preloaded <= set(c["modules_at_start"])
            assert "only_in_round_one" not in w["modules_at_start"] and "probe_helper" not in w["modules_at_start"]
            assert w["helper_count"] == 1  # the user's module starts from its own code, every run
            assert w["torch_threads"] == c["torch_threads"]
            assert not w["cuda_initialized"] and not w["cuda_bad_fork"] and not w["maps_cuda"]
    # no two replicas (or runs) forked from one template share NumPy's random state
    draws = [r[k]["numpy_draw"] for r in (first, second) for k in ("master-0", "worker-0")]
    assert len(set(draws)) == len(draws)


@pytest.mark.jobs
def test_the_template_never_initialises_cuda(px_home, warm_on):
    state = warm.read_state(warm.template_key("pytorch"))
    assert state is not None and state["state"] == "ready"
    for pid in (state["pid"], *[c.pid for c in psutil.Process(state["pid"]).children(recursive=True)]):
        maps = Path(f"/proc/{pid}/maps").read_text()
        assert "libcuda" not in maps and "libnvidia" not in maps, f"pid {pid} mapped a CUDA driver library"
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, torch; print(torch.cuda.is_initialized(), torch.cuda._is_in_bad_fork())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.split() == ["False", "False"]  # the check itself works in a process of this torch


# ---- the guarantees of the cold path, for runs started either way ----------------------------


@pytest.mark.jobs
def test_logs_metrics_and_tensorboard_of_a_run(px_home, launch, tmp_path):
    code = (
        "import os\n"
        "from jupyter_px import tracking\n"
        "me = os.environ['PX_TASK_TYPE'] + '-' + os.environ['PX_TASK_INDEX']\n"
        "for step in range(5):\n"
        "    tracking.log_metrics(step=step, loss=1.0 / (step + 1))\n"
        "print(me, 'logged', flush=True)\n"
    )
    from jupyter_px.api import submit as api_submit

    run = api_submit(code, TWO)
    status = wait(run)
    assert status.state.value == "Succeeded", describe(run)
    assert status.launch.startswith("warm" if launch == "warm" else "cold")
    for role in ("master", "worker"):
        assert f"{role}-0 logged" in run.logs(role, 0)
        lines = run.paths.metrics(role, 0).read_text().splitlines()
        assert [json.loads(line)["step"] for line in lines] == [0, 1, 2, 3, 4]
        events = list(run.paths.tensorboard(role, 0).glob("*tfevents*"))
        assert events and all(e.stat().st_size > 0 for e in events)


@pytest.mark.jobs
def test_a_warm_replica_is_charged_only_for_what_it_adds_to_the_template(px_home, warm_on):
    """The template's ~200 MiB of torch are shared, not the replica's: a replica that allocates
    little succeeds under a limit below the template's size; one that fills memory is OOMKilled."""
    state = warm.read_state(warm.template_key("pytorch"))
    template_rss = psutil.Process(state["pid"]).memory_info().rss / 2**20
    limit = 120
    assert template_rss > limit  # a replica charged for its inherited pages would be killed at once
    topology = {
        "framework": "pytorch",
        "environment": {
            "replicas": {
                "n_masters": 0,
                "n_workers": 1,
                "worker": [{"index": 0, "resources": {"memory": {"requests": 64, "limits": limit}}}],
            }
        },
    }
    small = wait(run := submit("faults.py", topology, args=["exit", "worker-0", "0"]))
    assert small.state.value == "Succeeded" and small.launch.startswith("warm"), describe(run)
    big = wait(run := submit("faults.py", topology, args=["oom", "worker-0"]))
    worker = big.replica("worker", 0)
    assert (worker.state.value, worker.reason) == ("Failed", "OOMKilled"), describe(run)
    assert f"above its memory limit of {limit} MiB" in worker.message


# ---- choosing cold: flags, settings, frameworks -------------------------------------------------


@pytest.mark.jobs
def test_cold_flag_settings_and_frameworks_that_start_cold_say_why(px_home, warm_on, monkeypatch):
    from jupyter_px.api import submit as api_submit

    asked = api_submit("print('hi')\n", TWO, cold=True)
    assert asked.status().launch == "cold: asked for (--cold)"
    (px_home / "local.yaml").write_text("warm: false\n")
    monkeypatch.delenv("JUPYTER_PX_WARM")
    off = api_submit("print('hi')\n", TWO)
    assert off.status().launch == f"cold: warm starts are off (warm: false in {px_home / 'local.yaml'})"
    (px_home / "local.yaml").write_text("warm: maybe\n")
    with pytest.raises(BackendError, match=r"local.yaml: warm: 'maybe' is not true or false"):
        api_submit("print('hi')\n", TWO)
    (px_home / "local.yaml").write_text("warm_idel_s: 5\n")
    with pytest.raises(BackendError, match=r"warm_idel_s: not a setting of the local backend"):
        load_settings()
    (px_home / "local.yaml").unlink()
    monkeypatch.setenv("JUPYTER_PX_WARM", "1")
    ranks = api_submit("print('hi')\n", {"framework": "pytorch", "environment": {"processes_per_replica": 2}})
    assert ranks.status().launch == "cold: processes_per_replica > 1: each replica starts its own ranks"
    for run in (asked, off, ranks):
        assert wait(run).state.value == "Succeeded", describe(run)


def test_mxnet_and_mpi_runs_start_cold_with_the_reason_and_tensorflow_has_a_template(monkeypatch):
    """TensorFlow's runs start warm from a spawn-ahead pool (tests/test_warm_pool.py), never forked."""
    from jupyter_px.runstore import RunRecord

    monkeypatch.setenv("JUPYTER_PX_WARM", "1")
    from jupyter_px.topology import parse_topology

    settings = load_settings()
    for framework, says in (("mxnet", "engine"), ("mpi", "mpirun")):
        topology = parse_topology({"framework": framework})
        reason = warm.cold_reason(RunRecord(run_id="x", topology={}), topology, settings)
        assert reason is not None and says in reason
    tensorflow = parse_topology({"framework": "tensorflow"})
    assert warm.cold_reason(RunRecord(run_id="x", topology={}), tensorflow, settings) is None
    assert not {"tensorflow", "tf_keras"} & set(warm.preload("tensorflow"))  # nothing of it is forked


# ---- the template's lifecycle ----------------------------------------------------------------------


@pytest.fixture
def own_warm_dir(tmp_path, monkeypatch) -> Path:
    """A warm directory of this test's own: its templates are not the session's."""
    directory = tmp_path / "w"
    monkeypatch.setenv("JUPYTER_PX_WARM_DIR", str(directory))
    monkeypatch.setenv("JUPYTER_PX_WARM", "1")
    yield directory
    warm.stop_all("the test ended")


def test_an_unused_template_stops_after_its_idle_time(px_home, own_warm_dir, monkeypatch):
    monkeypatch.setenv("JUPYTER_PX_WARM_IDLE_S", "1.5")
    state = warm.start(None, template_env(), load_settings(), timeout=120)
    assert state["idle_s"] == 1.5 and psutil.pid_exists(state["pid"])
    key = warm.template_key(None)
    stopped = wait_for(lambda: (s := warm.read_state(key))["state"] == "stopped" and s, timeout=60, what="idle stop")
    assert stopped["stop_reason"] == "not used for 1.5 s (JUPYTER_PX_WARM_IDLE_S)"
    wait_for(lambda: not warm.alive(stopped), timeout=10, what="the template to exit")
    assert not Path(stopped["socket"]).exists()


def test_a_changed_environment_restarts_the_template(px_home, own_warm_dir, monkeypatch):
    from jupyter_px.runstore import RunRecord
    from jupyter_px.topology import parse_topology

    first = warm.start(None, template_env(), load_settings(), timeout=120)
    topology = parse_topology({})
    record = RunRecord(run_id="x", topology={})
    env = template_env()
    assert warm.plan(record, topology, env, load_settings()).warm
    changed = {**env, "OMP_NUM_THREADS": "3"}  # read when OpenMP loads: a template must be started with it
    assert warm.fingerprint(None, changed) != warm.fingerprint(None, env)
    chosen = warm.plan(record, topology, changed, load_settings())
    assert not chosen.warm and "the environment changed" in chosen.launch
    old = warm.read_state(warm.template_key(None))
    wait_for(lambda: not psutil.pid_exists(first["pid"]) or psutil.Process(first["pid"]).status() == "zombie")
    new = warm.start(None, changed, load_settings(), timeout=120)
    assert new["pid"] != first["pid"] and new["fingerprint"] == warm.fingerprint(None, changed)
    assert old is not None


def test_a_template_owned_by_a_jupyter_server_ends_with_it(px_home, own_warm_dir, monkeypatch):
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        monkeypatch.setenv("JUPYTER_PX_SERVER_PID", str(server.pid))
        state = warm.start(None, template_env(), load_settings(), timeout=120)
        assert state["owner"] == {
            "kind": "server",
            "pid": server.pid,
            "started_at": ProcessIdentity.of(server.pid).started_at,  # its start since boot
        }
    finally:
        server.kill()
        server.wait()
    key = warm.template_key(None)
    stopped = wait_for(lambda: (s := warm.read_state(key))["state"] == "stopped" and s, timeout=60, what="the stop")
    assert stopped["stop_reason"] == f"its owner, the Jupyter server (pid {server.pid}), exited"


@pytest.mark.jobs
def test_a_template_that_cannot_start_means_cold_starts_said_once(px_home, own_warm_dir, monkeypatch, tmp_path, caplog):
    """A preload that fails to import (here a broken `cloudpickle` on PYTHONPATH) fails the
    template; every run starts cold, and the reason is said once, not per run."""
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "cloudpickle.py").write_text("raise ImportError('this cloudpickle is broken on purpose')\n")
    monkeypatch.setenv("PYTHONPATH", f"{broken}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("JUPYTER_PX_WARM", "1")
    from jupyter_px.api import submit as api_submit

    first = api_submit("print('one')\n", {})
    assert first.status().launch == "cold: the template is starting (first use); later runs start warm"
    key = warm.template_key(None)
    failed = wait_for(lambda: (s := warm.read_state(key)) and s["state"] == "failed" and s, timeout=120)
    assert "this cloudpickle is broken on purpose" in failed["error"]
    caplog.set_level("WARNING", logger="jupyter_px.backends.local.warm")
    runs = [api_submit(f"print({i})\n", {}) for i in range(3)]
    for run in runs:
        assert run.status().launch.startswith("cold: the template failed: importing the preload")
    said = [r for r in caplog.records if "warm start unavailable" in r.getMessage()]
    assert len(said) == 1 and "this cloudpickle is broken on purpose" in said[0].getMessage()
    for run in (first, *runs):
        assert wait(run).state.value == "Succeeded", describe(run)


@pytest.mark.jobs
def test_a_hung_template_is_replaced_and_the_run_starts_cold_at_once(px_home, own_warm_dir):
    """A template stopped with SIGSTOP: the submit does not wait for it (the launch says it did
    not answer within the bound), the run starts cold, and a new template serves the next run."""
    from jupyter_px.api import submit as api_submit

    key = warm.template_key(None)
    hung = warm.start(None, template_env(), load_settings(), timeout=120)
    os.kill(hung["pid"], signal.SIGSTOP)
    try:
        run = api_submit("print('started cold')\n", {})
    finally:
        if psutil.pid_exists(hung["pid"]):
            os.kill(hung["pid"], signal.SIGCONT)
    launch = run.status().launch
    assert launch.startswith(f"cold: the template (pid {hung['pid']}) hung (the template did not answer within 2 s)")
    assert wait(run).state.value == "Succeeded", describe(run)
    wait_for(lambda: not psutil.pid_exists(hung["pid"]) or psutil.Process(hung["pid"]).status() == "zombie")
    new = wait_for(lambda: (s := warm.read_state(key)) and s["state"] == "ready" and s, timeout=120, what="a new one")
    assert new["pid"] != hung["pid"]
    following = api_submit("print('started warm')\n", {})
    assert following.status().launch == f"warm (template pid {new['pid']})"
    assert wait(following).state.value == "Succeeded", describe(following)


@pytest.mark.jobs
def test_jupyter_px_warm_start_status_and_stop(px_home, own_warm_dir):
    cli = [sys.executable, "-m", "jupyter_px.cli", "warm"]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    started = subprocess.run([*cli, "start", "--framework", "none"], capture_output=True, text=True, env=env)
    assert started.returncode == 0, started.stderr
    assert "ready" in started.stdout
    shown = subprocess.run(cli, capture_output=True, text=True, env=env)
    assert shown.returncode == 0, shown.stderr
    key = warm.template_key(None)
    state = warm.read_state(key)
    assert key in shown.stdout and f"pid {state['pid']}" in shown.stdout and "MiB" in shown.stdout
    as_json = json.loads(subprocess.run([*cli, "--json"], capture_output=True, text=True, env=env).stdout)
    (entry,) = [e for e in as_json if e["key"] == key]
    assert entry["running"] and entry["memory"]["rss_mib"] > 0 and entry["standby_pid"]
    stopped = subprocess.run([*cli, "stop"], capture_output=True, text=True, env=env)
    assert stopped.returncode == 0 and key in stopped.stdout, stopped.stderr
    assert warm.read_state(key)["stop_reason"] == "stopped on request (jupyter px warm stop)"
    assert not psutil.pid_exists(state["pid"]) or psutil.Process(state["pid"]).status() == "zombie"


def _venv_with_this_package(folder: Path) -> Path:
    """A virtual environment of the base interpreter that sees this one's packages and this
    checkout (a .pth file): a second environment on the same interpreter, as users make them."""
    import site
    import venv

    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    python = folder / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True
    ).stdout.strip()
    ours = [*site.getsitepackages(), str(Path(__file__).resolve().parents[1])]
    Path(purelib, "this_checkout.pth").write_text("\n".join(ours) + "\n")
    return python


def test_two_virtual_environments_on_one_interpreter_keep_a_template_each(px_home, own_warm_dir, tmp_path):
    """Two environments made from one base interpreter (one PX_HOME): each has its own template,
    keyed by its `sys.prefix`, and each submit finds its own ready, not the other's to replace."""
    code = (
        "import sys\n"
        "from jupyter_px.backends.local import warm\n"
        "from jupyter_px.backends.local.settings import load_settings\n"
        "from jupyter_px.runstore import RunRecord\n"
        "from jupyter_px.topology import parse_topology\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from warm_support import template_env\n"
        "state = warm.start(None, template_env(), load_settings(), timeout=120)\n"
        "record, topology = RunRecord(run_id='x', topology={}), parse_topology({})\n"
        "print(state['key'], state['pid'], warm.plan(record, topology, template_env(), load_settings()).launch)\n"
    )
    pythons = [_venv_with_this_package(tmp_path / name) for name in ("one", "two")]
    env = dict(os.environ, JUPYTER_PX_WARM="1")
    env.pop("PYTHONPATH", None)
    said = []
    for python in [*pythons, *pythons]:  # each twice: the second round finds both still there
        done = subprocess.run([python, "-c", code, str(Path(__file__).parent)], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        said.append(done.stdout.split(maxsplit=2))
    keys = [key for key, _, _ in said]
    assert keys[0] != keys[1] and keys[:2] == keys[2:], said
    assert [pid for _, pid, _ in said[:2]] == [pid for _, pid, _ in said[2:]], said  # nobody was replaced
    assert all(launch.startswith("warm (template pid") for _, _, launch in said), said


def test_two_submits_at_once_start_one_template(px_home, own_warm_dir):
    code = (
        "import sys\n"
        "from jupyter_px.backends.local import warm\n"
        "from jupyter_px.backends.local.settings import load_settings\n"
        "from jupyter_px.runstore import RunRecord\n"
        "from jupyter_px.topology import parse_topology\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from warm_support import template_env\n"
        "record, topology = RunRecord(run_id='x', topology={}), parse_topology({})\n"
        "print(warm.plan(record, topology, template_env(), load_settings()).launch)\n"
    )
    env = dict(os.environ, JUPYTER_PX_WARM="1", PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    tests_dir = str(Path(__file__).parent)
    procs = [
        subprocess.Popen([sys.executable, "-c", code, tests_dir], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(3)
    ]
    said = sorted(p.communicate(timeout=120)[0].strip() for p in procs)
    starting = [s for s in said if s == "cold: the template is starting (first use); later runs start warm"]
    assert len(starting) == 1, said  # the others found it starting (or ready), under the lock
    running = [p for p in psutil.process_iter(["cmdline"]) if warm.TEMPLATE_MODULE in (p.info["cmdline"] or [])]
    mine = {p.pid for p in running if str(own_warm_dir) in " ".join(p.info["cmdline"] or [])}
    templates = {pid for pid in mine if psutil.Process(pid).ppid() not in mine}  # not its standby or zygote
    assert len(templates) == 1, mine


def test_what_a_tensorflow_script_sets_before_its_import_is_what_a_pool_interpreter_imports_with(tmp_path):
    """`spawn_ahead.script_facts` reads (never runs) the entry point: literal `os.environ` settings
    at its top level before its first `import tensorflow` are applied before a pool interpreter's
    import; anything after it, or not literal, is the script's own business at run time."""
    from jupyter_px.backends.local import spawn_ahead

    root = Path(__file__).resolve().parents[1]
    imports, presets = spawn_ahead.script_facts(root / "examples" / "workloads" / "tf_mwms.py", "tensorflow")
    assert (imports, presets) == (
        ["tf_keras"],
        [("setdefault", "TF_CPP_MIN_LOG_LEVEL", "2"), ("setdefault", "TF_USE_LEGACY_KERAS", "1")],
    )
    script = tmp_path / "train.py"
    script.write_text(
        "import os, sys\n"
        "os.environ['TF_ENABLE_ONEDNN_OPTS'] = '0'\n"
        "os.environ.setdefault('OMP_NUM_THREADS', sys.argv[1])\n"  # not a literal: unknown before it runs
        "from tensorflow import keras\n"
        "os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')\n"  # after the import: too late for any process
    )
    imports, presets = spawn_ahead.script_facts(script, "tensorflow")
    assert (imports, presets) == ([], [("set", "TF_ENABLE_ONEDNN_OPTS", "0")])
    env = {"OMP_NUM_THREADS": "2", "TF_CONFIG": "{}", "TF_ENABLE_ONEDNN_OPTS": "1", "HOME": "/home/me"}
    assert spawn_ahead.wanted_env(env, presets) == {"OMP_NUM_THREADS": "2", "TF_ENABLE_ONEDNN_OPTS": "0"}
    tf_mwms = [("setdefault", "TF_CPP_MIN_LOG_LEVEL", "2")]
    assert spawn_ahead.wanted_env({"TF_CPP_MIN_LOG_LEVEL": "1"}, tf_mwms) == {"TF_CPP_MIN_LOG_LEVEL": "1"}
    assert spawn_ahead.wanted_env({}, tf_mwms) == {"TF_CPP_MIN_LOG_LEVEL": "2"}
