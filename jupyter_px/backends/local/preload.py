"""What a warm template imports ahead of its replicas, per framework, and why some frameworks
start cold: the one list `warm.py` keys templates and plans runs by."""

from __future__ import annotations

#: What every template imports: the replica runner and what a replica's code imports of ours.
BASE_PRELOAD = ("jupyter_px.runner", "jupyter_px.tracking", "cloudpickle")
#: The framework's modules, per framework that can start warm (None: no framework). For torch,
#: what a training script imports on first use, measured (docs/warm.md): DistributedDataParallel
#: and an optimizer's constructor (sympy, torch.fx, torch._dynamo), a DataLoader with worker
#: processes (multiprocessing's queues and locks), torch.save. A replica's first training step
#: imports 3 modules instead of 369 (0.7 s instead of 4.4-7.8 s on a loaded core). The gloo hang
#: once put down to torch._dynamo here is a race of torch's own (a Reducer freeing the process
#: group with the GIL held), whatever the template imports: docs/warm.md has its stacks.
FRAMEWORK_PRELOAD: dict[str | None, tuple[str, ...]] = {
    None: (),
    "pytorch": (
        "torch",
        "torch.distributed",
        "torch.nn.parallel",
        "sympy",
        "torch.fx",
        "torch._dynamo",
        "torch.utils.data",
        "torch.utils.serialization",
        "multiprocessing.queues",
        "multiprocessing.synchronize",
        "multiprocessing.popen_fork",
    ),
}
#: Why a framework's runs start cold.
COLD_FRAMEWORKS = {
    "tensorflow": "TensorFlow is not fork-safe once imported (its runtime's thread pools and gRPC "
    "must start in the process that uses them)",
    "mxnet": "MXNet's engine starts its threads when it is imported, and a fork does not copy them",
    "horovod": "the ranks are started by mpirun, which a fork cannot stand in for",
    "mpi": "the ranks are started by mpirun, which a fork cannot stand in for",
}
