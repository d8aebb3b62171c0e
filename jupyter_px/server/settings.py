"""The server extension's configuration as the handlers see it: a snapshot of the traitlets of
`app.JupyterPxApp`, taken once when the server starts (handlers never read `os.environ`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import backend_table
from ..topology import Topology


@dataclass(frozen=True)
class PxSettings:
    """The extension's configuration as the handlers see it (a snapshot of the traitlets)."""

    home: Path
    tensorboard_idle_timeout: float
    kubernetes_namespace: str | None = None
    kubernetes_image: str | None = None

    def kubernetes_overrides(self) -> dict[str, str]:
        """The Kubernetes settings this server sets (`load_settings(**overrides)`): only those given."""
        chosen = {"namespace": self.kubernetes_namespace, "image": self.kubernetes_image}
        return {name: value for name, value in chosen.items() if value}

    def with_image(self, topology: Topology) -> Topology:
        """`topology` with the configured image as its environment's image when it names none (as
        the sidebar's image setting fills it in), so the run's record says which image it ran;
        only for a backend whose replicas run an image (its row's `uses_image`: not Slurm's)."""
        if not self.kubernetes_image or topology.environment.image:
            return topology
        if not backend_table.entry(topology.backend_kind).uses_image:
            return topology
        environment = topology.environment.model_copy(update={"image": self.kubernetes_image})
        return topology.model_copy(update={"environment": environment})
