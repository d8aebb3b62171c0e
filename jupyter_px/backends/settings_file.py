"""A backend family's settings: defaults, then a YAML file, then `PX_<FAMILY>_*` variables.

The Kubernetes and Slurm backends (and any family after them: PBS, a cloud batch service) read
what they need beyond the topology the same way, once, in one place (later wins):

1. the defaults of the family's settings class (a frozen dataclass, a default for every field);
2. a YAML file: `$PX_<FAMILY>_CONFIG`, else `$PX_HOME/<family>.yaml` (`~/.jupyter_px/...`);
3. environment variables `PX_<FAMILY>_<FIELD>` (upper case), as text the family parses;
4. overrides from the caller (a CLI flag, a Jupyter server's configured namespace).

Every value, whichever of the four it came from, goes through the family's check, and a bad one
is a `BackendError` of one line naming where it came from, the setting and the value
(`PX_K8S_CREATE_PARALLELISM: create_parallelism: 0 is not a valid count`). A key the file does
not know is an error naming it: a typo must not silently fall back to a default. The family
supplies only what is its own: the class, the names, how a variable's text reads (`env_text`,
from the parsers below) and what a valid value is (`check`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

import yaml

from ..runstore import px_home
from .base import BackendError

Settings = TypeVar("Settings")

TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True)
class SettingsFile(Generic[Settings]):
    """Where one family's settings come from, and how its values are read and checked."""

    #: The family as people name it: "cannot read the Kubernetes settings <path>".
    family: str
    #: The settings class (a frozen dataclass whose every field has a default).
    model: type[Settings]
    #: `PX_K8S_`: the variables' prefix; `<prefix>CONFIG` names the file.
    env_prefix: str
    #: The file under $PX_HOME when `<prefix>CONFIG` is not set (`kubernetes.yaml`).
    file_name: str
    #: (name, value, where) -> the value, checked (BackendError naming `where`, `name`, `value`).
    check: Callable[[str, Any, str], Any]
    #: How a variable's text reads, per setting that is not text: (text, where) -> value (the
    #: parsers below, BackendError naming `where`). A setting not named here is its text.
    env_text: Mapping[str, Callable[[str, str], Any]]
    #: Fields that are not read from the file or the variables (they have a variable of their own).
    not_settings: Collection[str] = ()

    @property
    def config_env(self) -> str:
        return f"{self.env_prefix}CONFIG"

    def path(self) -> Path:
        """The settings file: `$<prefix>CONFIG`, else `$PX_HOME/<file_name>`."""
        return Path(os.environ.get(self.config_env) or px_home() / self.file_name).expanduser()

    def names(self) -> set[str]:
        return {f.name for f in fields(self.model)} - set(self.not_settings)  # type: ignore[arg-type]

    def load(self, **overrides: Any) -> Settings:
        """Defaults < settings file < variables < `overrides` (None: not given)."""
        known = self.names()
        values: dict[str, Any] = {}
        path = self.path()
        if path.is_file():
            for key, value in self._read(path).items():
                name = str(key).replace("-", "_")
                if name not in known:
                    raise BackendError(f"{path}: unknown setting {key!r} (known: {', '.join(sorted(known))})")
                values[name] = self._checked(name, value, str(path))
        for name in sorted(known):
            where = f"{self.env_prefix}{name.upper()}"
            text = os.environ.get(where)
            if text:
                parse = self.env_text.get(name)
                values[name] = self._checked(name, parse(text, where) if parse else text, where)
        for name, value in overrides.items():
            if value is not None:
                values[name] = self._checked(name, value, "settings") if name in known else value
        return replace(self.model(), **values)  # type: ignore[type-var]

    def _read(self, path: Path) -> dict[Any, Any]:
        try:
            loaded = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as error:
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise BackendError(f"cannot read the {self.family} settings {path}: {first}") from None
        if not isinstance(loaded, dict):
            raise BackendError(f"{path}: expected a mapping of settings, got {type(loaded).__name__}")
        return loaded

    def _checked(self, name: str, value: Any, where: str) -> Any:
        if isinstance(value, float) and not math.isfinite(value):  # YAML's .nan and .inf, float("inf")
            raise BackendError(f"{where}: {name}: {value!r} is not a finite number")
        return None if value is None else self.check(name, value, where)


# ---- what families parse alike ------------------------------------------------------------------


def env_comma_list(text: str, where: str) -> list[str]:
    """`a,b,c`."""
    return [item.strip() for item in text.split(",") if item.strip()]


def env_lines(text: str, where: str) -> list[str]:
    """One entry per line (shell lines, `#SBATCH` options)."""
    return [line for line in text.splitlines() if line.strip()]


def env_mapping(text: str, where: str) -> dict[str, str]:
    """`k=v,k=v`."""
    out = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BackendError(f"{where}: {item!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


def env_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as error:
        raise BackendError(f"{where}: not JSON ({error})") from None


def env_bool(text: str, where: str) -> bool:
    """`1/true/yes/on` or `0/false/no/off`, any case."""
    word = text.strip().lower()
    if word not in TRUE + FALSE:
        raise BackendError(f"{where}: {text!r} is not true or false")
    return word in TRUE


def env_int(text: str, where: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise BackendError(f"{where}: {text!r} is not a whole number") from None


def env_seconds(text: str, where: str) -> float:
    """A number of seconds: finite (`nan`, `inf` are refused)."""
    try:
        value = float(text)
    except ValueError:
        raise BackendError(f"{where}: {text!r} is not a number of seconds") from None
    if not math.isfinite(value):
        raise BackendError(f"{where}: {text!r} is not a finite number of seconds")
    return value


def check_bool(name: str, value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise BackendError(f"{where}: {name}: {value!r} is not true or false")
    return value


def check_choice(name: str, value: Any, where: str, choices: tuple[str, ...]) -> Any:
    if value not in choices:
        raise BackendError(f"{where}: {name}: {value!r} is not one of {', '.join(choices)}")
    return value
