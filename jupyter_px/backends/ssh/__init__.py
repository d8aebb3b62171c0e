"""The SSH backend: a run's replicas on machines you name, started over OpenSSH, for groups with
a few machines and no scheduler.

A sibling of the Slurm backend, of the same shape: a `FollowedBackend` (`../followed.py`) whose
follower is a process of the common life (`../follower_process.py`), its settings read as every
family's (`../settings_file.py`). Modules, one job each:

* `backend`    - `SshBackend`: check (hosts, placement, each host answers), submit, stop.
* `settings`   - the hosts, ssh's configuration, the remote Python, from a file and PX_SSH_*.
* `hosts`      - a hostfile (`host slots=N`) or `hosts:` read into hosts.
* `plan`       - replicas placed on the hosts by slots; what this backend refuses.
* `commands`   - the ssh commands (argument lists, shared connections).
* `shipping`   - the run's files on each host: a shared filesystem proved, else copied and back.
* `channels`   - one replica's ssh session: its output into the store, its start and stop lines.
* `follower`   - the per-run owner: hosts ready, replicas started, states, the success policy, stop.
* `stacks`     - every replica's stacks, asked on its host over ssh.
* `task_entry` - what runs on a host for each replica (copied into the run: `ssh/entry.py`).
* `handle`     - what a run directory keeps about its hosts (`ssh.json`, the follower's files).
* `render`     - the dry run: each replica's host and ssh command, nothing contacted.
"""

from __future__ import annotations

from ...lazy import lazy_attributes

_LAZY = {"SshBackend": f"{__name__}.backend"}

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())
