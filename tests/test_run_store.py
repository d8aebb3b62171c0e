"""The run store: ids that cannot escape it, all-or-nothing creation, atomic status, log offsets."""

from __future__ import annotations

import json
import os

import pytest

from jupyter_px.runstore import (
    InvalidRunId,
    ReplicaState,
    ReplicaStatus,
    RunDamaged,
    RunNotFound,
    RunRecord,
    RunState,
    RunStatus,
    RunStore,
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
    status = RunStatus(
        run_id="job-3", replicas=[ReplicaStatus(role="master", index=0), ReplicaStatus(role="worker", index=0)]
    )
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


def test_listing_is_newest_first_by_creation_not_by_last_write(store):
    # Created in the reverse of name order, so neither name order nor a status write can pass.
    for name in ("run-c", "run-b", "run-a"):
        store.create(RunRecord(run_id=name, topology={}), {"main.py": ""})
    os.makedirs(store.root / "not_a_run")
    os.makedirs(store.root / "UPPER")
    status = store.status("run-c")  # the oldest run is still writing its status
    status.state = RunState.RUNNING
    store.write_status(status)
    assert store.run_ids() == ["run-a", "run-b", "run-c"]  # names that cannot be run ids are not runs
    assert [record.run_id for record, _ in store.list()] == ["run-a", "run-b", "run-c"]
    assert [record.run_id for record, _ in store.list(limit=2)] == ["run-a", "run-b"]
    assert [record.run_id for record, _ in store.list(limit=1)] == ["run-a"]


def test_resolve_takes_an_id_a_name_or_last(store):
    store.create(RunRecord(run_id="utf-aaaaaa", name="utf", topology={}), {"main.py": ""})
    store.create(RunRecord(run_id="other-bbbbbb", name="other", topology={}), {"main.py": ""})
    store.create(RunRecord(run_id="utf-cccccc", name="utf", topology={}), {"main.py": ""})
    store.create(RunRecord(run_id="last-dddddd", name="late", topology={}), {"main.py": ""})
    old = store.status("utf-aaaaaa")
    old.state = RunState.RUNNING
    store.write_status(old)  # a write to an older run does not make it the newest
    assert store.resolve("utf") == "utf-cccccc"  # the newest run of that name
    assert store.resolve("other") == "other-bbbbbb"
    assert store.resolve("utf-aaaaaa") == "utf-aaaaaa"  # an id is itself
    assert store.resolve("last") == "last-dddddd"
    for unknown in ("nope", "", "../etc"):
        with pytest.raises(RunNotFound):
            store.resolve(unknown)


def test_resolve_last_in_an_empty_store(store):
    with pytest.raises(RunNotFound, match="no runs yet"):
        store.resolve("last")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p: p.status.write_text("garbage"), r"run broken is damaged: status.json is not valid"),
        (lambda p: p.status.unlink(), r"run broken is damaged: status.json is missing"),
        (lambda p: p.status.write_text('{"run_id": "broken", "state": "Runn'), r"status.json is not valid"),
        (lambda p: p.record.write_text('{"run_id": "broken", "topo'), r"record.json is not valid"),
        (lambda p: p.record.write_text('{"run_id": "broken"}'), r"record.json is not valid \(topology"),
        (lambda p: p.record.unlink(), r"run broken is damaged: record.json is missing"),
    ],
    ids=["garbage-status", "missing-status", "truncated-status", "truncated-record", "invalid-record", "no-record"],
)
def test_damaged_runs_are_reported_in_one_line_and_skipped_by_listings(store, damage, message):
    for name in ("older", "broken", "newer"):
        store.create(RunRecord(run_id=name, topology={}), {"main.py": ""})
    damage(store.paths("broken"))
    with pytest.raises(RunDamaged, match=message) as raised:
        store.record("broken") if "record" in message else store.status("broken")
    assert "\n" not in str(raised.value) and len(str(raised.value)) < 200
    assert [record.run_id for record, _ in store.list()] == ["newer", "older"]
    assert [record.run_id for record, _ in store.list(limit=2)] == ["newer", "older"]


def test_runs_and_sweeps_are_one_store_listed_and_found_by_one_rule(tmp_path):
    """One store holds the runs and the sweeps beside them (`RunStore.sweeps`): both publish whole,
    list newest first by publication, and find an id, a name (its newest) or `last`
    (`runstore/published.py`); a sweep directory without its record is left out."""
    from jupyter_px.runstore.models import CodeSpec
    from jupyter_px.runstore.sweeps import SweepNotFound, SweepRecord, SweepStatus

    runs = RunStore(tmp_path)
    sweeps = runs.sweeps
    made = []
    for name in ("grid", "grid", "other"):
        sweep_id = sweeps.new_id(name)
        record = SweepRecord(sweep_id=sweep_id, name=name, topology={}, code=CodeSpec(), workdir=str(tmp_path))
        sweeps.create(record, {}, SweepStatus(sweep_id=sweep_id))
        made.append(sweep_id)
    (sweeps.root / "sweep-261129-000000-abcdef").mkdir()  # no record: not a sweep (yet)
    assert sweeps.sweep_ids() == made[::-1]
    assert sweeps.resolve("grid") == made[1] and sweeps.resolve("last") == made[2]
    with pytest.raises(SweepNotFound, match="'nope'"):
        sweeps.resolve("nope")
    assert runs.run_ids() == []  # the two kinds never mix
