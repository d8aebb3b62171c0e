"""A trial of a Hyperband sweep with `resume: true`, following the checkpoint convention as a
DDP job does: every replica loads the checkpoint the trial's last run left in
`tracking.get_outputs_path()` when `tracking.get_resume_step()` says there is one, trains up to
`num_steps`, and the chief saves the checkpoint there at the end. Barriers keep a fast replica
from saving before a slow one has loaded, as DDP's collectives do; here files in the shared
outputs stand in for them, so the trial starts without importing torch.

Every replica writes `resumed-<role>-<index>.json`: the step it resumed from, the step its
checkpoint said (they must agree), and the steps it ran. The chief logs `loss` each step: the
distance of `lr` from 0.3 sets how low it goes, so the better trials are the ones kept.
`HYPERBAND_STEP_SLEEP` slows each step (for a test that kills the controller mid-sweep).
"""

import json
import os
import time

from jupyter_px import tracking

info = tracking.get_task_info()
replicas = sum(len(addresses) for addresses in info.cluster.values())


def barrier(name: str) -> None:
    """Wait until every replica of this run has reached `name` (files in the shared outputs)."""
    folder = os.path.join(tracking.get_outputs_path(), f".barrier-{info.run_id}-{name}")
    os.makedirs(folder, exist_ok=True)
    open(os.path.join(folder, f"{info.role}-{info.index}"), "w").close()
    while len(os.listdir(folder)) < replicas:
        time.sleep(0.02)


params = tracking.get_params()
num_steps, lr = int(params["num_steps"]), float(params["lr"])
outputs = tracking.get_outputs_path()
checkpoint = os.path.join(outputs, "checkpoint.json")
start = tracking.get_resume_step() or 0
state = {"step": 0, "loss": 10.0}
if start:
    with open(checkpoint) as handle:
        state = json.load(handle)
role, index = os.environ["PX_TASK_TYPE"], int(os.environ["PX_TASK_INDEX"])
steps = list(range(start + 1, num_steps + 1))
with open(os.path.join(outputs, f"resumed-{role}-{index}.json"), "w") as handle:
    json.dump({"resume_step": start, "checkpoint_step": state["step"], "steps": steps}, handle)
barrier("loaded")
loss = state["loss"]
for step in steps:
    loss = loss * 0.8 + abs(lr - 0.3)
    if info.is_master:
        tracking.log_metrics(step=step, loss=loss)
    time.sleep(float(os.environ.get("HYPERBAND_STEP_SLEEP", "0")))
barrier("trained")
if info.is_master:
    with open(checkpoint + ".tmp", "w") as handle:
        json.dump({"step": num_steps, "loss": loss}, handle)
    os.replace(checkpoint + ".tmp", checkpoint)
