"""Resource quantities (staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go): decimal
SI suffixes (m, k, M, G, T, P, E), binary ones (Ki, Mi, Gi, Ti, Pi, Ei) and exponents (1e3)."""

from __future__ import annotations

import re
from decimal import Decimal

_SUFFIX = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
    "P": Decimal("1e15"), "E": Decimal("1e18"),
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
    "Pi": Decimal(2**50), "Ei": Decimal(2**60),
}  # fmt: skip

_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|[a-zA-Z]*)$")


def parse(value: str | int | float) -> Decimal:
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    match = _QUANTITY.match(value.strip())
    if not match or (match.group(2) and match.group(2)[0] not in "eE" and match.group(2) not in _SUFFIX):
        raise ValueError(
            f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {value!r}"
        )
    number, suffix = Decimal(match.group(1)), match.group(2)
    if suffix[:1] in ("e", "E"):
        return number * (Decimal(10) ** int(suffix[1:]))
    return number * _SUFFIX[suffix]
