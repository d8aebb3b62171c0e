"""Boolean query parameters (`watch`, `follow`, `previous`, `allowWatchBookmarks`, ...) read as
kube-apiserver reads them.

The API server decodes a boolean query parameter with apimachinery's
`Convert_Slice_string_To_bool` (kubernetes v1.34.0,
`staging/src/k8s.io/apimachinery/pkg/runtime/conversion.go`): absent, `0` or `false` (any case)
is false; every other value, the empty string included, is true. The official Python client
before 37 sends a Python bool as `True` (`urlencode` of `True`), 37 sends `true`: both are a
watch to the real server, so both must be one here.
"""

from __future__ import annotations


def query_flag(value: str | None) -> bool:
    """The boolean a query parameter's (last) value means to kube-apiserver; None when absent."""
    return value is not None and value != "0" and value.lower() != "false"
