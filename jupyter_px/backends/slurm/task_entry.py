"""What runs on the compute nodes: `python <run>/slurm/entry.py prepare|run RUN_DIR`.

Copied into each run's directory at submit (as the Kubernetes backends ship their pod entry), so
a task starts it by path: importing it as `jupyter_px.backends.slurm...` would first import the
backends package and with it pydantic and the topology model, a second per task for nothing.
Standard library only, plus `jupyter_px.cluster`, the one builder of the environment contract.

`prepare` (the batch script, once, before `srun`): the job's nodes (every component's
`SLURM_JOB_NODELIST`, by `scontrol show hostnames`) and their `NodeAddr` into
`slurm/job-<ref>/nodes.json`, and the attempt (`attempt.json`: 1 + the restarts, the resume
step); a requeued job keeps its id: attempt n+1 writes under `slurm/job-<ref>.<n>/`.

`run` (every task; `slurm/task.sh` has already sent its output to the replica's log):

1. Which replica: `tasks[SLURM_PROCID]` of `plan.json` (Slurm numbers a heterogeneous step's
   tasks across its components, each from its offset; the components' sizes are checked against
   `SLURM_NTASKS_HET_GROUP_<k>`).
2. A port of its own on its node, kept until the runner starts (`jupyter_px.processes.ports`: no
   other task, of this job or another, and no outgoing connection is given it meanwhile).
3. Rendezvous through the run directory, which the nodes share: each task writes
   `task-<procid>.json` (node, port) and waits for all of them; every replica's address is then
   `<NodeAddr of its node>:<its port>`.
4. The environment contract from `jupyter_px.cluster.ClusterEnv` (TF_CONFIG, MASTER_ADDR/PORT,
   RANK, WORLD_SIZE, DMLC_*, PX_*), as on every backend; then the runner every local replica runs
   (`jupyter_px.runner.main(RUN_DIR)`, in a forked child: no second interpreter start),
   SIGTERM/SIGINT forwarded to it (a stop's `scancel --signal=TERM`, so tracking flushes).
5. Its end in `exit-<procid>.json`: exit code, signal, when the replica died (before anything
   else: the order of deaths names a run's culprit), whether the node's memory cgroup recorded
   an OOM kill (then the cgroup's limit and the peak the kernel measured), and the replica's
   metrics settled here, on its node (the points tracking accepted but never wrote,
   `jupyter_px.runstore.settle`). Slurm's own accounting may be off: these records are how the
   backend knows every replica's outcome without `sacct`. The task exits with the runner's code.
   A task Slurm kills whole (`OverMemoryKill`: this entry too) writes no record (`kills.py`).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from typing import Any

#: How often a task looks for the others' records while it waits for them.
RENDEZVOUS_POLL_S = 0.02
#: Signals a task passes on to its replica (a stop's SIGTERM, an interactive srun's SIGINT).
HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR2)
#: Signals a task only passes on, which stop nothing: SIGURG asks the replica for its stacks
#: (`diagnostics.stack_signal`), SIGUSR1 for a checkpoint (`tracking.checkpoint_requested`).
PASSED_ON = (signal.SIGURG, signal.SIGUSR1)


def job_dir(run_dir: str, job_id: str) -> str:
    return os.path.join(run_dir, "slurm", f"job-{job_id}")


def restarts(env: dict[str, str]) -> int:
    """How often Slurm restarted (requeued) the job: `SLURM_RESTART_COUNT`, sbatch(1)."""
    return int(env.get("SLURM_RESTART_COUNT") or 0)


def attempt_dir(run_dir: str, env: dict[str, str]) -> str:
    """This attempt's records (`JobHandle.records_dir`): `job-<id>`, then `job-<id>.<restarts>`."""
    return job_dir(run_dir, leader_job_id(env)) + (f".{restarts(env)}" if restarts(env) else "")


def leader_job_id(env: dict[str, str]) -> str:
    """The job as its handle names it (`JobHandle.ref`): sbatch's id (a heterogeneous job's
    leader), or `<array id>_<task>` for an array's task (its own id is known only once started)."""
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        return f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"
    return env.get("SLURM_JOB_ID_HET_GROUP_0") or env.get("SLURM_HET_JOB_ID") or env["SLURM_JOB_ID"]


def write_json(path: str, data: Any) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


def read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def die(message: str, code: int = 2) -> None:
    print(f"jupyter-px (slurm task): {message}", file=sys.stderr, flush=True)
    sys.exit(code)


# ---- prepare: the batch script's step -------------------------------------------------------


def _parse_record(line: str) -> dict[str, str]:
    pairs = (token.partition("=") for token in line.split())
    return {key: value for key, sep, value in pairs if sep}


def prepare(run_dir: str, env: dict[str, str]) -> None:
    """Write the nodes' addresses; on failure, a record of why (the tasks, waiting for the
    addresses, end with it instead of waiting out the rendezvous)."""
    folder = attempt_dir(run_dir, env)
    os.makedirs(folder, exist_ok=True)
    import subprocess  # here only: a task does not need it (its import costs each task)

    try:
        plan = read_json(os.path.join(run_dir, "slurm", "plan.json"))
        write_json(os.path.join(folder, "attempt.json"), attempt_of(run_dir, env))
        write_json(os.path.join(folder, "layout.json"), layout(plan, env))
        write_json(os.path.join(folder, "nodes.json"), node_addresses(node_names(env)))
    except (OSError, ValueError, KeyError, subprocess.CalledProcessError) as error:
        said = getattr(error, "stderr", None) or str(error)
        write_json(os.path.join(folder, "nodes-failed.json"), {"error": str(said).strip()[-500:]})
        raise


def attempt_of(run_dir: str, env: dict[str, str]) -> dict[str, Any]:
    """The attempt (1 + restarts), the step all resume from, PX_ATTEMPT/PX_CHECKPOINT_STEP as locally."""
    from jupyter_px.runstore.checkpoints import newest_step

    step = newest_step(os.path.join(run_dir, "outputs")) if restarts(env) else None
    again = {"PX_ATTEMPT": str(restarts(env) + 1), **({"PX_CHECKPOINT_STEP": str(step)} if step is not None else {})}
    return {"attempt": restarts(env) + 1, "resume_at": step, "env": again if restarts(env) else {}}


def hostnames(expression: str) -> list[str]:
    """`scontrol show hostnames n[1-3]` -> n1, n2, n3."""
    import subprocess

    out = subprocess.run(["scontrol", "show", "hostnames", expression], capture_output=True, text=True, check=True)
    return out.stdout.split()


def node_names(env: dict[str, str]) -> list[str]:
    """Every node of the job (all its components), in Slurm's order."""
    expressions = [value for key, value in env.items() if key.startswith("SLURM_JOB_NODELIST") and value]
    names: list[str] = []
    for expression in dict.fromkeys(expressions):
        names += [name for name in hostnames(expression) if name not in names]
    return names


def _counts(text: str) -> list[int]:
    """SLURM_TASKS_PER_NODE `4(x2),2` -> [4, 4, 2]."""
    out: list[int] = []
    for part in text.split(","):
        count, _, times = part.partition("(x")
        out += [int(count)] * (int(times.rstrip(")")) if times else 1)
    return out


def layout(plan: dict[str, Any], env: dict[str, str]) -> dict[str, dict[str, list[int]]]:
    """{component: {node: its procids}}: each component's tasks given to its nodes in order, as
    many to each as Slurm allotted (`SLURM_TASKS_PER_NODE`), the way srun's block distribution
    places them; what the node launchers (`node.py`) read."""
    sizes, het = plan["components"], len(plan["components"]) > 1
    out: dict[str, dict[str, list[int]]] = {}
    offset = 0
    for k, size in enumerate(sizes):
        suffix = f"_HET_GROUP_{k}" if het else ""
        nodes = hostnames(env[f"SLURM_JOB_NODELIST{suffix}"])
        counts = _counts(env[f"SLURM_TASKS_PER_NODE{suffix}"])
        if sum(counts) != size or len(counts) != len(nodes):
            raise ValueError(f"component {k}: Slurm allotted {counts} tasks on {nodes}, the plan has {size}")
        placed: dict[str, list[int]] = {}
        for node, count in zip(nodes, counts, strict=True):
            placed[node] = list(range(offset, offset + count))
            offset += count
        out[str(k)] = placed
    return out


def node_addresses(names: list[str]) -> dict[str, str]:
    """{node name: NodeAddr} of the job's nodes."""
    import subprocess

    shown = subprocess.run(
        ["scontrol", "show", "node", "--oneliner", ",".join(names)], capture_output=True, text=True, check=True
    )
    addresses = {}
    for line in shown.stdout.splitlines():
        record = _parse_record(line)
        if "NodeName" in record:
            addresses[record["NodeName"]] = record.get("NodeAddr") or record["NodeName"]
    return {name: addresses.get(name, name) for name in names}


# ---- run: each task -------------------------------------------------------------------------


class _Shape:
    """What `jupyter_px.cluster.ClusterEnv` reads of a topology, from the plan (no pydantic here)."""

    class _Attributes:
        def __init__(self, **values: Any) -> None:
            self.__dict__.update(values)

    def __init__(self, plan: dict[str, Any]) -> None:
        self.framework = plan["framework"]
        self._counts = {entry["role"]: entry["count"] for entry in plan["roles"]}
        self._env = plan.get("env") or {}
        self.environment = self._Attributes(
            tf_master_type=plan["tf_master_type"], processes_per_replica=plan["processes_per_replica"]
        )
        self.replicas_section = self._Attributes(n_masters=self._counts.get("master", 0))

    def counts(self) -> dict[str, int]:
        return dict(self._counts)

    def total_replicas(self) -> int:
        return sum(self._counts.values())

    def replica(self, role: str, index: int) -> Any:
        return self._Attributes(env=dict(self._env.get(f"{role}-{index}") or {}))


def check_components(plan: dict[str, Any], env: dict[str, str]) -> None:
    """The job Slurm started has the components the plan was made for (sizes and total)."""
    sizes = plan["components"]
    if env.get("SLURM_HET_SIZE"):
        found = [int(env.get(f"SLURM_NTASKS_HET_GROUP_{k}") or -1) for k in range(len(sizes))]
        if found != sizes:
            die(f"the job's components have {found} tasks, the plan {sizes}")
    total = int(env.get("SLURM_STEP_NUM_TASKS") or env.get("SLURM_NTASKS") or -1)
    if total != sum(sizes):
        die(f"this step has {total} tasks, the plan {sum(sizes)}")


def memory_cgroups() -> list[tuple[str, str]]:
    """The memory cgroups this process is in, from its own up to Slurm's job's (task, step, job):
    (folder, "v1"|"v2"). Empty where there are none to read."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "memory":
            base, version = "/sys/fs/cgroup/memory", "v1"
        elif controllers == "":
            base, version = "/sys/fs/cgroup", "v2"
        else:
            continue
        parts = [part for part in path.split("/") if part]
        while parts and not parts[-1].startswith(("job_", "slurm")):
            out.append((os.path.join(base, *parts), version))
            parts.pop()
        if parts:
            out.append((os.path.join(base, *parts), version))
    return out


def oom_kills() -> int:
    """OOM kills recorded by the memory cgroups this process is in (its task's, the step's, the
    job's): cgroup v1 `memory.oom_control`, v2 `memory.events`. 0 where there are none to read."""
    total = 0
    for folder, version in memory_cgroups():
        total += _oom_count(os.path.join(folder, "memory.oom_control" if version == "v1" else "memory.events"))
    return total


def memory_limit() -> dict[str, int]:
    """The tightest memory limit among this process's cgroups and the peak usage the kernel
    measured there (`memory.limit_in_bytes` / `memory.max_usage_in_bytes` in v1, `memory.max` /
    `memory.peak` in v2): what Slurm's cgroup held the task's step to, for its exit record."""
    best: dict[str, int] = {}
    for folder, version in memory_cgroups():
        names = (
            ("memory.limit_in_bytes", "memory.max_usage_in_bytes") if version == "v1" else ("memory.max", "memory.peak")
        )
        limit, peak = (_read_int(os.path.join(folder, name)) for name in names)
        if limit is not None and limit < 1 << 60 and ("limit_bytes" not in best or limit < best["limit_bytes"]):
            best = {"limit_bytes": limit}
            if peak is not None:
                best["peak_bytes"] = peak
    return best


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def _oom_count(path: str) -> int:
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


class Task:
    def __init__(self, run_dir: str, env: dict[str, str], launched_by_node: bool = False):
        self.run_dir, self.env = run_dir, env
        self.launched_by_node = launched_by_node  # forked by node.py: srun counted nodes, not tasks
        self.plan = read_json(os.path.join(run_dir, "slurm", "plan.json"))
        self.procid = int(env["SLURM_PROCID"])
        tasks = self.plan["tasks"]
        if not 0 <= self.procid < len(tasks):
            die(f"SLURM_PROCID {self.procid} is not a task of this run ({len(tasks)} tasks)")
        self.role, self.index = tasks[self.procid][0], int(tasks[self.procid][1])
        self.key = f"{self.role}-{self.index}"
        self.folder = attempt_dir(run_dir, env)
        self.child_pid: int | None = None
        self.stop_signal: int | None = None

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self.stop_signal = signum
        self._pass_on(signum, _frame)

    def _pass_on(self, signum: int, _frame: Any) -> None:
        if self.child_pid is not None:
            try:
                os.kill(self.child_pid, signum)
            except ProcessLookupError:
                pass

    def record_exit(
        self,
        code: int,
        signal_name: str | None,
        oom: bool,
        message: str | None = None,
        settled: dict[str, Any] | None = None,
        finished_at: float | None = None,
    ) -> None:
        write_json(
            os.path.join(self.folder, f"exit-{self.procid}.json"),
            {
                "role": self.role,
                "index": self.index,
                "code": code,
                "signal": signal_name,
                "oom": oom,
                "finished_at": finished_at or time.time(),
                "message": message,
                **(settled or {}),
            },
        )

    def rendezvous(self, port: int) -> dict[str, list[str]]:
        """Publish this task's node and port; wait for every task's; their addresses by role."""
        os.makedirs(self.folder, exist_ok=True)
        node = self.env.get("SLURMD_NODENAME") or socket.gethostname()
        write_json(
            os.path.join(self.folder, f"task-{self.procid}.json"),
            {"role": self.role, "index": self.index, "node": node, "port": port, "started_at": time.time()},
        )
        count = len(self.plan["tasks"])
        deadline = time.monotonic() + float(self.plan.get("rendezvous_timeout_s") or 300)
        nodes_path = os.path.join(self.folder, "nodes.json")
        while True:
            if self.stop_signal is not None:
                name = signal.Signals(self.stop_signal).name
                self.record_exit(128 + self.stop_signal, name, False, "stopped before it started")
                sys.exit(128 + self.stop_signal)
            names = os.listdir(self.folder)
            if "nodes-failed.json" in names:
                failed = read_json(os.path.join(self.folder, "nodes-failed.json"))
                die(f"the batch script could not look up the nodes' addresses: {failed.get('error')}")
            found = sum(1 for name in names if name.startswith("task-") and name.endswith(".json"))
            if found >= count and "nodes.json" in names:
                break
            if time.monotonic() > deadline:
                die(f"only {found} of {count} tasks started within {self.plan.get('rendezvous_timeout_s')} s")
            time.sleep(RENDEZVOUS_POLL_S)
        hosts = read_json(nodes_path)
        addresses: dict[str, list[str]] = {entry["role"]: [""] * entry["count"] for entry in self.plan["roles"]}
        for procid in range(count):
            record = read_json(os.path.join(self.folder, f"task-{procid}.json"))
            host = hosts.get(record["node"], record["node"])
            addresses[record["role"]][int(record["index"])] = f"{host}:{record['port']}"
        return addresses

    def environment(self, addresses: dict[str, list[str]]) -> dict[str, str]:
        from jupyter_px.cluster import ClusterEnv, ReplicaPaths

        root = self.run_dir
        tensorboard = os.path.join(root, "tensorboard", self.key)
        os.makedirs(tensorboard, exist_ok=True)
        paths = ReplicaPaths(
            outputs=os.path.join(root, "outputs"),
            tensorboard=tensorboard,
            metrics=os.path.join(root, "metrics", f"{self.key}.jsonl"),
            params=os.path.join(root, "params", f"{self.key}.json"),
        )
        shape: Any = _Shape(self.plan)
        contract = ClusterEnv(shape, self.plan["run_id"], addresses).for_replica(self.role, self.index, paths)
        return {**self.env, **contract, **read_json(os.path.join(self.folder, "attempt.json"))["env"]}

    def run(self) -> int:
        for signum in HANDLED_SIGNALS:
            signal.signal(signum, self._on_signal)
        for signum in PASSED_ON:
            signal.signal(signum, self._pass_on)
        if not self.launched_by_node:
            check_components(self.plan, self.env)
        import jupyter_px.cluster  # imported now, while the other tasks start
        import jupyter_px.runner  # noqa: F401  (for the forked replica)
        from jupyter_px.processes.ports import PortReservation

        ports = PortReservation(host="")  # held until the runner starts; its lock until this task exits
        (port,) = ports.take(1)
        addresses = self.rendezvous(port)
        env = self.environment(addresses)
        before = oom_kills()
        ports.release_socket(port)
        import px_kill_requests as kill_requests  # the run's slurm/px_kill_requests.py (kill_requests.py)

        kill_requests.block_child_signal()  # the wait below sleeps until SIGCHLD
        pid = os.fork()
        if pid == 0:  # the replica: the runner, as `python -m jupyter_px.runner RUN_DIR` would run it
            kill_requests.release_child_signal()
            _become_runner(self.run_dir, env)
        self.child_pid = pid
        if self.stop_signal is not None:  # arrived while starting: pass it on
            os.kill(pid, self.stop_signal)
        wait_status = kill_requests.wait_for_replica(pid, self.folder, self.key)  # `jupyter px kill` meanwhile
        died_at = time.time()  # before settling: the order of deaths is what names a run's culprit
        signal_name = None
        if os.WIFSIGNALED(wait_status):
            signal_name, code = signal.Signals(os.WTERMSIG(wait_status)).name, 128 + os.WTERMSIG(wait_status)
        else:
            code = os.waitstatus_to_exitcode(wait_status)
        oom = signal_name == "SIGKILL" and oom_kills() > before
        settled = {**(memory_limit() if oom else {}), **self.settle()}
        self.record_exit(code, signal_name, oom, settled=settled, finished_at=died_at)
        return code

    def settle(self) -> dict[str, Any]:
        """Settle the replica's metrics now that its processes are gone, here on its node, where
        their pids mean something (`jupyter_px.runstore.settle`: TensorBoard caught up with the
        JSON lines; the points accepted but never written, or dropped, counted)."""
        try:
            from pathlib import Path

            from jupyter_px.runstore.layout import RunPaths
            from jupyter_px.runstore.settle import settle_replica

            paths = RunPaths(self.plan["run_id"], Path(self.run_dir).parent.parent)
            settled = settle_replica(paths, self.role, self.index)
        except Exception as error:  # the exit record matters more: say it, go on
            print(f"jupyter-px (slurm task): cannot settle {self.key}'s metrics: {error!r}", file=sys.stderr)
            return {}
        return {"points_lost": settled.lost, "points_dropped": settled.dropped, "notice": settled.notice(self.key)}


def _become_runner(run_dir: str, env: dict[str, str]) -> None:
    """In the forked child: the replica's environment, default signal handling, then the runner
    (which ends the process itself). A fork, not a new interpreter: the runner is imported
    before the rendezvous, so the replica starts in milliseconds."""
    try:
        for signum in (*HANDLED_SIGNALS, *PASSED_ON):
            signal.signal(signum, signal.SIG_DFL)
        from jupyter_px.processes import checkpoint_signal  # SIGUSR1: `tracking.checkpoint_requested`

        checkpoint_signal.arm()
        os.environ.clear()
        os.environ.update(env)
        sys.argv = ["-m jupyter_px.runner", run_dir]
        from jupyter_px import runner

        runner.main([run_dir])
    finally:
        os._exit(1)  # main never returns; an error before it is a failure of the replica


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] not in ("prepare", "run"):
        die("usage: entry.py prepare|run RUN_DIR")
    mode, run_dir = args[0], os.path.abspath(args[1])
    env = dict(os.environ)
    if mode == "prepare":
        prepare(run_dir, env)
        return
    task = Task(run_dir, env)
    code = task.run()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
