"""JupyterLab in headless Chromium, driven as a person would: open a notebook, run it, look.

The browser tests start a real `jupyter lab` on 127.0.0.1 (token auth, our server extension and
jupyter-server-proxy enabled, its own run store) and drive Debian's Chromium with Playwright
(`CHROMIUM`); nothing is downloaded. `expose_app_in_browser` gives the page `window.jupyterapp`,
so tests run JupyterLab's own commands (run all cells, save, change theme) instead of clicking
through menus that move between versions. Screenshots go to `test-artifacts/` (or
`$PX_TEST_ARTIFACTS`), which CI keeps.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from free_ports import free_port
from server_support import stop_process, wait_until_serving, write_server_config
from warm_support import templates_before_a_server

#: Debian's headless shell (`chromium-headless-shell`, the headless browser Playwright itself
#: runs) where it is installed, else its whole browser in the new headless mode: the same Blink,
#: and a fifth less CPU on the same tests (25 s of Chromium against 31.5 for the comparison and
#: sweep-monitor tests), on a machine the browser tests keep busy.
CHROMIUM = next(
    (path for path in (Path("/usr/bin/chromium-headless-shell"), Path("/usr/bin/chromium")) if path.exists()),
    Path("/usr/bin/chromium"),
)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
REPO = Path(__file__).resolve().parent.parent


def artifacts_dir() -> Path:
    """Where screenshots are written; kept by CI as the browser tests' evidence."""
    path = Path(os.environ.get("PX_TEST_ARTIFACTS") or REPO / "test-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_lab_settings(root: Path, theme: str) -> None:
    """JupyterLab's user settings under `root/settings`: the theme, and no "what's new" / news /
    update pop-ups over the screenshots."""
    settings = root / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "themes.jupyterlab-settings").write_text(json.dumps({"theme": THEMES[theme]}))
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )


def start_lab(
    root: Path, port: int, token: str, work: Path, px_home: Path, log_path: Path, env: dict[str, str] | None = None
) -> subprocess.Popen:
    """`jupyter lab` on 127.0.0.1:`port` with `token`, serving `work`, its config, runtime,
    settings and workspaces under `root` (`root/config` written by the caller), the run store
    `px_home`, `window.jupyterapp` exposed; its output to `log_path`. `env` adds variables."""
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={work}",
                "--LabApp.expose_app_in_browser=True",
                "--LabApp.news_url=",
                "--allow-root",
            ],
            env={
                **os.environ,
                **(env or {}),
                "JUPYTER_CONFIG_DIR": str(root / "config"),
                "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
                "JUPYTERLAB_SETTINGS_DIR": str(root / "settings"),
                "JUPYTERLAB_WORKSPACES_DIR": str(root / "workspaces"),
                "PX_HOME": str(px_home),
            },
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


class JupyterLab:
    """`jupyter lab` in a subprocess: token auth, 127.0.0.1, a private run store and settings."""

    def __init__(self, root: Path, theme: str = "light"):
        self.root = root
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.px_home = root / "px_home"
        config = root / "config"
        write_server_config(config)
        # These tests are about notebooks: the JupyterLab sidebar of this package (a separate
        # build, present when installed in develop mode) stays out of them.
        (config / "labconfig").mkdir(exist_ok=True)
        (config / "labconfig" / "page_config.json").write_text(json.dumps({"disabledExtensions": {"jupyter-px": True}}))
        write_lab_settings(root, theme)
        self.work = root / "work"
        self.work.mkdir(exist_ok=True)
        self.log_path = root / "lab.log"
        templates_before_a_server()  # the notebooks' runs start warm, from templates the session keeps
        self.process = start_lab(root, self.port, self.token, self.work, self.px_home, self.log_path)
        wait_until_serving(self.process, f"{self.url}/api/status?token={self.token}", self.log_path)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def lab_url(self, path: str = "") -> str:
        return f"{self.url}/lab/tree/{path}?token={self.token}&reset"

    def stop(self) -> None:
        stop_process(self.process)


_MSG_TYPE = re.compile(r'"msg_type"\s*:\s*"([a-z_]+)"')


@dataclass
class PageLog:
    """What the page reported: console errors and failed requests (a user's devtools), and which
    of its requests (its frames' included) are still unanswered, for `wait_network_quiet`."""

    console_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    in_flight: set[Any] = field(default_factory=set)
    last_activity: float = field(default_factory=time.monotonic)
    # Per kernel socket, the debugger's requests without a reply yet: JupyterLab's debugger asks
    # a kernel just started for its state, and a kernel shut down before it answers makes the
    # debugger log "Could not restore the debugger state" (a test's haste, not the page's fault).
    debug_unanswered: dict[Any, int] = field(default_factory=dict)

    def attach(self, page: Any) -> None:
        page.on("console", lambda msg: msg.type == "error" and self.console_errors.append(msg.text))
        page.on("pageerror", lambda error: self.console_errors.append(f"page error: {error}"))
        page.on(
            "response",
            lambda response: (
                response.status >= 400 and self.failed_requests.append(f"{response.status} {response.url}")
            ),
        )
        page.on("request", self._started)
        page.on("requestfinished", self._ended)
        page.on("requestfailed", self._ended)
        page.on("websocket", self._kernel_socket)

    def _kernel_socket(self, socket: Any) -> None:
        def count(payload: str | bytes, kind: str, step: int) -> None:
            text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload
            # The header comes before the parent header, whose msg_type a reply repeats.
            match = _MSG_TYPE.search(text)
            if match and match.group(1) == kind:
                self.debug_unanswered[socket] = max(0, self.debug_unanswered.get(socket, 0) + step)
                self.last_activity = time.monotonic()

        socket.on("framesent", lambda payload: count(payload, "debug_request", 1))
        socket.on("framereceived", lambda payload: count(payload, "debug_reply", -1))
        socket.on("close", lambda _: self.debug_unanswered.pop(socket, None))

    def _started(self, request: Any) -> None:
        # Sockets and event streams stay open by design: they are not requests to wait for.
        if request.resource_type not in ("websocket", "eventsource"):
            self.in_flight.add(request)
        self.last_activity = time.monotonic()

    def _ended(self, request: Any) -> None:
        self.in_flight.discard(request)
        self.last_activity = time.monotonic()


def wait_network_quiet(page: Any, log: PageLog, quiet_s: float = 1.0, timeout_s: float = 60) -> None:
    """Until none of the page's requests (and none of its debugger's requests to a kernel) has
    been in flight for `quiet_s`: the cascade a load set off (an iframe's app fetching its data)
    is over, so a late failure is in `log` by then."""
    deadline = time.monotonic() + timeout_s
    while log.in_flight or any(log.debug_unanswered.values()) or time.monotonic() - log.last_activity < quiet_s:
        if time.monotonic() > deadline:
            pending = sorted(request.url for request in log.in_flight)
            pending += [f"{n} debug_request(s) to {socket.url}" for socket, n in log.debug_unanswered.items() if n]
            raise AssertionError(f"the page's requests did not settle within {timeout_s:g} s; unanswered: {pending}")
        page.wait_for_timeout(100)  # lets Playwright deliver the page's events meanwhile


@contextmanager
def chromium_page(width: int = 1400, height: int = 1000) -> Iterator[tuple[Any, PageLog]]:
    """A fresh headless Chromium page (Debian's binary) and the log of what went wrong on it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            log = PageLog()
            log.attach(page)
            yield page, log
        finally:
            browser.close()


def drawn(locator: Any, count: int, timeout_s: float = 60) -> None:
    """Assert the page draws exactly `count` of `locator`, waiting up to `timeout_s` for it: plotly
    draws a figure's traces after its element appears, later still on a loaded machine."""
    from playwright.sync_api import expect

    expect(locator).to_have_count(count, timeout=timeout_s * 1000)


def wait_for_app(page: Any, timeout_s: float = 90) -> None:
    """Until JupyterLab has started and restored its layout."""
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.started && document.querySelector('.jp-LabShell')",
        timeout=timeout_s * 1000,
    )
    page.evaluate("() => window.jupyterapp.restored")


def command(page: Any, name: str, args: dict | None = None) -> Any:
    """Run a JupyterLab command by id, as the palette or a menu would."""
    return page.evaluate("([name, args]) => window.jupyterapp.commands.execute(name, args)", [name, args or {}])


def set_theme(page: Any, theme: str) -> None:
    """The theme switched live, as the Settings menu does (JupyterLab's own command)."""
    command(page, "apputils:change-theme", {"theme": THEMES[theme]})
    page.wait_for_function(f"() => document.body.dataset.jpThemeName === {THEMES[theme]!r}", timeout=30_000)


def in_each_theme(page: Any, look: Any) -> None:
    """`look(theme)` in Light and then Dark, the theme switched live as a user does (one server,
    one page and one kernel for both); ends in Light, the servers' setting for the next test."""
    for theme in ("light", "dark"):
        set_theme(page, theme)
        look(theme)
    set_theme(page, "light")


def open_notebook(page: Any, lab: JupyterLab, path: str) -> None:
    """Open a notebook in JupyterLab and wait until its kernel is idle."""
    page.goto(lab.lab_url(path))
    wait_for_app(page)
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook", timeout=60_000)
    wait_kernel_idle(page)


def wait_kernel_idle(page: Any, timeout_s: float = 120) -> None:
    page.wait_for_function(
        """() => {
            const panel = window.jupyterapp.shell.currentWidget;
            const kernel = panel && panel.sessionContext && panel.sessionContext.session
                && panel.sessionContext.session.kernel;
            return kernel && kernel.status === 'idle';
        }""",
        timeout=timeout_s * 1000,
    )


# JupyterLab's debugger asks a kernel it has just met for its state: a `debugInfo` request on the
# control channel, then a second one as the first is answered, and between the two it enables the
# notebook's bug button (@jupyterlab/debugger 4.x, src/handler.ts, `DebuggerHandler.updateWidget`).
# A kernel shut down before they are answered makes it log "Could not restore the debugger state".
# Once the button is enabled, a request of ours, queued behind theirs on the control channel that
# ipykernel answers in order, comes back only after theirs have.
_DEBUGGER_ASKED = """() => {
    const toolbar = window.jupyterapp.shell.currentWidget.toolbar;
    const bug = Array.from(toolbar.children())[Array.from(toolbar.names()).indexOf('debugger-icon')];
    return Boolean(bug && bug.enabled);
}"""
_BEHIND_THE_DEBUGGER = """async () => {
    const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
    await kernel.requestDebug({type: 'request', seq: 0, command: 'debugInfo', arguments: {}}).done;
}"""


def wait_debugger_answered(page: Any, log: PageLog, timeout_s: float = 60) -> None:
    """Until the debugger's questions to the current notebook's kernel are answered (the kernel
    supports debugging: ipykernel with debugpy), then until the page is quiet: the kernel can be
    shut down without cancelling them."""
    page.wait_for_function(_DEBUGGER_ASKED, timeout=timeout_s * 1000)
    page.evaluate(_BEHIND_THE_DEBUGGER)
    wait_network_quiet(page, log, timeout_s=timeout_s)


def run_all_cells(page: Any) -> None:
    command(page, "notebook:run-all-cells")
