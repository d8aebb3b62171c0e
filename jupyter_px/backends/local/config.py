"""Tunables and names shared by the backend (caller side) and the supervisor.

Kept apart so that the backend can import them without importing the supervisor module, which
is run with `python -m` (importing it first would make runpy warn).
"""

from __future__ import annotations

import os

from ... import backend_table
from ...diagnostics import stalls
from ...env_seconds import seconds_from_env

SUPERVISOR_MODULE = "jupyter_px.backends.local.supervisor"

#: A file in the run directory whose presence asks the supervisor to stop the run.
STOP_FILE = "stop"


#: Longest time between SIGTERM and SIGKILL when stopping a replica (PX_STOP_GRACE_S overrides),
#: as Kubernetes' terminationGracePeriodSeconds: a replica gets it to write the metric points it
#: holds (and to run a SIGTERM handler of its own). Most are gone within milliseconds; the grace
#: ends early for one that has written everything and still runs (see DRAINED_KILL_AFTER_S).
STOP_GRACE_S = seconds_from_env("PX_STOP_GRACE_S", "30")

#: A replica whose tracking has written every point it accepted and whose SIGTERM handler is
#: tracking's own (flush, then die) but that still runs this long after SIGTERM is stuck in a
#: call that does not return to Python (a collective waiting for a dead peer): it is killed then
#: instead of at the end of the grace. Nothing it accepted is lost by that.
DRAINED_KILL_AFTER_S = 1.0

#: While replicas are being stopped, seconds between reads of their metrics ledgers.
LEDGER_POLL_S = 0.1

#: After the run succeeds, seconds a worker still running gets to finish on its own before it is
#: stopped (servers - ps, evaluator, TF workers next to parameter servers, MPI hosts - are
#: stopped at once: they never finish by themselves). PX_COMPLETION_GRACE_S overrides.
COMPLETION_GRACE_S = seconds_from_env("PX_COMPLETION_GRACE_S", "5.0")

#: Seconds a PyTorch master is started ahead of its workers (see attempts._head_start);
#: None: 0.3 s when the run has more processes than cores, else none. PX_MASTER_HEAD_START_S overrides.
_head_start = os.environ.get("PX_MASTER_HEAD_START_S")
MASTER_HEAD_START_S: float | None = seconds_from_env("PX_MASTER_HEAD_START_S", _head_start) if _head_start else None

#: Seconds between memory polls while a replica with a memory limit runs.
MEMORY_POLL_S = 0.1

#: The supervisor rewrites status.json (`updated_at`) at least this often.
HEARTBEAT_S = 2.0

#: Longest sleep between checks of the stop file when no signal arrives.
IDLE_POLL_S = 1.0

#: How long the supervisor keeps retrying the run's final status write when it fails (a full
#: disk): the true outcome is kept until space returns, rather than the run reading Lost.
FINAL_WRITE_PATIENCE_S = 3600.0

#: A replica that logs steps is shown Stalled once it has logged none for max(this, 10x its median
#: step time) (PX_STALL_AFTER_S overrides the floor; `diagnostics/stalls.py`).
STALL_AFTER_S = stalls.floor_s()

#: Exit codes Kubeflow's ExitCode restart policy treats as retryable (SIGINT, SIGKILL, SIGTERM).
RETRYABLE_EXIT_CODES = frozenset({130, 137, 143})

#: The environment variables above: passed on to the supervisor (other PX_* variables are not).
#: Named in the backend table's row, where a sweep's controller reads them too.
TUNABLES = backend_table.entry("local").tunables
