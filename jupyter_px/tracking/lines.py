"""One metrics record as the JSON line the run store reads (`runstore.metrics` parses it back).

Run by the flush thread for every point, so the common case is formatted by hand.
"""

from __future__ import annotations

import json
from typing import Any

_JSON = json.JSONEncoder(separators=(",", ":"))
_JSON_NAMES: dict[str, str] = {}


def json_line(step: int | None, wall_time: float, total_steps: int | None, values: dict[str, float]) -> str:
    """One metrics record as compact JSON, formatted by hand (twice as fast as json.dumps).

    Non-finite values take json's path, which spells them NaN / Infinity as Python reads them.
    """
    parts = []
    for name, value in values.items():
        quoted = _JSON_NAMES.get(name)
        if quoted is None:
            quoted = _JSON_NAMES[name] = json.dumps(name)
        if value - value != 0.0:  # nan or +-inf
            return _JSON.encode(record(step, wall_time, total_steps, values))
        parts.append("%s:%r" % (quoted, value))
    line = '{"step":%s,"time":%r,"metrics":{%s}' % ("null" if step is None else step, wall_time, ",".join(parts))
    return line + ("}" if total_steps is None else ',"total_steps":%d}' % total_steps)


def record(step: int | None, wall_time: float, total_steps: int | None, values: dict[str, float]) -> dict[str, Any]:
    """The record `json_line` writes, as a dict (for json's own encoder)."""
    out: dict[str, Any] = {"step": step, "time": wall_time, "metrics": values}
    if total_steps is not None:
        out["total_steps"] = total_steps
    return out
