"""The run service: typed code sources, the one replica enumeration, reads that only read, and
the one keeper. Real run directories and real (dead) processes; the submissions that start
something use the local backend's real supervisor."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from local_support import JOBS, wait

from jupyter_px.processes.detached import ProcessIdentity
from jupyter_px.runstore import ReplicaStatus, RunRecord, RunState, RunStatus, RunStore
from jupyter_px.runstore.models import RunOwner
from jupyter_px.service import (
    NotebookCells,
    RunService,
    ScriptFile,
    SourceText,
    Submission,
    code_source,
    load_code,
    run_replicas,
)

TWO_WORKERS = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}}


# ---- typed code sources ------------------------------------------------------------------------


def test_a_plain_string_or_path_is_decided_once_and_explicitly(tmp_path):
    assert code_source("train.py") == ScriptFile("train.py")
    assert code_source(Path("train.py")) == ScriptFile(Path("train.py"))
    assert code_source(Path("book.ipynb")) == NotebookCells(Path("book.ipynb"))
    assert code_source("print('x')  # not a path.py\n") == SourceText("print('x')  # not a path.py\n")
    assert code_source("x = 'a.py'; print(x)\n") == SourceText("x = 'a.py'; print(x)\n")  # code, though it ends .py
    typed = SourceText("pass\n", origin="cell")
    assert code_source(typed) is typed
    with pytest.raises(TypeError, match="got int"):
        code_source(3)  # type: ignore[arg-type]


def test_a_script_ships_under_its_name_as_utf8(tmp_path):
    script = tmp_path / "train.py"
    script.write_bytes("# -*- coding: latin-1 -*-\nprint('caf\xe9')\n".encode("latin-1"))
    code = load_code(ScriptFile(script))
    assert (code.entrypoint, code.language, code.origin) == ("train.py", "python", str(script.resolve()))
    assert code.text == "# -*- coding: utf-8 -*-\nprint('caf\xe9')\n"
    with pytest.raises(FileNotFoundError, match="missing.py"):
        load_code(ScriptFile(tmp_path / "missing.py"))
    read = load_code(ScriptFile("sub/train.py", text="print(1)", origin="script:sub/train.py"))
    assert (read.entrypoint, read.text, read.origin) == ("train.py", "print(1)\n", "script:sub/train.py")


def test_code_text_ships_as_main_with_its_origin_and_language():
    code = load_code(SourceText("get_ipython().system('ls')\n", origin="cell", language="ipython"))
    assert (code.entrypoint, code.language, code.origin) == ("main.py", "ipython", "cell")


def _notebook(path: Path) -> Path:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# title"},
        {"cell_type": "code", "metadata": {}, "source": "%%px_topology t\nframework: pytorch\n"},
        {"cell_type": "code", "metadata": {}, "source": ["a = 1\n", "print(a)\n"]},
        {"cell_type": "code", "metadata": {"tags": ["px"]}, "source": "!echo hi\nb = 2\n"},
    ]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_notebook_cells_all_or_tagged(tmp_path):
    book = _notebook(tmp_path / "book.ipynb")
    every = load_code(NotebookCells(book))
    assert "a = 1" in every.text and "b = 2" in every.text and "px_topology" not in every.text
    assert every.language == "ipython" and every.origin == f"notebook:{book}"  # `!echo` needs a shell
    tagged = load_code(NotebookCells(book, cells="tagged"))
    assert "b = 2" in tagged.text and "a = 1" not in tagged.text
    with pytest.raises(ValueError, match="no cells tagged 'train'"):
        load_code(NotebookCells(book, cells="tagged", tag="train"))
    with pytest.raises(ValueError, match="cells: 'some'"):
        NotebookCells(book, cells="some")  # type: ignore[arg-type]
    given = load_code(NotebookCells("api/path.ipynb", content=json.loads(book.read_text()), origin="notebook:x"))
    assert given.text == every.text and given.origin == "notebook:x"  # content read elsewhere: not from disk


@pytest.mark.jobs
def test_submit_records_the_typed_source(px_home, tmp_path):
    service = RunService()
    run_id = service.submit(
        Submission(SourceText("print('from a cell')\n", origin="cell"), TWO_WORKERS, workdir=tmp_path, origin="magic")
    )
    record = service.record(run_id)
    assert (record.code.entrypoint, record.code.source, record.submitted_from) == ("main.py", "cell", "magic")
    assert record.backend == "local"
    assert wait(_Handle(service, run_id)).state == RunState.SUCCEEDED
    assert "from a cell" in service.log_tail(run_id, "worker", 1)


def test_a_submission_that_cannot_start_leaves_nothing(px_home, tmp_path):
    service = RunService()
    with pytest.raises(FileNotFoundError, match="nope.py"):
        service.submit(Submission(ScriptFile(tmp_path / "nope.py"), TWO_WORKERS))
    assert service.list_runs() == []


class _Handle:
    """What local_support.wait needs of a run."""

    def __init__(self, service: RunService, run_id: str):
        self.service, self.run_id = service, run_id

    def wait(self, timeout=None, poll=0.25):
        return self.service.wait(self.run_id, timeout=timeout, poll=poll)

    def status(self):
        return self.service.status(self.run_id)


# ---- one replica enumeration -------------------------------------------------------------------


def _record(topology: dict) -> RunRecord:
    return RunRecord(run_id="r-1", topology=topology)


def test_replicas_are_the_topologys_in_start_order_then_any_only_the_status_names():
    record = _record(TWO_WORKERS)
    assert run_replicas(record) == [("master", 0), ("worker", 0), ("worker", 1)]
    # a status written in another order, or missing replicas, does not change the answer
    partial = RunStatus(run_id="r-1", replicas=[ReplicaStatus(role="worker", index=1)])
    assert run_replicas(record, partial) == [("master", 0), ("worker", 0), ("worker", 1)]
    # a replica only the status knows (a record this version cannot fully read) is kept, last
    extra = RunStatus(run_id="r-1", replicas=[ReplicaStatus(role="evaluator", index=0)])
    assert run_replicas(record, extra)[-1] == ("evaluator", 0)
    unreadable = _record({"framework": "caffe"})
    named = RunStatus(run_id="r-1", replicas=[ReplicaStatus(role="worker", index=0), ReplicaStatus(role="ps", index=0)])
    assert run_replicas(unreadable, named) == [("worker", 0), ("ps", 0)]
    assert run_replicas(unreadable) == []


# ---- reads only read; the keeper acts ----------------------------------------------------------


def _orphan(store: RunStore, run_id: str = "orphan-1") -> int:
    """A local run claiming to be Running under a supervisor pid that is dead."""
    store.create(RunRecord(run_id=run_id, topology=TWO_WORKERS), {"main.py": "pass\n"})
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    status = RunStatus.initial(run_id, run_replicas(store.record(run_id)))
    status.state, status.owner = RunState.RUNNING, RunOwner(kind="supervisor", pid=dead.pid)
    store.write_status(status)
    return dead.pid


def _files(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_observe_list_and_view_report_a_gone_owner_and_write_nothing(px_home):
    store = RunStore()
    pid = _orphan(store)
    store.create(RunRecord(run_id="done-1", topology=TWO_WORKERS), {"main.py": "pass\n"})
    store.write_status(RunStatus(run_id="done-1", state=RunState.SUCCEEDED))
    service = RunService(store)
    before = _files(store.root)
    problem = f"the supervisor (pid {pid}) is gone while the run was Running"
    for _ in range(2):
        observation = service.observe("orphan-1")
        assert (observation.status.state, observation.owner_problem) == (RunState.RUNNING, problem)
        listed = {view.record.run_id: view for view in service.list_runs()}
        assert listed["orphan-1"].owner_problem == problem and listed["orphan-1"].status.state == RunState.RUNNING
        assert listed["done-1"].owner_problem is None  # a finished run has no owner to miss
        assert service.view("orphan-1").owner_problem == problem
        assert service.replicas("orphan-1") == [("master", 0), ("worker", 0), ("worker", 1)]
        assert service.read_log("orphan-1", "master", 0) == ("", 0)
    assert _files(store.root) == before

    kept = service.keep("orphan-1")  # the one explicit keeper: the run is Lost, and it says why
    assert (kept.state, kept.reason) == (RunState.LOST, "SupervisorLost") and problem in (kept.message or "")
    assert store.status("orphan-1").state == RunState.LOST
    assert service.observe("orphan-1").owner_problem is None


def test_list_pages_newest_first(px_home):
    store = RunStore()
    for number in range(5):
        record = RunRecord(run_id=f"page-{number}", topology=TWO_WORKERS, created_at=1000 + number)
        store.create(record, {"main.py": "pass\n"})
        store.write_status(RunStatus(run_id=f"page-{number}", state=RunState.SUCCEEDED))
    service = RunService(store)
    assert [v.record.run_id for v in service.list_runs()] == [f"page-{n}" for n in (4, 3, 2, 1, 0)]
    assert [v.record.run_id for v in service.list_runs(limit=2, offset=1)] == ["page-3", "page-2"]
    assert service.list_runs(limit=2, offset=5) == []


def test_keep_falls_back_to_the_stored_status_when_the_backend_cannot_be_used(px_home):
    store = RunStore()
    store.create(RunRecord(run_id="far-1", topology=TWO_WORKERS, backend="pbs"), {"main.py": "pass\n"})
    store.write_status(RunStatus(run_id="far-1", state=RunState.RUNNING))
    service = RunService(store)
    assert service.keep("far-1").state == RunState.RUNNING
    observation = service.observe("far-1")
    assert observation.status.state == RunState.RUNNING and "pbs" in (observation.owner_problem or "")


def test_wait_times_out_naming_the_run_and_leaves_it_going(px_home):
    store = RunStore()
    store.create(RunRecord(run_id="slow-1", topology=TWO_WORKERS, backend="pbs"), {"main.py": "pass\n"})
    store.write_status(RunStatus(run_id="slow-1", state=RunState.RUNNING))
    with pytest.raises(TimeoutError, match="run slow-1 still Running after 0.2 s"):
        RunService(store).wait("slow-1", timeout=0.2, poll=0.05)


def test_no_surface_imports_a_backend():
    """Magics, CLI, REST handlers, widgets, presentation and the public API go through the
    service (a string search, as `git grep` would do it)."""
    package = Path(__file__).resolve().parents[1] / "jupyter_px"
    surfaces = [package / "api.py"] + [
        path
        for folder in ("cli", "magics", "server", "widgets", "presentation")
        for path in (package / folder).rglob("*.py")
    ]
    offenders = [
        str(path.relative_to(package))
        for path in surfaces
        if any(
            line.lstrip().startswith(("from ..backends", "from ...backends", "import jupyter_px.backends"))
            or "from jupyter_px.backends" in line
            for line in path.read_text().splitlines()
        )
    ]
    assert offenders == []


def test_submitting_a_script_by_path_through_the_public_api_still_works(px_home, tmp_path):
    """`jupyter_px.submit("x.py")` keeps accepting a path string: decided once, by `code_source`."""
    import jupyter_px

    with pytest.raises(FileNotFoundError, match="nowhere.py"):
        jupyter_px.submit(str(tmp_path / "nowhere.py"), TWO_WORKERS)
    assert RunService().list_runs() == []
    run = jupyter_px.submit(str(JOBS / "faults.py"), TWO_WORKERS, args=["env"], workdir=tmp_path)
    assert (run.record.code.entrypoint, run.record.code.source) == ("faults.py", str(JOBS / "faults.py"))
    run.stop()


def test_the_runs_index_etag_changes_when_a_read_finds_the_owner_gone(px_home):
    """The sidebar's poll sees a supervisor die although status.json did not change (a read
    writes nothing, so the status stamp stays): the owner problem is part of the ETag."""
    store = RunStore()
    _orphan(store, "alive-1")
    run_dir = store.paths("alive-1").root.resolve()
    supervisor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], cwd=run_dir)
    try:
        status = store.status("alive-1")
        identity = ProcessIdentity.of(supervisor.pid)
        status.owner = RunOwner(kind="supervisor", pid=identity.pid, started_at=identity.started_at)
        store.write_status(status)
        service = RunService(store)
        first = service.runs_page()
        assert first.runs[0]["owner_problem"] is None and service.runs_etag() == first.etag
    finally:
        supervisor.kill()
        supervisor.wait()
    before = _files(store.root)
    assert service.runs_etag() != first.etag
    second = service.runs_page()
    assert second.runs[0]["owner_problem"] == f"the supervisor (pid {supervisor.pid}) is gone while the run was Running"
    assert second.runs[0]["state"] == "Running" and service.runs_etag() == second.etag
    assert _files(store.root) == before
