"""One vocabulary of reasons: every backend writes `Reason`, and status files written by older
versions (a user's stop spelled `Stopped` on Kubernetes, the native backend recorded as
`kubernetes`) still read in today's names."""

from __future__ import annotations

import json

from jupyter_px.runstore import RunRecord, RunState, RunStatus, RunStore
from jupyter_px.runstore.models import LEGACY_REASONS, Reason


def test_an_old_status_file_reads_in_todays_reason_names(px_home):
    store = RunStore()
    store.create(RunRecord(run_id="old-1", topology={}, backend="kubernetes"), {"main.py": "pass\n"})
    old = {
        "run_id": "old-1",
        "state": "Stopped",
        "reason": "Stopped",
        "replicas": [
            {"role": "master", "index": 0, "state": "Stopped", "reason": "Stopped"},
            {"role": "worker", "index": 0, "state": "Pending", "reason": "ImagePullBackOff"},
            {"role": "worker", "index": 1, "state": "Pending", "reason": "SomeNewKubeletReason"},
        ],
    }
    store.paths("old-1").status.write_text(json.dumps(old))
    status = store.status("old-1")
    assert status.state == RunState.STOPPED and status.reason == Reason.STOPPED_BY_USER
    assert [r.reason for r in status.replicas] == ["StoppedByUser", "ImagePullBackOff", "SomeNewKubeletReason"]
    assert store.record("old-1").backend == "native"
    store.write_status(status)  # and it is written back in today's names
    written = json.loads(store.paths("old-1").status.read_text())
    assert written["reason"] == "StoppedByUser" and written["replicas"][0]["reason"] == "StoppedByUser"


def test_reasons_are_strings_and_legacy_spellings_are_not_members():
    status = RunStatus(run_id="r", reason=Reason.REPLICA_FAILED)
    assert status.model_dump(mode="json")["reason"] == "ReplicaFailed"
    assert not set(LEGACY_REASONS) & {reason.value for reason in Reason}


def test_every_backend_name_is_one_name():
    from jupyter_px.backends import backend_name, get_backend
    from jupyter_px.topology import parse_topology

    assert backend_name("kubernetes") == backend_name("native") == "native"
    assert get_backend("kubernetes").name == get_backend("native").name == "native"
    assert parse_topology({"backend": "kubernetes"}).backend_kind == "native"


def test_a_reason_reads_as_its_name_in_messages():
    """Backends build messages from the reasons they hold (`worker-1 failed (Error)`)."""
    assert f"failed ({Reason.ERROR})" == "failed (Error)" and str(Reason.OOM_KILLED) == "OOMKilled"
