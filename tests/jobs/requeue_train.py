"""A small deterministic training loop that resumes from its checkpoints and checkpoints when
asked (`tracking.checkpoint_requested()`: a Slurm job before its time limit); its ranks meet in a
gloo all-reduce every step. `python requeue_train.py [STEPS] [SLEEP_S] [HOLD_AT]`.

Each rank trains its own linear model on batches drawn from a generator seeded with the step and
the rank, so a run resumed from any checkpoint computes what an uninterrupted run computes:
`train(rank, steps)` is that run, in one process, for the test to compare with. The checkpoint
request is reduced with the step's all-reduce, so every rank saves at the same step. HOLD_AT: in
the first attempt, the ranks wait at that step until they are asked for a checkpoint (a run longer
than its job's time limit, on a machine of any speed); nothing it computes changes.
"""

from __future__ import annotations

import json
import os
import sys
import time

import torch

STEPS = 300


def make(rank: int) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(rank)
    model = torch.nn.Linear(8, 1)
    return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def step_loss(model: torch.nn.Module, optimizer: torch.optim.Optimizer, step: int, rank: int) -> float:
    generator = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(16, 8, generator=generator)
    y = x.sum(dim=1, keepdim=True) * 0.5 + 1.0
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def train(rank: int, steps: int = STEPS) -> dict:
    """The uninterrupted run of one rank: its last loss and weights."""
    torch.set_num_threads(1)
    model, optimizer = make(rank)
    loss = float("nan")
    for step in range(1, steps + 1):
        loss = step_loss(model, optimizer, step, rank)
    return {"loss": loss, "weights": [p.detach().flatten().tolist() for p in model.parameters()]}


def main() -> None:
    import torch.distributed as dist

    from jupyter_px import tracking

    steps = int(sys.argv[1]) if len(sys.argv) > 1 else STEPS
    pause = float(sys.argv[2]) if len(sys.argv) > 2 else 0.1
    hold = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model, optimizer = make(rank)
    checkpoint = tracking.load_checkpoint()
    start = checkpoint.step if checkpoint else 0
    if checkpoint:
        model.load_state_dict(checkpoint.state["model"])
        optimizer.load_state_dict(checkpoint.state["optimizer"])
    print(f"rank {rank}: attempt {tracking.get_attempt()}, from step {start}", flush=True)
    loss = float("nan")
    for step in range(start + 1, steps + 1):
        loss = step_loss(model, optimizer, step, rank)
        if step == hold and tracking.get_attempt() == 1:
            deadline = time.monotonic() + 300
            while not tracking.checkpoint_requested() and time.monotonic() < deadline:
                time.sleep(0.1)
        shared = torch.tensor([loss, float(tracking.checkpoint_requested())])
        dist.all_reduce(shared)  # the mean loss, and whether any rank was asked for a checkpoint
        tracking.log_metrics(step=step, loss=loss, mean_loss=shared[0].item() / dist.get_world_size())
        if step % 50 == 0 or shared[1].item() > 0:
            tracking.save_checkpoint({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, step)
            if step % 50:
                print(f"rank {rank}: checkpoint at step {step}, as asked", flush=True)
        time.sleep(pause)
    final = {"loss": loss, "weights": [p.detach().flatten().tolist() for p in model.parameters()]}
    with open(os.path.join(os.environ["PX_OUTPUTS_PATH"], f"final-{rank}.json"), "w") as handle:
        json.dump(final, handle)
    print(f"rank {rank}: done, loss {loss!r}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
