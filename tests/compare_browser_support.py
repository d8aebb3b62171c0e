"""JupyterLab with this worktree's sidebar build, for the comparison panel's browser test and
`benchmarks/bench_compare.py`.

`browser_support.JupyterLab` keeps the sidebar out (its tests are about notebooks); here the
sidebar is the subject, and it must be this checkout's build (`jlpm build` writes it to
`jupyter_px/labextension`), not whichever one the environment installed: a private `JUPYTER_PATH`
links it as the `jupyter-px` lab extension, and `has_compare_command` checks in the page that it
is the one loaded.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from browser_support import start_lab, write_lab_settings
from free_ports import free_port
from server_support import stop_process, wait_until_serving, write_server_config

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "jupyter_px" / "labextension"
COMPARE_COMMAND = "jupyter-px:compare-runs"


def build_present() -> bool:
    return (BUILD / "package.json").is_file() and (BUILD / "static").is_dir()


class SidebarLab:
    """`jupyter lab` on 127.0.0.1 with token auth, a given run store, this checkout's sidebar."""

    def __init__(self, root: Path, px_home: Path, theme: str = "light"):
        self.root, self.px_home = root, px_home
        self.port = free_port()
        self.token = secrets.token_hex(16)
        config = root / "config"
        write_server_config(config)
        data = root / "data" / "labextensions"
        data.mkdir(parents=True, exist_ok=True)
        link = data / "jupyter-px"
        if not link.exists():
            link.symlink_to(BUILD, target_is_directory=True)
        write_lab_settings(root, theme)
        work = root / "work"
        work.mkdir(exist_ok=True)
        self.log_path = root / "lab.log"
        self.process = start_lab(
            root, self.port, self.token, work, px_home, self.log_path, env={"JUPYTER_PATH": str(root / "data")}
        )
        wait_until_serving(self.process, f"{self.url}/api/status?token={self.token}", self.log_path)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def lab_url(self) -> str:
        return f"{self.url}/lab?token={self.token}&reset"

    def stop(self) -> None:
        stop_process(self.process)


def has_compare_command(page) -> bool:
    """Whether the page runs this checkout's sidebar (an installed older one lacks the command)."""
    return bool(page.evaluate(f"() => window.jupyterapp.commands.hasCommand({COMPARE_COMMAND!r})"))


def open_comparison(page, run_ids: list[str], points: int | None = None, timeout_s: float = 300) -> dict:
    """Run the command, wait until the panel has drawn; its timings and what it shows."""
    args: dict = {"runIds": run_ids}
    if points is not None:
        args["points"] = points
    page.evaluate("([name, args]) => { window.jupyterapp.commands.execute(name, args); }", [COMPARE_COMMAND, args])
    page.wait_for_function(
        "() => { const n = document.querySelector('.jp-px-panel-compare:not(.lm-mod-hidden) .jp-px-compare');"
        " return n && (n.dataset.state === 'ready' || n.dataset.state === 'error'); }",
        timeout=timeout_s * 1000,
    )
    return page.evaluate(
        """() => {
            const n = document.querySelector('.jp-px-panel-compare:not(.lm-mod-hidden) .jp-px-compare');
            return {
                state: n.dataset.state,
                fetch_ms: Number(n.dataset.fetchMs),
                draw_ms: Number(n.dataset.drawMs),
                plots: n.querySelectorAll('.jp-px-compare-plot[data-state="drawn"]').length,
                lines: n.querySelectorAll('.jp-px-compare-plot .scatterlayer .trace').length,
                best: (n.querySelector('.jp-px-compare-best-name') || {}).textContent || null,
                rows: n.querySelectorAll('table.jp-px-compare-table tbody tr').length,
                error: (n.querySelector('.jp-px-error') || {}).textContent || null,
            };
        }"""
    )
