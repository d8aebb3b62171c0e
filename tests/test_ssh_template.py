"""A host's warm template (`backends/ssh/host_template.py`) with real Unix sockets, in this
process: what the entries queued on its socket are told when it retires."""

from __future__ import annotations

import os
import signal
import socket

from jupyter_px.backends.ssh import task_entry
from jupyter_px.backends.ssh.host_template import HostTemplate
from jupyter_px.processes import file_lock

CHANGED = "OMP_NUM_THREADS changed since this host's template started"


def test_the_entries_queued_behind_a_refused_one_are_told_why_the_template_retires(tmp_path, monkeypatch):
    """A run's three replicas reach the host's template together, after the host's environment
    changed: the first is refused and the template retires; the two queued behind it are told
    the same reason (they started cold saying the template "did not answer": a reset connection)."""
    monkeypatch.setattr(signal, "signal", lambda *_: None)  # the template's own handlers: not this process's
    monkeypatch.setattr(signal, "set_wakeup_fd", lambda *_: -1)
    lock = file_lock.acquire(tmp_path / "lock", timeout=0)
    assert lock is not None
    path = str(tmp_path / "template.sock")
    template = HostTemplate(path, "fingerprint", 600.0, lock, set(), {"OMP_NUM_THREADS": "1"})
    entries = []
    for index in range(3):
        entry = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        entry.connect(path)
        request = {"op": "start", "fingerprint": "fingerprint", "environ": {"OMP_NUM_THREADS": "3"}}
        task_entry.send_message(entry, {**request, "args": ["run", "worker", str(index)]})
        entries.append(entry)

    first, _ = template.listener.accept()
    template.handle(first)

    assert template.retiring and not os.path.exists(path)
    successor = file_lock.acquire(tmp_path / "lock", timeout=0)  # a retiring template lets its lock go
    assert successor is not None
    successor.close()
    for entry in entries:
        entry.settimeout(10)
        reply, _ = task_entry.read_message(entry)
        assert reply == {"error": CHANGED}
        entry.close()
    first.close()
    os.close(template.wakeup_read)
    os.close(template.wakeup_write)
