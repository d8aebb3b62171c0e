"""What to serve: `start`'s argument -> {TensorBoard run name: absolute log directory}, the
TensorBoard arguments for it, and the key that names one server per distinct set."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..runstore.layout import RUN_ID_PATTERN, RunPaths
from ..runstore.run_files import planted_links

Target = str | Sequence[str] | Mapping[str, str | os.PathLike]


class BadTarget(ValueError):
    """`start`'s target names no log directories TensorBoard can be given."""


def logdirs(target: Target, home: Path | None) -> dict[str, str]:
    """Normalise `start`'s argument to {run name: absolute directory}.

    - a run id ("my-run")               -> {"": <run>/tensorboard}  (TensorBoard runs: worker-0, ...)
    - several run ids (["a", "b"])      -> {"a": <a>/tensorboard, "b": <b>/tensorboard}
    - a mapping {name: directory}       -> as given
    - any other string: an existing directory, or a logdir spec "name:dir,name:dir"

    A run's tensorboard directory need not exist yet (TensorBoard picks it up when it appears);
    a directory given by path must.
    """
    if isinstance(target, str) and RUN_ID_PATTERN.match(target):
        target = [target]
    if isinstance(target, Mapping):
        spec = {str(k): str(v) for k, v in target.items()}
    elif isinstance(target, str):
        spec = {}
        for part in target.split(","):
            name, _, path = part.rpartition(":")
            spec[name] = path
    else:
        ids = list(target)
        if not ids:
            raise BadTarget("no runs given")
        if len(ids) == 1:
            return {"": str(_run_tensorboard_dir(ids[0], home))}
        return {run_id: str(_run_tensorboard_dir(run_id, home)) for run_id in ids}
    out = {}
    for name, path in spec.items():
        if not path:
            raise BadTarget(f"empty log directory for {name!r} in {target!r}")
        if "," in path or ":" in name or "," in name:
            raise BadTarget(f"{name!r}: {path!r} cannot be passed to TensorBoard (',' or ':' in it)")
        path = os.path.abspath(os.path.expanduser(path))
        if not os.path.isdir(path):
            raise BadTarget(f"log directory {path!r} does not exist")
        out[name] = path
    if len(out) > 1 and "" in out:
        raise BadTarget(f"every log directory needs a name when there are several: {target!r}")
    return out


def _run_tensorboard_dir(run_id: str, home: Path | None) -> Path:
    paths = RunPaths(run_id, home)  # raises InvalidRunId (a ValueError) for a bad id
    if not paths.root.is_dir():
        raise BadTarget(f"run {run_id!r} not found in {paths.root.parent}")
    return paths.tensorboard_dir


def planted(dirs: Mapping[str, str]) -> list[str]:
    """`run X: tensorboard/worker-0/a is a symbolic link` for every link (or special file) in the
    log directories that are runs' own (`<store>/runs/<id>/tensorboard`). TensorBoard reads what it
    is given through any link, so a run holding one is not served (`run_files` says why)."""
    found = []
    for directory in dirs.values():
        logdir = Path(directory)
        run_root = logdir.parent
        if logdir.name != "tensorboard" or run_root.parent.name != "runs" or not RUN_ID_PATTERN.match(run_root.name):
            continue  # a directory the user named: theirs to vouch for
        found += [
            f"run {run_root.name}: {where} is a link or a special file" for where in planted_links(run_root, logdir)
        ]
    return found


def spec_arguments(dirs: Mapping[str, str]) -> list[str]:
    """TensorBoard's arguments for the directories: `--logdir D`, or `--logdir_spec name:D,...`."""
    if list(dirs) == [""]:
        return ["--logdir", dirs[""]]
    return ["--logdir_spec", ",".join(f"{name}:{path}" for name, path in sorted(dirs.items()))]


def key(dirs: Mapping[str, str]) -> str:
    """One server per distinct set of directories: the set's short hash."""
    canonical = json.dumps(sorted(dirs.items()), separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
