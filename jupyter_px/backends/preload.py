"""What a warm process imports ahead of the replicas it forks, per framework, and why some
frameworks start cold: the one list the local backend's templates (`local/warm.py`) and Slurm's
kept allocations (`slurm/allocations.py`) preload."""

from __future__ import annotations

#: What every template imports: the replica runner and what a replica's code imports of ours.
BASE_PRELOAD = ("jupyter_px.runner", "jupyter_px.tracking", "cloudpickle")
#: The framework's modules, per framework that can start warm (None: no framework). For torch:
#: torch, torch.distributed, DDP, sympy, torch.fx, and what an optimizer's constructor and DDP import
#: on a replica's first training step: `torch._dynamo` (369 modules: 1-1.5 s of CPU on a quiet core,
#: 4.4-7.8 s on a loaded one, paid by every replica of every run when left to the replica) and
#: `torch.optim`. With `torch._dynamo` in the template, a replica that kept its DDP model alive past
#: `destroy_process_group()` hung now and then in gloo's destructor (pytorch/pytorch#56297, 2 of 60
#: runs); the runner's guard (`diagnostics/group_teardown.py`) keeps the destroyed groups referenced,
#: 0 hangs in 120 such runs since (docs/warm.md).
FRAMEWORK_PRELOAD: dict[str | None, tuple[str, ...]] = {
    None: (),
    "pytorch": ("torch", "torch.distributed", "torch.nn.parallel", "sympy", "torch.fx", "torch._dynamo", "torch.optim"),
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
