"""Named topologies of one Python session (one kernel), and the current one.

`%%px_topology NAME` and `TopologyForm.save(NAME)` write here; `%%px_distributed -t NAME` and
`TopologyForm(name=NAME)` read. It lives beside the model, not in the magics, so the form and
the magics share it without importing each other.
"""

from __future__ import annotations

import re

from .errors import clip, show_value
from .models import Topology

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")


class UnknownTopology(KeyError):
    """A topology name that was never defined in this session."""

    def __str__(self) -> str:  # KeyError quotes its argument; the message reads better as is
        return str(self.args[0])


def check_topology_name(name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(
            f"topology name {show_value(name)} is not valid: "
            "use letters, digits, '_', '-' or '.', starting with a letter"
        )
    return name


class TopologyRegistry:
    """The topologies of this session by name; without `-t`/`-f`, `%%px_distributed` uses the
    current one (the one defined or saved last)."""

    def __init__(self) -> None:
        self._by_name: dict[str, Topology] = {}
        self.current: Topology | None = None
        self.current_name: str | None = None

    def put(self, name: str | None, topology: Topology) -> None:
        """Save (ValueError for a name that is not valid) and make current."""
        if name is not None:
            check_topology_name(name)
            self._by_name[name] = topology
        self.current, self.current_name = topology, name

    def get(self, name: str) -> Topology | None:
        return self._by_name.get(name)

    def require(self, name: str) -> Topology:
        topology = self._by_name.get(name)
        if topology is None:
            known = ", ".join(sorted(self._by_name)) or "none yet"
            raise UnknownTopology(
                f"unknown topology {show_value(name)} (defined: {known}); "
                f"define it with a %%px_topology {clip(name)} cell"
            )
        return topology

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def clear(self) -> None:
        self._by_name.clear()
        self.current = self.current_name = None


#: The session's topologies (one kernel, one registry).
topologies = TopologyRegistry()
