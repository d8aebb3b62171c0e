"""The top-level sections a pasted Polyaxon v0 polyaxonfile carries beside the job's shape, each
honoured or refused with a line that says what to do (never dropped without a word).

What Polyaxon v0.x documents (docs/references/polyaxonfile-yaml-specification/sections.md,
declarations.md, build.md, run.md, inputs-outputs.md in polyaxon/polyaxon), and what happens here:

* `declarations` (`params` from v0.4): constants for the code, `{name: value}`. Honoured: every
  replica gets them as a sweep trial's values (`tracking.get_params()`, `PX_PARAMS`, globals of
  a cell) and `{{ name }}` in the arguments is replaced (`values.py`). In a sweep the trial's
  values are added to them, as Polyaxon adds the matrix's to the declarations.
* `inputs` (v0.5): typed params with defaults. Those with a default are declarations; one
  without is refused (give its value in `declarations`).
* `run.cmd`: honoured when it runs a Python script (`python3 train.py --lr={{ lr }}`): its
  arguments become the script's (the script must be the one submitted). A shell line (`&&`,
  `;`, pipes) or several commands are refused: here each replica runs one script.
* `build.image`: honoured, as `environment.image` (the replicas' image on Kubernetes; runs on
  this machine use this Python). `build.env_vars`: honoured, as `environment.env`.
  `build.build_steps`: images are not built here. On the local backend each `pip install`
  step is checked against this environment (the packages must be installed: the step is then
  already done); anything else, and any step on a Kubernetes backend, is refused with what to
  do. `build.git`, `ref`, `nocache`, `dockerfile`, `context`: refused (the code is what you submit).
* `logging`, `outputs`, `project`, `settings`, `model`, `train`, `eval`: refused, each saying why.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from .. import backend_table
from .errors import Problem, show_value
from .kubernetes_syntax import check_env_name

#: Sections read here, kept on the topology: constants for the code, and `run: {cmd}`.
KEPT = ("declarations", "run")

#: Refused sections, and what to do instead.
REFUSED = {
    "logging": "not read here (every replica's whole output is kept, at its own level): remove it",
    "outputs": "not read here: a run writes its files under tracking.get_outputs_path(); remove it",
    "project": "runs here belong to no project: remove it (name: names the run)",
    "settings": "the v0.0 form: write its matrix, concurrency and search under hptuning:",
    "model": "Polyaxon's v0.0 model definitions are not run here: write the model in the training code",
    "train": "Polyaxon's v0.0 model definitions are not run here: write the training loop in the code",
    "eval": "Polyaxon's v0.0 model definitions are not run here: write the evaluation in the code",
}
SECTIONS = ("declarations", "params", "inputs", "build", *KEPT[1:], *REFUSED)

_BUILD_REFUSED = {
    "git": "the code is the script or cell you submit: remove build.git",
    "ref": "the code is the script or cell you submit: remove build.ref",
    "nocache": "images are not built here: remove build.nocache",
    "dockerfile": "images are not built here: build it yourself and give it as build.image",
    "context": "images are not built here: build it yourself and give it as build.image",
}
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?\Z")
_SHELL = ("&&", "||", ";", "|", ">", "<", "`", "$(")
_PLACEHOLDER_SPACES = re.compile(r"{{\s*(.*?)\s*}}")


@dataclass
class V0Sections:
    """What the sections say: kept sections (by name), additions to `environment`, problems."""

    kept: dict[str, Any] = field(default_factory=dict)
    image: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def read_v0_sections(data: dict[str, Any], backend: Any) -> V0Sections:
    """Read (and take out of `data`) the v0 sections it has; `backend` is the topology's."""
    out = V0Sections()
    for name in [key for key in data if key in SECTIONS]:
        raw = data.pop(name)
        if name in REFUSED:
            out.problems.append(Problem(name, REFUSED[name]))
        elif name in ("declarations", "params"):
            _declarations(out, name, raw)
        elif name == "inputs":
            _inputs(out, raw)
        elif name == "build":
            _build(out, raw, backend)
        else:
            command = read_command(raw, out.problems)
            if command is not None:
                out.kept["run"] = {"cmd": raw["cmd"]}
    return out


def _declarations(out: V0Sections, name: str, raw: Any) -> None:
    if not isinstance(raw, dict):
        out.problems.append(Problem(name, f"{show_value(raw)} is not a mapping of names to values"))
        return
    if "declarations" in out.kept:
        out.problems.append(Problem(name, "give either declarations or params (its later name), not both"))
        return
    values = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not key.isidentifier():
            out.problems.append(
                Problem(f"{name}.{key}", "a name must be a Python identifier (it becomes a global in the code)")
            )
            continue
        values[key] = value
    out.kept["declarations"] = {**out.kept.get("declarations", {}), **values}


def _inputs(out: V0Sections, raw: Any) -> None:
    if not isinstance(raw, list):
        out.problems.append(Problem("inputs", f"{show_value(raw)} is not a list of inputs ({{name, default}})"))
        return
    values = {}
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"].isidentifier():
            out.problems.append(Problem(f"inputs[{i}]", f"{show_value(item)} is not an input with a name"))
            continue
        if "default" not in item:
            out.problems.append(
                Problem(
                    f"inputs[{i}]",
                    f"{item['name']} has no default and nothing passes it here: give its value in declarations:",
                )
            )
            continue
        values[item["name"]] = item["default"]
    out.kept["declarations"] = {**values, **out.kept.get("declarations", {})}


def _build(out: V0Sections, raw: Any, backend: Any) -> None:
    if not isinstance(raw, dict):
        out.problems.append(Problem("build", f"{show_value(raw)} is not a mapping (image, build_steps, env_vars)"))
        return
    for key in raw:
        if key in _BUILD_REFUSED:
            out.problems.append(Problem(f"build.{key}", _BUILD_REFUSED[key]))
        elif key not in ("image", "build_steps", "env_vars"):
            out.problems.append(Problem(f"build.{key}", f"unknown field (value {show_value(raw[key])})"))
    image = raw.get("image")
    if image is not None:
        if not isinstance(image, str) or not image:
            out.problems.append(Problem("build.image", f"{show_value(image)} is not an image name"))
        else:
            out.image = image
    for i, pair in enumerate(raw.get("env_vars") or []):
        where = f"build.env_vars[{i}]"
        if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], str):
            out.problems.append(Problem(where, f"{show_value(pair)} is not a [NAME, value] pair"))
            continue
        try:
            check_env_name(pair[0])
        except ValueError as error:
            out.problems.append(Problem(where, str(error)))
            continue
        out.env[pair[0]] = str(pair[1])
    steps = raw.get("build_steps") or []
    if not isinstance(steps, list):
        out.problems.append(Problem("build.build_steps", f"{show_value(steps)} is not a list of steps"))
        return
    for i, step in enumerate(steps):
        problem = _step_problem(step, backend)
        if problem:
            out.problems.append(Problem(f"build.build_steps[{i}]", problem))


def _step_problem(step: Any, backend: Any) -> str | None:
    """Why a build step cannot be honoured here, or None when what it installs is installed."""
    if not backend_table.runs_here(backend):
        return (
            f"images are not built here: build one with {show_value(step)} and give it as build.image "
            "(or environment.image)"
        )
    words = shlex.split(step) if isinstance(step, str) else []
    if words[:1] in (["python"], ["python3"]) and words[1:3] == ["-m", "pip"]:
        words = words[2:]
    if not words or words[0] not in ("pip", "pip3") or words[1:2] != ["install"]:
        return (
            f"{show_value(step)} is not run here (only pip install steps are checked, against this "
            "environment): do it yourself, then remove the step"
        )
    packages = []
    for word in words[2:]:
        if word.startswith("-"):
            if word in ("-r", "--requirement", "-e", "--editable"):
                return (
                    f"{show_value(step)}: install them yourself, then remove the step (requirement files are not read)"
                )
            continue
        packages.append(re.split(r"[<>=!~;\[ @]", word, maxsplit=1)[0])
    missing = [name for name in packages if not _installed(name)]
    if missing:
        return (
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed where the replicas run "
            f"(build steps are not run here): pip install {' '.join(missing)}, then submit again"
        )
    return None


def _installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


@dataclass(frozen=True)
class Command:
    """`run.cmd` as a script and its arguments (`{{ name }}` placeholders kept, as `{{name}}`)."""

    script: str
    args: tuple[str, ...]


def read_command(raw: Any, problems: list[Problem]) -> Command | None:
    """`run: {cmd: ...}` as a Python script and its arguments; None with a problem otherwise."""
    example = "write run: {cmd: python3 train.py --lr={{ lr }}}"
    if not isinstance(raw, dict):
        problems.append(Problem("run", f"{show_value(raw)} is not a run section: {example}"))
        return None
    unknown = [key for key in raw if key != "cmd"]
    if unknown:
        problems.append(Problem(f"run.{unknown[0]}", f"unknown field (value {show_value(raw[unknown[0]])})"))
        return None
    if "cmd" not in raw:
        problems.append(Problem("run.cmd", f"required field is missing: {example}"))
        return None
    cmd = raw["cmd"]
    if isinstance(cmd, list) and len(cmd) == 1:
        cmd = cmd[0]
    if isinstance(cmd, list):
        problems.append(
            Problem("run.cmd", "several commands are not run here (each replica runs one script): put the steps in it")
        )
        return None
    if not isinstance(cmd, str) or not cmd.strip():
        problems.append(Problem("run.cmd", f"{show_value(cmd)} is not a command: {example}"))
        return None
    # A YAML plain scalar folds `\`-continued lines into one line with the backslashes left in.
    text = _PLACEHOLDER_SPACES.sub(lambda m: "{{" + m.group(1) + "}}", re.sub(r"\\\s+", " ", cmd))
    try:
        words = shlex.split(text)
    except ValueError as error:
        problems.append(Problem("run.cmd", f"{show_value(cmd)} cannot be read as a command line: {error}"))
        return None
    if any(operator in word for word in words for operator in _SHELL):
        problems.append(
            Problem(
                "run.cmd", f"{show_value(cmd)} is a shell command line; each replica runs one script here: {example}"
            )
        )
        return None
    if words and _PYTHON.match(words[0]):
        words = words[1:]
        while words and words[0] in ("-u", "-B", "-O"):
            words = words[1:]
    if not words or not words[0].endswith(".py"):
        problems.append(Problem("run.cmd", f"{show_value(cmd)} does not run a Python script: {example}"))
        return None
    return Command(words[0], tuple(words[1:]))
