"""One `%%px_distributed` cell run again and again in a real kernel (nbclient), with jupyter-px
loaded: how a benchmark times what a notebook user waits for, the cell's wall time."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path


class CellKernel:
    """A kernel started with `env` (the benchmark's store and settings, never the user's), in
    `folder`, that has run `%load_ext jupyter_px` and runs `cell` on each `run`."""

    def __init__(self, env: Mapping[str, str], folder: Path, cell: str, timeout: int = 600):
        import nbformat
        from nbclient import NotebookClient

        self.notebook = nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_code_cell("%load_ext jupyter_px"), nbformat.v4.new_code_cell(cell)]
        )
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)  # what the kernel inherits
        try:
            self.client = NotebookClient(
                self.notebook, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
            )
            self.kernel = self.client.setup_kernel()
            self.kernel.__enter__()
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self.client.execute_cell(self.notebook.cells[0], 0)

    def run(self) -> tuple[float, bool, str]:
        """(the cell's seconds, whether it succeeded, what it raised)."""
        cell = self.notebook.cells[1]
        start = time.perf_counter()
        try:
            self.client.execute_cell(cell, 1)
            ok, said = True, ""
        except Exception as error:  # CellExecutionError: the run did not succeed
            ok, said = False, str(error)
            cell.outputs = [{"output_type": "stream", "name": "stderr", "text": said}]
        return time.perf_counter() - start, ok, said

    def close(self) -> None:
        self.kernel.__exit__(None, None, None)
