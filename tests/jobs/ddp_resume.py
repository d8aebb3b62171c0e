"""A DDP job that resumes: the checkpoint convention as a training script follows it.

Every replica loads its newest checkpoint (`tracking.load_checkpoint()`: None on a fresh run)
and goes on from the step after it; every `--every` steps each rank saves its model and
optimizer (`tracking.save_checkpoint`). Each step's batch is a function of (seed, step, rank)
only, so a run killed and resumed computes exactly what a run without failures computes:
the final model is the same, bit for bit (CPU, gloo, one thread per rank, DDP's bucket layout
fixed: see below).

`--step-sleep` slows each step, so a test can kill a rank in the middle. `--fail-at STEP`
makes worker-0 exit 1 at that step (a bug, which a retry would not fix). At the end the master
writes `final.pt` (its model's state) and every rank writes `resumed-<rank>.json` (the attempt,
the step it started from).
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from jupyter_px import tracking

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=40)
parser.add_argument("--every", type=int, default=5)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--step-sleep", type=float, default=0.0)
parser.add_argument("--fail-at", type=int, default=0)
# attempt 1 holds after this step until it is stopped: a test kills a rank of a run that cannot end first
parser.add_argument("--hold-at", type=int, default=0)
args = parser.parse_args()

torch.set_num_threads(1)
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(args.seed)
# DDP rebuilds its gradient buckets after its first iteration (the reducer's `rebuild_buckets`,
# unless find_unused_parameters), so an attempt that resumes mid-run would reduce its first step
# in another layout and end 4e-8 away from a run without failures. Without the rebuild the
# layout is the same in every attempt, and the model the same to the bit.
model = DistributedDataParallel(
    nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4)), find_unused_parameters=True
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

checkpoint = tracking.load_checkpoint()
start = 0
if checkpoint is not None:
    model.module.load_state_dict(checkpoint.state["model"])
    optimizer.load_state_dict(checkpoint.state["optimizer"])
    start = checkpoint.step
print(f"attempt {tracking.get_attempt()} rank {rank} starts after step {start}", flush=True)
info = tracking.get_task_info()
with open(os.path.join(tracking.get_outputs_path(), f"resumed-{rank}-attempt{tracking.get_attempt()}.json"), "w") as f:
    json.dump({"attempt": tracking.get_attempt(), "start": start, "role": info.role}, f)

for step in range(start + 1, args.steps + 1):
    data = torch.Generator().manual_seed(args.seed * 100_003 + step * 101 + rank)
    x = torch.randn(8, 16, generator=data)
    y = torch.randint(0, 4, (8,), generator=data)
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if rank == 0:
        tracking.log_metrics(step=step, loss=loss.item())
    if args.fail_at and step == args.fail_at and info.role == "worker":
        print("a bug: exit 1", flush=True)
        sys.exit(1)
    if step % args.every == 0:
        tracking.save_checkpoint({"model": model.module.state_dict(), "optimizer": optimizer.state_dict()}, step)
    while args.hold_at and step == args.hold_at and tracking.get_attempt() == 1:
        time.sleep(0.05)
    time.sleep(args.step_sleep)

if rank == 0:
    torch.save(model.module.state_dict(), os.path.join(tracking.get_outputs_path(), "final.pt"))
dist.destroy_process_group()
