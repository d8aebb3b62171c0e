"""The run's cluster, written once into its ConfigMap (`run/cluster.json`) instead of into every pod.

Every replica's address is in TF_CONFIG and PX_CLUSTER, so putting them in each pod's template
made a run's manifests quadratic in its size (1,100 replicas: 83 MB of YAML; a pod of a
10,000-worker run would not even start, Linux refusing an environment string over 128 KiB).
Here the addresses a backend would have given every pod are described once, by pattern: per
role `<prefix><first + i><suffix>` for i < count, found from the addresses themselves and
checked against every one of them (a role that follows no pattern is listed as it is), so the
description is O(1) for any backend's naming and never says something else than the addresses.
`pod/entry.py` expands it inside the pod and builds the environment the training code reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ....topology import Topology

#: "full": the pod builds the whole contract (native); "px": only PX_CLUSTER (the operators set
#: TF_CONFIG, MASTER_ADDR, DMLC_* themselves).
CONTRACTS = ("full", "px")

_NUMBER = re.compile(r"0|[1-9][0-9]*")


def role_pattern(addresses: list[str]) -> dict[str, Any]:
    """`{"prefix", "first", "suffix"}` if address i is `<prefix><first + i><suffix>` for every i,
    else `{"addresses": [...]}` (lossless either way)."""
    if not addresses:
        return {"addresses": []}
    sample = addresses[0]
    for match in _NUMBER.finditer(sample):
        prefix, first, suffix = sample[: match.start()], int(match.group()), sample[match.end() :]
        if len(addresses) > 1 and addresses[1] != f"{prefix}{first + 1}{suffix}":
            continue
        if [f"{prefix}{first + i}{suffix}" for i in range(len(addresses))] == addresses:
            return {"prefix": prefix, "first": first, "suffix": suffix}
    return {"addresses": list(addresses)}


def describe(topology: Topology, run_id: str, addresses: Mapping[str, list[str]], contract: str) -> dict[str, Any]:
    """The run's cluster as `pod/entry.py` reads it: roles in start order (PX_CLUSTER's order)."""
    if contract not in CONTRACTS:
        raise ValueError(f"contract {contract!r} is not one of {', '.join(CONTRACTS)}")
    roles = []
    for role, count in topology.counts().items():
        listed = list(addresses.get(role, []))
        if len(listed) != count:
            raise ValueError(f"{role}: {count} replicas but {len(listed)} addresses")
        roles.append({"role": role, "count": count, **role_pattern(listed)})
    return {
        "version": 1,
        "run_id": run_id,
        "framework": topology.framework,
        "contract": contract,
        "tf_master_type": topology.environment.tf_master_type,
        "processes_per_replica": topology.environment.processes_per_replica,
        "roles": roles,
    }


def cluster_json(description: dict[str, Any]) -> str:
    return json.dumps(description, indent=1)
