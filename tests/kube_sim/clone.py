"""A copy of an API object, which is JSON: dicts, lists, strings, numbers, booleans and nulls.

The simulated API server copies objects on every write, read and watch event, as the real one
hands out no shared state (a CRD's schema alone is some 300 KB). `copy.deepcopy` keeps a memo of
everything it copied, for shared and cyclic references that JSON cannot have, and looks up each
value's type in a table: it took 2.4x as long as this, and creating each test's cluster copied
the Kubeflow CRDs four times. Anything but JSON's types goes to `copy.deepcopy`."""

from __future__ import annotations

import copy
from typing import TypeVar

T = TypeVar("T")

_SHARED = (str, int, float, bool, type(None))


def clone(value: T) -> T:
    """A copy of `value` that shares nothing mutable with it."""
    kind = type(value)
    if kind is dict:
        return {key: clone(item) for key, item in value.items()}  # type: ignore[attr-defined,return-value]
    if kind is list:
        return [clone(item) for item in value]  # type: ignore[attr-defined,return-value]
    if kind in _SHARED:
        return value
    return copy.deepcopy(value)
