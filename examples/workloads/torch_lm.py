"""A two-layer GPT-style language model, trained with DistributedDataParallel.

    jupyter px run examples/workloads/torch_lm.py -f examples/workloads/torch.yaml --wait -- --size tiny
    jupyter px run examples/workloads/torch_lm.py -f examples/workloads/torch.yaml --wait -- --compile

The token streams are generated from `--seed` (no download): a random sparse Markov chain over
the vocabulary, so there is something to learn and a loss that falls. Causal self-attention
(`scaled_dot_product_attention`), learned positions, weight tying; AdamW with a warm-up + cosine
schedule, gradient clipping, `torch.autocast` (bfloat16 on the CPU), an optional `torch.compile`
(`--compile`), metrics through `jupyter_px.tracking` (loss, perplexity, tokens/s) and a
checkpoint of every rank every `--checkpoint-every` steps.

The last line each rank prints is `RESULT {json}`: the evaluation loss, the same for a seed and
world size wherever it runs (one thread per rank).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from jupyter_px import tracking

SIZES = {
    "tiny": {"vocab": 64, "context": 32, "dim": 32, "heads": 2, "steps": 15, "batch": 16, "tokens": 20_000},
    "real": {"vocab": 512, "context": 128, "dim": 256, "heads": 8, "steps": 300, "batch": 32, "tokens": 2_000_000},
}
LAYERS = 2


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--checkpoint-every", type=int, default=5)
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    return parser.parse_args()


def make_tokens(n: int, vocab: int, seed: int) -> torch.Tensor:
    """`n` tokens of a Markov chain whose every token has 4 likely successors."""
    generator = torch.Generator().manual_seed(seed)
    successors = torch.randint(0, vocab, (vocab, 4), generator=generator)
    choices = torch.randint(0, 4, (n,), generator=generator)
    noise = torch.rand(n, generator=generator) < 0.1
    random_tokens = torch.randint(0, vocab, (n,), generator=generator)
    table, picks, jumps, others = successors.tolist(), choices.tolist(), noise.tolist(), random_tokens.tolist()
    tokens = [0]
    for i in range(1, n):
        tokens.append(others[i] if jumps[i] else table[tokens[-1]][picks[i]])
    return torch.tensor(tokens)


class Block(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, dim = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(dim, dim=2)
        q, k, v = (t.view(batch, length, self.heads, dim // self.heads).transpose(1, 2) for t in (q, k, v))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, length, dim))
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int, context: int, dim: int, heads: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Parameter(torch.zeros(1, context, dim))
        self.blocks = nn.Sequential(*(Block(dim, heads) for _ in range(LAYERS)))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight  # tied
        for module in self.modules():  # GPT-2's initialisation: small weights, zero biases
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) + self.position[:, : tokens.shape[1]]
        return self.head(self.norm(self.blocks(x)))


def batches(tokens: torch.Tensor, context: int, batch: int, rank: int, world: int, seed: int):
    """Endless batches of windows: every rank draws the global batch, keeps its own share."""
    generator = torch.Generator().manual_seed(seed)
    while True:
        starts = torch.randint(0, len(tokens) - context - 1, (batch * world,), generator=generator)
        mine = starts[rank * batch : (rank + 1) * batch]
        windows = torch.stack([tokens[s : s + context + 1] for s in mine.tolist()])
        yield windows[:, :-1], windows[:, 1:]


def main() -> None:
    args = parse_args()
    size = SIZES[args.size]
    steps = args.steps or size["steps"]
    torch.set_num_threads(1)  # one thread per rank, as torchrun sets
    torch.manual_seed(args.seed)

    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1

    tokens = make_tokens(size["tokens"], size["vocab"], args.seed)
    split = int(len(tokens) * 0.9)
    model: nn.Module = GPT(size["vocab"], size["context"], size["dim"], size["heads"])
    if distributed:
        model = DistributedDataParallel(model)
    forward = torch.compile(model) if args.compile else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    warmup = max(1, steps // 10)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: (s + 1) / warmup if s < warmup else 0.5 * (1 + math.cos(math.pi * (s - warmup) / (steps - warmup))),
    )
    outputs = os.path.join(tracking.get_outputs_path(), "checkpoints", f"rank-{rank}")
    os.makedirs(outputs, exist_ok=True)
    tracking.log_params(size=args.size, seed=args.seed, world_size=world, compile=args.compile)

    train = batches(tokens[:split], size["context"], size["batch"], rank, world, args.seed)
    for step in range(1, steps + 1):
        started = time.perf_counter()
        inputs, targets = next(train)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = forward(inputs)
        loss = F.cross_entropy(logits.float().reshape(-1, size["vocab"]), targets.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        elapsed = time.perf_counter() - started
        tracking.log_metrics(
            step=step,
            total_steps=steps,
            loss=loss.item(),
            perplexity=math.exp(min(loss.item(), 20.0)),
            tokens_per_s=inputs.numel() * world / elapsed,
        )
        if step % args.checkpoint_every == 0 or step == steps:
            state = {"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict()}
            torch.save(state, os.path.join(outputs, f"step-{step:06d}.pt"))

    # evaluation: the same held-out windows on every rank, so every rank reports the same loss
    model.eval()
    held_out = batches(tokens[split:], size["context"], size["batch"], 0, 1, args.seed + 1)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        losses = []
        for _ in range(4):
            inputs, targets = next(held_out)
            losses.append(F.cross_entropy(forward(inputs).float().reshape(-1, size["vocab"]), targets.reshape(-1)))
    eval_loss = float(torch.stack(losses).mean())
    tracking.log_metrics(step=steps, eval_loss=eval_loss)
    result = {"rank": rank, "world_size": world, "steps": steps, "eval_loss": eval_loss}
    print("RESULT " + json.dumps(result), flush=True)
    if distributed:
        # the DDP model first: freed after, its Reducer would drop the process group's last
        # reference holding the GIL, while a gloo thread may still need it (a deadlock)
        del model, forward
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
