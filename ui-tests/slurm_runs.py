"""A real Slurm cluster with a run waiting in its queue, for the sidebar's Slurm test.

Usage: python slurm_runs.py PREFIX   (PX_HOME: the server's run store)

Starts a Slurm cluster on this machine (tests/slurm_cluster), submits a run that takes every CPU
of its three nodes and, behind it, a run that must wait (PENDING, reason Resources), both with
`backend: slurm` through the run service, as the sidebar would. Prints one JSON line once the
second run's status says it waits: {"blocker": id, "waiting": id, "message": its status message};
or {"skip": why} when Slurm cannot be started here. Then holds everything until its stdin closes
(or SIGTERM), stops both runs and the cluster, and exits.
"""

import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from slurm_cluster import SlurmCluster, SlurmUnavailable  # noqa: E402

from jupyter_px.service import RunService, SourceText, Submission  # noqa: E402

WAITS = "import time\nprint('waiting to be stopped', flush=True)\ntime.sleep(600)\n"


def topology(workers: int, cpus: int) -> dict:
    each = {"cpu": cpus, "memory": 256}
    return {
        "framework": "pytorch",
        "backend": "slurm",
        "environment": {"resources": each, "replicas": {"n_workers": workers, "default_worker": {"resources": each}}},
    }


def main() -> int:
    prefix = sys.argv[1]
    signal.signal(signal.SIGTERM, lambda *_: sys.stdin.close())
    cluster = SlurmCluster()
    try:
        cluster.start()
    except SlurmUnavailable as error:
        print(json.dumps({"skip": str(error)}), flush=True)
        return 0
    service = RunService()
    runs: list[str] = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            os.environ.update(cluster.env)
            os.environ["PX_SLURM_CONFIG"] = str(Path(folder) / "none.yaml")
            os.environ["PX_SLURM_POLL_INTERVAL_S"] = "0.5"
            os.environ["PX_STOP_GRACE_S"] = "5"
            runs.append(service.submit(Submission(SourceText(WAITS), topology(2, 4), name=f"{prefix} blocker", origin="cli")))
            runs.append(service.submit(Submission(SourceText(WAITS), topology(1, 1), name=f"{prefix} waiting", origin="cli")))
            deadline = time.monotonic() + 120
            status = service.status(runs[1])
            while status.reason != "Resources" and time.monotonic() < deadline:
                time.sleep(0.2)
                status = service.status(runs[1])
            print(json.dumps({"blocker": runs[0], "waiting": runs[1], "message": status.message}), flush=True)
            sys.stdin.read()  # until the test closes it
    finally:
        for run_id in runs:
            try:
                service.stop(run_id)
            except Exception as error:  # the cluster goes anyway
                print(f"stopping {run_id}: {error}", file=sys.stderr)
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
