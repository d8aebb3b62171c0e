"""Write a finished sweep into the store: its record and status through the sweep store, and its
trials as finished runs (each linked to the sweep, as the controller submits them), for the
sidebar's sweep-group tests.

Usage: python make_sweep.py NAME TRIALS [curves]
With `curves`, each trial's run also has its chief's metrics (a `loss` and an `acc` over 60
steps, a second apart); the last trial was stopped at step 20 with the lowest loss seen until
then: the comparison's "best" must be a trial that succeeded, not that one."""

import json
import sys
import time

from jupyter_px.runstore import ReplicaStatus, RunRecord, RunState, RunStatus, RunStore
from jupyter_px.runstore.models import CodeSpec, TrialOf
from jupyter_px.runstore.sweeps import SweepRecord, SweepState, SweepStatus, TrialRow, TrialState

name, count = sys.argv[1], int(sys.argv[2])
with_curves = sys.argv[3:] == ["curves"]
runs = RunStore()
sweeps = runs.sweeps
now = time.time()
trial_topology = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}
# The sweep's own file, as a controller's sweep has it (its views read the objective from it).
topology = {
    **trial_topology,
    "hptuning": {
        "metric": {"name": "loss", "optimization": "minimize"},
        "matrix": {
            "lr": {"values": [round(0.1 / (n + 1), 4) for n in range(count)]},
            "momentum": {"values": [0.0, 0.9]},
        },
    },
}
sweep_id = sweeps.new_id(name)
trials = []
for number in range(count):
    params = {"lr": round(0.1 / (number + 1), 4), "momentum": 0.9 if number % 2 else 0.0}
    value = 1.0 / (number + 1)
    run_id = f"{sweep_id}-t{number}"
    runs.create(
        RunRecord(
            run_id=run_id,
            name=f"{name} trial {number}",
            topology=trial_topology,
            created_at=now - 600 + number,
            submitted_from="sweep",
            sweep=TrialOf(sweep_id=sweep_id, trial=number, params=params),
        ),
        {"main.py": "pass\n"},
    )
    keys = (("master", 0), ("worker", 0))
    stopped = with_curves and number == count - 1
    if with_curves:
        paths = runs.paths(run_id)
        paths.metrics_dir.mkdir(parents=True, exist_ok=True)
        steps = range(21) if stopped else range(60)
        with open(paths.metrics("master", 0), "w") as handle:
            for step in steps:
                loss = (0.05 if stopped else value) * (1 + (59 - step) / 10)
                point = {
                    "step": step,
                    "time": now - 600 + number + step,
                    "metrics": {"loss": loss, "acc": 1 - loss / 10},
                }
                handle.write(json.dumps(point) + "\n")
    runs.write_status(
        RunStatus(
            run_id=run_id,
            state=RunState.STOPPED if stopped else RunState.SUCCEEDED,
            started_at=now - 600 + number,
            finished_at=now - 500 + number,
            replicas=[ReplicaStatus(role=r, index=i, state="Succeeded", exit_code=0) for r, i in keys],
        )
    )
    trials.append(
        TrialRow(
            number=number,
            state=TrialState.COMPLETE,
            run_id=run_id,
            params=params,
            value=value,
            values={"loss": value},
            step=9,
            intermediate=[(step, value * (1 + (9 - step) / 3)) for step in range(10)],
            started_at=now - 600 + number,
            finished_at=now - 500 + number,
        )
    )
sweeps.create(
    SweepRecord(sweep_id=sweep_id, name=name, topology=topology, code=CodeSpec(), workdir=".", created_at=now - 700),
    {"main.py": "pass\n"},
    SweepStatus(
        sweep_id=sweep_id,
        state=SweepState.SUCCEEDED,
        started_at=now - 700,
        finished_at=now - 400,
        n_trials=count,
        concurrency=2,
        objective="loss",
        direction="minimize",
        best=count - 1,
        trials=trials,
    ),
)
print(sweep_id)
