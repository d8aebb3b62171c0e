"""`python -m jupyter_px.backends.ssh.follower RUN_DIR`: the lifecycle owner of one SSH run.

Started detached by submit (its identity recorded as the run's owner before it may run), it
outlives the kernel and the Jupyter server, and it is the only writer of the run's status. It
holds one ssh session per replica (`channels.py`) for the run's whole life:

1. the hosts: each answers over ssh (the first command opens the shared connection), and shares
   the run store or gets a copy of the run (`shipping.py`);
2. every replica's entry starts and reports its port; once all have, each gets its environment
   (the contract from `jupyter_px.cluster`, every address `<host address>:<port>`) and starts;
3. each replica's state from its session: running once started, its end from the entry's exit
   record (ssh's own failure, exit 255, named as such with ssh's words);
4. the run's end by the same success policy as every backend (`backends/outcome.py`); replicas
   still running then get `term` (SIGTERM to their process group), and `kill` once
   `PX_STOP_GRACE_S` has passed. A user's stop (`ssh-stop`) takes the same path;
5. at the end, outputs and TensorBoard files come back from hosts that had a copy, which is
   then removed.

Its sessions cannot be handed to another process: if the follower dies, the sessions close, and
each entry stops its replica (end of file: SIGTERM, the grace, SIGKILL). A follower started again
for an unfinished run finds the run's sessions gone and ends it Lost, saying so.
"""

from __future__ import annotations

import json
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ...cluster import ClusterEnv, ReplicaPaths
from ...diagnostics.stack_signal import DUMPS_DIR_VARIABLE
from ...diagnostics.stall_stacks import StallStacks
from ...diagnostics.stalls import StallJudge
from ...runstore import ReplicaState, ReplicaStatus, RunState, RunStatus, RunStore, atomic_write_json
from ...runstore.models import Reason
from ...topology import parse_topology
from ...topology.naming import ReplicaNames
from .. import follower_process
from ..base import BackendError
from ..collective_blame import CollectiveTimeouts, Named
from ..failures import code_failure
from ..outcome import run_outcome
from . import commands, shipping, stacks
from .channels import Channel
from .entry_command import entry_words
from .handle import FOLLOWER, REPLICAS_DIR, STARTED_FILE, STOP_FILE, HostsHandle, replica_file
from .settings import from_json

log = logging.getLogger(__name__)

#: Roles that never finish by themselves: stopped as soon as the run has succeeded.
SERVERS = ("ps", "evaluator")
#: After the run succeeded, seconds a worker still running gets to finish by itself (as locally).
COMPLETION_GRACE_S = float(os.environ.get("PX_COMPLETION_GRACE_S") or 5.0)
TICK_S = 0.1


@dataclass(frozen=True)
class Ending:
    """The run's decided end, and what it makes of the replicas still running then."""

    state: RunState
    reason: str
    message: str
    others: ReplicaState
    others_reason: str
    others_message: str
    #: a collective's timeout with the replicas it waited for named: what each ended replica reads
    named: Named | None = None


class RunFailedToStart(Exception):
    """The run could not start on its hosts: the message says which and why."""


class Follower:
    def __init__(self, store: RunStore, run_id: str):
        self.store, self.run_id = store, run_id
        self.paths = store.paths(run_id)
        self.run_dir = self.paths.root
        self.handle = HostsHandle.load(self.run_dir)
        self.settings = from_json(self.handle.settings)
        self.topology = parse_topology(store.record(run_id).topology)
        recorded = store.status(run_id)
        self.owner, self.started_at = recorded.owner, recorded.started_at
        self.channels: list[Channel] = []
        self.remote: dict[str, str] = {}  # host -> the run directory there
        self.ending: Ending | None = None
        self.term_at: float | None = None
        self.term_sent_at: float | None = None
        self.killed = False
        self.names = ReplicaNames.of(self.topology)
        self.stalls = StallStacks(StallJudge(self.paths.metrics), self.take_stacks, run_id)
        self.timeouts = CollectiveTimeouts(self.take_stacks)

    # ---- setting up --------------------------------------------------------------------------
    def _status(self, state: RunState, message: str, replicas: list[ReplicaStatus] | None = None) -> RunStatus:
        status = RunStatus(run_id=self.run_id, owner=self.owner, started_at=self.started_at)
        status.state, status.message = state, message
        status.replicas = replicas if replicas is not None else self._pending()
        status.launch = launch_summary([r.launch for r in status.replicas if r.launch])
        return status

    def _pending(self) -> list[ReplicaStatus]:
        return [ReplicaStatus(role=r, index=i, message=f"on {h}") for r, i, h in self.handle.replicas]

    def _prepare_host(self, host: str, token: str) -> str:
        """The run directory `host` uses: the run store's, or a copy (BackendError naming the host)."""
        commands.check_reachable(self.settings, host)
        if shipping.shares_run_dir(self.settings, host, self.run_dir, token):
            return str(self.run_dir)
        remote = shipping.remote_run_dir(self.settings, self.run_id)
        shipping.copy_to(self.settings, host, self.run_dir, remote)
        return remote

    def _replica_words(self, remote: str, role: str, index: int) -> list[str]:
        return entry_words(self.settings, self.topology, remote, role, index)

    def start(self) -> None:
        """Every host ready, every replica's entry started and its port known, then the start
        line to each (RunFailedToStart naming the host or replica that could not)."""
        token = json.loads((self.run_dir / "ssh" / "token.json").read_text())["token"]
        hosts = self.handle.hosts()
        commands.prepare_control_dir(self.settings)
        self.store.write_status(self._status(RunState.PENDING, f"connecting to {', '.join(hosts)}"))
        with ThreadPoolExecutor(max_workers=min(8, len(hosts))) as pool:
            futures = {host: pool.submit(self._prepare_host, host, token) for host in hosts}
            for host, future in futures.items():
                try:
                    self.remote[host] = future.result()
                except BackendError as error:
                    raise RunFailedToStart(str(error)) from None
        (self.run_dir / STARTED_FILE).write_text(json.dumps(self.remote))
        for role, index, host in self.handle.replicas:
            remote = self.remote[host]
            argv = commands.ssh_argv(self.settings, host, self._replica_words(remote, role, index))
            shared = remote == str(self.run_dir)
            self.channels.append(Channel(self.paths, role, index, host, argv, ingest=not shared))
        deadline = time.monotonic() + self.settings.rendezvous_timeout_s
        for channel in self.channels:
            while channel.ready is None:
                if channel.ended or time.monotonic() > deadline or self._stop_requested():
                    self._abandon()
                    if self._stop_requested():
                        raise RunFailedToStart("")
                    code, _, said = channel.outcome()
                    why = said or f"exit code {code}"
                    if not channel.ended:
                        why = f"not started within {self.settings.rendezvous_timeout_s:g} s"
                    raise RunFailedToStart(f"{channel.key} on {channel.host} did not start: {why}")
                channel.lines_seen.wait(0.1)
            atomic_write_json(
                replica_file(self.run_dir, channel.key),
                {"host": channel.host, "sid": channel.ready.get("sid"), "port": channel.ready.get("port")},
            )
        addresses = self._addresses()
        contract = ClusterEnv(self.topology, self.run_id, addresses)
        for channel in self.channels:
            remote = self.remote[channel.host]
            shared = remote == str(self.run_dir)
            env = contract.for_replica(channel.role, channel.index, self._replica_paths(remote, channel, shared))
            if shared:
                env["PX_HOME"] = str(self.store.home)
            env["PYTHONUNBUFFERED"] = "1"
            env[DUMPS_DIR_VARIABLE] = stacks.dumps_dir(remote)  # with each process's pid: `stacks.py`
            channel.send(json.dumps({"env": env, "grace": self.settings.stop_grace_s}))
            channel.started_at = time.time()

    def take_stacks(self, targets: dict[str, int | None], why: str) -> dict[str, Any]:
        """The stacks of `targets`, asked on their hosts (`stacks.py`), kept in the run."""
        snapshot = stacks.take_stacks(self.settings, self.handle, self.remote, self.run_dir, self.run_id, targets, why)
        log.info("run %s: stacks taken (%s):\n%s", self.run_id, why, snapshot["text"])
        return snapshot

    def _addresses(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {role: [""] * count for role, count in self.topology.counts().items()}
        for channel in self.channels:
            host = self.handle.addresses.get(channel.host, channel.host)
            port = (channel.ready or {}).get("port")
            out[channel.role][channel.index] = f"{host}:{port}"
        return out

    def _replica_paths(self, remote: str, channel: Channel, shared: bool) -> ReplicaPaths:
        key = channel.key
        return ReplicaPaths(
            outputs=f"{remote}/outputs",
            tensorboard=f"{remote}/tensorboard/{key}",
            metrics=f"{remote}/metrics/{key}.jsonl" if shared else None,
            params=f"{remote}/params/{key}.json" if shared else None,
        )

    def _abandon(self) -> None:
        for channel in self.channels:
            channel.close()
        deadline = time.monotonic() + self.settings.stop_grace_s + 10
        while time.monotonic() < deadline and not all(c.ended for c in self.channels):
            time.sleep(0.05)
        for channel in self.channels:
            channel.kill_local()

    # ---- following ---------------------------------------------------------------------------
    def _stop_requested(self) -> bool:
        return (self.run_dir / STOP_FILE).exists()

    def _replicas(self) -> list[ReplicaStatus]:
        out = []
        by_us = self.ending is not None
        for channel in self.channels:
            replica = ReplicaStatus(role=channel.role, index=channel.index, started_at=channel.started_at)
            port = (channel.ready or {}).get("port")
            replica.address = f"{self.handle.addresses.get(channel.host, channel.host)}:{port}"
            replica.message = f"on {channel.host}"
            replica.launch = (channel.ready or {}).get("launch")
            if not channel.ended:
                replica.state = ReplicaState.RUNNING
            else:
                code, signal, said = channel.outcome()
                replica.exit_code, replica.signal, replica.finished_at = code, signal, channel.finished_at
                told = channel.exit or {}
                replica.points_lost = int(told.get("points_lost") or 0)
                replica.points_dropped = int(told.get("points_dropped") or 0)
                if code == 0:
                    replica.state, replica.reason, replica.message = ReplicaState.SUCCEEDED, Reason.COMPLETED, None
                elif by_us and self.term_sent_at is not None and (channel.finished_at or 0) >= self.term_sent_at:
                    assert self.ending is not None
                    ending = self.ending
                    replica.state, replica.reason, replica.message = (
                        ending.others,
                        ending.others_reason,
                        ending.others_message,
                    )
                else:
                    replica.state = ReplicaState.FAILED
                    replica.reason = Reason.SIGNALED if signal else Reason.ERROR
                    replica.message = said or (f"killed by {signal}" if signal else f"exited with code {code}")
                    if replica.reason == Reason.ERROR:  # what its code raised, and where (a shared run store)
                        replica.failure, replica.message = code_failure(
                            self.run_dir, channel.role, channel.index, channel.started_at, replica.message
                        )
                    replica.message = f"{replica.message} on {channel.host}"
                if self.ending is not None and self.ending.named is not None:
                    self.ending.named.settle(replica)  # the cause of a collective's timeout, and its peers
            notice = (channel.exit or {}).get("notice")
            if notice:  # "master-0: 1,204 metric points not written: killed before they were flushed"
                lost_words = str(notice).split(": ", 1)[-1]
                replica.message = f"{replica.message}; {lost_words}" if replica.message else lost_words
            out.append(replica)
        return out

    def _decide(self, replicas: list[ReplicaStatus], hold: bool = True) -> None:
        """The run's ending, once its replicas decide it; `hold`: a collective's timeout may wait
        for the stacks (not once every replica has ended: there is nothing left to ask)."""
        if self.ending is not None:
            return
        now = time.time()
        if self._stop_requested():
            said, by_user = "stopped on request", Reason.STOPPED_BY_USER
            self.ending = Ending(RunState.STOPPED, by_user, said, ReplicaState.STOPPED, by_user, said)
            self.term_at = now
            return
        outcome = run_outcome(replicas, ReplicaNames.of(self.topology))
        if outcome is None:
            return
        if outcome.state == RunState.FAILED:
            if hold and self.timeouts.holds(replicas):  # a collective timed out: whose was the fault?
                return
            named = self.timeouts.name(outcome, replicas, self.names)
            outcome = named.outcome if named else outcome
            said = f"stopped because {named.because if named else f'{outcome.cause} failed'}"
            self.ending = Ending(
                *outcome_words(outcome),
                ReplicaState.STOPPED,
                Reason.STOPPED_BY_RUN,
                said,
                named,
            )
            self.term_at = now
            return
        running = [r for r in replicas if r.state == ReplicaState.RUNNING]
        said = "still running when the run succeeded; stopped"
        self.ending = Ending(*outcome_words(outcome), ReplicaState.SUCCEEDED, Reason.STOPPED_BY_RUN, said)
        workers_running = any(r.role not in SERVERS for r in running)
        self.term_at = now + (COMPLETION_GRACE_S if workers_running else 0.0)

    def _act(self) -> None:
        if self.ending is None or self.term_at is None or time.time() < self.term_at:
            return
        running = [c for c in self.channels if not c.ended]
        if self.term_sent_at is None:
            self.term_sent_at = time.time()
            for channel in running:
                log.info("run %s: %s; SIGTERM to %s on %s", self.run_id, self.ending.message, channel.key, channel.host)
                channel.send("term")
            return
        if not self.killed and time.time() - self.term_sent_at >= self.settings.stop_grace_s:
            self.killed = True
            for channel in running:
                channel.send("kill")
        if self.killed and time.time() - self.term_sent_at >= self.settings.stop_grace_s + 15:
            for channel in running:  # an entry that does not answer: its session goes
                channel.close()
                channel.kill_local()

    def follow(self) -> int:
        last = None
        while True:
            if not self.paths.record.exists():
                self._abandon()
                return 0
            replicas = self._replicas()
            self._decide(replicas)
            self._act()
            if all(c.ended for c in self.channels):
                return self._finish()
            self.stalls.mark((r, self.ending is None and r.state == ReplicaState.RUNNING) for r in replicas)
            status = self._status(RunState.RUNNING, self._running_message(), replicas)
            if self.ending is not None:
                status.message = f"stopping: {self.ending.message}"
            key = (status.state, status.message, [(r.state, r.reason, r.exit_code, r.stalled_since) for r in replicas])
            if key != last:
                self.store.write_status(status)
                last = key
            time.sleep(TICK_S)

    def _running_message(self) -> str:
        hosts = self.handle.hosts()
        return f"{len(self.channels)} replicas on {len(hosts)} host{'s' if len(hosts) != 1 else ''}: {', '.join(hosts)}"

    def _finish(self) -> int:
        replicas = self._replicas()
        self._decide(replicas, hold=False)
        replicas = self._replicas()
        notes = self._bring_back()
        status = self._status(RunState.RUNNING, "", replicas)
        if self.ending is not None:
            status.state, status.reason, status.message = self.ending.state, self.ending.reason, self.ending.message
        else:  # every replica ended and no policy decided: say so
            status.state, status.reason = RunState.FAILED, "NoOutcome"
            status.message = "every replica ended and none decided the run"
        if notes:
            status.message = f"{status.message}; {'; '.join(notes)}"
        status.finished_at, status.owner = time.time(), None
        self.store.write_status(status)
        log.info("run %s finished: %s (%s)", self.run_id, status.state.value, status.message)
        return 0

    def _bring_back(self) -> list[str]:
        notes = []
        for host, remote in self.remote.items():
            if remote == str(self.run_dir):
                continue
            try:
                said = shipping.copy_back(self.settings, host, remote, self.run_dir)
                if said:
                    notes.append(said)
                shipping.remove(self.settings, host, remote)
            except BackendError as error:
                notes.append(str(error))
        return notes

    def failed_to_start(self, why: str) -> int:
        notes = self._bring_back()
        if self._stop_requested():
            status = self._status(RunState.STOPPED, "stopped on request before it started")
            status.reason = Reason.STOPPED_BY_USER
            for replica in status.replicas:
                replica.state, replica.reason = ReplicaState.STOPPED, Reason.STOPPED_BY_USER
        else:
            status = self._status(RunState.FAILED, why + (f"; {'; '.join(notes)}" if notes else ""))
            status.reason = "StartFailed"
            for replica in status.replicas:
                replica.state = ReplicaState.FAILED
        status.finished_at, status.owner = time.time(), None
        self.store.write_status(status)
        return 0

    def run(self) -> int:
        if (self.run_dir / STARTED_FILE).exists():
            return self._lost()
        try:
            self.start()
        except RunFailedToStart as error:
            return self.failed_to_start(str(error))
        return self.follow()

    def _lost(self) -> int:
        """A follower before this one started the run's sessions and is gone: they closed with it,
        and each entry stopped its replica. Make sure, then say so."""
        self.remote = json.loads((self.run_dir / STARTED_FILE).read_text())
        for path in sorted((self.run_dir / REPLICAS_DIR).glob("*.json")):
            known = json.loads(path.read_text())
            if known.get("sid"):  # the entry's session: the entry and its replica's group
                commands.run(self.settings, known["host"], ["pkill", "-KILL", "-s", str(known["sid"])], timeout=30)
        notes = self._bring_back()
        status = self.store.status(self.run_id)
        status.state, status.reason = RunState.LOST, Reason.LOST_CONTACT
        status.message = "its follower was gone, and with it the replicas' ssh sessions; the replicas were stopped"
        if notes:
            status.message += "; " + "; ".join(notes)
        for replica in status.replicas:
            if replica.state in (ReplicaState.PENDING, ReplicaState.RUNNING):
                replica.state, replica.reason = ReplicaState.LOST, Reason.LOST_CONTACT
        status.finished_at, status.owner = time.time(), None
        self.store.write_status(status)
        return 0


def launch_summary(launches: list[str]) -> str | None:
    """The run's `launch` from its replicas': theirs when they agree, else how many were warm
    (each host has a template of its own)."""
    if len(set(launches)) <= 1:
        return launches[0] if launches else None
    warm = sum(launch.startswith("warm") for launch in launches)
    if warm == len(launches):
        return "warm (each host's template)"
    return f"warm {warm} of {len(launches)} (the others cold)" if warm else "cold"


def outcome_words(outcome: Any) -> tuple[RunState, str, str]:
    return outcome.state, outcome.reason, outcome.message


def main(argv: list[str] | None = None) -> int:
    """`python -m jupyter_px.backends.ssh.follower RUN_DIR`: follow one run (`follower_process`)."""
    return follower_process.main(argv, FOLLOWER, follow=_follow)


def _follow(store: RunStore, run_id: str) -> int:
    return Follower(store, run_id).run()


if __name__ == "__main__":
    follower_process.run_main(main)
