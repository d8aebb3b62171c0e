"""PyTorch (gloo): an all_reduce of ranks, then a few DDP steps; writes what it computed.

Each replica writes `<PX_OUTPUTS_PATH>/<role>-<index>.json` with its rank, the world size, the
all_reduce result and its weights after training, so a test can check that every rank took
part and that DDP kept the weights identical across ranks.
"""

import json
import os

import torch
import torch.distributed as dist


def main() -> None:
    dist.init_process_group("gloo")  # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
    rank, world = dist.get_rank(), dist.get_world_size()
    value = torch.tensor([float(rank)])
    dist.all_reduce(value)

    torch.manual_seed(rank)  # different initial weights per rank: DDP must broadcast rank 0's
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(100 + rank)  # different data per rank
    losses = []
    for _ in range(3):
        x = torch.randn(8, 4, generator=generator)
        loss = ((model(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    weights = [p.detach().flatten().tolist() for p in model.parameters()]
    dist.barrier()
    # the DDP model before the group: freed after it (when main() returns), its Reducer drops the
    # group's last reference holding the GIL, which a gloo thread may still need (docs/warm.md)
    del model
    dist.destroy_process_group()

    out = {
        "rank": rank,
        "world_size": world,
        "allreduce": value.item(),
        "weights": weights,
        "losses": losses,
        "role": os.environ["PX_TASK_TYPE"],
        "index": int(os.environ["PX_TASK_INDEX"]),
    }
    path = os.path.join(os.environ["PX_OUTPUTS_PATH"], f"{out['role']}-{out['index']}.json")
    with open(path, "w") as handle:
        json.dump(out, handle)
    print(f"rank {rank}/{world}: all_reduce={value.item():g} loss={losses[-1]:.4f}")


if __name__ == "__main__":
    main()
