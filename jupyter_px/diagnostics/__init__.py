"""Seeing inside a running distributed job: every replica's Python stacks, grouped.

`stack_signal.py` (which the runner arms in every replica) makes a replica write every thread's
stack when it gets `STACKS_SIGNAL`; the rest is what the asking side does with that: `taking.py`
signals the live replicas and collects what each wrote, `dumps.py` reads faulthandler's text,
`snapshots.py` maps the frames of the shipped code to notebook cells (as tracebacks are, through
`code.source_map`), groups the replicas by identical stack ("2 replicas (master-0, worker-0):
all_reduce <- step, cell [4] line 6") and keeps the snapshot in the run's `stacks/` directory,
where it can still be read after the run has ended. Which processes to signal is the backend's
business (the local supervisor's replicas, the pids in status.json).

This `__init__` imports nothing: every replica imports `stack_signal` (standard library only), and
a Kubernetes pod gets just these two files.
"""
