"""A quick trial without a framework that logs `loss` for `num_steps` steps (default 4), slowly
enough (`STEPS_TRIAL_SLEEP`, 0.3 s a step) for a pruner to stop it on the way: the distance of
`lr` from 0.3 keeps the loss high."""

import os
import time

from jupyter_px import tracking

params = tracking.get_params()
lr = float(params["lr"])
for step in range(1, int(params.get("num_steps", 4)) + 1):
    tracking.log_metrics(step=step, loss=abs(lr - 0.3) * 10 + 1 / step)
    tracking.flush()
    time.sleep(float(os.environ.get("STEPS_TRIAL_SLEEP", "0.3")))
