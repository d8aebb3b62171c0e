"""What `log_metrics` accepts as a metric value, a step and a step count.

These checks run on every call, so the common case (a float or an int) is a type test; anything
else gets one conversion attempt and, failing that, an error naming the metric and the value.
"""

from __future__ import annotations

from typing import Any

#: TensorBoard steps are int64.
MAX_STEP = 1 << 63


def coerce_value(name: str, value: Any) -> float:
    """Turn a metric value into a float or raise an error naming the metric and the value.

    Accepts ints, floats, numpy scalars and one-element tensors/arrays (anything `float()`
    converts that is not text, a bool or a complex number). NaN and infinities are kept: a
    diverging loss is exactly what one wants to see.
    """
    if type(value) is float:
        return value
    if isinstance(value, (bool, str, bytes, complex)) or value is None:
        raise TypeError(f"log_metrics: metric {name!r} must be a real number, got {type(value).__name__} {value!r:.80}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"log_metrics: metric {name!r} is too large for a float: {value!r:.80}") from None
    except (TypeError, ValueError, RuntimeError):
        pass
    try:  # numpy >= 2 refuses float() of a shape-(1,) array; .item() takes any one-element one
        return float(value.item())
    except (AttributeError, TypeError, ValueError, RuntimeError) as exc:
        shape = getattr(value, "shape", None)
        what = f"{type(value).__name__} of shape {tuple(shape)}" if shape is not None else type(value).__name__
        raise TypeError(
            f"log_metrics: metric {name!r} must be a single real number, got {what}: {value!r:.80}"
            " (log a scalar, e.g. loss.item())"
        ) from exc


def coerce_count(what: str, value: Any, minimum: int) -> int:
    """`value` as an int in [minimum, 2**63), or an error naming `what` (a step, a step count)."""
    try:
        if isinstance(value, bool):
            raise TypeError
        number = value.__index__()
    except (AttributeError, TypeError):
        raise TypeError(f"log_metrics: {what} must be an integer, got {type(value).__name__} {value!r}") from None
    if number < minimum:
        raise ValueError(f"log_metrics: {what} must be >= {minimum}, got {number}")
    if number >= MAX_STEP:
        raise ValueError(f"log_metrics: {what} must be < 2**63, got {number}")
    return number
