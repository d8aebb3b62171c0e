"""`python stack_request.py DUMPS_DIR`, run inside a Kubernetes pod by `jupyter px stacks` (an
exec, as `kubectl exec` does): every replica process of the pod gives its stacks, printed as one
JSON object on stdout::

    {"replicas": {"worker-1": {"pid": 42, "text": "<faulthandler dump>"}, ...},
     "errors": {"worker-2": "no stack: its process has ended"}}

A pod's run directory is the run's ConfigMap, read-only, so there the runner writes its dumps to
the pod's own volume (`PX_STACKS_DIR`, in the container's environment) with its pid beside (`<key>.pid`,
`stack_signal.install`): this finds the processes by those files, signals each one (a replica's
local ranks included: each has its own dump) and reads back what the dumps added
(`dump_collect.py`). Standard library only: shipped to every pod.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file in the pod: the shipped package is two folders up
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from jupyter_px.diagnostics.dump_collect import collect
from jupyter_px.diagnostics.stack_signal import PID_SUFFIX, STACKS_SIGNAL
from jupyter_px.runstore.layout import PROCESS_INFIX


def _pids(dumps: Path) -> dict[str, int]:
    """Every armed process of the pod, by its key (`worker-1`, `worker-1.rank2`)."""
    found = {}
    for path in dumps.glob(f"*{PID_SUFFIX}"):
        try:
            found[path.name[: -len(PID_SUFFIX)]] = int(path.read_text().strip())
        except (OSError, ValueError):
            continue
    return found


class _EveryProcess:
    """Signals every armed process once: a replica's local ranks are asked as the replica is."""

    def __init__(self, pids: dict[str, int]):
        self.pids = pids
        self.gone: set[str] = set()

    def signal_all(self) -> None:
        for key, pid in self.pids.items():
            try:
                os.kill(pid, STACKS_SIGNAL)
            except OSError:
                self.gone.add(key)


def request(dumps: Path) -> dict[str, object]:
    pids = _pids(dumps)
    replicas = {key: pid for key, pid in pids.items() if PROCESS_INFIX not in key}
    sender = _EveryProcess(pids)
    texts, errors = collect(dumps, replicas, sender)
    for key in sender.gone & set(errors):
        errors[key] = "no stack: its process has ended"
    return {
        "replicas": {key: {"pid": pids.get(key), "text": text} for key, text in texts.items()},
        "errors": errors,
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python stack_request.py DUMPS_DIR", file=sys.stderr)
        return 2
    print(json.dumps(request(Path(argv[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
