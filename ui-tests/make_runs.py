"""Write N finished runs into the store (record + status, as a backend leaves them), for the
1,000-runs responsiveness test and the runs-list tests, and print how many runs the store holds
then (these and any others), which the runs list must count.

Usage: python make_runs.py N PREFIX [output] [recent]
With `output`, each replica also gets a log (200 numbered lines) and a `loss` falling over four
decades in 60 steps, for the Logs and Metrics panels' tests. With `recent`, the runs are the
store's newest (made in the last N seconds), so they lead the runs list whatever other tests left
there; by default they were made about three hours ago."""

import json
import sys
import time

from jupyter_px.runstore import ReplicaStatus, RunRecord, RunState, RunStatus, RunStore

count, prefix = int(sys.argv[1]), sys.argv[2]
flags = set(sys.argv[3:])
with_output = "output" in flags
now = time.time()
first_created = now - (count if "recent" in flags else 10_000)
store = RunStore()
replica_keys = (("master", 0), ("worker", 0), ("worker", 1))
for number in range(count):
    run_id = f"{prefix}-{number:04d}"
    paths = store.create(
        RunRecord(
            run_id=run_id,
            name=f"{prefix} {number}",
            topology={"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}},
            created_at=first_created + number,
            submitted_from="cli",
        ),
        {"main.py": "pass\n"},
    )
    if with_output:
        for slot, (role, index) in enumerate(replica_keys):
            lines = [f"{role}-{index} line {i}: loss {10 ** (-i / 50):.5f}\n" for i in range(200)]
            paths.log(role, index).write_text("".join(lines))
            with open(paths.metrics(role, index), "w") as handle:
                for step in range(60):
                    loss = (1 + slot) * 10 ** (-step / 15)
                    handle.write(json.dumps({"step": step, "time": now + step, "metrics": {"loss": loss}}) + "\n")
    replicas = [ReplicaStatus(role=role, index=index, state="Succeeded", exit_code=0) for role, index in replica_keys]
    store.write_status(
        RunStatus(
            run_id=run_id,
            state=RunState.SUCCEEDED,
            started_at=first_created + number,
            finished_at=min(now, first_created + number + 1_000),
            replicas=replicas,
        )
    )
print(len(store.run_ids()))
