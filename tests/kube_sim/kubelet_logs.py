"""The kubelet's container logs: one file per container instance in the CRI format
`<RFC3339Nano> <stream> F <line>` (kubernetes v1.33.0 pkg/kubelet/kuberuntime/logs/logs.go),
rotated at `log_max_bytes` (containerLogMaxSize, 10 Mi) keeping `log_max_files` (5), only the
newest file served (pkg/kubelet/logs/container_log_manager.go); and serving them as the API's
`pods/log` (container, previous, tailLines, sinceSeconds/sinceTime, timestamps, limitBytes,
follow until the instance exits, 400 while waiting)."""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Iterator
from typing import Any

from . import errors
from .kubelet_parts import KubeletPart
from .kubelet_pods import Instance
from .query_params import query_flag


def stamp(at: float | None = None) -> str:
    moment = dt.datetime.fromtimestamp(time.time() if at is None else at, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


def parse_stamp(text: str) -> float:
    text = text.rstrip("Z")
    whole, _, fraction = text.partition(".")
    base = dt.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.UTC).timestamp()
    return base + (float("0." + fraction[:6]) if fraction else 0.0)


def append(kubelet: ContainerLogs, instance: Instance, stream: str, data: bytes) -> None:
    """One CRI log line; rotate the file past `log_max_bytes` (the container log manager,
    pkg/kubelet/logs/container_log_manager.go: the rotated file gets a timestamp suffix, the
    oldest beyond `log_max_files` goes)."""
    text = data.decode(errors="replace")
    tag = "F"
    if not text.endswith("\n"):
        text += "\n"
    with kubelet._log_lock:
        try:
            with open(instance.log_path, "a") as handle:
                handle.write(f"{stamp()} {stream} {tag} {text}")
        except FileNotFoundError:  # the pod was removed, its logs with it: a straggling write goes nowhere
            return
        if instance.log_path.stat().st_size > kubelet.log_max_bytes:
            rotated = instance.log_path.with_name(
                f"{instance.log_path.name}.{time.strftime('%Y%m%d-%H%M%S')}-{time.monotonic_ns()}"
            )
            instance.log_path.rename(rotated)
            instance.log_path.touch()
            old = sorted(instance.log_path.parent.glob(f"{instance.log_path.name}.*"))
            for gone in old[: max(0, len(old) - (kubelet.log_max_files - 1))]:
                gone.unlink(missing_ok=True)


class ContainerLogs(KubeletPart):
    """Serving container logs (a Kubelet part)."""

    log_max_bytes: int
    log_max_files: int

    def logs(self, pod: dict[str, Any], container_name: str, query: dict[str, str]) -> Iterator[bytes]:
        """pkg/kubelet/kubelet_pods.go GetContainerLogs + validateContainerLogStatus: a 400
        `container %q in pod %q is waiting to start: %s` before the first start; `previous=true`
        reads the instance before the current one (400 `previous terminated container %q in pod
        %q not found` without one); then tailLines, sinceSeconds/sinceTime, timestamps,
        limitBytes; follow streams until that container instance exits."""
        with self._lock:
            run = self.pods.get(pod["metadata"]["uid"])
            container = next((c for c in run.containers if c.name == container_name), None) if run else None
        name = pod["metadata"]["name"]
        if container is None or not container.instances:
            reason = container.waiting_reason if container else "ContainerCreating"
            raise errors.bad_request(
                f'container "{container_name}" in pod "{name}" is waiting to start: {reason or "ContainerCreating"}'
            )
        previous = query_flag(query.get("previous"))
        instance = container.current
        if previous:
            current = container.current
            restart_policy = pod["spec"].get("restartPolicy", "Always")
            # a container in back-off: its last run already is "the previous one"
            waiting = current.exit_code is not None and self._will_restart(container, restart_policy)
            candidates = container.instances if waiting else container.instances[:-1]
            if not candidates:
                raise errors.bad_request(f'previous terminated container "{container_name}" in pod "{name}" not found')
            instance = candidates[-1]
        follow = query_flag(query.get("follow")) and not previous
        return self._read(instance, query, follow)

    def _read(self, instance: Instance, query: dict[str, str], follow: bool) -> Iterator[bytes]:
        since = None
        if query.get("sinceSeconds"):
            since = time.time() - int(query["sinceSeconds"])
        elif query.get("sinceTime"):
            since = parse_stamp(query["sinceTime"])
        timestamps = query_flag(query.get("timestamps"))
        tail = int(query["tailLines"]) if query.get("tailLines") not in (None, "") else None
        limit = int(query["limitBytes"]) if query.get("limitBytes") else None
        sent = 0

        def render(line: str) -> bytes | None:
            when, _, rest = line.partition(" ")
            _stream, _, rest = rest.partition(" ")
            _tag, _, content = rest.partition(" ")
            if since is not None and parse_stamp(when) < since:
                return None
            return ((when + " ") if timestamps else "").encode() + content.encode()

        def generate() -> Iterator[bytes]:
            nonlocal sent
            path = instance.log_path
            with self._log_lock:
                handle = open(path)  # noqa: SIM115 - kept open while following
                lines = handle.readlines()
                inode = os.fstat(handle.fileno()).st_ino
            if tail is not None:
                lines = lines[-tail:] if tail > 0 else []
            try:
                pending = ""
                for line in lines:
                    out = render(line)
                    if out is not None:
                        if limit is not None and sent + len(out) > limit:
                            yield out[: limit - sent]
                            return
                        sent += len(out)
                        yield out
                while follow:
                    chunk = handle.readline()
                    if chunk:
                        pending += chunk
                        if pending.endswith("\n"):
                            out = render(pending)
                            pending = ""
                            if out is not None:
                                sent += len(out)
                                yield out
                        continue
                    with self._log_lock:  # rotated: finish the old file, then go on in the new one
                        rotated = os.stat(path).st_ino != inode
                        if rotated:
                            # Lines written between our EOF and the rotation are still in the old
                            # file; the kubelet's reader sees their write events before the new
                            # file's create (pkg/kubelet/kuberuntime/logs/logs.go, v1.33.0 waitLogs).
                            rest = handle.read()
                            handle.close()
                            handle = open(path)  # noqa: SIM115
                            inode = os.fstat(handle.fileno()).st_ino
                    if rotated:
                        for line in (pending + rest).splitlines(keepends=True):
                            out = render(line)
                            if out is not None:
                                sent += len(out)
                                yield out
                        pending = ""
                        continue
                    if instance.exit_code is not None or self._stop.is_set() or self.api.closed:
                        rest = handle.read()
                        for line in rest.splitlines(keepends=True):
                            out = render(line)
                            if out is not None:
                                yield out
                        return
                    time.sleep(0.05)
            finally:
                handle.close()

        return generate()
