"""The warm templates' REST route, under `<base_url>px/api/warm`: what the sidebar shows of them
(state, memory, when an unused one stops; a spawn-ahead pool's interpreters counted with the
standby, as what the next run takes) and its Stop. Authenticated and authorized against
the `px` resource like every route of the extension; the work in `jupyter_px.service.warm`
(what `jupyter px warm` calls).

    GET    px/api/warm    every template of the server's warm directory, newest first
    DELETE px/api/warm    stop them all (runs already started go on)

A template a kernel of this server started belongs to this server and stops with it.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..service import warm
from .base import PxHandler
from .models import WarmTemplates
from .pools import HERE


def _memory(entry: dict[str, Any] | None) -> dict[str, float] | None:
    return {k: float(entry[k]) for k in ("rss_mib", "uss_mib", "pss_mib")} if entry else None


def _next_run(entry: dict[str, Any]) -> dict[str, float] | None:
    """What the next run takes: the standby owner, and the interpreters of its spawn-ahead pool
    (TensorFlow's template) counted with it."""
    parts = [entry.get("standby_memory")] + [
        m.get("memory") for m in (entry.get("pool") or {}).get("interpreters") or []
    ]
    found = [part for part in parts if part]
    return {k: float(sum(part[k] for part in found)) for k in ("rss_mib", "uss_mib", "pss_mib")} if found else None


def _template(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "key": entry["key"],
        "framework": entry.get("framework"),
        "state": entry.get("state", "unknown") if entry["running"] else "stopped",
        "running": entry["running"],
        "pid": entry.get("pid"),
        "python": entry.get("python"),
        "owner": (entry.get("owner") or {}).get("kind") or "detached",
        "memory": _memory(entry.get("memory")),
        "standby_memory": _next_run(entry),
        "idle_s": entry.get("idle_s"),
        "stops_in_s": entry.get("stops_in_s"),
        "preload": list(entry.get("preload") or []),
        "error": entry.get("error"),
        "stop_reason": entry.get("stop_reason"),
    }


def _templates() -> dict[str, Any]:
    return {"templates": [_template(entry) for entry in warm.templates()]}


class WarmHandler(PxHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.send(WarmTemplates, await self.blocking(_templates))

    @web.authenticated
    @authorized("write")
    async def delete(self) -> None:
        await self.blocking(warm.stop, "stopped from the sidebar", kind=HERE)
        self.send(WarmTemplates, await self.blocking(_templates))
