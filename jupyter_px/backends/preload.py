"""What a warm process imports ahead of the replicas it forks, per framework, and why some
frameworks start cold: the one list the local backend's templates (`local/warm.py`) and Slurm's
kept allocations (`slurm/allocations.py`) preload."""

from __future__ import annotations

#: What every template imports: the replica runner and what a replica's code imports of ours.
BASE_PRELOAD = ("jupyter_px.runner", "jupyter_px.tracking", "cloudpickle")
#: The framework's modules, per framework that can start warm (None: no framework). For torch:
#: torch, torch.distributed, DDP, sympy and torch.fx. Not `torch._dynamo` (an optimizer's and DDP's
#: first use imports it: 369 modules, 4.4-7.8 s on a loaded core): with it in the template, a
#: replica that keeps its DDP model alive past `destroy_process_group()` hangs in gloo's destructor
#: (a Reducer freeing the group with the GIL held while a gloo thread waits for the GIL,
#: pytorch/pytorch#56297): 2 of 60 warm runs, and the quickstart notebook in a browser test. It
#: comes back with a fix on our side (docs/warm.md).
FRAMEWORK_PRELOAD: dict[str | None, tuple[str, ...]] = {
    None: (),
    "pytorch": ("torch", "torch.distributed", "torch.nn.parallel", "sympy", "torch.fx"),
    "tensorflow": (),  # nothing of TensorFlow in a template: its replicas come from a spawn-ahead pool
}
#: Frameworks a fork cannot carry, whose replicas are taken from a spawn-ahead pool of interpreters
#: that imported these (`jupyter_px.forkserver.pool`): TensorFlow is not fork-safe once imported
#: (its runtime's thread pools and gRPC must start in the process that uses them).
POOL_PRELOAD: dict[str | None, tuple[str, ...]] = {"tensorflow": ("tensorflow",)}
#: Modules a pool's members import too when the last run's script imported them (`spawn_ahead.py`).
POOL_OPTIONAL: dict[str | None, tuple[str, ...]] = {"tensorflow": ("tf_keras",)}
#: Why a framework's runs start cold.
COLD_FRAMEWORKS = {
    "mxnet": "MXNet's engine starts its threads when it is imported, and a fork does not copy them",
    "horovod": "the ranks are started by mpirun, which a fork cannot stand in for",
    "mpi": "the ranks are started by mpirun, which a fork cannot stand in for",
}
