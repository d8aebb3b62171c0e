"""The machines a run may use: a hostfile (`host slots=N`, as DeepSpeed's and Horovod's launchers
read it) or the `hosts:` list of the settings, read into `Host`s, each bad line one error naming
where, the field and the value.

A hostfile line is a host (an alias of `~/.ssh/config`, a name or an address; `user@host` too),
then `slots=N` (how many replicas it takes; 1 when left out); `#` starts a comment. DeepSpeed's
`runner.py` (`_parse_hostfile`, v0.14) and Horovod's `-hostfile` read the same form (Horovod also
writes `host:N`, accepted here too). In the settings, `hosts:` is a list of `host` strings in that
form or of mappings `{host: a, slots: 2, address: 10.0.0.5}`: `address` is what the other replicas
connect to when the host's own name (as `ssh -G` resolves it) is not reachable from them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base import BackendError

#: What ssh takes as a destination without reading it as an option: a user, then a host name,
#: an alias or an address (IPv6 in brackets is not needed: ssh takes it bare).
_HOST = re.compile(r"^([A-Za-z0-9._-]+@)?[A-Za-z0-9_][A-Za-z0-9._:%-]*$")
_ADDRESS = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._:%-]*$")


@dataclass(frozen=True)
class Host:
    """One machine: how ssh reaches it, how many replicas it takes, and (when given) the address
    its replicas are reached at."""

    name: str
    slots: int = 1
    address: str | None = None


def check_host(name: Any, where: str) -> str:
    """`name` if ssh can take it as a destination (never an option such as `-oProxyCommand=`)."""
    if not isinstance(name, str) or not _HOST.match(name):
        raise BackendError(f"{where}: host: {name!r} is not a host name, alias or user@host")
    return name


def _slots(value: Any, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        slots = value
    elif isinstance(value, str) and value.strip().isdigit():
        slots = int(value)
    else:
        raise BackendError(f"{where}: slots: {value!r} is not a whole number")
    if slots < 1:
        raise BackendError(f"{where}: slots: {value!r} is not a positive number of slots")
    return slots


def parse_line(line: str, where: str) -> Host | None:
    """One hostfile line (`host slots=N`, `host:N` or `host`); None for a blank or comment line."""
    text = line.split("#", 1)[0].strip()
    if not text:
        return None
    words = text.split()
    name, slots = words[0], "1"
    if ":" in name and "@" not in name.split(":")[-1] and name.rsplit(":", 1)[-1].isdigit() and len(words) == 1:
        name, slots = name.rsplit(":", 1)
    for word in words[1:]:
        key, sep, value = word.partition("=")
        if key == "slots" and sep:
            slots = value
        elif key == "max_slots" and sep:  # Open MPI's hostfile: the most a host may take
            _slots(value, where)
        else:
            raise BackendError(f"{where}: {word!r} is not slots=N (a hostfile line is `host slots=N`)")
    return Host(check_host(name, where), _slots(slots, where))


def read_hostfile(path: str | Path) -> list[Host]:
    """Every host of a hostfile, in its order; BackendError naming the file and line."""
    try:
        text = Path(path).expanduser().read_text()
    except OSError as error:
        raise BackendError(f"hostfile: cannot read {str(path)!r}: {error.strerror or error}") from None
    hosts = []
    for number, line in enumerate(text.splitlines(), 1):
        host = parse_line(line, f"{path}:{number}")
        if host is not None:
            hosts.append(host)
    return hosts


def read_hosts(value: Any, where: str) -> list[Host]:
    """The settings' `hosts:` (a list of `host slots=N` strings or {host, slots, address} mappings)."""
    if isinstance(value, str):
        value = [part for part in re.split(r"[,\n]", value) if part.strip()]
    if not isinstance(value, list):
        raise BackendError(f"{where}: hosts: {value!r} is not a list of hosts")
    hosts = []
    for i, item in enumerate(value):
        at = f"{where}: hosts[{i}]"
        if isinstance(item, str):
            host = parse_line(item, at)
            if host is not None:
                hosts.append(host)
            continue
        if not isinstance(item, dict):
            raise BackendError(f"{at}: {item!r} is not `host slots=N` or a mapping with host and slots")
        unknown = set(item) - {"host", "slots", "address"}
        if unknown:
            raise BackendError(f"{at}: unknown field {sorted(unknown)[0]!r} (known: host, slots, address)")
        address = item.get("address")
        if address is not None and (not isinstance(address, str) or not _ADDRESS.match(address)):
            raise BackendError(f"{at}: address: {address!r} is not a host name or address")
        hosts.append(Host(check_host(item.get("host"), at), _slots(item.get("slots", 1), at), address))
    return hosts


def unique(hosts: list[Host], where: str) -> list[Host]:
    """`hosts` with each named once (a host named twice is a mistake to say, not to merge)."""
    seen: set[str] = set()
    for host in hosts:
        if host.name in seen:
            raise BackendError(f"{where}: host {host.name!r} is named twice")
        seen.add(host.name)
    return hosts
