"""A tunable number of seconds from the environment (`PX_STOP_GRACE_S`, `PX_STALL_AFTER_S`, ...):
finite and 0 or more, else a ValueError naming the variable and its value. `nan` or `inf` there
would make a wait never end, or a check never fire."""

from __future__ import annotations

import math
import os


def seconds_from_env(name: str, default: str) -> float:
    text = os.environ.get(name) or default
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{name}: {text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name}: {text!r} is not a finite number of seconds (0 or more)")
    return value
