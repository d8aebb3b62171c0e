"""The jupyter_server extension as an `ExtensionApp`: its configuration, its routes, its keeper.

Configuration is traitlets, read once when the server starts (`jupyter server --help-all`, or a
`jupyter_server_config.py`):

    c.JupyterPxApp.home = "/data/px"                 # the run store the API serves
    c.JupyterPxApp.keeper_interval = 10              # seconds between keeper passes (0: none)
    c.JupyterPxApp.tensorboard_idle_timeout = 3600   # TensorBoards started through the API
    c.JupyterPxApp.kubernetes_namespace = "research" # Kubernetes runs submitted and rendered through the API
    c.JupyterPxApp.kubernetes_image = "registry.example.com/train:2026.11"  # runs whose topology names none

Each default is what the same setting means elsewhere in jupyter-px (`$PX_HOME`, else
`~/.jupyter_px`; `$JUPYTER_PX_TENSORBOARD_IDLE_TIMEOUT`; the Kubernetes settings file and
`PX_K8S_*`), so a deployment that configured those keeps working; the handlers read the values
from here (`PxSettings`), never from `os.environ`.

**The keeper.** Reads never act (a GET only reports "the supervisor is gone"); each run's
lifecycle has one owner, and while a Jupyter server runs, this extension is the explicit keeper:
every `keeper_interval` seconds it calls `RunService.keep_all` in a thread of its own (the event
loop keeps serving), so a local run whose supervisor died is recorded Lost and a Kubernetes run
nobody follows gets its follower back, whether or not anyone is looking.

**Kubernetes runs, followed here.** With the keeper, the server also follows its store's
Kubernetes runs itself (`RunService.host_followers`): one watch per namespace feeds every run it
follows (as kubespawner's reflector feeds its spawners), instead of a follower process and a
watch per run. Runs submitted through the REST API are followed here from their start; the
keeper takes over the others (a kernel's, the CLI's) from their own followers. Each run keeps one
owner at any time, recorded in its status; `stop_extension` hands the runs back to followers of
their own, and a server that dies leaves owners that reads report gone, for the next keeper.

**What kernels are told.** A kernel does not know the URL its notebook is served under, yet the
TensorBoard it embeds must be reached at `<base_url>px/tensorboard/<port>/` (`tensorboard_proxy`;
behind JupyterHub the base URL is `/user/<name>/`), and a TensorBoard it starts should end with
this server. jupyter_server builds a kernel's environment from `os.environ` and offers no other
hook, so the extension publishes exactly two variables for its kernels: `JUPYTER_PX_BASE_URL` and
`JUPYTER_PX_SERVER_PID`. That is an output to kernels, not the server's configuration: the
handlers take the base URL from the request and their settings from `PxSettings`; the one reader
in this process is `tensorboard.start`, which records this server as the owner of the
TensorBoards the API starts, as it does for a kernel's. `stop_extension` restores what was there.

`stop_extension` ends what the extension started: the keeper, and the TensorBoards that end with
this server (they would stop by themselves when its process exits; a server stopped inside a
longer-lived process, as in tests, would otherwise leave them serving).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path
from typing import Any

from jupyter_server.extension.application import ExtensionApp
from traitlets import Float, TraitError, Unicode, default, validate

from .. import tensorboard
from ..processes.daemon_pool import DaemonThreadPool
from ..service import px_home
from .settings import PxSettings

log = logging.getLogger(__name__)


class JupyterPxApp(ExtensionApp):
    """jupyter-px in a Jupyter server: the REST API behind the sidebar, the TensorBoard route, the keeper."""

    name = "jupyter_px"
    load_other_extensions = True

    home = Unicode(
        help="Directory of the run store the REST API serves and the keeper keeps "
        "(default: $PX_HOME, else ~/.jupyter_px; kernels use their own $PX_HOME).",
    ).tag(config=True)

    keeper_interval = Float(
        10.0,
        help="Seconds between passes of the keeper, which records runs whose local supervisor is "
        "gone as Lost and follows the Kubernetes runs of the store in this server, one watch per "
        "namespace (0: no keeper; each Kubernetes run then has a follower process of its own).",
    ).tag(config=True)

    tensorboard_idle_timeout = Float(
        help="Seconds without use after which a TensorBoard started through the REST API stops "
        "itself (0: never; default: $JUPYTER_PX_TENSORBOARD_IDLE_TIMEOUT, else 3600).",
    ).tag(config=True)

    kubernetes_namespace = Unicode(
        None,
        allow_none=True,
        help="Namespace of Kubernetes runs submitted and manifests rendered through the REST API "
        "(default: the Kubernetes settings: PX_K8S_NAMESPACE, the settings file, the kubeconfig).",
    ).tag(config=True)

    kubernetes_image = Unicode(
        None,
        allow_none=True,
        help="Image of Kubernetes runs submitted or rendered through the REST API whose topology "
        "names none (default: the Kubernetes settings: PX_K8S_IMAGE, the settings file, per framework).",
    ).tag(config=True)

    @default("home")
    def _default_home(self) -> str:
        return str(px_home())

    @default("tensorboard_idle_timeout")
    def _default_tensorboard_idle_timeout(self) -> float:
        try:
            return tensorboard.idle_timeout_setting()
        except ValueError as error:  # a bad variable must not stop the server: say so, use the default
            log.warning("jupyter_px: %s; using %g s", error, tensorboard.DEFAULT_IDLE_TIMEOUT_S)
            return tensorboard.DEFAULT_IDLE_TIMEOUT_S

    @validate("keeper_interval", "tensorboard_idle_timeout")
    def _not_negative(self, proposal: Any) -> float:
        value = proposal["value"]
        if not value >= 0 or value == float("inf"):
            name = proposal["trait"].name
            raise TraitError(f"JupyterPxApp.{name}: {value!r} is not a number of seconds (0 or more)")
        return float(value)

    @validate("home")
    def _a_directory(self, proposal: Any) -> str:
        value = proposal["value"]
        if not value.strip():
            raise TraitError("JupyterPxApp.home: '' is not a directory")
        return str(Path(value).expanduser())

    # -----------------------------------------------------------------------------------------

    def px_settings(self) -> PxSettings:
        return PxSettings(
            home=Path(self.home),
            tensorboard_idle_timeout=self.tensorboard_idle_timeout,
            kubernetes_namespace=self.kubernetes_namespace,
            kubernetes_image=self.kubernetes_image,
        )

    def initialize_settings(self) -> None:
        from .base import PxState

        self.state = PxState(self.px_settings())
        self._keeper: asyncio.Task[None] | None = None
        self._keeper_executor: DaemonThreadPool | None = None
        self._followers: Any = None  # the Kubernetes runs followed here (with the keeper)
        self._published: dict[str, str | None] = {}
        self._publish_for_kernels()

    def initialize_handlers(self) -> None:
        from .routes import handlers
        from .tensorboard_proxy import TensorBoardPorts

        # The kernels' TensorBoards are recorded under their $PX_HOME, the API's under `home`.
        self.tensorboard_ports = TensorBoardPorts([self.state.service.home, px_home()])
        self.handlers.extend(handlers(self.state, self.tensorboard_ports))
        assert self.serverapp is not None
        self.log.info(
            "jupyter_px: REST API at %spx/api/ over the run store %s; keeper every %g s",
            self.serverapp.base_url,
            self.state.service.home,
            self.keeper_interval,
        )

    def _publish_for_kernels(self) -> None:
        """Put the base URL and this server's pid where the kernels it starts will find them."""
        assert self.serverapp is not None
        values = {
            tensorboard.BASE_URL_ENV: self.serverapp.base_url or "/",
            tensorboard.SERVER_PID_ENV: str(os.getpid()),
        }
        for name, value in values.items():
            self._published[name] = os.environ.get(name)
            os.environ[name] = value

    def _unpublish(self) -> None:
        for name, previous in self._published.items():
            if previous is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = previous
        self._published = {}

    # -----------------------------------------------------------------------------------------
    # The keeper

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        """Called by the server once its event loop runs: start the keeper."""
        self.start_keeper()

    def start_keeper(self) -> None:
        if self.keeper_interval <= 0 or self._keeper is not None:
            return
        self._keeper_executor = DaemonThreadPool(1, "jupyter-px-keeper")  # a hung pass must not hold up exit
        self._followers = self.state.service.host_followers()
        self._keeper = asyncio.get_running_loop().create_task(self._keep(), name="jupyter-px-keeper")

    async def _keep(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                await loop.run_in_executor(self._keeper_executor, self.state.service.keep_all)
                await loop.run_in_executor(self._keeper_executor, self._keep_sweeps)
                # the first comparison of runs that ended while the server ran reads no point
                await loop.run_in_executor(self._keeper_executor, self.state.service.digests.keep_finished)
            except Exception:  # the keeper must outlive one bad pass; the next one may succeed
                self.log.exception("jupyter_px: a keeper pass failed")
            await asyncio.sleep(self.keeper_interval)

    def _keep_sweeps(self) -> None:
        """An unfinished sweep whose controller died gets it again (it resumes from its journal)."""
        from ..sweeps.service import SweepService

        SweepService(runs=self.state.service).keep_all()

    async def stop_extension(self) -> None:
        """End the keeper (a pass in progress completes in its thread), hand the Kubernetes runs
        followed here back to followers of their own, and end our TensorBoards."""
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
        if self._keeper_executor is not None:
            self._keeper_executor.shutdown(wait=False, cancel_futures=True)
            self._keeper_executor = None
        followers, self._followers = self._followers, None
        if followers is not None:
            await asyncio.to_thread(followers.close)
        self.state.close()
        await asyncio.to_thread(self._stop_tensorboards)
        self._unpublish()

    def _stop_tensorboards(self) -> None:
        """Stop the TensorBoards that end with this server (its kernels' and the API's)."""
        me = os.getpid()
        for home in self.tensorboard_ports.homes:
            for info in tensorboard.list_servers(home):
                if info.owner_pid != me:
                    continue
                try:
                    tensorboard.stop(info, home=home)
                except (OSError, ValueError) as error:
                    self.log.warning("jupyter_px: cannot stop TensorBoard %s: %s", info.key, error)
