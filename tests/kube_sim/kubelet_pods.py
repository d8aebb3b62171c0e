"""What the kubelet knows of the pods bound to its node: each pod's run (folder, address and
network namespace, the pod as last read), each container's runs (instances: one process and one log file each) and
how it waits (ContainerCreating, ImagePullBackOff, back-off)."""

from __future__ import annotations

import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Instance:
    """One run of a container: its process, its log file, how it ended."""

    log_path: Path
    process: subprocess.Popen | None = None
    #: the threads copying its stdout and stderr into the log file
    pumps: list[threading.Thread] = field(default_factory=list)
    #: when its process was first seen exited while its output was still being copied
    output_wait_since: float = 0.0
    started: float = 0.0
    finished: float = 0.0
    exit_code: int | None = None
    reason: str = ""
    container_id: str = ""
    #: where launch.py writes the pid of the program a zygote forked for it (zygotes.py)
    warm_pid_file: Path | None = None


@dataclass
class ContainerRun:
    name: str
    spec: dict[str, Any]
    init: bool = False
    instances: list[Instance] = field(default_factory=list)
    waiting_reason: str = "ContainerCreating"
    waiting_message: str = ""
    next_start: float = 0.0
    held: bool = False

    @property
    def sidecar(self) -> bool:
        """A restartable init container (KEP-753, on by default since v1.29)."""
        return self.init and self.spec.get("restartPolicy") == "Always"

    @property
    def current(self) -> Instance | None:
        return self.instances[-1] if self.instances else None

    @property
    def running(self) -> bool:
        return self.current is not None and self.current.exit_code is None

    @property
    def restart_count(self) -> int:
        return max(0, len(self.instances) - 1)


@dataclass
class PodRun:
    uid: str
    namespace: str
    name: str
    directory: Path
    ip: str
    pod: dict[str, Any]
    containers: list[ContainerRun]
    start_time: str = ""
    mounted: bool = False
    deleting_since: float = 0.0
    grace: float = 0.0
    done: bool = False
    last_status: dict[str, Any] | None = None
    hosts: Path | None = None
    #: when the app containers were done and the sidecars were told to stop
    sidecars_stopping: float = 0.0
    #: the pod's network namespace (`/proc/<pid>/ns/net`) on a pod network; "" on this machine's
    netns: str = ""
