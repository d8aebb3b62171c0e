"""Resource quantities as users write them: polyaxon numbers and Kubernetes quantity strings.

Polyaxon reads a bare number of memory as MiB and of cpu as cores; Kubernetes users write
"512Mi", "1Gi" or "500m". Both are accepted and normalised to floats (cores, MiB) so that
validation (requests <= limits) and every backend work on one unit.
"""

from __future__ import annotations

import math
import re

from .errors import show_value

_QUANTITY = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*$")

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"m": 1e-3, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_MIB = 2**20


class QuantityError(ValueError):
    """A quantity that cannot be read; the message says what is accepted."""


#: What each kind of quantity is called in messages, and examples of what is accepted.
_CPU = ("a number of cores", "e.g. 2, 0.5 or 500m")
_MEMORY = ("a size", "e.g. 4Gi, 512Mi or 4096 (MiB)")
_GPU = ("a whole number of GPUs", "e.g. 1 or 2")


def _number(value: object, kind: tuple[str, str]) -> float | None:
    """The float value of a plain number, None for a string, an error for anything else."""
    what, examples = kind
    if isinstance(value, bool):
        raise QuantityError(f"{show_value(value)} is not {what}, {examples}")
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:  # an int beyond any float
            number = math.inf
        if not math.isfinite(number):
            raise QuantityError(f"{show_value(value)} is not {what}: it is not finite")
        if number < 0:
            raise QuantityError(f"{show_value(value)} is negative")
        return number
    if isinstance(value, str):
        return None
    raise QuantityError(f"{show_value(value)} is not {what}, {examples}")


def _split(text: str, kind: tuple[str, str]) -> tuple[float, str]:
    what, examples = kind
    match = _QUANTITY.match(text)
    if not match:
        raise QuantityError(f"{show_value(text)} is not {what}, {examples}")
    number = float(match.group(1))
    if not math.isfinite(number):
        raise QuantityError(f"{show_value(text)} is not {what}: it is not finite")
    if number < 0:
        raise QuantityError(f"{show_value(text)} is negative")
    return number, match.group(2)


def _number_and_unit(value: object, kind: tuple[str, str]) -> tuple[float, str]:
    """(number, unit suffix): a plain number has no unit (""); a string is split at its unit."""
    number = _number(value, kind)
    if number is not None:
        return number, ""
    return _split(str(value), kind)


def parse_cpu(value: object) -> float:
    """Cores: 2, 0.5, "2", "500m"."""
    number, suffix = _number_and_unit(value, _CPU)
    if suffix == "":
        return number
    if suffix == "m":
        return number / 1000
    raise QuantityError(
        f"{show_value(value)} is not a number of cores: unknown unit {show_value(suffix)} (use cores, or m for 1/1000)"
    )


def parse_memory_mib(value: object) -> float:
    """MiB: a number is MiB (polyaxon); a string may carry a Kubernetes suffix ("1Gi", "512M")."""
    number, suffix = _number_and_unit(value, _MEMORY)
    if suffix == "":
        return number
    if suffix in _BINARY:
        return number * _BINARY[suffix] / _MIB
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix] / _MIB
    raise QuantityError(
        f"{show_value(value)} is not a size: unknown unit {show_value(suffix)} "
        f"(use a number of MiB or one of {', '.join([*_BINARY, *_DECIMAL])})"
    )


def parse_gpu(value: object) -> int:
    """Whole GPUs: 1, "1"."""
    number = _number(value, _GPU)
    if number is None:
        number, suffix = _split(str(value), _GPU)
        if suffix:
            raise QuantityError(f"{show_value(value)} is not {_GPU[0]}, {_GPU[1]}")
    if number != int(number):
        raise QuantityError(f"{show_value(value)} is not {_GPU[0]}, {_GPU[1]}")
    return int(number)


def format_cpu(cores: float) -> str:
    """Kubernetes form: "2", "500m"."""
    if cores == int(cores):
        return str(int(cores))
    return f"{round(cores * 1000)}m"


def format_memory(mib: float) -> str:
    """Kubernetes form: "1Gi", "512Mi", or Ki for fractions of a MiB."""
    if mib == int(mib):
        mib_int = int(mib)
        if mib_int and mib_int % 1024 == 0:
            return f"{mib_int // 1024}Gi"
        return f"{mib_int}Mi"
    return f"{round(mib * 1024)}Ki"


def format_number(value: float) -> int | float:
    """2.0 -> 2 so summaries and YAML read like what the user wrote."""
    return int(value) if value == int(value) else value
