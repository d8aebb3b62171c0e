"""A small ResNet-style CNN, trained with DistributedDataParallel: what a researcher's script does.

    jupyter px run examples/workloads/torch_cnn.py -f examples/workloads/torch.yaml --wait -- --size tiny
    torchrun --standalone --nproc_per_node=4 examples/workloads/torch_cnn.py --size tiny

The images are generated from `--seed` (no download): each class is a fixed random pattern,
each image that pattern plus noise. What it uses is what real training uses: a `DataLoader`
with 2 worker processes (persistent) over a `DistributedSampler`, AdamW, a warm-up + cosine LR
schedule, `torch.autocast` (bfloat16 on the CPU), gradient accumulation (`no_sync` on the
micro-steps that do not step), an evaluation pass all-reduced over the ranks, metrics through
`jupyter_px.tracking` (loss, accuracy, samples/s, every step, on every rank) and a checkpoint
of every rank every `--checkpoint-every` steps.

The run is a function of `--seed` and the world size only: one thread per rank (as torchrun
gives), fixed data and shuffling, so the same seed gives the same final loss on every backend.
The last line each rank prints is `RESULT {json}`: its final losses, which the tests compare, and
its pace (the first step's seconds, steps per second after it, peak memory), which
benchmarks/bench_workloads.py compares.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import resource
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from jupyter_px import tracking

SIZES = {
    # images, image side, channels of the first stage, steps, global batch
    "tiny": {"train": 512, "eval": 128, "side": 16, "width": 8, "steps": 12, "batch": 32},
    "real": {"train": 8192, "eval": 1024, "side": 32, "width": 32, "steps": 300, "batch": 128},
}
CLASSES = 10


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=None, help="optimizer steps (default: the size's)")
    parser.add_argument("--accumulate", type=int, default=2, help="micro-batches per optimizer step")
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--checkpoint-every", type=int, default=5, help="steps between checkpoints")
    parser.add_argument("--workers", type=int, default=2, help="DataLoader worker processes per rank")
    return parser.parse_args()


def make_images(n: int, side: int, seed: int, split: int) -> TensorDataset:
    """`n` images of CLASSES patterns plus noise, the same for a seed wherever it runs; `split`
    draws other images (and labels) of the same patterns, for the evaluation set."""
    patterns = torch.randn(CLASSES, 3, side, side, generator=torch.Generator().manual_seed(seed))
    generator = torch.Generator().manual_seed(seed * 1000 + split + 1)
    labels = torch.randint(0, CLASSES, (n,), generator=generator)
    images = patterns[labels] + torch.randn(n, 3, side, side, generator=generator)
    return TensorDataset(images, labels)


class Block(nn.Module):
    """A residual block: two 3x3 convolutions with batch norm, a projection when the shape changes."""

    def __init__(self, inputs: int, outputs: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.shortcut = nn.Sequential()
        if stride != 1 or inputs != outputs:
            self.shortcut = nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride, bias=False), nn.BatchNorm2d(outputs))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.stages = nn.Sequential(Block(width, width, 1), Block(width, 2 * width, 2), Block(2 * width, 4 * width, 2))
        self.head = nn.Linear(4 * width, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.stages(self.stem(x)), 1), 1))


def schedule(steps: int):
    """Linear warm-up over the first tenth, then cosine decay to zero."""
    warmup = max(1, steps // 10)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))

    return factor


def evaluate(model: nn.Module, loader: DataLoader) -> tuple[float, float]:
    """Mean loss and accuracy over the whole evaluation set, summed across the ranks."""
    model.eval()
    totals = torch.zeros(3, dtype=torch.float64)  # loss sum, correct, count
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        for images, labels in loader:
            logits = model(images).float()
            totals[0] += F.cross_entropy(logits, labels, reduction="sum").item()
            totals[1] += (logits.argmax(1) == labels).sum().item()
            totals[2] += labels.numel()
    if dist.is_initialized():
        dist.all_reduce(totals)
    model.train()
    return float(totals[0] / totals[2]), float(totals[1] / totals[2])


def main() -> None:
    args = parse_args()
    size = SIZES[args.size]
    steps = args.steps or size["steps"]
    torch.set_num_threads(1)  # one thread per rank, as torchrun sets: results do not depend on the cores
    torch.manual_seed(args.seed)

    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        dist.init_process_group("gloo")  # MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE from the environment
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    per_rank = size["batch"] // world // args.accumulate
    if per_rank < 1:
        raise SystemExit(f"--size {args.size}: a batch of {size['batch']} cannot be split over {world} ranks")

    train = make_images(size["train"], size["side"], args.seed, split=0)
    held_out = make_images(size["eval"], size["side"], args.seed, split=1)
    sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True, seed=args.seed, drop_last=True)
    loader = DataLoader(
        train, batch_size=per_rank, sampler=sampler, num_workers=args.workers, persistent_workers=args.workers > 0
    )
    eval_sampler = DistributedSampler(held_out, num_replicas=world, rank=rank, shuffle=False)
    eval_loader = DataLoader(held_out, batch_size=64, sampler=eval_sampler, num_workers=0)

    model: nn.Module = ResNet(size["width"])
    if distributed:
        model = DistributedDataParallel(model)  # rank 0's initial weights, gradients averaged
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule(steps))
    outputs = os.path.join(tracking.get_outputs_path(), "checkpoints", f"rank-{rank}")
    os.makedirs(outputs, exist_ok=True)
    tracking.log_params(size=args.size, seed=args.seed, world_size=world, lr=args.lr, accumulate=args.accumulate)

    step, epoch, micro = 0, 0, 0
    seen, correct, loss_sum = 0, 0, 0.0
    started = loop_started = time.perf_counter()
    first_step_done = loop_started
    while step < steps:
        sampler.set_epoch(epoch)
        for images, labels in loader:
            micro += 1
            stepping = micro % args.accumulate == 0
            sync = model.no_sync() if distributed and not stepping else contextlib.nullcontext()
            with sync:
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    logits = model(images)
                    loss = F.cross_entropy(logits.float(), labels)
                (loss / args.accumulate).backward()
            seen += labels.numel()
            correct += int((logits.argmax(1) == labels).sum())
            loss_sum += loss.item() * labels.numel()
            if not stepping:
                continue
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            elapsed = time.perf_counter() - started
            tracking.log_metrics(
                step=step,
                total_steps=steps,
                loss=loss_sum / seen,
                accuracy=correct / seen,
                lr=scheduler.get_last_lr()[0],
                samples_per_s=seen * world / elapsed,
            )
            if step % args.checkpoint_every == 0 or step == steps:
                state = {"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict()}
                torch.save(state, os.path.join(outputs, f"step-{step:06d}.pt"))
            if step == 1:
                first_step_done = time.perf_counter()
            if step == steps:
                break
            seen, correct, loss_sum, started = 0, 0, 0.0, time.perf_counter()
        epoch += 1

    loop_done = time.perf_counter()
    eval_loss, eval_accuracy = evaluate(model, eval_loader)
    tracking.log_metrics(step=steps, eval_loss=eval_loss, eval_accuracy=eval_accuracy)
    final = {
        "rank": rank,
        "world_size": world,
        "steps": step,
        "eval_loss": eval_loss,
        "eval_accuracy": eval_accuracy,
        # the first step (which starts the DataLoader's workers), then the pace of the others
        "first_step_s": first_step_done - loop_started,
        "steps_per_s": (steps - 1) / (loop_done - first_step_done) if steps > 1 else None,
        "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    print("RESULT " + json.dumps(final), flush=True)
    if distributed:
        # the DDP model first: freed after, its Reducer would drop the process group's last
        # reference holding the GIL, while a gloo thread may still need it (a deadlock)
        del model
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
