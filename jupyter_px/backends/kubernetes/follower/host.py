"""A Jupyter server's followers: the Kubernetes runs of its store followed inside the server, on
one watch per namespace (`namespace_watch.py`), instead of a process and a watch per run.

Without a server, each run has its follower of its own (`python -m ...follower RUN_DIR`). A
server (`RunService.host_followers`, opened by the server extension beside its keeper) opens a
`FollowerHost` for its run store. One owner per run at any time, always recorded in status.json:

* the host registers itself in the store (`hosts/<name>.json`); an owner of kind `server` is
  alive while its process runs and its host is registered (`followed.owner_alive`);
* a run submitted in the server (the REST API) is followed here from its start: `take` records
  the host as the owner, under the run's start lock, before its follower may act;
* the keeper's step (`keep`, through `KubernetesBackend.reconcile`) takes a run nobody follows,
  and asks a run's own follower to hand its run over (`handover.py`): the follower records the
  host as the owner and exits, then the host takes the run's follower lock and follows it;
* `close` (the server stops) ends its followers and hands each run back to a follower of its
  own (recorded under the start lock as every start is), then unregisters. A server that dies
  without closing leaves owners whose process is gone: a read reports "nobody is following this
  run", and the next keeper (another server's, `Run.wait()`, `jupyter px follow`) follows it.

Each run's follower is the same `Follower` as a process of its own runs, in a thread, fed by its
share of the namespace watch and holding the run's follower lock, so a per-run follower started
meanwhile exits at once. Reads never act: nothing here runs on a read.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ....processes import detached, file_lock
from ....runstore import RunNotFound, RunStore, atomic_write_json
from ....runstore.models import RunOwner
from ...followed import HOSTS_DIR, host_file, owner_alive, start_follower_process, starting
from ..shared.client import connect
from ..shared.handle import FOLLOWER, RunHandle
from ..shared.settings import load_settings
from . import handover
from .follower import Follower
from .namespace_watch import NamespaceWatch

log = logging.getLogger(__name__)

#: How long the keeper waits for a run's own follower to hand its run over (it looks every
#: second; a follower finishing its run does not, and keeps it).
HANDOVER_WAIT_S = 10.0
#: How long `take` waits for the run's follower lock (a follower that handed over, exiting).
LOCK_WAIT_S = 10.0
#: How long `close` waits for its follower threads to leave (each hands its run back as it goes).
LEAVE_WAIT_S = 10.0

_HOSTS: dict[Path, FollowerHost] = {}
_HOSTS_LOCK = threading.Lock()


def active_host(home: Path) -> FollowerHost | None:
    """The host of followers this process runs for the run store `home`, if any."""
    with _HOSTS_LOCK:
        return _HOSTS.get(Path(home).resolve())


#: A namespace watch's key: the API server, the kubeconfig context, the namespace.
WatchKey = tuple[str, str | None, str]


@dataclass
class _Hosted:
    follower: Follower
    lock: IO[str]  # the run's follower lock, held while this host follows it
    watch: WatchKey
    thread: threading.Thread | None = None


class FollowerHost:
    """The runs of `store` this process follows (see the module doc). `open` it, `close` it."""

    def __init__(self, store: RunStore):
        self.store = store
        self.name = f"{os.getpid()}-{secrets.token_hex(4)}"
        me = detached.ProcessIdentity.current()
        self.owner = RunOwner(kind="server", pid=me.pid, started_at=me.started_at, host=self.name)
        self._lock = threading.RLock()
        self._runs: dict[str, _Hosted] = {}
        self._watches: dict[WatchKey, NamespaceWatch] = {}
        self._closed = False

    @classmethod
    def open(cls, store: RunStore) -> FollowerHost | None:
        """Register a host for `store` in this process; None if one is registered already."""
        home = Path(store.home).resolve()
        with _HOSTS_LOCK:
            if home in _HOSTS:
                return None
            _forget_dead_hosts(home)
            host = cls(store)
            atomic_write_json(host_file(home, host.name), {"pid": host.owner.pid, "started_at": host.owner.started_at})
            _HOSTS[home] = host
        log.info("following the Kubernetes runs of %s here, one watch per namespace", home)
        return host

    # ---- following ---------------------------------------------------------------------------
    def follows(self, run_id: str) -> bool:
        with self._lock:
            hosted = self._runs.get(run_id)
            return hosted is not None and (hosted.thread is None or hosted.thread.is_alive())

    def watches(self) -> int:
        with self._lock:
            return len(self._watches)

    def take(self, run_id: str) -> bool:
        """Follow the run here, recording this host as its owner before its follower may act.
        The caller holds the run's start lock and found no live owner (or this host). False when
        this host is closing or another follower holds the run's lock."""
        root = self.store.paths(run_id).root
        if self._closed or self.follows(run_id):
            return not self._closed
        lock = file_lock.acquire(root / FOLLOWER.lock, LOCK_WAIT_S)
        if lock is None:
            log.info("run %s: another follower holds it; not taken", run_id)
            return False
        try:
            handle = RunHandle.load(root)
            key = (handle.host, handle.context, handle.namespace)
            with self._lock:  # the watch and the run together: a watch no run uses is closed
                if self._closed:
                    lock.close()
                    return False
                watch = self._watches.get(key)
                if watch is None:
                    cluster = connect(load_settings(namespace=handle.namespace, context=handle.context))
                    watch = self._watches[key] = NamespaceWatch(cluster)
                follower = Follower(self.store, run_id, watch.subscription(handle.base), self.owner)
                hosted = self._runs[run_id] = _Hosted(follower, lock, key)
            status = self.store.status(run_id)
            status.owner = self.owner
            self.store.write_status(status)
        except BaseException:
            self._forget(run_id)
            lock.close()
            raise
        handover.withdraw(root)
        hosted.thread = threading.Thread(target=self._follow, args=(run_id, hosted), name=f"px-k8s-{run_id}")
        hosted.thread.daemon = True
        hosted.thread.start()
        return True

    def _forget(self, run_id: str) -> None:
        """No longer following the run: its namespace's watch ends if no other run uses it."""
        with self._lock:
            hosted = self._runs.pop(run_id, None)
            if hosted is None or any(h.watch == hosted.watch for h in self._runs.values()):
                return
            watch = self._watches.pop(hosted.watch, None)
        if watch is not None:
            watch.close()

    def _follow(self, run_id: str, hosted: _Hosted) -> None:
        """A follower's thread: follow until the run ends or the follower leaves, then hand the
        run back if it is unfinished and still ours (a crash, a host that closes)."""
        try:
            hosted.follower.run()
        except Exception:
            log.exception("run %s: its follower in this server failed; handing the run back", run_id)
        finally:
            hosted.follower.close()
            hosted.lock.close()  # the run's follower lock: free for the follower it goes back to
            self._forget(run_id)
        self._hand_back(run_id)

    def _hand_back(self, run_id: str) -> None:
        """A follower of its own for an unfinished run this host owns (under its start lock)."""
        root = self.store.paths(run_id).root
        try:
            with starting(root, FOLLOWER):
                status = self.store.status(run_id)
                if status.state.finished or status.owner is None or status.owner.host != self.name:
                    return
                start_follower_process(self.store, root, FOLLOWER)
        except (RunNotFound, OSError) as error:
            log.warning("run %s: cannot hand it back: %s", run_id, error)

    # ---- the keeper's step -------------------------------------------------------------------
    def keep(self, run_id: str) -> None:
        """Take the run unless someone follows it: a run nobody follows is followed here, a run
        its own follower follows is handed over; a run another server follows is left to it."""
        root = self.store.paths(run_id).root
        if self._closed or self.follows(run_id) or not (root / FOLLOWER.handle).exists():
            return
        status = self.store.status(run_id)
        if status.state.finished:
            return
        if status.owner is not None and status.owner.host is None and owner_alive(status, self.store.home):
            self._take_over(run_id)
            return
        with starting(root, FOLLOWER):
            status = self.store.status(run_id)
            if status.state.finished:
                return
            if owner_alive(status, self.store.home) and (status.owner and status.owner.host) != self.name:
                return  # followed meanwhile (a keeper elsewhere), or by another server
            if not self.take(run_id):
                start_follower_process(self.store, root, FOLLOWER)

    def _take_over(self, run_id: str) -> None:
        """Ask the run's own follower for its run; follow it once it has recorded this host as
        the owner and gone (or if it is gone meanwhile)."""
        root = self.store.paths(run_id).root
        handover.request(root, self.owner)
        deadline = time.monotonic() + HANDOVER_WAIT_S
        with starting(root, FOLLOWER):
            while True:
                status = self.store.status(run_id)
                if status.state.finished:
                    break
                if (status.owner and status.owner.host) == self.name or not owner_alive(status, self.store.home):
                    if not self.take(run_id):
                        start_follower_process(self.store, root, FOLLOWER)
                    break
                if time.monotonic() > deadline:
                    log.info("run %s: its follower did not hand it over; it keeps it", run_id)
                    break
                time.sleep(0.05)
        handover.withdraw(root)

    # ---- closing -----------------------------------------------------------------------------
    def close(self) -> None:
        """End every follower here and hand its run back to a follower of its own, then
        unregister (until then an owner of this host is alive: no keeper starts another)."""
        with self._lock:
            self._closed = True
            hosted = list(self._runs.values())
        for one in hosted:
            one.follower.leave.set()
        deadline = time.monotonic() + LEAVE_WAIT_S
        for one in hosted:
            if one.thread is not None:
                one.thread.join(max(0.0, deadline - time.monotonic()))
        with _HOSTS_LOCK:
            home = Path(self.store.home).resolve()
            if _HOSTS.get(home) is self:
                del _HOSTS[home]
            host_file(home, self.name).unlink(missing_ok=True)
        with self._lock:
            watches, self._watches = list(self._watches.values()), {}
        for watch in watches:
            watch.close()


def _forget_dead_hosts(home: Path) -> None:
    """Remove the registrations of hosts whose process is gone (a server that was killed)."""
    for path in (home / HOSTS_DIR).glob("*.json"):
        try:
            seen = json.loads(path.read_text())
            alive = detached.ProcessIdentity(int(seen["pid"]), seen.get("started_at")).alive()
        except (OSError, ValueError, KeyError, TypeError):
            alive = False
        if not alive:
            path.unlink(missing_ok=True)
