"""MPI (mpi4py): every rank adds its rank; each writes the sum and who it was told it is."""

import json
import os

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
total = comm.allreduce(rank, op=MPI.SUM)
out = {
    "rank": rank,
    "size": size,
    "sum": total,
    "task_type": os.environ.get("PX_TASK_TYPE"),
    "task_index": os.environ.get("PX_TASK_INDEX"),
    "metrics_path": os.environ.get("PX_METRICS_PATH"),
}
with open(os.path.join(os.environ["PX_OUTPUTS_PATH"], f"rank-{rank}.json"), "w") as handle:
    json.dump(out, handle)
print(f"rank {rank}/{size}: allreduce of ranks = {total}", flush=True)
