"""A PyTorch job that runs unchanged on this machine and on Kubernetes.

    jupyter px run examples/allreduce.py -f examples/pytorch.yaml --wait

Every replica gets MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE from jupyter-px (the
environment contract), so `init_process_group("gloo")` needs no arguments. The job sums the
ranks with an all_reduce, trains a tiny model with DistributedDataParallel for a few steps,
checks that every rank ends with the same weights, and logs the loss with
`jupyter_px.tracking` (plots in the notebook monitor, the sidebar and TensorBoard).
"""

import torch
import torch.distributed as dist

from jupyter_px import tracking

STEPS = 20


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()

    total = torch.tensor([float(rank)])
    dist.all_reduce(total)
    print(f"rank {rank}/{world}: all_reduce of ranks = {total.item():g} (expected {sum(range(world))})")

    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(rank)  # each rank sees different data
    for step in range(STEPS):
        x = torch.randn(32, 8, generator=data)
        y = x.sum(dim=1, keepdim=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()  # DDP averages the gradients across ranks here
        optimizer.step()
        tracking.log_metrics(step=step, total_steps=STEPS, loss=loss.item())

    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(weights) for _ in range(world)]
    dist.all_gather(gathered, weights)
    same = all(torch.equal(gathered[0], w) for w in gathered)
    print(f"rank {rank}: final loss {loss.item():.4f}; weights identical on all ranks: {same}")
    dist.destroy_process_group()
    if not same:
        raise SystemExit("DDP weights diverged across ranks")


if __name__ == "__main__":
    main()
