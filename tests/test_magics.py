"""The magics in a real IPython shell (and, for what needs one, a real kernel via nbclient).

Bad input must give one clear line naming the bad value, as a UsageError (no traceback);
real runs go through the local backend into a private PX_HOME.
"""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import nbformat
import pytest
from magics_support import magic_shell, run, usage_error
from plot_config_support import assert_private, assert_private_html

from jupyter_px.topology.registry import topologies


@pytest.fixture
def ip(px_home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    yield from magic_shell(forget=("lr", "epochs", "np", "helper", "lock", "double", "base"))


PYTORCH_YAML = """\
framework: pytorch
environment:
  replicas:
    n_workers: 2
"""


def define(shell, name: str = "cluster", body: str = PYTORCH_YAML):
    result, captured = run(shell, f"%%px_topology {name}\n{body}")
    assert result.success, captured.stderr
    return captured


# ---- %%px_topology ---------------------------------------------------------------------------


def test_topology_cell_validates_shows_and_stores(ip):
    captured = define(ip)
    text = captured.outputs[0].data["text/plain"]
    assert "pytorch on local: 3 replicas" in text
    assert "<table>" in captured.outputs[0].data["text/html"]
    assert topologies.require("cluster").counts() == {"master": 1, "worker": 2}
    assert topologies.current is topologies.get("cluster")


def test_topology_cell_accepts_the_older_form(ip):
    define(ip, "old", "environment:\n  tensorflow:\n    n_workers: 2\n    n_ps: 1\n")
    assert topologies.require("old").framework == "tensorflow"


def test_invalid_yaml_lists_problems_with_field_paths(ip):
    message = usage_error(
        ip,
        "%%px_topology bad\nframework: pytorch\nenvironment:\n  replicas:\n    n_workers: 2\n"
        "    worker:\n      - index: 5\n",
    )
    assert message == "invalid topology: environment.replicas.worker[0].index: 5 is not below n_workers (2)"
    message = usage_error(ip, "%%px_topology\nframework: [unclosed\n")
    assert message.startswith("invalid topology: yaml: line")
    message = usage_error(ip, "%%px_topology\nframework: caffe\nenvironment:\n  replicas: {n_workers: -2}\n")
    assert "framework: 'caffe' is not one of" in message and "environment.replicas.n_workers: -2" in message
    assert topologies.get("bad") is None and topologies.current is None


def test_topology_bad_name(ip):
    assert "topology name '9lives!'" in usage_error(ip, "%%px_topology 9lives!\nframework: pytorch\n")


def test_topology_form_magic_loads_a_name(ip):
    define(ip)
    _, captured = run(ip, "%px_topology_form cluster")
    (form,) = [w for w in _displayed_widgets(captured) if type(w).__name__ == "TopologyForm"]
    assert form.framework.value == "pytorch" and form.workers.value == 2 and form.name.value == "cluster"
    assert "topology name 'no-good!'" in usage_error(ip, "%px_topology_form no-good!")


def _displayed_widgets(captured):
    from ipywidgets.widgets.widget import _instances

    ids = [
        output.data["application/vnd.jupyter.widget-view+json"]["model_id"]
        for output in captured.outputs
        if "application/vnd.jupyter.widget-view+json" in output.data
    ]
    return [_instances[model_id] for model_id in ids]


# ---- %%px_distributed: bad input, nothing submitted --------------------------------------------


def _no_runs(px_home: Path) -> bool:
    runs = px_home / "runs"
    return not runs.exists() or not [p for p in runs.iterdir() if not p.name.startswith(".")]


def test_unknown_topology_name(ip, px_home):
    define(ip)
    message = usage_error(ip, "%%px_distributed -t nope\nprint(1)\n")
    assert message == "unknown topology 'nope' (defined: cluster); define it with a %%px_topology nope cell"
    assert _no_runs(px_home)


def test_bad_flag(ip, px_home):
    assert "unrecognized arguments: --wrokers 3" in usage_error(ip, "%%px_distributed --wrokers 3\nprint(1)\n")
    assert "argument --workers: invalid int value: 'many'" in usage_error(
        ip, "%%px_distributed --workers many\nprint(1)\n"
    )
    assert usage_error(ip, "%%px_distributed -t a -f b.yaml\nprint(1)\n") == "give either -t NAME or -f FILE, not both"
    assert "-o '1x'" in usage_error(ip, "%%px_distributed -o 1x\nprint(1)\n")
    assert _no_runs(px_home)


def test_invalid_override_names_the_option(ip, px_home):
    define(ip)
    assert (
        usage_error(ip, "%%px_distributed -t cluster --workers -1\nprint(1)\n")
        == "invalid topology: --workers -1: -1 is not >= 0"
    )
    message = usage_error(ip, "%%px_distributed -t cluster --framework caffe\nprint(1)\n")
    assert message.startswith("invalid topology: --framework caffe: 'caffe' is not one of")
    assert "--ps 1" in usage_error(ip, "%%px_distributed -t cluster --ps 1\nprint(1)\n")
    assert _no_runs(px_home)


def test_topology_file_errors(ip, tmp_path, px_home):
    assert "-f 'missing.yaml': cannot read the topology file: No such file or directory" in usage_error(
        ip, "%%px_distributed -f missing.yaml\nprint(1)\n"
    )
    (tmp_path / "bad.yaml").write_text("framework: pytorch\nenvironment: {replicas: {n_wrokers: 2}}\n")
    assert "environment.replicas.n_wrokers: unknown field" in usage_error(
        ip, "%%px_distributed -f bad.yaml\nprint(1)\n"
    )
    assert _no_runs(px_home)


def test_names_defined_only_in_the_notebook_are_reported_before_submitting(ip, px_home):
    run(ip, "lr = 0.1\nepochs = 3\nimport numpy as np\n")
    message = usage_error(ip, "%%px_distributed\nfor e in range(epochs):\n    print(np.float64(lr) * e)\n")
    assert message.startswith("not submitted: the code reads epochs, lr, defined in this notebook")
    assert "--push epochs,lr" in message
    assert "add `import numpy as np` to the cell" in message
    assert _no_runs(px_home)


def test_builtins_own_imports_definitions_and_pushed_names_are_accepted(ip, px_home):
    run(ip, "lr = 0.1\nepochs = 3\nimport numpy as np\n")
    result, captured = run(
        ip,
        "%%px_distributed --framework pytorch --push epochs,lr --wait -o job\n"
        "import numpy as np\n"  # the cell's own import of a name the notebook also has
        "scale = 2\n"
        "def total(values):\n    return sum(values) * scale\n"
        "print('total', round(total(np.float64(lr) * e for e in range(epochs)), 3), len(str(int)))\n",
    )
    assert result.success, captured.stderr
    assert ip.user_ns["job"].logs("master", 0).strip() == "total 0.6 13"


def test_push_errors_name_the_value(ip, px_home):
    run(ip, "import threading\nlock = threading.Lock()\ndef helper():\n    return 1\nlr = 0.1\n")
    message = usage_error(ip, "%%px_distributed --push lr,lock\nprint(lr, lock)\n")
    assert message.startswith("--push: cannot ship 'lock' (lock) to the replicas")
    message = usage_error(ip, "%%px_distributed --push helper\nprint(helper())\n")
    assert message.startswith("--push helper: it refers to helper defined in this notebook")
    assert (
        usage_error(ip, "%%px_distributed --push nothere\nprint(1)\n")
        == "--push nothere: no variable 'nothere' in this notebook"
    )
    assert _no_runs(px_home)


def test_syntax_error_and_empty_cell(ip, px_home):
    assert usage_error(ip, "%%px_distributed\nfor x in\n").startswith(
        "the code does not compile: line 1: invalid syntax"
    )
    assert usage_error(ip, "%%px_distributed\n\n").startswith("the cell is empty")
    assert _no_runs(px_home)


def test_resource_the_machine_lacks_is_refused(ip, px_home):
    define(ip, "gpus", "framework: pytorch\nenvironment:\n  resources: {gpu: {requests: 64, limits: 64}}\n")
    message = usage_error(ip, "%%px_distributed -t gpus\nprint(1)\n")
    assert message.startswith("not submitted:") and "gpu" in message.lower()
    assert _no_runs(px_home)


# ---- the run magics on synthetic runs ------------------------------------------------------------

PYTORCH_2 = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}}


@pytest.mark.parametrize(
    "magic", ["px_status nope", "px_logs nope", "px_stop nope", "px_attach nope", "px_plot nope", "px_tensorboard nope"]
)
def test_unknown_run(ip, magic):
    message = usage_error(ip, f"%{magic}")
    assert message.startswith("unknown run 'nope' (no such run id or name in")


def test_runs_status_logs(ip, synthetic_run):
    synthetic_run("done-1", PYTORCH_2, state="Succeeded")
    synthetic_run("broken-1", PYTORCH_2, state="Failed", replica_states={"worker-1": "Failed"})
    _, captured = run(ip, "%px_runs")
    listing = captured.outputs[0].data["text/plain"]
    assert listing.splitlines()[0].split() == [
        "RUN",
        "NAME",
        "STATE",
        "BACKEND",
        "REPLICAS",
        "FROM",
        "CREATED",
        "DURATION",
    ]
    assert re.search(r"done-1\s+-\s+Succeeded\s+local\s+3 Succeeded", listing)
    assert re.search(r"broken-1\s+-\s+Failed\s+local\s+3 Failed", listing)

    _, captured = run(ip, "%px_status broken-1")
    status = captured.outputs[0].data["text/plain"]
    assert status.startswith("run broken-1: Failed")
    assert re.search(r"worker-1\s+Failed\s+-\s+1\s+-\s+0", status)  # pid, exit code, signal, restarts

    _, captured = run(ip, "%px_logs done-1 --role worker --index 1")
    assert captured.stdout.splitlines() == [f"worker-1 line {i}" for i in range(10)]
    _, captured = run(ip, "%px_logs done-1 --tail 23")
    assert captured.stdout == "line 8\nmaster-0 line 9\n"
    assert (
        usage_error(ip, "%px_logs done-1 --role worker --index 5")
        == "run done-1 has no replica worker-5 (replicas: master-0, worker-0, worker-1)"
    )
    assert usage_error(ip, "%px_logs done-1 --role chief").startswith("run done-1 has no replica chief-0")

    _, captured = run(ip, "%px_stop done-1")
    assert captured.stdout.strip() == "run done-1 had already finished: Succeeded"


def test_read_magics_report_a_gone_supervisor_and_px_logs_follow_ends_saying_why(ip, synthetic_run, px_home):
    """%px_runs / %px_status / %px_logs only read: a run whose supervisor died stays Running as
    recorded, with a warning; `--follow` stops (a read cannot finish the run) and says why."""
    import subprocess

    from jupyter_px.runstore import RunStore
    from jupyter_px.runstore.models import RunOwner

    synthetic_run("orphan-1", PYTORCH_2, log_lines=3)
    store = RunStore()
    status = store.status("orphan-1")
    dead = subprocess.Popen(["true"])
    dead.wait()
    status.owner = RunOwner(kind="supervisor", pid=dead.pid)
    store.write_status(status)
    stored = store.paths("orphan-1").status.read_bytes()
    problem = f"the supervisor (pid {dead.pid}) is gone while the run was Running"
    _, captured = run(ip, "%px_runs")
    assert re.search(r"orphan-1\s+-\s+Running \(no owner\)", captured.outputs[0].data["text/plain"])
    assert problem in captured.stderr and "jupyter px follow orphan-1" in captured.stderr
    _, captured = run(ip, "%px_status orphan-1")
    assert captured.outputs[0].data["text/plain"].startswith("run orphan-1: Running") and problem in captured.stderr
    _, captured = run(ip, "%px_logs orphan-1 --role worker --index 1 --follow")
    assert captured.stdout.splitlines() == [f"worker-1 line {i}" for i in range(3)] and problem in captured.stderr
    assert store.paths("orphan-1").status.read_bytes() == stored


def test_px_runs_output_is_the_cli_json_shape(ip, synthetic_run, px_home):
    import json
    import subprocess
    import sys

    synthetic_run("done-1", PYTORCH_2, state="Succeeded")
    synthetic_run("broken-1", PYTORCH_2, state="Failed", replica_states={"worker-1": "Failed"})
    result, _ = run(ip, "%px_runs -o listed")
    assert result.success
    cli = subprocess.run(
        [sys.executable, "-m", "jupyter_px.cli", "runs", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PX_HOME": str(px_home), "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    from_cli = json.loads(cli.stdout)
    assert json.loads(json.dumps(ip.user_ns["listed"])) == from_cli
    assert [r["run_id"] for r in from_cli] == ["broken-1", "done-1"]
    assert from_cli[0]["replica_counts"] == {"Failed": 3}
    assert "-o '2x'" in usage_error(ip, "%px_runs -o 2x")


def test_names_with_terminal_escapes_are_shown_escaped_and_clipped(ip, px_home):
    from jupyter_px.runstore import RunRecord, RunStore

    name = "\x1b]0;pwned\x07\x1b[31mred\nrow" + "x" * 300
    RunStore().create(RunRecord(run_id="evil-1", name=name, topology={}), {"main.py": ""})
    _, captured = run(ip, "%px_runs")
    text, page = captured.outputs[0].data["text/plain"], captured.outputs[0].data["text/html"]
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;pwned\\x07\\x1b[31mred\\nrow" in text  # shown, escaped
    assert len(text.splitlines()) == 2 and max(len(line) for line in text.splitlines()) < 200
    assert "\x1b" not in page and "pwned" in page


def test_px_runs_status_and_logs_load_no_widgets_in_a_terminal(synthetic_run, px_home):
    """A terminal IPython (no kernel) lists runs and reads logs without importing ipywidgets."""
    import subprocess
    import sys

    synthetic_run("done-1", PYTORCH_2, state="Succeeded")
    probe = (
        "import sys\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        "shell.run_line_magic('load_ext', 'jupyter_px')\n"
        "for line in ('px_runs', 'px_status done-1', 'px_logs done-1', 'px_stop done-1'):\n"
        "    name, _, rest = line.partition(' ')\n"
        "    shell.run_line_magic(name, rest)\n"
        "print('loaded:', [m for m in ('ipywidgets', 'plotly') if m in sys.modules])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PX_HOME": str(px_home), "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert out.returncode == 0, out.stderr
    assert "done-1" in out.stdout and "master-0 line 9" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "loaded: []"


def test_unload_ext_removes_every_magic(ip):
    from jupyter_px.magics import MAGIC_CLASSES

    names = {(kind, name) for magics in MAGIC_CLASSES for kind, found in magics.magics.items() for name in found}
    assert ("line", "px_runs") in names and ("cell", "px_distributed") in names and ("line", "px_compare") in names
    assert len(names) == 13
    registered = ip.magics_manager.magics
    assert all(name in registered[kind] for kind, name in names)
    ip.run_line_magic("unload_ext", "jupyter_px")
    assert not [name for kind, name in names if name in registered[kind]]
    result, _ = run(ip, "%px_runs")
    assert "px_runs" in str(result.error_in_exec or result.error_before_exec)  # not found any more
    ip.run_line_magic("load_ext", "jupyter_px")
    assert all(name in registered[kind] for kind, name in names)


def test_unload_ext_stops_the_monitors_updates_and_leaves_their_runs(ip, synthetic_run, px_home):
    from jupyter_px.api import Run
    from jupyter_px.widgets.run_monitor import RunMonitor

    synthetic_run("live-1", PYTORCH_2)  # Running: its monitor would poll for ever
    monitor = RunMonitor(Run("live-1"), interval=0.1)
    assert monitor.updating
    ip.run_line_magic("unload_ext", "jupyter_px")
    assert not monitor.updating
    assert Run("live-1").status().state.value == "Running"  # only the notebook's updates stopped
    ip.run_line_magic("load_ext", "jupyter_px")


def test_plot_metrics(ip, synthetic_run):
    synthetic_run("metrics-1", PYTORCH_2, state="Succeeded", metric_points=25)
    _, captured = run(ip, "%px_plot metrics-1 loss")
    bundle = captured.outputs[0].data
    figure = bundle["application/vnd.plotly.v1+json"]
    assert [trace["name"] for trace in figure["data"]] == ["master-0", "worker-0", "worker-1"]
    assert all(trace["x"] == list(range(25)) for trace in figure["data"])
    assert figure["data"][0]["y"][0] == 1.0
    assert "75 points" in bundle["text/plain"] and "plotly" in bundle["text/html"].lower()
    assert_private(figure["config"])  # nothing sends the curves to plotly's cloud
    assert_private_html(bundle["text/html"])
    assert (
        usage_error(ip, "%px_plot metrics-1 accuracy") == "run metrics-1 has no metric 'accuracy' (it has: acc, loss)"
    )
    synthetic_run("quiet-1", PYTORCH_2, state="Succeeded")
    _, captured = run(ip, "%px_plot quiet-1")
    assert captured.stdout.startswith("run quiet-1 has no metrics yet")


def test_run_found_by_id_name_or_last(ip, px_home):
    import time

    from jupyter_px import Run
    from jupyter_px.runstore import RunRecord, RunStore

    store = RunStore()
    store.create(RunRecord(run_id="nightly-abc123", name="nightly", topology={}), {"main.py": ""})
    time.sleep(0.02)  # creation order decides which is newest
    store.create(RunRecord(run_id="nightly-def456", name="nightly", topology={}), {"main.py": ""})
    time.sleep(0.02)
    store.create(RunRecord(run_id="other-1", name="other", topology={}), {"main.py": ""})
    for ref, expected in (("nightly", "nightly-def456"), ("nightly-abc123", "nightly-abc123"), ("last", "other-1")):
        _, captured = run(ip, f"%px_status {ref}")
        assert captured.outputs[0].data["text/plain"].startswith(f"run {expected}: Pending"), ref
        assert Run(ref).run_id == expected  # the API resolves the same way
    _, captured = run(ip, "%px_stop nightly")
    assert captured.stdout.strip().startswith("run nightly-def456")


def test_damaged_run_is_one_line(ip, synthetic_run, px_home):
    root = synthetic_run("damaged-1", PYTORCH_2)
    (root / "status.json").write_text("{not json")
    for magic in ("px_status", "px_logs", "px_stop", "px_attach"):
        message = usage_error(ip, f"%{magic} damaged-1")
        assert message.startswith("run damaged-1 is damaged: status.json is not valid"), (magic, message)
        assert "\n" not in message


# ---- real runs through the local backend -----------------------------------------------------


def test_submit_wait_success_with_pushed_values_and_overrides(ip, px_home):
    define(ip)
    run(ip, "lr = 0.25\nepochs = 2\n")
    result, captured = run(
        ip,
        textwrap.dedent("""\
        %%px_distributed -t cluster --workers 1 --name pushed --push lr,epochs --wait -o job
        import os
        print("replica", os.environ["PX_TASK_TYPE"], os.environ["RANK"], "of", os.environ["WORLD_SIZE"], lr * epochs)
        """),
    )
    assert result.success, captured.stderr
    job = ip.user_ns["job"]
    assert job.run_id.startswith("pushed-")
    assert captured.stdout.splitlines()[-1] == f"run {job.run_id} Succeeded"
    assert [r.key for r in job.status().replicas] == ["master-0", "worker-0"]  # --workers 1 overrode 2
    assert job.logs("master", 0).strip() == "replica master 0 of 2 0.5"
    assert job.record.code.pushed == ["epochs", "lr"] and job.record.submitted_from == "magic"


def test_failing_job_with_wait_is_one_clear_error(ip, px_home):
    message = usage_error(
        ip,
        textwrap.dedent("""\
        %%px_distributed --framework pytorch --workers 1 --name boom --wait
        import os, time
        if os.environ["PX_TASK_TYPE"] == "worker":
            raise SystemExit(3)
        time.sleep(120)  # the master is still busy when the worker fails: the run fails, the master is stopped
        """),
    )
    assert re.match(r"run boom-[0-9a-f]{6} Failed", message)
    assert "worker-0" in message and "exit code 3" in message
    assert message.endswith("--role worker --index 0")


def test_ipython_syntax_runs_under_an_ipython_shell(ip, px_home):
    result, captured = run(
        ip, "%%px_distributed --name magic --wait -o job\n!echo shell-says-hi\nx = %time 6 * 7\nprint('x is', x)\n"
    )
    assert result.success, captured.stderr
    job = ip.user_ns["job"]
    assert job.record.code.language == "ipython"
    log = job.logs("master", 0)
    assert "shell-says-hi" in log and "x is 42" in log


def test_notebook_code_from_history_skips_px_cells(ip, px_home):
    run(ip, "base = 20\n")
    run(ip, "def double(x):\n    return 2 * x\n")
    define(ip, "solo", "framework: pytorch\n")
    run(ip, "%px_runs\nbase += 1\n")
    result, captured = run(ip, "%%px_distributed --notebook --wait -o job\nprint('answer', double(base))\n")
    assert result.success, captured.stderr
    job = ip.user_ns["job"]
    assert job.logs("master", 0).strip() == "answer 42"
    shipped = (job.paths.code_dir / job.record.code.entrypoint).read_text()
    assert "px_topology" not in shipped and "px_runs" not in shipped
    assert job.record.code.source == "notebook:history"


def test_logs_follow_until_the_run_ends(ip, px_home):
    result, _ = run(
        ip,
        "%%px_distributed --name chatty -o job\nimport time\nfor i in range(5):\n"
        "    print('tick', i, flush=True)\n    time.sleep(0.2)\n",
    )
    assert result.success
    job = ip.user_ns["job"]
    _, captured = run(ip, f"%px_logs {job.run_id} --follow")
    assert captured.stdout.splitlines() == [f"tick {i}" for i in range(5)]
    assert job.status().state.value == "Succeeded"


def test_stop_a_running_job(ip, px_home):
    result, _ = run(ip, "%%px_distributed --name sleepy -o job\nimport time\ntime.sleep(600)\n")
    assert result.success
    job = ip.user_ns["job"]
    _, captured = run(ip, f"%px_stop {job.run_id}")
    assert captured.stdout.strip() == f"run {job.run_id}: Stopped"
    assert job.status().state.value == "Stopped"


# ---- in a real kernel ------------------------------------------------------------------------


def _client(nb, px_home: Path, cwd: Path, extra_env: dict | None = None):
    from nbclient import NotebookClient

    client = NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    env = {**os.environ, "PX_HOME": str(px_home), **(extra_env or {})}
    return client, env


def _outputs_text(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output["text"])
        elif output.get("output_type") == "error":
            parts.append(f"{output['ename']}: {output['evalue']}")
        elif "data" in output:
            parts.append(output["data"].get("text/plain", ""))
    return "".join(parts)


def _monitor_states(client) -> list[dict[str, str]]:
    """Per-replica states in each run monitor table found in the kernel's widget state."""
    found = []
    for state in client.widget_state.values():
        value = state.get("value")
        if isinstance(value, str) and "class='px-replicas'" in value:
            found.append(dict(re.findall(r"data-replica='([^']+)' data-state='([^']+)'", value)))
    return found


def test_cells_that_end_through_sys_exit_or_without_a_value_show_no_result_and_raise_nothing(px_home, tmp_path):
    """Scripts pasted into a cell end with `sys.exit(...)` or a call that returns None: once
    cells gained results, `sys.exit(0)` made a successful `--wait` cell raise ResultMissing.
    Only an expression that produced a value is a result; a failing exit still fails the cell."""
    cells = [
        "%load_ext jupyter_px",
        "%%px_topology pair\nframework: pytorch\nenvironment:\n  replicas:\n    n_workers: 1\n",
        "%%px_distributed --wait\nimport os, sys\nok = os.environ['WORLD_SIZE'] == '2'\nprint('trained')\n"
        "sys.exit(0 if ok else 7)",
        "%%px_distributed --wait\nimport os\nprint('bye', flush=True)\nos._exit(0)",
        "%%px_distributed --wait\nprint('the last line is a call that returns None')",
        "%%px_distributed --wait\n6 * 7",
        "%%px_distributed --wait --name seven\nimport sys\nsys.exit(7)",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client, env = _client(nb, px_home, tmp_path)
    with client.setup_kernel(env=env):
        for index, cell in enumerate(nb.cells[:-1]):
            client.execute_cell(cell, index)
        from nbclient.exceptions import CellExecutionError

        with pytest.raises(CellExecutionError) as failed:
            client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
    for cell in nb.cells[2:5]:
        kinds = [output["output_type"] for output in cell.outputs]
        assert "error" not in kinds and "execute_result" not in kinds, _outputs_text(cell)
        assert re.search(r"run \S+ Succeeded|Succeeded", _outputs_text(cell) + str(cell.outputs)), cell.outputs
    results = [output for output in nb.cells[5].outputs if output["output_type"] == "execute_result"]
    assert [r["data"]["text/plain"] for r in results] == ["42"]
    assert "UsageError" in str(failed.value) and "exit code 7" in str(failed.value)
    assert "ResultMissing" not in str(failed.value)


def test_attach_after_kernel_restart_loses_no_metric(px_home, tmp_path):
    """Submit from one kernel, shut it down mid-run, attach from a new kernel: the run went on,
    and every step it logged (before, during and after the restart) is in the store."""
    release = tmp_path / "release"
    steps = 40
    code = textwrap.dedent(f"""\
        %%px_distributed --framework pytorch --workers 1 --name survivor -o run
        import os, time
        import torch.distributed as dist
        from jupyter_px import tracking
        dist.init_process_group("gloo")
        for step in range({steps}):
            tracking.log_metrics(step=step, total_steps={steps}, value=float(step))
            if step == 19:
                tracking.flush()
                while not os.path.exists({str(release)!r}):
                    time.sleep(0.05)
        dist.barrier()  # the master's success ends the run: let every replica finish logging first
        dist.destroy_process_group()
        """)
    first = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in ("%load_ext jupyter_px", code, "print(run.run_id)")]
    )
    client, env = _client(first, px_home, tmp_path)
    with client.setup_kernel(env=env):
        for index, cell in enumerate(first.cells):
            client.execute_cell(cell, index)
    run_id = first.cells[2].outputs[0]["text"].strip()  # the kernel is shut down now

    from jupyter_px.api import Run

    job = Run(run_id)
    # the run goes on without the kernel: wait until both replicas logged step 19 (submit only
    # promises Pending or Running, so that is what tells it is running)
    from local_support import wait_for

    wait_for(
        lambda: (
            all("value" in s and len(s["value"].steps) >= 20 for s in job.metrics().values())
            and len(job.metrics()) == 2
        ),  # a replica's system/ metrics may come before its first value
        timeout=180,
        what="both replicas to log step 19",
    )

    second = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(c)
            for c in ("%load_ext jupyter_px", f"%px_attach {run_id} -o run", f"%px_attach {run_id} --wait")
        ]
    )
    client, env = _client(second, px_home, tmp_path)
    with client.setup_kernel(env=env):
        client.execute_cell(second.cells[0], 0)
        client.execute_cell(second.cells[1], 1)
        attached = _monitor_states(client)
        assert attached and set(attached[0].values()) == {"Running"}  # the same run, still going
        release.write_text("go")
        client.execute_cell(second.cells[2], 2)
        final = _monitor_states(client)
    # the --wait monitor did its final refresh before the cell ended (the first one refreshes on
    # its own schedule, possibly after this notebook stopped listening)
    assert final[-1] == {"master-0": "Succeeded", "worker-0": "Succeeded"}

    series = job.metrics()
    for replica in ("master-0", "worker-0"):
        assert series[replica]["value"].steps == list(range(steps)), replica


def test_notebook_flag_prefers_the_notebook_file(px_home, tmp_path):
    """In JupyterLab/Notebook the kernel knows its notebook (JPY_SESSION_NAME): the file's cells
    are shipped, not the kernel's history (which here also holds a cell the file does not)."""
    cells = [
        "%load_ext jupyter_px",
        "base = 21",
        "def double(x):\n    return 2 * x",
        "%%px_topology solo\nframework: pytorch",
        "%%px_distributed --notebook --wait -o run\nprint('answer', double(base))",
    ]
    path = tmp_path / "analysis.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), path)
    # what the kernel runs: the file's cells, and one the file does not have (a deleted cell, say)
    ran = cells[:4] + ["scratch = 'only in the history'"] + cells[4:]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in ran])
    client, env = _client(nb, px_home, tmp_path, {"JPY_SESSION_NAME": str(path)})
    with client.setup_kernel(env=env):
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
    assert "Error" not in _outputs_text(nb.cells[5]), _outputs_text(nb.cells[5])
    from jupyter_px.api import runs

    (job,) = runs()
    assert job.record.code.source == f"notebook:{path}"
    shipped = (job.paths.code_dir / job.record.code.entrypoint).read_text()
    assert "base = 21" in shipped and "scratch" not in shipped and "px_topology" not in shipped
    assert job.logs("master", 0).strip() == "answer 42"
    states = _monitor_states(client)
    assert states and states[-1] == {"master-0": "Succeeded"}


# ---- the static checks behind the magic ------------------------------------------------------


def test_free_names_sees_every_scope_and_ignores_what_the_code_binds():
    from jupyter_px.code.checks import free_names

    code = textwrap.dedent("""\
        import os
        from math import pi as PI
        x = lr * 2
        def f(a, *rest, key=None):
            return a + epochs + x + PI + len(rest)
        class Model:
            size = 3
            doubled = size * 2 + width
        squares = [i * scale for i in range(3)]
        def g():
            global made_here
            made_here = 1
        try:
            pass
        except ValueError as error:
            print(error, made_here, Model, f, g, os)
        with open(__file__) as handle:
            lambda y: y + offset
        """)
    assert free_names(code) - {"range", "print", "len", "open", "ValueError", "__file__"} == {
        "lr",
        "epochs",
        "width",
        "scale",
        "offset",
    }


def test_local_references_finds_notebook_functions_and_classes(monkeypatch):
    import sys
    import types

    from jupyter_px.code.checks import local_references

    main = types.ModuleType("__main__")  # what a kernel's user namespace is
    monkeypatch.setitem(sys.modules, "__main__", main)
    exec("def helper():\n    return 1\nclass Config:\n    pass\nitems = [Config(), {'f': helper}]\n", main.__dict__)
    namespace = main.__dict__
    assert local_references(namespace["items"]) == ["Config", "helper"]
    assert local_references({"lr": 0.1, "sizes": [1, 2], "path": Path("/tmp")}) == []


def test_transform_marks_ipython_code():
    from jupyter_px.code.notebook import transform

    shipped = transform("!nvidia-smi\n%time x = 1\nprint(x)\n")
    assert shipped.language == "ipython" and "get_ipython().system('nvidia-smi')" in shipped.source
    assert transform("print(1)\n").language == "python"


# ---- the package's own surface ---------------------------------------------------------------


def test_import_is_light_and_reexports_resolve(px_home):
    import subprocess
    import sys

    probe = (
        "import sys, jupyter_px\n"
        "heavy = [m for m in ('IPython', 'ipywidgets', 'pydantic', 'plotly', 'jupyter_server') if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr  # the replica runner imports jupyter_px

    import jupyter_px
    import jupyter_px.runstore  # the run store subpackage does not shadow the runs() listing

    assert jupyter_px.runs() == [] and jupyter_px.runs(limit=1) == []
    from jupyter_px import Run, TopologyForm, _jupyter_server_extension_points, load_ipython_extension, submit

    assert callable(submit) and Run.__name__ == "Run" and TopologyForm.__name__ == "TopologyForm"
    from jupyter_px.server import JupyterPxApp

    assert _jupyter_server_extension_points() == [{"module": "jupyter_px.server", "app": JupyterPxApp}]
    assert callable(load_ipython_extension)
