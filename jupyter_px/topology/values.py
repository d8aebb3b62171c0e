"""How named values reach a run's code: a polyaxonfile's `declarations`, a sweep trial's values.

Every replica gets them three ways, the same on every backend: `PX_PARAMS` (JSON) in its
environment, which `tracking.get_params()` reads; as globals of the code (pushed with it); and
in the script's arguments, where `{{ name }}` is replaced (Polyaxon's `--lr={{ lr }}`; also
`{{ layers[0] }}` and `{{ conv.kernels }}`, as Polyaxon's declarations reference documents).
An argument naming a value the run does not have is refused before anything runs.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import Problem, TopologyError, show_value
from .v0_sections import Command, read_command

#: `{{ name }}`, `{{ name.key }}`, `{{ name[0] }}`.
PLACEHOLDER = re.compile(r"{{\s*([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*)\s*}}")
_PART = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


def with_values(
    topology: dict[str, Any], values: Mapping[str, Any], env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """`topology` (a dict) with `PX_PARAMS` (and `env`) set wherever a replica's environment
    comes from: the environment's `env`, and every role default or index override that replaces it."""
    data = copy.deepcopy(topology)
    added = {"PX_PARAMS": json.dumps(dict(values), default=str), **(env or {})}
    environment = data.setdefault("environment", {})
    environment["env"] = {**(environment.get("env") or {}), **added}
    replicas = environment.get("replicas") or {}
    for key in ("default_worker", "default_ps", "default_evaluator"):
        default = replicas.get(key)
        if isinstance(default, dict) and default.get("env") is not None:
            default["env"].update(added)
    for role in ("worker", "ps", "evaluator"):
        for override in replicas.get(role) or []:
            if isinstance(override, dict) and override.get("env") is not None:
                override["env"].update(added)
    return data


def _lookup(values: Mapping[str, Any], name: str, rest: str) -> Any:
    value = values[name]
    for key, index in _PART.findall(rest):
        value = value[key] if key else value[int(index)]
    return value


def fill_args(arg: str, values: Mapping[str, Any]) -> str:
    """A script argument with each `{{ name }}` replaced by its value; a placeholder the values
    cannot answer is left as written (`missing_names` says which)."""

    def replace(match: re.Match) -> str:
        try:
            return str(_lookup(values, match.group(1), match.group(2)))
        except (KeyError, IndexError, TypeError):
            return match.group(0)

    return PLACEHOLDER.sub(replace, arg)


def missing_names(args: Sequence[str], names: Sequence[str] | set[str]) -> list[str]:
    """The placeholder names in `args` that are not among `names`, in order, once each."""
    found = [m.group(1) for arg in args for m in PLACEHOLDER.finditer(arg)]
    return list(dict.fromkeys(name for name in found if name not in names))


def command(topology: Any) -> Command | None:
    """The topology's `run.cmd` as a script and arguments, None without one."""
    raw = getattr(topology, "run", None)
    if raw is None:
        return None
    problems: list[Problem] = []
    read = read_command(raw, problems)
    if read is None:
        raise TopologyError(problems)
    return read


def script_args(topology: Any, entrypoint: str | None, args: Sequence[str]) -> list[str]:
    """The arguments a run's script gets: `args` when given, else those of `run.cmd` (whose
    script must be the code submitted when the code is a file: `entrypoint`)."""
    if args:
        return list(args)
    found = command(topology)
    if found is None:
        return []
    if entrypoint is not None and found.script.rsplit("/", 1)[-1] != entrypoint:
        raise TopologyError(
            [
                Problem(
                    "run.cmd",
                    f"runs {show_value(found.script)} but the code submitted is {show_value(entrypoint)}: "
                    "submit that script, or change run.cmd",
                )
            ]
        )
    return list(found.args)


def declared_run(
    topology: Any, entrypoint: str | None, args: Sequence[str], push: Mapping[str, Any] | None
) -> tuple[dict[str, Any] | None, list[str], dict[str, Any] | None]:
    """For one run (not a sweep's trial): the topology dict with the declarations in every
    replica's `PX_PARAMS` (None when it has none), the script's arguments (`run.cmd`'s when none
    are given, `{{ name }}` filled), and the values pushed as globals (declarations, then `push`)."""
    from .export import to_dict

    declared = dict(getattr(topology, "declarations", None) or {})
    args = script_args(topology, entrypoint, args)
    missing = missing_names(args, set(declared))
    if missing:
        raise TopologyError(
            [Problem("run.cmd" if getattr(topology, "run", None) else "args", _no_value(missing, sweep=False))]
        )
    if not declared:
        return None, args, dict(push) if push else None
    data = with_values(to_dict(topology), declared)
    return data, [fill_args(arg, declared) for arg in args], {**declared, **(push or {})}


def _no_value(names: list[str], *, sweep: bool) -> str:
    where = "declarations or the sweep's parameters" if sweep else "declarations"
    shown = ", ".join("{{ " + name + " }}" for name in names)
    one = len(names) == 1
    return f"{shown} {'names' if one else 'name'} no value: add {'it' if one else 'them'} to {where}"


def no_value_problem(path: str, names: list[str]) -> Problem:
    """The problem of arguments naming values a sweep's trials do not have."""
    return Problem(path, _no_value(names, sweep=True))
