"""`%%px_topology` and `%px_topology_form`: define a topology in a notebook."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ..presentation.html import TextAndHtml, escape
from ..presentation.text import topology_problems
from ..sweeps.spec import parse_polyaxonfile
from ..topology import TopologyError, summary_html, summary_text
from ..topology.registry import check_topology_name, topologies


def check_name(name: str | None) -> None:
    if name is not None:
        try:
            check_topology_name(name)
        except ValueError as error:
            raise UsageError(str(error)) from None


@magics_class
class TopologyMagics(Magics):
    @magic_arguments()
    @argument("name", nargs="?", help="save the topology under this name (for %%px_distributed -t NAME)")
    @cell_magic
    def px_topology(self, line: str, cell: str) -> None:
        """Define a topology: the cell is polyaxonfile YAML (current or older form).

        The topology is validated, shown as a table of replicas, saved under NAME (if given)
        and becomes the current topology, used by %%px_distributed when it gets no -t/-f.
        Problems are listed with their field paths, e.g.
        `environment.replicas.worker[3].index: 9 is not below n_workers (7)`.

            %%px_topology cluster
            framework: pytorch
            environment:
              replicas:
                n_workers: 2
        """
        args = parse_argstring(self.px_topology, line)
        check_name(args.name)
        try:
            topology = parse_polyaxonfile(cell)
        except TopologyError as error:
            raise UsageError(topology_problems(error)) from None
        topologies.put(args.name, topology)
        saved = f"saved as {args.name!r}" if args.name else "current topology"
        display(
            TextAndHtml(
                f"{summary_text(topology)}\n({saved})", summary_html(topology) + f"<small>{escape(saved)}</small>"
            )
        )

    @magic_arguments()
    @argument("name", nargs="?", help="load this topology name into the form, and save to it")
    @line_magic
    def px_topology_form(self, line: str) -> Any:
        """Show a form to build a topology (framework, replicas, resources, per-index overrides),
        validated as you type; its save button stores it under a name for %%px_distributed -t.

            %px_topology_form cluster
        """
        args = parse_argstring(self.px_topology_form, line)
        from ..widgets.topology_form import TopologyForm

        check_name(args.name)
        display(TopologyForm(name=args.name))
