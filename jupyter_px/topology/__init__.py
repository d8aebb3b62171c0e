"""The topology: models, parsing of every accepted form, validation, export."""

from .errors import Problem, TopologyError
from .export import json_schema, summary_html, summary_rows, summary_text, to_dict, to_yaml
from .models import ROLES, ReplicaSpec, Resources, Topology
from .naming import ReplicaNames
from .parse import apply_overrides, parse_topology, try_parse
from .yaml_text import load_yaml

__all__ = [
    "Problem",
    "TopologyError",
    "Topology",
    "ReplicaSpec",
    "ReplicaNames",
    "Resources",
    "ROLES",
    "parse_topology",
    "try_parse",
    "load_yaml",
    "apply_overrides",
    "to_dict",
    "to_yaml",
    "json_schema",
    "summary_rows",
    "summary_text",
    "summary_html",
]
