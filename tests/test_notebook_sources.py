"""What a notebook submitted as a whole ships: `%%px_distributed` cells as their bodies, the
topology and px line magics left out (`jupyter_px.code.sources.NotebookCells`)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from jupyter_px.code.notebook import distributed_body, notebook_source
from jupyter_px.service import NotebookCells, load_code

QUICKSTART = Path(__file__).parent.parent / "notebooks" / "quickstart.ipynb"


def notebook(*cells: tuple[str, list[str]]) -> dict:
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(source, metadata={"tags": tags}) for source, tags in cells]
    return dict(book)


def test_the_quickstart_ships_its_distributed_cell_body():
    code = load_code(NotebookCells(QUICKSTART))
    assert code.text.startswith("import torch\n")
    assert 'dist.init_process_group("gloo")' in code.text
    for not_code in ("%%px_", "%px_", "load_ext", "framework: pytorch", "get_ipython"):
        assert not_code not in code.text
    assert code.language == "python"


def test_distributed_cells_ship_their_bodies_in_order_and_tags_still_select():
    book = notebook(
        ("import os", []),
        ("%%px_topology t\nframework: pytorch", ["px"]),
        ("\n%%px_distributed -t t --wait\nprint('trained')", ["px"]),
        ("%px_status last\nprint('after')", []),
    )
    everything = load_code(NotebookCells("nb.ipynb", content=book)).text
    # the %px_status line is blanked, not dropped: every shipped line keeps its cell's numbering
    assert everything == "import os\n\nprint('trained')\n\n\nprint('after')\n"
    tagged = load_code(NotebookCells("nb.ipynb", cells="tagged", content=book)).text
    assert tagged == "print('trained')\n"


def test_a_notebook_of_magics_without_a_distributed_cell_has_no_code():
    book = notebook(("%%px_topology t\nframework: pytorch", []), ("%px_runs", []))
    with pytest.raises(ValueError, match="has no code cells to run"):
        load_code(NotebookCells("nb.ipynb", content=book))


@pytest.mark.parametrize(
    ("source", "body"),
    [
        ("%%px_distributed\nx = 1", "x = 1"),
        ("  \n%%px_distributed -t big --name n\nx = 1\ny = 2", "x = 1\ny = 2"),
        ("%%px_topology t\nframework: pytorch", None),
        ("x = 1\n%%px_distributed", None),
        ("%%px_distributed_other\nx = 1", None),
        ("", None),
    ],
)
def test_distributed_body(source, body):
    assert distributed_body(source) == body


def test_the_magics_notebook_mode_still_leaves_earlier_px_cells_out():
    """`%%px_distributed --notebook` ships the cells above it; an earlier run's cell is not one."""
    shipped = notebook_source(["import os", "%%px_distributed\nprint('earlier run')"], "print('now')")
    assert shipped == "import os\n\nprint('now')\n"
