"""The peer of `tests/jobs/ddp_resume.py` for `bench_resume.py`: the same DDP job as a torchrun
user writes it, resuming by hand under `torchrun --max-restarts`.

The same model, optimizer, batches and checkpoint interval; what jupyter-px's tracking does is
written out as such a script does it: each rank saves `rank<r>-step<s>.pt` into `--checkpoint-dir`
(written to a temporary name, then renamed), and on start loads the newest step that every rank
has saved. Rank 0 appends each step to `--steps-log` (JSON lines: step, wall time, torchrun's
restart count), and every rank writes its pid to `pid-<rank>` in the checkpoint folder, so the
benchmark can kill one.
"""

import argparse
import json
import os
import re
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=40)
parser.add_argument("--every", type=int, default=5)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--step-sleep", type=float, default=0.0)
parser.add_argument("--checkpoint-dir", required=True)
parser.add_argument("--steps-log", required=True)
args = parser.parse_args()

torch.set_num_threads(1)
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
folder = args.checkpoint_dir
with open(os.path.join(folder, f"pid-{rank}"), "w") as handle:
    handle.write(str(os.getpid()))
torch.manual_seed(args.seed)
model = DistributedDataParallel(
    nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4)), find_unused_parameters=True
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def saved_steps(r: int) -> set[int]:
    found = (re.fullmatch(rf"rank{r}-step(\d+)\.pt", name) for name in os.listdir(folder))
    return {int(match.group(1)) for match in found if match}


common = set.intersection(*(saved_steps(r) for r in range(world)))
start = max(common, default=0)
if start:
    state = torch.load(os.path.join(folder, f"rank{rank}-step{start}.pt"), map_location="cpu")
    model.module.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
print(f"restart {restart} rank {rank} starts after step {start}", flush=True)

for step in range(start + 1, args.steps + 1):
    data = torch.Generator().manual_seed(args.seed * 100_003 + step * 101 + rank)
    x = torch.randn(8, 16, generator=data)
    y = torch.randint(0, 4, (8,), generator=data)
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if rank == 0:
        with open(args.steps_log, "a") as log:
            log.write(json.dumps({"step": step, "time": time.time(), "restart": restart, "start": start}) + "\n")
    if step % args.every == 0:
        path = os.path.join(folder, f"rank{rank}-step{step}.pt")
        torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict()}, path + ".tmp")
        os.replace(path + ".tmp", path)
    time.sleep(args.step_sleep)

dist.destroy_process_group()
