"""A trial of a Hyperband sweep with `resume: true`, following the checkpoint convention as a
DDP job does: every replica loads the newest checkpoint (`tracking.load_checkpoint`, the run's
one shared checkpoint: the trial's last run left it in its outputs, which the kept trial's next
run gets a copy of), trains up to `num_steps`, and the chief saves the checkpoint at the end
(`tracking.save_checkpoint(..., shared=True)`). Barriers keep a fast replica
from saving before a slow one has loaded, as DDP's collectives do; here files in the shared
outputs stand in for them, so the trial starts without importing torch.

Every replica writes `resumed-<role>-<index>.json`: the step the sweep said it resumes from
(`tracking.get_resume_step()`), the step of the checkpoint it loaded (they must agree), and the
steps it ran. The chief logs `loss` each step: the
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
saved = tracking.load_checkpoint(shared=True)
start = tracking.get_resume_step() or 0
state = {"step": 0, "loss": 10.0} if saved is None else {"step": saved.step, **saved.state}
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
    tracking.save_checkpoint({"loss": loss}, num_steps, shared=True)
