"""Write N finished runs into the store (record + status, as a backend leaves them), for the
1,000-runs responsiveness test, and print how many runs the store holds then (these and any
others), which the runs list must count. Usage: python make_runs.py N PREFIX"""

import sys
import time

from jupyter_px.runstore import ReplicaStatus, RunRecord, RunState, RunStatus, RunStore

count, prefix = int(sys.argv[1]), sys.argv[2]
store = RunStore()
now = time.time()
for number in range(count):
    run_id = f"{prefix}-{number:04d}"
    store.create(
        RunRecord(
            run_id=run_id,
            name=f"{prefix} {number}",
            topology={"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}},
            created_at=now - 10_000 + number,
            submitted_from="cli",
        ),
        {"main.py": "pass\n"},
    )
    replicas = [
        ReplicaStatus(role=role, index=index, state="Succeeded", exit_code=0)
        for role, index in (("master", 0), ("worker", 0), ("worker", 1))
    ]
    store.write_status(
        RunStatus(
            run_id=run_id,
            state=RunState.SUCCEEDED,
            started_at=now - 10_000 + number,
            finished_at=now - 9_000 + number,
            replicas=replicas,
        )
    )
print(len(store.run_ids()))
