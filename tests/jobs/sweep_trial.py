"""One sweep trial: a small PyTorch DDP job (gloo) whose learning rate comes from the sweep.

Every replica writes `<PX_OUTPUTS_PATH>/seen-<role>-<index>.json`: the trial's values as
`tracking.get_params()`, `PX_PARAMS` and the pushed globals give them, so a test can check that
every replica of every trial saw its trial's values. The chief logs `loss` each step (the
sweep's objective): the distance of the learning rate from 0.05 keeps the loss high, so bad
trials are pruned. `SWEEP_TRIAL_SLEEP` slows each step (for tests that kill the controller mid-sweep).
"""

import json
import os
import time

import torch
import torch.distributed as dist

from jupyter_px import tracking

params = tracking.get_params()
seen = {
    "get_params": params,
    "env": json.loads(os.environ.get("PX_PARAMS") or "{}"),
    "globals": {name: globals().get(name) for name in params},
}
role, index = os.environ["PX_TASK_TYPE"], int(os.environ["PX_TASK_INDEX"])
with open(os.path.join(os.environ["PX_OUTPUTS_PATH"], f"seen-{role}-{index}.json"), "w") as handle:
    json.dump(seen, handle)

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=float(params["lr"]))
generator = torch.Generator().manual_seed(rank)
steps = int(params.get("steps", 6))
for step in range(1, steps + 1):
    x = torch.randn(16, 4, generator=generator)
    loss = ((model(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    total = torch.tensor([loss.item()])
    dist.all_reduce(total)
    objective = abs(float(params["lr"]) - 0.05) * 100 + total.item() / dist.get_world_size() / step
    if rank == 0:
        tracking.log_metrics(step=step, total_steps=steps, loss=objective)
        tracking.flush()
    time.sleep(float(os.environ.get("SWEEP_TRIAL_SLEEP", "0.3")))
dist.barrier()
dist.destroy_process_group()
