"""What every part of the kubelet (processes, logs, volumes, status, the state API) shares, declared
once: each part is a mixin of `Kubelet` and reads the node's state through these attributes, which
`Kubelet.__init__` sets."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from .apiserver import ApiServer
from .kubelet_pods import PodRun


class KubeletPart:
    """The kubelet's shared state, as its parts see it."""

    api: ApiServer
    node: str
    root: Path
    isolated: bool
    pods: dict[str, PodRun]
    _lock: threading.RLock
    _log_lock: threading.Lock
    _stop: threading.Event
    _pods: Any
