"""A topology out again: YAML (round-trips), JSON Schema (the sidebar form), a readable summary."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import yaml

from .models import ReplicaSpec, Resources, Topology
from .quantities import format_number


def to_dict(topology: Topology) -> dict[str, Any]:
    """The current polyaxonfile form, with only what differs from the defaults."""
    out = _tidy(topology.model_dump(mode="json", exclude_none=True, exclude_defaults=True))
    replicas = out.get("environment", {}).get("replicas", {})
    if "min_workers" in replicas:  # written as it is read: `n_workers: "2:4"`
        replicas["n_workers"] = f"{replicas.pop('min_workers')}:{topology.replicas_section.n_workers}"
    return out


def _tidy(value: Any) -> Any:
    if isinstance(value, dict):
        # An override reads from the replica it applies to: `- index: 1` first, then its settings.
        keys = sorted(value, key=lambda key: key != "index")
        return {k: _tidy(value[k]) for k in keys}
    if isinstance(value, list):
        return [_tidy(v) for v in value]
    if isinstance(value, float):
        return format_number(value)
    return value


def to_yaml(topology: Topology) -> str:
    return yaml.safe_dump(to_dict(topology), sort_keys=False, default_flow_style=False)


def json_schema() -> dict[str, Any]:
    """JSON Schema of the topology (what the sidebar's form is generated from)."""
    schema = Topology.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "jupyter-px topology"
    return schema


def _range(value: Any) -> str:
    """`0.5–1`: the phrasing every surface shares (`topology/ranges.py`)."""
    from .ranges import value_range

    return value_range(value)


@dataclass(frozen=True)
class SummaryRow:
    """Replicas of a role with identical settings, e.g. worker 0-1,3-6."""

    role: str
    indices: str
    cpu: str
    memory: str
    gpu: str
    extra: str


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Inclusive index runs, sorted and joined where they touch: [(5, 5), (0, 4)] -> [(0, 5)]."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _gaps(taken: list[int], count: int) -> list[tuple[int, int]]:
    """The runs of range(count) not in `taken` (sorted, all below count)."""
    gaps, start = [], 0
    for index in taken:
        if index > start:
            gaps.append((start, index - 1))
        start = index + 1
    if start < count:
        gaps.append((start, count - 1))
    return gaps


def _settings(spec: ReplicaSpec) -> tuple[str, str, str, str]:
    """What a summary row shows of a replica: cpu, memory, gpu, other settings."""
    res: Resources = spec.resources
    extra = []
    if spec.image:
        extra.append(f"image={spec.image}")
    if spec.restart_policy != "Never":
        extra.append(f"{spec.restart_policy} x{spec.max_restarts}")
    if spec.node_selector:
        extra.append("nodes=" + ",".join(f"{k}={v}" for k, v in spec.node_selector.items()))
    if spec.env:
        extra.append("env=" + ",".join(sorted(spec.env)))
    return (_range(res.cpu), _range(res.memory), _range(res.gpu), " ".join(extra))


def summary_rows(topology: Topology) -> list[SummaryRow]:
    """One row per role and distinct settings, so 1000 identical workers are one line.

    Built from each role's default and its overrides, never from every replica: the cost grows
    with the overrides a user wrote, not with the replica count."""
    rows: list[SummaryRow] = []
    section = topology.replicas_section
    for role, count in topology.counts().items():
        overridden = sorted({o.index for o in section.overrides(role) if o.index < count})
        groups: dict[tuple[str, str, str, str], list[tuple[int, int]]] = {}
        gaps = _gaps(overridden, count)
        if gaps:
            groups.setdefault(_settings(topology.resolve(role, gaps[0][0])), []).extend(gaps)
        for index in overridden:
            groups.setdefault(_settings(topology.resolve(role, index)), []).append((index, index))
        for settings, spans in sorted(groups.items(), key=lambda item: min(item[1])):
            indices = ",".join(str(a) if a == b else f"{a}-{b}" for a, b in _merge(spans))
            rows.append(SummaryRow(role, indices, *settings))
    return rows


def headline(topology: Topology) -> str:
    counts = ", ".join(f"{role} {n}" for role, n in topology.counts().items())
    framework = topology.framework or "no framework"
    return f"{framework} on {topology.backend}: {topology.total_replicas()} replicas ({counts})"


_HEADERS = ("ROLE", "INDEX", "CPU (cores)", "MEMORY (MiB)", "GPU", "")


def summary_text(topology: Topology) -> str:
    """A plain-text table for the terminal (`jupyter px validate`)."""
    rows = [_HEADERS] + [(r.role, r.indices, r.cpu, r.memory, r.gpu, r.extra) for r in summary_rows(topology)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADERS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)).rstrip() for row in rows]
    return headline(topology) + "\n" + "\n".join(lines) + "\n(requests\u2013limits where they differ)"


def summary_html(topology: Topology) -> str:
    """The same table for a notebook's output area."""
    head = "".join(f"<th style='text-align:left'>{html.escape(h)}</th>" for h in _HEADERS[:-1]) + "<th></th>"
    body = "".join(
        "<tr>"
        + "".join(
            f"<td style='text-align:left'>{html.escape(c)}</td>"
            for c in (r.role, r.indices, r.cpu, r.memory, r.gpu, r.extra)
        )
        + "</tr>"
        for r in summary_rows(topology)
    )
    return (
        f"<div class='px-topology'><b>{html.escape(headline(topology))}</b>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        "<small>requests\u2013limits where they differ</small></div>"
    )
