"""The run's own mimetype in a notebook output, so a saved notebook can show the run as it is now.

A widget in a saved output is only its model id: reopened without the kernel that held it, it
says "model not found", and with nbclient's saved widget state it is frozen as it was at the
last cell (a run that outlives the notebook's last cell stays "Running" forever). So every
output of the run monitor, live and final, also carries `application/vnd.jupyter-px.run+json`:
the run's id and what was known of it when the output was written. The JupyterLab extension
renders it (preferred over the widget and the static view): while the widget's kernel holds it,
the live widget; otherwise the run as the server knows it now (its state, a TensorBoard button,
an interactive metrics plot; "no longer exists" once deleted). Viewers without the extension
show the bundle's static HTML (with the final plot as SVG) or text, as before.

The payload is small and versioned; the renderer reads everything else from the REST API.
"""

from __future__ import annotations

from typing import Any

from ..service import RunStatus

#: The run's mimetype (the labextension's `runMime.ts` renders it).
MIMETYPE = "application/vnd.jupyter-px.run+json"
#: The payload's version: a renderer reads only versions it knows.
VERSION = 1


def run_payload(
    run_id: str,
    *,
    name: str | None,
    backend: str,
    created_at: float,
    status: RunStatus | None,
    final: bool,
    tensorboard: bool = False,
) -> dict[str, Any]:
    """What the output knew of the run when it was written: `final` once the run had ended (the
    static final view), `tensorboard` when its TensorBoard was open in the monitor (the renderer
    opens it again)."""
    return {
        "version": VERSION,
        "run_id": run_id,
        "name": name,
        "backend": backend,
        "created_at": created_at,
        "state": status.state.value if status is not None else None,
        "finished": bool(status is not None and status.state.finished),
        "finished_at": status.finished_at if status is not None else None,
        "replicas": [
            {"key": f"{replica.role}-{replica.index}", "state": replica.state.value}
            for replica in (status.replicas if status is not None else [])
        ],
        "final": final,
        "tensorboard": tensorboard,
    }


#: A sweep's mimetype (the labextension's `sweepOutput.tsx` renders it): every output of the sweep
#: monitor carries it, so JupyterLab shows the sweep as the server knows it, live or reopened.
SWEEP_MIMETYPE = "application/vnd.jupyter-px.sweep+json"


def sweep_payload(sweep_id: str, *, name: str | None, state: str | None) -> dict[str, Any]:
    """What the output knew of the sweep when it was written (the renderer reads the rest)."""
    return {"version": VERSION, "sweep_id": sweep_id, "name": name, "state": state}
