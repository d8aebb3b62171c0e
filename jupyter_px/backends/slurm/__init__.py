"""The Slurm backend: one Slurm job per run, through the Slurm commands on PATH (`SLURM_CONF`
honoured), as a user on a login node submits; Slurm 22.05 and later.

A sibling of the Kubernetes backends, of the same shape: a `FollowedBackend` (`../followed.py`)
whose follower is a process of the common life (`../follower_process.py`), its settings read as
every family's (`../settings_file.py`). Modules, one job each:

* `backend`    - `SlurmBackend`: check, submit (files, sbatch, the follower), observe, reconcile, stop.
* `settings`   - partition, account, qos, time limit, ... from a file and PX_SLURM_* variables.
* `commands`   - the Slurm commands (argument lists; `--json` or `--oneliner` output parsed).
* `plan`       - the topology as one job: components by resource shape, the task order.
* `script`     - the batch script and the per-task script (`jupyter px render --backend slurm`).
* `task_entry` - what runs on the nodes: the nodes' addresses, each task's replica, the
                 rendezvous, the environment contract, the runner, the exit record.
* `node_entry` - one task per node that forks the node's replicas (each as `task_entry`'s task).
* `requeue_entry` - the batch shell's trap before the time limit: checkpoints, then `scontrol requeue`.
* `preflight`  - `sbatch --test-only` and the shared-filesystem probe, before anything is queued.
* `default_memory` - what Slurm gives replicas that declare no memory, against what they need.
* `queue`      - one `squeue` for every followed run: the shared snapshot, queue positions.
* `states`     - Slurm's job states and reasons in the run store's words.
* `replicas`   - each replica's state from its task's records and the job's state.
* `kills`      - what Slurm says it killed (memory, node failure), from the batch output.
* `culprit`    - which replica's end decided the run: Slurm's kills before the peers they took down.
* `follower`   - the per-run detached owner: states, the success policy, stopping the job.
* `requeues`   - the run-level retry: each restart (requeue) of the job as the run's next attempt.
* `mirror`     - copying a run's files back from `shared_dir` when the run store is not shared.
* `handle`     - what a run directory keeps about its job (`slurm.json`, the scripts, the follower's files).
* `render`     - the dry run: the script a topology would submit, nothing contacted.

`SlurmBackend` is imported on first use (`jupyter px render` needs only the pure modules).
"""

from __future__ import annotations

from ...lazy import lazy_attributes

_LAZY = {"SlurmBackend": f"{__name__}.backend"}

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())
