"""A trial of a Hyperband sweep with `resume: true`, following the checkpoint convention:
train `num_steps` steps from `tracking.get_resume_step()`, loading the checkpoint the last run
left in `tracking.get_outputs_path()` when there is one, and saving it there at the end.

Every replica writes `resumed-<role>-<index>.json`: the step it resumed from and the step its
checkpoint said (they must agree), and the steps it ran. The chief logs `loss` each step: the
distance of `lr` from 0.3 sets how low it goes, so the better trials are the ones kept.
`HYPERBAND_STEP_SLEEP` slows each step (for a test that kills the controller mid-sweep).
"""

import json
import os
import time

from jupyter_px import tracking

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
loss = state["loss"]
for step in steps:
    loss = loss * 0.8 + abs(lr - 0.3)
    if tracking.get_task_info().is_master:
        tracking.log_metrics(step=step, loss=loss)
    time.sleep(float(os.environ.get("HYPERBAND_STEP_SLEEP", "0")))
state = {"step": num_steps, "loss": loss}
with open(checkpoint + ".tmp", "w") as handle:
    json.dump(state, handle)
os.replace(checkpoint + ".tmp", checkpoint)
