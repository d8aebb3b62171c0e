"""A DDP job written for elastic workers: the world may change between attempts.

Rank 0 saves one shared checkpoint every `--every` steps (`tracking.save_checkpoint(...,
shared=True)`): the ranks are numbered again when a worker leaves or comes back, so a per-rank
checkpoint would not belong to the same rank in the next attempt. Every step all-reduces a one
from each rank, so the sum is the world the step really ran in; rank 0 logs it as `world`.
With `--until FILE` it trains until FILE exists instead of for `--steps`: rank 0 looks, and the
step's all-reduce carries what it saw, so every rank stops at the same step.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from jupyter_px import tracking

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=60)
parser.add_argument("--every", type=int, default=5)
parser.add_argument("--step-sleep", type=float, default=0.1)
parser.add_argument("--hold-after", type=int, default=None, help="attempt 1: rank 0 stops after this step")
parser.add_argument("--until", default=None, help="train until this file exists (instead of --steps)")
args = parser.parse_args()
#: the first attempt waits after this step for the test's kill, so a slow test cannot miss the run
hold_after = args.hold_after if tracking.get_attempt() == 1 else None

torch.set_num_threads(1)
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = DistributedDataParallel(nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

checkpoint = tracking.load_checkpoint(shared=True)
start = 0
if checkpoint is not None:
    model.module.load_state_dict(checkpoint.state["model"])
    optimizer.load_state_dict(checkpoint.state["optimizer"])
    start = checkpoint.step
print(f"attempt {tracking.get_attempt()}: rank {rank} of {world} starts after step {start}", flush=True)

step = start
while args.until is not None or step < args.steps:
    step += 1
    x = torch.randn(16, 8)
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    present = torch.tensor([1.0, float(rank == 0 and args.until is not None and os.path.exists(args.until))])
    dist.all_reduce(present)  # [the world, whether rank 0 saw the file]
    if rank == 0:
        tracking.log_metrics(step=step, world=present[0].item(), loss=loss.item())
        if step % args.every == 0:
            state = {"model": model.module.state_dict(), "optimizer": optimizer.state_dict()}
            tracking.save_checkpoint(state, step, shared=True)
        if step == hold_after:
            tracking.flush()
            while True:  # the others wait in the next all-reduce: the kill re-forms the run
                time.sleep(1)
    if present[1].item():
        break
    time.sleep(args.step_sleep)

dist.destroy_process_group()
