"""Names every backend can use: environment variable names and Kubernetes label keys and values.

Checked when the topology is validated, so `jupyter px validate`, the form and REST refuse them
with the field path, instead of a replica failing later with an unnamed "illegal environment
variable name" (`execve` refuses `=` and NUL) or a real API server answering 422 (node
selectors are label selectors, with the label syntax of Kubernetes).
"""

from __future__ import annotations

import re

from .errors import show_value

#: A label name, a value, and each part of a key's DNS-subdomain prefix (Kubernetes' rules).
_LABEL_NAME = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?\Z")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
LABEL_NAME_MAX = 63
LABEL_PREFIX_MAX = 253


def check_env_name(name: str) -> str:
    """An environment variable name a process can be given: not empty, no `=`, no NUL."""
    if not name:
        raise ValueError("an environment variable name cannot be empty")
    if "=" in name:
        raise ValueError(f"environment variable name {show_value(name)} contains '=', which ends a name")
    if "\0" in name:
        raise ValueError(f"environment variable name {show_value(name)} contains a NUL character")
    return name


def check_env_value(value: str) -> str:
    """A value `execve` accepts: no NUL (it would end the string)."""
    if "\0" in value:
        raise ValueError(f"{show_value(value)} contains a NUL character, which no process environment can hold")
    return value


def check_label_key(key: str) -> str:
    """`[prefix/]name`: name at most 63 alphanumerics, '-', '_', '.' (alphanumeric at both ends);
    prefix a DNS subdomain of at most 253 characters."""
    prefix, slash, name = key.rpartition("/")
    if slash and not _is_dns_subdomain(prefix):
        raise ValueError(
            f"label key {show_value(key)}: the prefix {show_value(prefix)} is not a DNS subdomain "
            f"(lowercase alphanumerics, '-' and '.', at most {LABEL_PREFIX_MAX} characters)"
        )
    if not name:
        raise ValueError(f"label key {show_value(key)} has no name")
    _check_label_name(name, f"label key {show_value(key)}")
    return key


def check_label_value(value: str) -> str:
    """Empty, or at most 63 alphanumerics, '-', '_', '.' (alphanumeric at both ends)."""
    _check_label_name(value, f"label value {show_value(value)}")
    return value


def _is_dns_subdomain(text: str) -> bool:
    return 0 < len(text) <= LABEL_PREFIX_MAX and all(_DNS_LABEL.match(part) for part in text.split("."))


def _check_label_name(name: str, what: str) -> None:
    if len(name) > LABEL_NAME_MAX:
        raise ValueError(f"{what} is {len(name)} characters long; the limit is {LABEL_NAME_MAX}")
    if not _LABEL_NAME.match(name):
        raise ValueError(
            f"{what} is not valid: use alphanumerics, '-', '_' and '.', beginning and ending with an alphanumeric"
        )
