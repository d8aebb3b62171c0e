"""The run store: ids that cannot escape it, all-or-nothing creation, atomic status, log offsets."""

from __future__ import annotations

import json
import os

import pytest

from jupyter_px.runstore import (
    InvalidRunId,
    ReplicaState,
    RunNotFound,
    RunRecord,
    RunState,
    RunStore,
    initial_status,
    new_run_id,
    validate_run_id,
)


@pytest.fixture
def store(tmp_path):
    return RunStore(tmp_path)


@pytest.mark.parametrize("bad", ["../etc", "a/b", "", "-x", "x-", "UPPER", "a" * 41, ".hidden", "a b", "é", None, 3])
def test_run_ids_that_could_escape_are_refused(bad):
    with pytest.raises(InvalidRunId):
        validate_run_id(bad)


def test_new_run_ids_are_valid_and_unique():
    ids = {new_run_id("My Job / v2 ..") for _ in range(200)} | {new_run_id() for _ in range(200)}
    assert len(ids) == 400
    assert all(validate_run_id(i) for i in ids)
    assert next(iter(i for i in ids if i.startswith("my"))).startswith("my-job-v2-")


def test_create_publishes_a_complete_run(store):
    record = RunRecord(run_id="job-1", topology={"framework": "pytorch"})
    paths = store.create(record, {"main.py": "print(1)\n", "pkg/util.py": b"X = 1\n"})
    assert (paths.code_dir / "main.py").read_text() == "print(1)\n"
    assert (paths.code_dir / "pkg" / "util.py").exists()
    for directory in (paths.logs_dir, paths.metrics_dir, paths.outputs_dir, paths.tensorboard_dir):
        assert directory.is_dir()
    saved = store.record("job-1")
    assert saved.user and saved.host and saved.versions["jupyter_px"]
    assert store.status("job-1").state == RunState.PENDING
    with pytest.raises(FileExistsError):
        store.create(record, {})


def test_failed_create_leaves_nothing_behind(store):
    with pytest.raises(ValueError, match="leaves the code directory"):
        store.create(RunRecord(run_id="job-2", topology={}), {"main.py": "", "../../evil.py": ""})
    assert store.run_ids() == []
    assert [p.name for p in store.root.iterdir()] == []


def test_unknown_and_malformed_runs(store):
    with pytest.raises(RunNotFound, match="no run 'nope'"):
        store.status("nope")
    with pytest.raises(RunNotFound, match="is not valid"):
        store.record("../../etc")


def test_status_writes_are_atomic_and_replace(store):
    store.create(RunRecord(run_id="job-3", topology={}), {"main.py": ""})
    status = initial_status("job-3", [("master", 0), ("worker", 0)])
    status.state = RunState.RUNNING
    status.replicas[1].state = ReplicaState.FAILED
    store.write_status(status)
    again = store.status("job-3")
    assert again.state == RunState.RUNNING and again.replica("worker", 0).state == ReplicaState.FAILED
    assert again.counts() == {"Pending": 1, "Failed": 1}
    leftovers = [p for p in store.paths("job-3").root.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
    assert json.loads(store.paths("job-3").status.read_text())["state"] == "Running"


def test_read_log_offsets_and_tail(store):
    paths = store.create(RunRecord(run_id="job-4", topology={}), {"main.py": ""})
    paths.log("worker", 1).write_bytes(b"line 1\nline 2\n")
    text, offset = store.read_log("job-4", "worker", 1)
    assert (text, offset) == ("line 1\nline 2\n", 14)
    with open(paths.log("worker", 1), "ab") as handle:
        handle.write(b"line 3\n")
    assert store.read_log("job-4", "worker", 1, offset) == ("line 3\n", 21)
    assert store.read_log("job-4", "worker", 1, -7)[0] == "line 3\n"
    assert store.read_log("job-4", "master", 0) == ("", 0)


def test_listing_is_newest_first_and_skips_junk(store):
    for name in ("first", "second", "third"):
        store.create(RunRecord(run_id=name, topology={}), {"main.py": ""})
    os.makedirs(store.root / "not_a_run")
    (store.root / "broken").mkdir()
    (store.root / "broken" / "record.json").write_text("{")
    assert [record.run_id for record, _ in store.list()] == ["third", "second", "first"]
    assert len(store.list(limit=2)) == 2
