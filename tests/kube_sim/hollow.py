"""A hollow kubelet: a node whose pods run no process, for runs too big for real processes.

After Kubernetes' kubemark hollow node (test/kubemark, pkg/kubemark/hollow_kubelet.go: a real
kubelet with a fake container runtime): the API side behaves as for real pods - container
states, phases, the deletion flow (terminated 143, then removal), logs served as the kubelet
serves them (`timestamps`, `sinceTime`/`sinceSeconds`, `tailLines`, `follow` until the container
exits, a 400 while waiting) - but what each container does is a script: a line every `interval`
seconds for `duration` seconds, then an exit code. A 1,000-worker run costs a thread, not 1,000
processes.

    cluster = Cluster(controllers=("gc", "scheduler"), node=scheduling.node(pods="2000", cpu="4000"))
    hollow = HollowKubelet(cluster.api, Script(duration=20, interval=1))
    with cluster: hollow.start(); ...; hollow.stop()
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from . import errors
from .apiserver import ApiError, ApiServer, now
from .kubelet_logs import parse_stamp, stamp
from .query_params import query_flag


@dataclass(frozen=True)
class Script:
    """What every hollow container does: `line(pod, n)` is its n-th line (n from 0), one every
    `interval` s for `duration` s (plus `extra[name]` for a pod whose name ends with a key of
    it, e.g. {"-master-0": 2.0}); then it exits with `exit_code`."""

    duration: float = 10.0
    interval: float = 1.0
    exit_code: int = 0
    line: Callable[[dict[str, Any], int], str] = lambda pod, n: f"{pod['metadata']['name']} line {n}"
    extra: dict[str, float] = field(default_factory=dict)
    #: a pod (name suffix) that ends only after every other pod of its run (the pods whose names
    #: share its prefix: `<run>-master-0` waits for `<run>-worker-*`) has ended
    last: str | None = None
    #: at most this many lines, then it runs on silently (None: a line every `interval` throughout)
    lines: int | None = None
    #: seconds from its pod's deletion to its exit (143) and the pod's removal, printing nothing
    #: more: a process that handles SIGTERM, plus the kubelet's kill and status report (capped by
    #: the pod's grace period); 0: gone at once, with its log
    grace: float = 0.0

    def duration_of(self, pod: dict[str, Any]) -> float:
        name = pod["metadata"]["name"]
        return self.duration + sum(v for k, v in self.extra.items() if name.endswith(k))


@dataclass
class HollowPod:
    pod: dict[str, Any]
    started: float
    lines: list[tuple[float, str]] = field(default_factory=list)
    exit_code: int | None = None
    finished: float = 0.0
    reason: str = ""
    written: str = ""  # the last status written ("running", "terminated")
    deleted_at: float = 0.0  # when it exits, once its pod is being deleted


class HollowKubelet:
    def __init__(self, api: ApiServer, script: Script, node: str = "node-1", tick: float = 0.1):
        self.api, self.script, self.node, self.tick = api, script, node, tick
        self.pods: dict[str, HollowPod] = {}
        #: lines each container printed, by pod name (kept after the pod is gone)
        self.produced: dict[str, int] = {}
        self._pods = api.resource("", "v1", "pods")
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"kube-sim-hollow-{node}", daemon=True)
        api.log_source = self.logs

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def end(self, name: str, exit_code: int = 0) -> None:
        """The container of pod `name` exits now with `exit_code` (a test decides when)."""
        with self._lock:
            for hollow in self.pods.values():
                if hollow.pod["metadata"]["name"] == name and hollow.exit_code is None:
                    hollow.exit_code, hollow.finished = exit_code, time.time()
                    hollow.reason = "Completed" if exit_code == 0 else "Error"

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.sync()
            except Exception:  # a controller logs and goes on, as the real ones do
                import logging

                logging.getLogger(__name__).exception("hollow kubelet sync")
            self._stop.wait(self.tick)

    def sync(self) -> None:
        listed = self.api.list(self._pods, "", field_selector=f"spec.nodeName={self.node}")["items"]
        current = time.time()
        seen = set()
        for pod in listed:
            uid = pod["metadata"]["uid"]
            seen.add(uid)
            with self._lock:
                hollow = self.pods.get(uid)
                if hollow is None:
                    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                        continue
                    hollow = self.pods[uid] = HollowPod(pod, current)
                hollow.pod = pod
                if hollow.exit_code is None:
                    deleted = pod["metadata"].get("deletionTimestamp")
                    if deleted and not hollow.deleted_at:
                        grace = float(pod["metadata"].get("deletionGracePeriodSeconds") or 0)
                        hollow.deleted_at = current + min(self.script.grace, grace)
                    if deleted and current >= hollow.deleted_at:
                        hollow.exit_code, hollow.reason, hollow.finished = 143, "Error", current
                    elif not deleted:
                        duration = self.script.duration_of(pod)
                        due = (
                            current
                            if self.script.last and pod["metadata"]["name"].endswith(self.script.last)
                            else min(current, hollow.started + duration)
                        )
                        most = self.script.lines
                        while hollow.started + len(hollow.lines) * self.script.interval <= due and (
                            most is None or len(hollow.lines) < most
                        ):
                            at = hollow.started + len(hollow.lines) * self.script.interval
                            hollow.lines.append((at, self.script.line(pod, len(hollow.lines)) + "\n"))
                            self.produced[pod["metadata"]["name"]] = len(hollow.lines)
                        name = pod["metadata"]["name"]
                        others_done = (
                            self.script.last is None
                            or not name.endswith(self.script.last)
                            or all(
                                h.exit_code is not None
                                for u, h in self.pods.items()
                                if u != uid and h.pod["metadata"]["name"].startswith(name[: -len(self.script.last)])
                            )
                        )
                        if current >= hollow.started + duration and others_done:
                            hollow.exit_code, hollow.finished = self.script.exit_code, current
                            hollow.reason = "Completed" if self.script.exit_code == 0 else "Error"
            self._write_status(hollow)
            if hollow.exit_code is not None and pod["metadata"].get("deletionTimestamp"):
                self.api.remove(self._pods, pod["metadata"]["namespace"], pod["metadata"]["name"], uid)
        with self._lock:
            for uid in [u for u in self.pods if u not in seen]:
                del self.pods[uid]

    def _write_status(self, hollow: HollowPod) -> None:
        state = "running" if hollow.exit_code is None else "terminated"
        if hollow.written == state:
            return
        pod = hollow.pod
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(hollow.started))
        statuses = []
        for container in pod["spec"]["containers"]:
            status: dict[str, Any] = {
                "name": container["name"],
                "image": container.get("image", ""),
                "imageID": "",
                "restartCount": 0,
                "containerID": f"containerd://hollow-{pod['metadata']['uid']}-{container['name']}",
                "lastState": {},
            }
            if hollow.exit_code is None:
                status.update(ready=True, started=True, state={"running": {"startedAt": started}})
            else:
                finished = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(hollow.finished))
                terminated = {"exitCode": hollow.exit_code, "reason": hollow.reason, "startedAt": started}
                status.update(ready=False, started=False, state={"terminated": {**terminated, "finishedAt": finished}})
            statuses.append(status)
        if hollow.exit_code is None:
            phase = "Running"
        else:
            phase = "Succeeded" if hollow.exit_code == 0 else "Failed"
        ready = "True" if hollow.exit_code is None else "False"
        status = {
            "phase": phase,
            "hostIP": "127.0.0.1",
            "podIP": "127.0.0.1",
            "startTime": started,
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": started},
                {"type": "Initialized", "status": "True", "lastTransitionTime": started},
                {"type": "ContainersReady", "status": ready, "lastTransitionTime": now()},
                {"type": "Ready", "status": ready, "lastTransitionTime": now()},
            ],
            "containerStatuses": statuses,
        }
        try:
            self.api.update(
                self._pods,
                {"metadata": {"name": pod["metadata"]["name"]}, "status": status},
                pod["metadata"]["namespace"],
                "status",
            )
            hollow.written = state
        except ApiError as error:
            if error.code != 404:
                raise

    def logs(self, pod: dict[str, Any], container: str, query: dict[str, str]) -> Iterator[bytes]:
        """As `Kubelet.logs`, from the script's lines (one instance: `previous` is a 400)."""
        with self._lock:
            hollow = self.pods.get(pod["metadata"]["uid"])
        name = pod["metadata"]["name"]
        if hollow is None:
            raise errors.bad_request(f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating')
        if query_flag(query.get("previous")):
            raise errors.bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
        since = None
        if query.get("sinceSeconds"):
            since = time.time() - int(query["sinceSeconds"])
        elif query.get("sinceTime"):
            since = parse_stamp(query["sinceTime"])
        timestamps = query_flag(query.get("timestamps"))
        follow = query_flag(query.get("follow"))
        tail = int(query["tailLines"]) if query.get("tailLines") not in (None, "") else None

        def generate() -> Iterator[bytes]:
            start = 0
            with self._lock:
                lines = list(hollow.lines)
            if tail is not None:
                start = max(0, len(lines) - tail)
            sent = start
            while True:
                with self._lock:
                    lines, ended = list(hollow.lines), hollow.exit_code is not None
                for at, text in lines[sent:]:
                    if since is None or at >= since:
                        yield ((stamp(at) + " ") if timestamps else "").encode() + text.encode()
                sent = len(lines)
                if not follow or ended or self._stop.is_set() or self.api.closed:
                    return
                time.sleep(self.tick)

        return generate()
