"""Input dialects: rewrite each accepted way of writing a topology into the model's form.

The dialects: the older polyaxonfile form (`environment.tensorflow: {n_workers, ...}`), polyaxon
v0's `worker_resources` / `ps_resources` lists, pasted fragments of an environment section, and
Azure ML estimator keywords (`node_count`, `distributed_backend`, ...). Users paste all of them;
each is rewritten into the current polyaxonfile form, and we remember how paths were renamed so
that an error still points at the field the user actually wrote
(`environment.tensorflow.worker[1].index`, not our internal `environment.replicas.worker[1].index`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import Problem, clip, show_value
from .limits import MAX_PROCESSES_PER_REPLICA, MAX_REPLICAS_PER_ROLE
from .termination import CAMEL_CASE as TERMINATION_CAMEL_CASE

#: `environment.<framework>: {...}`, the older polyaxonfile form.
LEGACY_FRAMEWORK_KEYS = ("tensorflow", "pytorch", "mxnet", "horovod", "mpi")

ENVIRONMENT_KEYS = {
    "resources",
    "image",
    "env",
    "node_selector",
    "restart_policy",
    "max_restarts",
    "replicas",
    "processes_per_replica",
    "tf_master_type",
    *LEGACY_FRAMEWORK_KEYS,
}
REPLICAS_KEYS = {
    "n_masters",
    "n_workers",
    "n_ps",
    "n_evaluators",
    "default_worker",
    "default_ps",
    "default_evaluator",
    "worker",
    "ps",
    "evaluator",
    "worker_resources",
    "ps_resources",
    "default_worker_resources",
    "default_ps_resources",
}
AZURE_KEYS = {"node_count", "process_count_per_node", "worker_count", "parameter_server_count", "distributed_backend"}
TOP_LEVEL_KEYS = {"version", "kind", "name", "description", "tags", "framework", "backend", "environment"}


@dataclass
class Normalized:
    """The rewritten document, the path renames to undo in messages, and problems found."""

    data: Any
    renames: list[tuple[str, str]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def rename(self, path: str) -> str:
        """Undo the rewrites in reverse order of application (`renames` is kept in that order)."""
        for internal, written in self.renames:
            if path == internal or path.startswith(internal + ".") or path.startswith(internal + "["):
                path = (written + path[len(internal) :]).lstrip(".")
        return path


def normalize(data: Any) -> Normalized:
    """Rewrite `data` (already YAML-loaded) into the current form; never raises."""
    result = Normalized(data)
    if not isinstance(data, dict):
        return result
    data = dict(data)
    if AZURE_KEYS & data.keys():
        return _from_azure(data, result)
    if "environment" not in data and data and data.keys() <= (ENVIRONMENT_KEYS | REPLICAS_KEYS):
        data = _wrap_fragment(data, result)
    _termination_spelling(data, result)
    env = data.get("environment")
    if isinstance(env, dict):
        env = dict(env)
        data["environment"] = env
        _legacy_framework_section(data, env, result)
        replicas = env.get("replicas")
        if isinstance(replicas, dict):
            env["replicas"] = _legacy_resource_lists(replicas, result)
    result.data = data
    return result


def _termination_spelling(data: dict, result: Normalized) -> None:
    """Polyaxon v1's `termination: {maxRetries: 3}` -> `max_retries` (errors name what was written)."""
    section = data.get("termination")
    if not isinstance(section, dict):
        return
    section = dict(section)
    for camel, snake in TERMINATION_CAMEL_CASE.items():
        if camel not in section:
            continue
        if snake in section:
            result.problems.append(Problem(f"termination.{camel}", f"give either {camel} or {snake}, not both"))
            continue
        section[snake] = section.pop(camel)
        result.renames.append((f"termination.{snake}", f"termination.{camel}"))
    data["termination"] = section


def _wrap_fragment(data: dict, result: Normalized) -> dict:
    """A pasted piece of an environment section (`resources:`, `default_worker:`, ...)."""
    env = {k: v for k, v in data.items() if k in ENVIRONMENT_KEYS}
    replicas = {k: v for k, v in data.items() if k in REPLICAS_KEYS}
    if replicas:
        env["replicas"] = replicas
        result.renames.append(("environment.replicas", ""))
    result.renames.append(("environment", ""))
    return {"environment": env}


def _legacy_framework_section(data: dict, env: dict, result: Normalized) -> None:
    """`environment.tensorflow: {n_workers: ...}` -> `framework: tensorflow` + `environment.replicas`."""
    present = [key for key in LEGACY_FRAMEWORK_KEYS if key in env]
    if not present:
        return
    if len(present) > 1:
        result.problems.append(
            Problem("environment", f"give one framework section, not several ({', '.join(present)})")
        )
        return
    key = present[0]
    if "replicas" in env:
        result.problems.append(
            Problem(f"environment.{key}", "give either environment.replicas or environment." + key + ", not both")
        )
        return
    framework = data.get("framework")
    if framework is not None and framework != key:
        result.problems.append(Problem("framework", f"{show_value(framework)} contradicts environment.{key}"))
        return
    data["framework"] = key
    env["replicas"] = env.pop(key) if env[key] is not None else {}
    result.renames.insert(0, ("environment.replicas", f"environment.{key}"))


def _legacy_resource_lists(replicas: dict, result: Normalized) -> dict:
    """`worker_resources: [{index, cpu, memory}]` (polyaxon's oldest form) -> `worker: [{index, resources}]`."""
    replicas = dict(replicas)
    prefix = "environment.replicas"
    for role in ("worker", "ps"):
        legacy = f"{role}_resources"
        if legacy in replicas:
            if role in replicas:
                result.problems.append(Problem(f"{prefix}.{legacy}", f"give either {role} or {legacy}, not both"))
                continue
            items = replicas.pop(legacy)
            result.renames.insert(0, (f"{prefix}.{role}", f"{prefix}.{legacy}"))
            if isinstance(items, list):
                converted = []
                for i, item in enumerate(items):
                    if isinstance(item, dict):
                        item = {
                            "index": item.get("index"),
                            "resources": {k: v for k, v in item.items() if k != "index"},
                        }
                        if item["index"] is None:
                            del item["index"]
                        result.renames[:0] = [
                            (f"{prefix}.{role}[{i}].resources", f"{prefix}.{legacy}[{i}]"),
                            (f"{prefix}.{role}[{i}]", f"{prefix}.{legacy}[{i}]"),
                        ]
                    converted.append(item)
                items = converted
            replicas[role] = items
        legacy_default = f"default_{role}_resources"
        if legacy_default in replicas:
            if f"default_{role}" in replicas:
                result.problems.append(
                    Problem(f"{prefix}.{legacy_default}", f"give either default_{role} or {legacy_default}, not both")
                )
                continue
            replicas[f"default_{role}"] = {"resources": replicas.pop(legacy_default)}
            result.renames.insert(0, (f"{prefix}.default_{role}.resources", f"{prefix}.{legacy_default}"))
    return replicas


def _count(data: dict, key: str, default: int, result: Normalized, minimum: int, maximum: int) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        result.problems.append(Problem(key, f"{show_value(value)} is not a whole number >= {minimum}"))
        return default
    if value > maximum:
        result.problems.append(Problem(key, f"{show_value(value)} is above the maximum ({maximum})"))
        return default
    return value


def _from_azure(data: dict, result: Normalized) -> Normalized:
    """Azure ML estimator keywords (`node_count`, `distributed_backend`, ...) -> our form."""
    unknown = data.keys() - AZURE_KEYS - {"framework", "backend", "name", "description", "tags"}
    for key in sorted(unknown):
        result.problems.append(
            Problem(
                clip(str(key)),
                f"cannot be combined with Azure ML estimator keywords ({', '.join(sorted(AZURE_KEYS & data.keys()))})",
            )
        )
    nodes = _count(data, "node_count", 1, result, 1, MAX_REPLICAS_PER_ROLE)
    per_node = _count(data, "process_count_per_node", 1, result, 1, MAX_PROCESSES_PER_REPLICA)
    workers = _count(data, "worker_count", 1, result, 1, MAX_REPLICAS_PER_ROLE)
    servers = _count(data, "parameter_server_count", 1, result, 0, MAX_REPLICAS_PER_ROLE)
    backend = data.get("distributed_backend")
    out: dict[str, Any] = {k: data[k] for k in ("backend", "name", "description", "tags") if k in data}
    framework = data.get("framework", "tensorflow")
    if backend == "mpi":
        for key in ("worker_count", "parameter_server_count"):
            if key in data:
                result.problems.append(
                    Problem(
                        key,
                        f"{show_value(data[key])} does not apply with distributed_backend 'mpi' "
                        "(use node_count and process_count_per_node)",
                    )
                )
        out["framework"] = "horovod" if framework in ("tensorflow", "horovod") else framework
        out["environment"] = {"processes_per_replica": per_node, "replicas": {"n_workers": nodes}}
    elif backend == "ps":
        if per_node != 1:
            result.problems.append(
                Problem("process_count_per_node", f"{per_node} must be 1 with distributed_backend 'ps'")
            )
        out["framework"] = framework
        out["environment"] = {"replicas": {"n_masters": 0, "n_workers": workers, "n_ps": servers}}
    elif backend is None:
        if nodes != 1:
            result.problems.append(
                Problem("distributed_backend", f"is required when node_count is {nodes} (use 'mpi' or 'ps')")
            )
        out["framework"] = data.get("framework")
        out["environment"] = {"processes_per_replica": per_node}
    else:
        result.problems.append(Problem("distributed_backend", f"{show_value(backend)} is not one of 'mpi', 'ps'"))
    result.data = out
    return result
