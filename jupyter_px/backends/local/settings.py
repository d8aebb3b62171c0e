"""The local backend's settings beyond the topology: whether replicas start warm, and how long an
unused template lives.

Read once per submit, in one place, from (later wins):

1. defaults: warm on, a template unused for 600 s stops;
2. a YAML file: `$PX_LOCAL_CONFIG`, else `$PX_HOME/local.yaml` (`~/.jupyter_px/local.yaml`):

       warm: false          # every run starts cold (as `--cold` does for one run)
       warm_idle_s: 1800    # seconds an unused template lives (0: until stopped)
       warm_wait_s: 30      # a submit that finds the template starting waits for it this long
                            # (default 0: that run starts cold, the next ones warm)

3. environment variables: `JUPYTER_PX_WARM` (0/1, false/true), `JUPYTER_PX_WARM_IDLE_S`,
   `JUPYTER_PX_WARM_WAIT_S`.

A field the file does not know, or a value of the wrong type, is an error naming the file, the
field and the value (a typo must not silently fall back to a default).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from ...runstore import px_home
from ..base import BackendError

CONFIG_ENV = "PX_LOCAL_CONFIG"
WARM_ENV = "JUPYTER_PX_WARM"
IDLE_ENV = "JUPYTER_PX_WARM_IDLE_S"
WAIT_ENV = "JUPYTER_PX_WARM_WAIT_S"
DEFAULT_IDLE_S = 600.0
_FIELDS = ("warm", "warm_idle_s", "warm_wait_s")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class LocalSettings:
    warm: bool = True
    warm_idle_s: float = DEFAULT_IDLE_S
    warm_wait_s: float = 0.0
    #: Where `warm` came from, when it is off: said in the run's status ("cold: warm: false in ...").
    warm_source: str = "default"


def _path() -> Path:
    return Path(os.environ.get(CONFIG_ENV) or px_home() / "local.yaml").expanduser()


def _bool(text: str, where: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise BackendError(f"{where}: {text!r} is not true or false")


def _seconds(value: object, where: str) -> float:
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise BackendError(f"{where}: {value!r} is not a number of seconds") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise BackendError(f"{where}: {value!r} is not a finite number of seconds (0 or more)")
    return seconds


def load_settings() -> LocalSettings:
    warm, idle, wait, source = True, DEFAULT_IDLE_S, 0.0, "default"
    path = _path()
    if path.is_file():
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as error:
            raise BackendError(f"{path}: cannot read the local backend's settings: {error}") from None
        if not isinstance(data, dict):
            raise BackendError(f"{path}: the local backend's settings must be a mapping (warm: ..., warm_idle_s: ...)")
        unknown = sorted(set(data) - set(_FIELDS))
        if unknown:
            raise BackendError(
                f"{path}: {unknown[0]}: not a setting of the local backend (known: {', '.join(_FIELDS)})"
            )
        if "warm" in data:
            if not isinstance(data["warm"], bool):
                raise BackendError(f"{path}: warm: {data['warm']!r} is not true or false")
            warm, source = data["warm"], f"warm: {str(data['warm']).lower()} in {path}"
        if "warm_idle_s" in data:
            idle = _seconds(data["warm_idle_s"], f"{path}: warm_idle_s")
        if "warm_wait_s" in data:
            wait = _seconds(data["warm_wait_s"], f"{path}: warm_wait_s")
    if os.environ.get(WARM_ENV, "").strip():
        warm, source = _bool(os.environ[WARM_ENV], WARM_ENV), f"{WARM_ENV}={os.environ[WARM_ENV]}"
    if os.environ.get(IDLE_ENV, "").strip():
        idle = _seconds(os.environ[IDLE_ENV], IDLE_ENV)
    if os.environ.get(WAIT_ENV, "").strip():
        wait = _seconds(os.environ[WAIT_ENV], WAIT_ENV)
    return LocalSettings(warm=warm, warm_idle_s=idle, warm_wait_s=wait, warm_source=source)
