"""`jupyter px render SCRIPT -f TOPOLOGY --backend native|kubeflow|kubeflow-trainer|slurm [--name RUN]`.

Prints the manifests a Kubernetes backend would create, as YAML: a dry run to read, review or
`kubectl apply -f -`; for `slurm`, the batch script sbatch would be given. Nothing is contacted
and nothing is written. The header comment says how to
delete every object of the run by its label; an object too large for client-side apply is named
on stderr, with `--server-side` as the way to apply it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import backend_table


def cmd_render(args: argparse.Namespace) -> int:
    from ..service import BackendError, RunService, ScriptFile
    from ..topology import TopologyError
    from .topology_cmds import read_topology_file

    script = Path(args.script)
    if not script.is_file():
        print(f"jupyter px render: script {args.script!r} does not exist", file=sys.stderr)
        return 2
    try:
        topology = read_topology_file(args.file)
    except OSError as error:
        print(f"jupyter px render: cannot read {args.file!r}: {error.strerror or error}", file=sys.stderr)
        return 2
    except TopologyError as error:
        print(f"jupyter px render: invalid topology {args.file}: {error}", file=sys.stderr)
        return 2
    try:
        rendered = RunService().render(
            topology,
            ScriptFile(script),
            name=args.name or topology.name or script.stem,
            backend=args.backend,
            args=list(args.script_args or []),
            namespace=args.namespace,
        )
    except (BackendError, ValueError) as error:
        print(f"jupyter px render: {error}", file=sys.stderr)
        return 2
    for warning in rendered.warnings:
        print(f"jupyter px render: warning: {warning}", file=sys.stderr)
    sys.stdout.write(rendered.yaml)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "render",
        help="print the Kubernetes manifests (or the Slurm batch script) of a run: a dry run",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument("script", help="the training script (shipped in the run's ConfigMap)")
    parser.add_argument("-f", "--file", required=True, help="the topology (polyaxonfile YAML; - for stdin)")
    parser.add_argument(
        "--backend", choices=[e.name for e in backend_table.BACKENDS if e.renders], help="default: the topology's"
    )
    parser.add_argument(
        "--name", help="run name (made a valid Kubernetes name; default: the topology's or the script's)"
    )
    parser.add_argument("-n", "--namespace", help="namespace (default: settings, else 'default')")
    parser.add_argument("script_args", nargs="*", help="arguments for the script (after --)")
    parser.set_defaults(handler=cmd_render)
