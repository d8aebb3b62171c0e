"""What a rendered pod's process sees: the ConfigMap laid out as the pod's volume would be, and
the environment after the pod's entry point (`px_entry.py`) has completed it."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from jupyter_px.backends.kubernetes.pod import entry as pod_entry

#: The training code of a pod that only writes its environment into the working directory, one
#: file per process (a replica with processes_per_replica > 1 runs it once per local rank).
DUMP_ENV = (
    b"import json, os\n"
    b"with open('env-' + os.environ.get('LOCAL_RANK', '0') + '.json', 'w') as f:\n"
    b"    json.dump(dict(os.environ), f)\n"
)


def lay_out(configmap: dict[str, Any], app: Path, items: list[dict[str, str]]) -> Path:
    """Write the ConfigMap's keys as the pod's `configMap` volume `items` lay them out; the app dir."""
    data, binary = configmap.get("data", {}), configmap.get("binaryData", {})
    for item in items:
        key, path = item["key"], app / item["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data[key].encode() if key in data else base64.b64decode(binary[key]))
    return app


def pod_by_name(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == name)


def manifest_env(pod: dict[str, Any]) -> dict[str, str]:
    """The env the pod's manifest gives its (first) container, literal values only."""
    return {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"] if "value" in e}


def cluster_description(configmap: dict[str, Any]) -> dict[str, Any]:
    return json.loads(configmap["data"]["run.cluster.json"])


def prepared_env(objects: list[dict[str, Any]], pod_name: str) -> dict[str, str]:
    """The pod's manifest env completed by the entry point's `prepare` (in this process)."""
    env = manifest_env(pod_by_name(objects, pod_name))
    env.update(pod_entry.cluster_contract(cluster_description(objects[0]), env))
    return pod_entry.prepare(env)


def run_entry(app: Path, work: Path, env: dict[str, str]) -> dict[str, dict[str, str]]:
    """Run the laid-out entry point with `python -S` (no site-packages, so no jupyter_px: only what
    the ConfigMap ships) and the given env, the training code being `DUMP_ENV`: the environment
    each of its processes saw, by file name."""
    record_path = app / "run" / "record.json"
    record = json.loads(record_path.read_text())
    record["workdir"] = str(work)  # the pod's emptyDir; here a temporary directory
    record_path.write_text(json.dumps(record))
    work.mkdir(exist_ok=True)
    for old in work.glob("env-*.json"):
        old.unlink()
    if "PX_STACKS_DIR" in env:  # the pod's own volume (/px/work/...): here the work directory
        env = {**env, "PX_STACKS_DIR": str(work / ".px-stacks")}
    result = subprocess.run(
        [sys.executable, "-S", str(app / "lib" / "px_entry.py"), str(app / "run")],
        env={**env, "PATH": os.environ["PATH"]},
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    seen = {path.name: json.loads(path.read_text()) for path in sorted(work.glob("env-*.json"))}
    assert seen, f"the training code did not run: {result.stdout}{result.stderr}"
    return seen
