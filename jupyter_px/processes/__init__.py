"""How jupyter_px's own processes and threads behave, one helper each, used by every layer above:

* `detached.py`: the one way helpers that outlive whoever started them (the local supervisor, the
  followers, TensorBoard, the sweep controller, the warm templates) are started and found again.
* `daemon_pool.py`: a thread pool whose blocked work never holds up an exit (the server's pools).
* `file_lock.py`: one process at a time on a store's file (flock): templates, followers, queues.
* `checkpoint_signal.py`: SIGUSR1 as a request for a checkpoint now, in a Slurm run's replicas.
* `replica_kill.py`: one replica signalled where it runs (a pod, an SSH host), for `jupyter px kill`.
* `ports.py`: a replica's port, that nothing else on its machine takes before the replica binds it.
* `private_folder.py`: a folder only this user can write to, for our locks and sockets in /tmp.

Standard library (and psutil) only, and this `__init__` imports nothing: a helper process that
needs one of them imports only that one.
"""
