"""A notebook function runs distributed and its results come back; tracebacks name the cell.

The notebook tests run real kernels (nbclient) and real local runs, cold and warm (`launch`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest
from local_support import describe, wait
from nbclient import NotebookClient

from jupyter_px.code.function_calls import ResultMissing
from jupyter_px.code.notebook import source_spans
from jupyter_px.code.source_map import SourceMap, source_map, span

THREE = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}}


def _execute(tmp_path: Path, cells: list[str]) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    NotebookClient(
        notebook, timeout=600, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    return notebook


def _text(cell: nbformat.NotebookNode) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output["text"])
        elif output.get("output_type") == "error":
            parts.append(f"{output['ename']}: {output['evalue']}")
        elif "data" in output:
            parts.append(output["data"].get("text/plain", ""))
    return "".join(parts)


@pytest.mark.jobs
def test_a_notebook_function_and_lambda_run_distributed_and_a_raising_replica_names_the_cell(px_home, tmp_path, launch):
    notebook = _execute(
        tmp_path,
        [
            f"import os, json\nimport jupyter_px\n%load_ext jupyter_px\nTOPOLOGY = {THREE!r}\nscale = 10",
            'def rank_value(offset):\n    return int(os.environ["RANK"]) * scale + offset',
            "run = jupyter_px.submit(rank_value, TOPOLOGY, args=(1,))\nprint(json.dumps(run.results(timeout=300)))",
            "run = jupyter_px.submit(lambda: os.environ['PX_TASK_TYPE'] + os.environ['PX_TASK_INDEX'], TOPOLOGY)\n"
            "print(json.dumps(run.results(timeout=300)))",
            "def fails():\n"
            '    rank = int(os.environ["RANK"])\n'
            "    if rank == 2:\n"
            '        raise ValueError(f"rank {rank} fails")\n'
            "    return rank",
            "failing = jupyter_px.submit(fails, TOPOLOGY)\n"
            "try:\n"
            "    failing.results(timeout=300)\n"
            "except ValueError as error:\n"
            "    print('raised:', error, '|', ' '.join(error.__notes__))\n"
            "    print('remote:', error.__cause__)",
            '%%px_distributed --framework pytorch --workers 2 --wait\nimport os\nint(os.environ["RANK"]) * 100 + 7',
            "%%px_distributed --framework pytorch --workers 1 --wait -o cell_run\n"
            "import os\n"
            "x = 1\n"
            'if os.environ["PX_TASK_TYPE"] == "master": raise RuntimeError("the cell fails on master")',
        ],
    )
    cells = notebook.cells
    assert json.loads(_text(cells[2]).strip().splitlines()[-1]) == [1, 11, 21], _text(cells[2])
    assert json.loads(_text(cells[3]).strip().splitlines()[-1]) == ["master0", "worker0", "worker1"], _text(cells[3])
    raised = _text(cells[5])
    assert "raised: rank 2 fails | raised in worker-1 of the run" in raised, raised
    assert "cell [5], line 4, in fails" in raised and 'raise ValueError(f"rank {rank} fails")' in raised
    assert "<dynamic-code>" not in raised and "function.pkl" not in raised
    # the %%px_distributed cell ends with an expression: the master's value is the cell's result
    (result,) = [o for o in cells[6].outputs if o.get("output_type") == "execute_result"]
    assert result["data"]["text/plain"] == "7"
    failed_cell = _text(cells[7])
    assert "UsageError" in failed_cell and "the cell fails on master (cell [8], line 4)" in failed_cell, failed_cell

    from jupyter_px.api import runs

    by_source = {run.record.code.source: run for run in runs()}
    failing = by_source["function:fails"]
    status = failing.status()
    worker = status.replica("worker", 1)
    assert worker.failure is not None, describe(failing)
    assert (worker.failure.label, worker.failure.line, worker.failure.execution_count) == ("cell [5]", 4, 5)
    assert worker.failure.function == "fails" and worker.failure.exception == "ValueError: rank 2 fails"
    assert worker.message == "exited with code 1: ValueError: rank 2 fails (cell [5], line 4)"
    log = failing.logs("worker", 1)
    assert "cell [5], line 4, in fails" in log and "/runs/" not in log
    (cell_run,) = [run for run in runs() if run.record.code.source == "cell" and run.status().state.value == "Failed"]
    master = cell_run.status().replica("master", 0)
    assert (master.failure.label, master.failure.line, master.failure.execution_count) == ("cell [8]", 4, 8)
    assert "cell [8], line 4, in <module>" in cell_run.logs("master", 0)
    for run in runs():
        wait(run)  # every process of every run is gone


@pytest.mark.jobs
def test_a_notebook_submitted_as_cells_names_each_cell_in_a_traceback(px_home, tmp_path, launch):
    from jupyter_px.api import submit

    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("import os\nvalue = 3", execution_count=1),
            nbformat.v4.new_markdown_cell("# then"),
            nbformat.v4.new_code_cell(
                "%%px_distributed\nif os.environ['PX_TASK_TYPE'] == 'master':\n    value = value / 0", execution_count=4
            ),
        ]
    )
    path = tmp_path / "train.ipynb"
    nbformat.write(notebook, path)
    run = submit(path, {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}})
    status = wait(run)
    assert status.state.value == "Failed", describe(run)
    failure = status.replica("master", 0).failure
    assert failure is not None, describe(run)
    assert (failure.label, failure.line, failure.cell_index, failure.notebook) == ("cell [4]", 3, 2, str(path))
    assert failure.cell_id == notebook.cells[2].id
    assert "cell [4], line 3, in <module>" in run.logs("master", 0)


@pytest.mark.jobs
def test_results_of_a_replica_that_was_killed_say_so(px_home, launch):
    from jupyter_px.api import submit

    def dies():
        import os
        import signal

        if os.environ["PX_TASK_TYPE"] == "worker":
            os.kill(os.getpid(), signal.SIGKILL)
        return "master done"

    run = submit(dies, {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}})
    with pytest.raises(ResultMissing, match=r"worker-0 returned no result: it Failed: killed by SIGKILL"):
        run.results(timeout=300)
    unpicklable = submit(lambda: (x for x in ()), {"framework": "pytorch"})
    with pytest.raises(RuntimeError, match=r"TypeError: the return value \(generator\) cannot be pickled"):
        unpicklable.results(timeout=300)


class _Plants:
    """A pickle that makes a folder when it is loaded: what a forged result could run."""

    def __init__(self, folder: str):
        self.folder = folder

    def __reduce__(self):
        return (os.mkdir, (self.folder,))


def forged_outcome(folder: Path) -> bytes:
    """An outcome as the runner pickled them before results were signed, carrying `_Plants`."""
    import pickle

    return pickle.dumps({"ok": True, "value": [_Plants(str(folder)), "forged"]})


def forged_line(process: str, folder: Path) -> str:
    """A `@px-result` line as the runner wrote them before results were signed."""
    import base64

    return f"@px-result {process} {base64.b64encode(forged_outcome(folder)).decode()}"


@pytest.mark.jobs
def test_a_forged_result_line_is_neither_returned_nor_unpickled(px_home, tmp_path, launch):
    from jupyter_px.api import submit

    def prints_forgeries(lines: list[str], leave_early: bool):
        """A replica whose output holds forged result lines (one glued mid-line, one at the start of a
        line, one after the runner kept the real result); `leave_early`: it ends before keeping one."""
        import atexit
        import os
        import sys

        print("a dataset's text: " + lines[0], flush=True)
        print(lines[1], flush=True)
        atexit.register(print, lines[2], flush=True)
        if leave_early:
            sys.stdout.flush()
            os._exit(0)
        return "genuine"

    planted = tmp_path / "planted"
    lines = [forged_line("master-0", planted)] * 3
    run = submit(prints_forgeries, {"framework": "pytorch"}, args=(lines, False))
    assert run.results(timeout=300) == ["genuine"]
    # a replica that kept nothing (it left through os._exit(0)): its log's lines are not results
    early = submit(prints_forgeries, {"framework": "pytorch"}, args=(lines, True))
    assert early.results(timeout=300) == [None]
    assert "@px-result master-0" in early.logs("master", 0)
    assert not planted.exists()
    # a results file that the runner did not sign is not read either
    (run.paths.root / "results" / "master-0.pkl").write_bytes(forged_outcome(planted))
    with pytest.raises(RuntimeError, match="not signed with the run's secret"):
        run.results(timeout=300)
    assert not planted.exists()


@pytest.mark.jobs
def test_an_exception_that_cannot_be_rebuilt_comes_back_with_its_class_message_and_traceback(px_home, launch):
    from jupyter_px.api import submit
    from jupyter_px.code.function_calls import RemoteError, RemoteTraceback

    def fails():
        class DiskFull(Exception):
            def __init__(self, code, detail):
                super().__init__(f"error {code}: {detail}")

        raise DiskFull(28, "no space left on /data")

    run = submit(fails, {"framework": "pytorch"})
    with pytest.raises(RemoteError, match=r"DiskFull: error 28: no space left on /data") as caught:
        run.results(timeout=300)
    assert isinstance(caught.value.__cause__, RemoteTraceback)
    assert 'raise DiskFull(28, "no space left on /data")' in str(caught.value.__cause__)
    assert caught.value.type_name.endswith("DiskFull")


def _keep_at_once(run_dir: Path, task_index: int, start: Any) -> None:
    from jupyter_px.code.function_calls import keep

    os.environ.update(PX_TASK_TYPE="worker", PX_TASK_INDEX=str(task_index))
    start.wait()
    keep(run_dir, value=task_index, key=b"secret")


def test_replicas_keeping_their_results_at_once_each_write_their_file_and_none_falls_back_to_the_log(tmp_path, capfd):
    """Every replica of a run makes `results/`; the one that came second raised FileExistsError,
    which read as an unwritable run directory, and its result went into its log as a
    `@px-result` line (a log `job.logs()` showed the user)."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    for attempt in range(10):
        run_dir = tmp_path / f"run-{attempt}"
        run_dir.mkdir()
        start = context.Barrier(6)
        replicas = [context.Process(target=_keep_at_once, args=(run_dir, index, start)) for index in range(6)]
        for replica in replicas:
            replica.start()
        for replica in replicas:
            replica.join(30)
        assert [replica.exitcode for replica in replicas] == [0] * 6
        assert sorted(path.name for path in (run_dir / "results").iterdir()) == [f"worker-{i}.pkl" for i in range(6)]
    assert "@px-result" not in capfd.readouterr().out


def test_kwargs_without_a_function_are_refused(px_home):
    from jupyter_px.api import submit

    with pytest.raises(TypeError, match="kwargs are a function's keyword arguments"):
        submit("print(1)\n", {}, kwargs={"a": 1})


# ---- the source map, by itself ----------------------------------------------------------------------


def test_spans_follow_cells_their_magic_lines_and_blanked_px_lines(tmp_path):
    previous = [("import os\n%px_status last\nx = 1\n", 0, {"execution_count": 2}), ("%%px_topology t\na: 1", 0, {})]
    current = ("y = x\nraise ValueError(y)\n", 1, {"execution_count": 5, "cell_id": "c5"})
    from jupyter_px.code.notebook import notebook_source

    shipped = notebook_source([p[0] for p in previous], current[0])
    assert shipped == "import os\n\nx = 1\n\ny = x\nraise ValueError(y)\n"  # the %px line is blank, not gone
    spans = source_spans(previous, current, shipped)
    code = tmp_path / "code"
    code.mkdir()
    (code / "sources.json").write_text(source_map({"main.py": spans}))
    found = SourceMap.load(code)
    main = str(code / "main.py")
    assert found.where(main, 3) == {"label": "cell [2]", "execution_count": 2, "line": 3}
    assert found.where(main, 6) == {"label": "cell [5]", "execution_count": 5, "cell_id": "c5", "line": 3}
    assert found.where(main, 4) is None and found.where("/elsewhere/main.py", 3) is None
    assert source_spans(previous, current, shipped + "extra\n") == []  # rewritten to other lines: no map


def test_a_traceback_names_cells_and_a_function_cell_shows_its_lines(tmp_path):
    code = tmp_path / "code"
    code.mkdir()
    (code / "main.py").write_text("def f():\n    return 1 / 0\nf()\n")
    cell_file = "/tmp/ipykernel_1/cell-9.py"
    (code / "sources.json").write_text(
        source_map(
            {"main.py": [span(1, 3, 1, execution_count=7)]},
            {cell_file: {"label": "cell [9]", "lines": ["def g():\n", "    raise KeyError('k')\n"]}},
        )
    )
    found = SourceMap.load(code)
    found.install()
    namespace: dict = {}
    exec(compile("def g():\n    raise KeyError('k')\n", cell_file, "exec"), namespace)
    try:
        exec(compile((code / "main.py").read_text(), str(code / "main.py"), "exec"), {})
    except ZeroDivisionError as error:
        text = found.format_exception(error)
        record = found.failure_record(error)
    # the map's offset 1: the cell's first line (its magic) was not shipped
    assert "cell [7], line 4, in <module>" in text and "cell [7], line 3, in f" in text
    assert "    return 1 / 0" in text and str(code) not in text
    assert (record["label"], record["line"], record["function"]) == ("cell [7]", 3, "f")
    try:
        namespace["g"]()
    except KeyError as error:
        text = found.format_exception(error)
    assert "cell [9], line 2, in g" in text and "raise KeyError('k')" in text
    assert os.path.exists(code / "sources.json")
