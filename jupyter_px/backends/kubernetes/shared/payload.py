"""The run's ConfigMap: the code plus what a replica needs to run it without jupyter_px installed.

Everything a pod reads comes from this one object (mounted read-only at `/px/app`):

    /px/app/run/record.json        the record as the pod sees it (workdir: /px/work)
    /px/app/run/cluster.json       every replica's address, by pattern (`cluster_file.py`)
    /px/app/run/result.key         the run's secret: the runner signs the `@px-result` lines it writes
                                   with it (`code/function_calls.py`)
    /px/app/run/code/<file>        the submitted code (and pushed.pkl, as binaryData)
    /px/app/lib/px_entry.py        `pod/entry.py`: completes the environment, calls the runner
    /px/app/lib/jupyter_px/        `__init__.py`, `_version.py`, `lazy.py`, `runner.py`, `tracking/`,
                                   `code/{__init__,function_calls,source_map}.py`,
                                   `diagnostics/{__init__,stack_signal,stack_request,`
                                   `dump_collect,after_import,`
                                   `collective_timeout,group_teardown}.py`,
                                   `processes/{__init__,checkpoint_signal,replica_kill,file_lock}.py`
                                   (what the runner imports),
                                   `cluster.py` (the environment contract, built in the pod),
                                   `runstore/{__init__,layout,ledger,event_writer,record_crc,checkpoints}.py`
                                   (standard library, and google-crc32c where the image has
                                   it; the event writer imports TensorBoard when the replica
                                   writes events)

A ConfigMap holds at most 1 MiB (etcd's limit on one object); code above that is refused with
what to do instead, before anything is created.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ...base import BackendError

#: Where the payload is mounted in every pod, and the writable working directory.
APP_DIR = "/px/app"
RUN_DIR = f"{APP_DIR}/run"
ENTRY = f"{APP_DIR}/lib/px_entry.py"
WORK_DIR = "/px/work"
#: Where a replica writes its stack dumps (`PX_STACKS_DIR` in every container's environment:
#: `diagnostics/stack_signal.py`): the run directory is this read-only ConfigMap, so the pod's own
#: writable volume, where `jupyter px stacks` asks for them (`stacks.py`, an exec).
STACKS_DIR = f"{WORK_DIR}/.px-stacks"

#: The API server refuses objects above 1 MiB; keep room for metadata and the manifest itself.
CONFIGMAP_LIMIT = 1024 * 1024 - 16 * 1024

_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_PACKAGE = Path(__file__).resolve().parents[3]  # jupyter_px/
#: The package's files every pod gets beside the run's code (standard library only, so a pod needs
#: no jupyter_px installed), as paths inside `jupyter_px/`: why each is there beside it.
_PACKAGE_FILES = (
    "__init__.py",
    "runner.py",
    # what the runner imports for a shipped function and for tracebacks that name notebook cells
    "code/__init__.py",
    "code/function_calls.py",
    "code/source_map.py",
    # a replica's stacks on request (`jupyter px stacks`): the runner arms it before the user's code
    "diagnostics/__init__.py",
    "diagnostics/stack_signal.py",
    # ... and how `jupyter px stacks` asks for them in the pod (an exec: `shared/stacks.py`)
    "diagnostics/stack_request.py",
    "diagnostics/dump_collect.py",
    # the run's collective timeout and the gloo teardown guard, applied once torch.distributed is imported
    "diagnostics/after_import.py",
    "diagnostics/collective_timeout.py",
    "diagnostics/group_teardown.py",
    # the flight recorder turned on, and read into a timed-out rank's failure record
    "diagnostics/flight_recorder.py",
    # what tracking's checkpoints read for a checkpoint request (armed on Slurm only)
    "processes/__init__.py",
    "processes/checkpoint_signal.py",
    # how `jupyter px kill` ends one replica in its pod (an exec: `shared/chaos.py`)
    "processes/replica_kill.py",
    # the one file lock, which tracking takes to copy a resumed run's outputs once
    "processes/file_lock.py",
    # what the training code imports
    "tracking/__init__.py",
    "tracking/values.py",
    "tracking/lines.py",
    "tracking/delivery.py",
    "tracking/fd_writes.py",
    "tracking/notices.py",
    "tracking/checkpoints.py",
    "lazy.py",
    "_version.py",
    # the environment contract, built inside the pod from run/cluster.json (pod/entry.py)
    "cluster.py",
    # tracking takes the run store's file names and log-line prefixes from the layout module;
    # the run store's __init__ imports its submodules lazily, so these files are all it needs
    "runstore/__init__.py",
    "runstore/layout.py",
    "runstore/checkpoints.py",  # where tracking's checkpoints lie in the outputs
    "runstore/ledger.py",  # tracking counts what it accepted and wrote (a process-local ledger in a pod)
    "runstore/event_writer.py",  # tracking's TensorBoard events (shared with the follower)
    "runstore/record_crc.py",  # their framing (google-crc32c where the image has it)
)
#: ConfigMap key -> (the file's path in the pod under the payload, its source on this machine).
_SHIPPED = {
    "lib.px_entry.py": ("lib/px_entry.py", Path(__file__).parents[1] / "pod" / "entry.py"),
    **{
        "lib.jupyter_px." + inside.replace("/", "."): ("lib/jupyter_px/" + inside, _PACKAGE / inside)
        for inside in _PACKAGE_FILES
    },
}


class PayloadTooLarge(BackendError):
    """The code does not fit in a ConfigMap."""


@dataclass
class Payload:
    """ConfigMap `data`/`binaryData` and the `items` that lay the keys out as files."""

    data: dict[str, str] = field(default_factory=dict)
    binary_data: dict[str, str] = field(default_factory=dict)  # base64 text
    items: list[dict[str, str]] = field(default_factory=list)
    size: int = 0


def _shipped_sources() -> dict[str, tuple[str, str]]:
    return {key: (path, source.read_text()) for key, (path, source) in _SHIPPED.items()}


def build_payload(
    record_json: str, code_files: dict[str, bytes], cluster_json: str | None = None, result_key: str | None = None
) -> Payload:
    """The ConfigMap contents for one run. `code_files` maps a file name under code/ to bytes;
    `cluster_json`: the run's cluster description (`cluster_file.py`); `result_key`: the run's
    result secret."""
    import base64

    payload = Payload()

    def add(key: str, path: str, content: bytes) -> None:
        try:
            text = content.decode("utf-8")
            payload.data[key] = text
        except UnicodeDecodeError:
            payload.binary_data[key] = base64.b64encode(content).decode()
        payload.items.append({"key": key, "path": path})
        payload.size += len(content) + len(key)

    add("run.record.json", "run/record.json", record_json.encode())
    if cluster_json is not None:
        add("run.cluster.json", "run/cluster.json", cluster_json.encode())
    if result_key is not None:
        add("run.result.key", "run/result.key", result_key.encode())
    for name, content in sorted(code_files.items()):
        key = "code." + name.replace("/", ".")
        if not _KEY.match(key) or ".." in name or name.startswith("/"):
            raise BackendError(f"code file name {name!r} cannot be shipped in a ConfigMap (use letters, digits, ._-)")
        add(key, f"run/code/{name}", content)
    for key, (path, text) in _shipped_sources().items():
        add(key, path, text.encode())
    if payload.size > CONFIGMAP_LIMIT:
        raise PayloadTooLarge(
            f"the run's code is {payload.size / 1024:.0f} KiB, over the {CONFIGMAP_LIMIT // 1024} KiB a ConfigMap "
            "can hold: put large files (data, weights) in the image (PX_K8S_IMAGE) or on a volume "
            "(PX_K8S_SHARED_CLAIM) and ship only the code"
        )
    return payload


def read_code_dir(code_dir: Path) -> dict[str, bytes]:
    """Every file under a run's code/ directory, by relative name."""
    return {
        str(path.relative_to(code_dir)): path.read_bytes() for path in sorted(code_dir.rglob("*")) if path.is_file()
    }
