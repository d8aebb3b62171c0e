"""The local backend: every replica is a process on this machine (the default; nothing to set up).

Modules, one job each:

* `backend`    - `LocalBackend`: check resources, start a run's supervisor, status, stop.
* `supervisor` - the detached per-run process that starts, watches, restarts and stops replicas.
* `watchdog`   - kills a run's processes and marks it Lost if its supervisor dies.
* `launcher`   - each replica's command and environment (runner, or mpirun for MPI/Horovod).
* `resources`  - what this machine has; cores/GPUs per replica; the up-front check.
* `memory`     - per-replica process-tree RSS against its memory limit (OOMKilled).
* `ports`      - free ports on 127.0.0.1 that concurrent runs cannot both take.
* `process`    - process groups, parent-death signal, exit decoding, finding a run's processes.
* `config`     - tunables (grace periods, poll intervals) and names shared by the modules above.
"""

from .backend import LocalBackend

__all__ = ["LocalBackend"]
