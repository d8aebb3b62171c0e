"""The local backend: every replica is a process on this machine (the default; nothing to set up).

Modules, one job each:

* `backend`    - `LocalBackend`: check, start a run's supervisor, reconcile, stop.
* `capacity`   - how many processes, ports and how much memory this machine has for a run.
* `supervisor` - the detached per-run process that starts, watches, restarts and stops replicas.
* `status_writer` - the supervisor's status.json writes: on change, on a heartbeat, the final one retried.
* `wakeup`     - the supervisor's signals and its one blocking wait (a signal wakeup fd).
* `leftovers`  - what is killed before the final status: adopted processes, PX_RUN_ID carriers.
* `policy`     - Kubeflow's restart and outcome rules, as pure functions.
* `replica`    - one replica as the supervisor tracks it; `Ending`, why the supervisor ends one.
* `watchdog`   - kills a run's processes and marks it Lost if its supervisor dies.
* `launcher`   - each replica's command and environment (runner, or mpirun for MPI/Horovod).
* `resources`  - what this machine has; cores/GPUs per replica; the up-front check.
* `memory`     - per-replica process-tree RSS against its memory limit (`MemoryGuard`, OOMKilled).
* `oom_kills`  - the supervisor's enforcement of those limits: the replicas watched, the kill.
* `ports`      - free ports on 127.0.0.1 that concurrent runs cannot both take.
* `process`    - process groups, parent-death signal, exit decoding, finding a run's processes.
* `config`     - tunables (grace periods, poll intervals) and names shared by the modules above.
* `warm`       - warm replicas: which runs start warm, the templates' lifecycle (`jupyter_px.forkserver`).
* `fingerprint` - what a template must have been started with to serve a run.
* `settings`   - `warm`, `warm_idle_s`, `warm_wait_s` (`local.yaml`, `JUPYTER_PX_WARM*`).
* `spawners`   - a replica's process: exec'd cold, or forked from the supervisor's zygote.
* `failures`   - what a failed replica's code raised and where (the notebook cell), into its status.
"""

from .backend import LocalBackend

__all__ = ["LocalBackend"]
