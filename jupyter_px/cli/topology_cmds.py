"""`jupyter px validate` / `env` / `schema`: read a topology, explain it, show a replica's environment."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

# The topology model, the sweep spec and the environment contract are imported by the commands
# that use them: the parser is built for every `jupyter px` command (tests/test_cli_imports.py).
if TYPE_CHECKING:
    from ..topology import Topology, TopologyError


def read_topology_file(path: str) -> Topology:
    """Parse FILE (or `-` for standard input); TopologyError on bad content, OSError (one line
    in `strerror`) for a file that cannot be read as text: missing, too large, not UTF-8."""
    from ..sweeps.spec import parse_polyaxonfile
    from ..topology.files import read_topology_text

    return parse_polyaxonfile(read_topology_text(path))


def _load_or_report(args: argparse.Namespace) -> Topology | None:
    from ..topology import TopologyError

    path, as_json = args.file, args.json
    try:
        return read_topology_file(path)
    except OSError as error:
        where = "standard input" if path == "-" else repr(path)
        message = f"cannot read {where}: {error.strerror or error}"
        if as_json:
            _report_json([{"path": "", "message": message}])
        else:
            print(f"jupyter px {args.command}: {message}", file=sys.stderr)
    except TopologyError as error:
        if as_json:
            _report_json([p.to_dict() for p in error.problems])
        else:
            _report(error)
    return None


def _report_json(problems: list[dict]) -> None:
    print(json.dumps({"valid": False, "problems": problems}, indent=1))


def _report(error: TopologyError) -> None:
    """One problem on one line; several under a count, one per line."""
    if len(error.problems) == 1:
        print(f"invalid topology: {error.problems[0]}", file=sys.stderr)
        return
    print(f"invalid topology ({len(error.problems)} problems):", file=sys.stderr)
    for problem in error.problems:
        print(f"  {problem}", file=sys.stderr)


def cmd_validate(args: argparse.Namespace) -> int:
    from ..sweeps.spec import read_sweep
    from ..topology import summary_text, to_dict
    from ..topology.termination import lone_restart_warnings

    topology = _load_or_report(args)
    if topology is None:
        return 2
    warnings = lone_restart_warnings(topology)
    if args.json:
        replicas = [
            {
                "role": s.role,
                "index": s.index,
                "resources": s.resources.model_dump(mode="json", exclude_none=True),
                "restart_policy": s.restart_policy,
                "max_restarts": s.max_restarts,
            }
            for s in topology.replicas()
        ]
        print(
            json.dumps(
                {
                    "valid": True,
                    "topology": to_dict(topology),
                    "counts": topology.counts(),
                    "replicas": replicas,
                    "warnings": warnings,
                },
                indent=1,
            )
        )
    else:
        print(summary_text(topology))
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
        spec = read_sweep(topology)
        if spec is not None:  # as `polyaxon check --definition` shows a group
            from ..presentation.text import table

            print()
            print(table(("SWEEP", ""), spec.summary()))
            for note in spec.notes:
                print(f"note: {note}")
    return 0


def sequential_ports(topology: Topology, first: int = 29500) -> dict[str, list[int]]:
    """Illustrative local ports for `jupyter px env` (a real run picks free ports)."""
    ports, port = {}, first
    for role, count in topology.counts().items():
        ports[role] = list(range(port, port + count))
        port += count
    return ports


def cmd_env(args: argparse.Namespace) -> int:
    from ..cluster import ReplicaPaths, local_addresses, replica_env

    topology = _load_or_report(args)
    if topology is None:
        return 2
    counts = topology.counts()
    if args.role not in counts or not 0 <= args.index < counts[args.role]:
        have = ", ".join(f"{role} 0..{n - 1}" for role, n in counts.items())
        print(
            f"jupyter px env: --role {args.role} --index {args.index}: no such replica (this topology has {have})",
            file=sys.stderr,
        )
        return 2
    addresses = local_addresses(topology, sequential_ports(topology))
    run_id = args.run_id
    paths = ReplicaPaths(
        outputs="<run>/outputs",
        tensorboard=f"<run>/tensorboard/{args.role}-{args.index}",
        metrics=f"<run>/metrics/{args.role}-{args.index}.jsonl",
        params=f"<run>/params/{args.role}-{args.index}.json",
    )
    env = replica_env(topology, run_id, args.role, args.index, addresses, paths)
    if args.json:
        print(json.dumps(env, indent=1))
    else:
        for key in sorted(env):
            print(f"{key}={env[key]}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from ..topology import json_schema

    print(json.dumps(json_schema(), indent=1))
    return 0


def register(commands) -> None:
    validate = commands.add_parser(
        "validate",
        help="check a topology file and show its replicas",
        description="Validate a polyaxonfile topology (either form) and print its replicas.",
    )
    validate.add_argument("file", metavar="FILE", help="topology YAML, or - for standard input")
    validate.add_argument("--json", action="store_true", help="machine-readable output")
    validate.set_defaults(handler=cmd_validate)

    env = commands.add_parser(
        "env",
        help="the environment one replica would get",
        description="Print the environment a replica gets on the local backend (addresses on 127.0.0.1).",
    )
    env.add_argument("file", metavar="FILE", help="topology YAML, or - for standard input")
    env.add_argument("--role", required=True, help="master, worker, ps or evaluator")
    env.add_argument("--index", type=int, default=0, help="replica index (default 0)")
    env.add_argument("--run-id", default="example", help="run id to show (default: example)")
    env.add_argument("--json", action="store_true", help="machine-readable output")
    env.set_defaults(handler=cmd_env)

    schema = commands.add_parser("schema", help="print the topology's JSON Schema")
    schema.set_defaults(handler=cmd_schema)
