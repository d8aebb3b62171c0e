"""One task per node that forks its node's replicas: `python <run>/slurm/node.py RUN_DIR COMPONENT`.

With one `srun` task per replica, every replica pays for an interpreter of its own and the
imports of the contract builder and the runner before it can start (0.3 to 0.6 s of wall time
each on a loaded two-core machine; 16 of them are what made a 16-replica job 3.5 to 6 times slower
than the same job by hand to have every task running). So, for a component without GPUs, the
batch script starts one task per node (`srun --ntasks=<nodes> --ntasks-per-node=1 --whole
--mem=0`: the step has every CPU and all the memory the job holds on the node, so Slurm's limit
for the node is the same sum as for the replicas' own tasks), and that task imports once, then
forks the node's replicas: each child is what a task of its own would have been (`entry.py`'s
`Task`: the rendezvous, the contract, the forked runner, the exit record), with its own
`SLURM_PROCID` and `SLURM_LOCALID` and its output in its replica's log.

Which replicas are the node's: the batch script's `prepare` writes `layout.json` (each
component's nodes and how many of its tasks Slurm allotted each, `SLURM_TASKS_PER_NODE`), and
the replicas are given to the nodes in that order, as srun's block distribution would.
Components with GPUs keep a task per replica (Slurm binds each task's GPUs,
`CUDA_VISIBLE_DEVICES`).

Signals the launcher gets (a stop's `scancel --signal=TERM`, a checkpoint's USR1) are passed on
to every child, which passes them to its replica. It exits with the first non-zero code of its children. While they run
it samples each child's process tree every 2 s (`jupyter_px.diagnostics.system_metrics`: the
replica's `system/cpu_percent` and `system/rss_mib`, as the local supervisor does), into the run's
metrics directory here.

Copied into each run's directory beside `entry.py` (which it imports: the same folder is first
on `sys.path`); standard library only, plus what `entry.py` imports.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import entry  # the run's slurm/entry.py (backends/slurm/task_entry.py)

#: How long the launcher waits for the batch script's layout of the job before giving up.
LAYOUT_TIMEOUT_S = 120.0
#: How often the launcher looks for its children's ends (it samples them in between).
WAIT_POLL_S = 0.2


def my_procids(run_dir: str, env: dict[str, str], component: int) -> list[int]:
    """The procids of `component` that Slurm allotted to this node, in task order."""
    folder = entry.attempt_dir(run_dir, env)
    path = os.path.join(folder, "layout.json")
    deadline = time.monotonic() + LAYOUT_TIMEOUT_S
    while not os.path.exists(path):
        if os.path.exists(os.path.join(folder, "nodes-failed.json")):
            failed = entry.read_json(os.path.join(folder, "nodes-failed.json"))
            entry.die(f"the batch script could not look up the job's nodes: {failed.get('error')}")
        if time.monotonic() > deadline:
            entry.die(f"no layout of the job's nodes within {LAYOUT_TIMEOUT_S:g} s")
        time.sleep(entry.RENDEZVOUS_POLL_S)
    layout = entry.read_json(path)
    node = env.get("SLURMD_NODENAME") or ""
    mine = [int(p) for p in layout[str(component)].get(node, [])]
    if not mine:  # srun put a node's task where the allocation has none of this component's
        entry.die(f"component {component} has no task on node {node!r} in the job's layout {layout}")
    return mine


class Launcher:
    def __init__(self, run_dir: str, env: dict[str, str], component: int):
        self.run_dir, self.env, self.component = run_dir, env, component
        self.children: dict[int, int] = {}  # pid -> procid
        self.stop_signal: int | None = None

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.stop_signal = signum
        self._pass_on(signum, _frame)

    def _pass_on(self, signum: int, _frame: object) -> None:
        for pid in list(self.children):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    def run(self) -> int:
        for signum in entry.HANDLED_SIGNALS:
            signal.signal(signum, self._on_signal)
        for signum in entry.PASSED_ON:
            signal.signal(signum, self._pass_on)
        import jupyter_px.cluster  # once for the node: every child inherits it
        import jupyter_px.runner  # noqa: F401
        from jupyter_px.diagnostics.system_metrics import SystemSampler, children

        plan = entry.read_json(os.path.join(self.run_dir, "slurm", "plan.json"))
        procids = my_procids(self.run_dir, self.env, self.component)
        sys.stdout.flush()
        sys.stderr.flush()
        for local, procid in enumerate(procids):
            if self.stop_signal is not None:
                break
            pid = os.fork()
            if pid == 0:
                self._become_task(plan, procid, local)
            self.children[pid] = procid
        keys = {procid: "-".join(map(str, plan["tasks"][procid])) for procid in procids}
        sampler = SystemSampler(Path(self.run_dir) / "metrics")
        code = 0
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except InterruptedError:
                continue
            except ChildProcessError:
                break
            if pid == 0:  # none ended: sample what runs (each task's replica), look again soon
                tops = {keys[procid]: (children(task) or [task])[0] for task, procid in self.children.items()}
                sampler.sample(tops)
                time.sleep(WAIT_POLL_S)
                continue
            if self.children.pop(pid, None) is not None:
                ended = 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
                code = code or ended
        return code

    def _become_task(self, plan: dict, procid: int, local: int) -> None:
        """In the forked child: the replica's task, as if srun had started it."""
        code = 1
        try:
            for signum in entry.HANDLED_SIGNALS:
                signal.signal(signum, signal.SIG_DFL)
            for signum in entry.PASSED_ON:  # the task passes them on once it runs
                signal.signal(signum, signal.SIG_IGN)
            role, index = plan["tasks"][procid]
            log = os.open(
                os.path.join(self.run_dir, "logs", f"{role}-{index}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
            )
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.close(log)
            env = {**self.env, "SLURM_PROCID": str(procid), "SLURM_LOCALID": str(local)}
            code = entry.Task(self.run_dir, env, launched_by_node=True).run()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or not args[1].isdigit():
        entry.die("usage: node.py RUN_DIR COMPONENT")
    run_dir = os.path.abspath(args[0])
    code = Launcher(run_dir, dict(os.environ), int(args[1])).run()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
