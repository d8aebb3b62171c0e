"""What Slurm says it ended, and why: the lines slurmstepd and srun write into the batch output,
read so that a task Slurm killed is reported as what it was, on the replicas it hit.

Where a site enforces memory with job accounting (`JobAcctGatherType=jobacct_gather/linux`,
`JobAcctGatherParams=OverMemoryKill`), slurmstepd kills every process of a step on a node once
their summed resident memory passes the step's limit there: the task's own entry goes with its
replica, so no exit record is written, and `sacct` shows the step only as `CANCELLED by 0`
(seen on Slurm 22.05.8). What Slurm does say, it says in the batch output (srun relays the
steps' slurmstepd messages to it), the one place every site has. The lines read, and where
Slurm writes them (tag slurm-22-05-8-1):

* `slurmstepd-<node>: error: StepId=<job>.<step> exceeded memory limit (<used> > <limit>), being
  killed`: job accounting's kill, with the bytes it measured and the limit
  (src/common/slurm_jobacct_gather.c, `jobacct_gather_handle_mem_limit`). `<job>` is the
  component's own job id in a heterogeneous job (the leader's id plus its offset).
* `slurmstepd-<node>: error: Detected <n> oom-kill event(s) in StepId=<job>.<step>. ...`: the
  cgroup's OOM killer (src/plugins/task/cgroup/task_cgroup_memory.c,
  `task_cgroup_memory_check_oom`); the task's own record says which task (its cgroup counted it).
* `srun: error: <node>: task(s) <ids>: Out Of Memory` / `Killed` / `Terminated` /
  `Exited with exit code <n>`: how each task ended (src/plugins/launch/slurm/launch_slurm.c,
  `_task_finish`); the ids are numbered within the task's component.
* `slurmstepd-<node>: error: *** STEP|JOB <id> ON <node> CANCELLED AT <time> DUE TO TIME LIMIT |
  NODE FAILURE | PREEMPTION ***` (src/slurmd/slurmstepd/req.c, `_handle_signal_container`), and
  srun's `Node failure on <nodes>` (src/api/step_launch.c, `_node_fail_handler`).

Pure functions over text, and the mapping of what a line names (a component's job id, a node,
task numbers) to the job's tasks (procids), from the tasks' start records (their nodes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...runstore.models import Reason

NODE_FAIL = "NodeFail"
TIMEOUT = "Timeout"
PREEMPTED = "Preempted"

_STEPD = r"slurmstepd(?:-(?P<node>[^:\s]+))?: error: "
_MEMORY_KILL = re.compile(
    _STEPD + r"StepId=(?P<job>\d+)(?:\+\d+)?\.(?P<step>\w+) exceeded (?P<kind>virtual )?memory limit "
    r"\((?P<used>\d+) > (?P<limit>\d+)\), being killed"
)
_CGROUP_OOM = re.compile(
    _STEPD + r"Detected (?P<count>\d+) oom-kill event\(s\) in StepId=(?P<job>\d+)(?:\+\d+)?\.(?P<step>\w+)"
)
_CANCELLED = re.compile(
    _STEPD + r"\*\*\* (?P<what>STEP|JOB) (?P<job>\d+)(?:\+\d+)?(?:\.(?P<step>\w+))? ON (?P<on>\S+) CANCELLED AT \S+"
    r"(?: DUE TO (?P<due>TIME LIMIT|NODE FAILURE|PREEMPTION))?"
)
_TASKS = re.compile(r"srun: error: (?P<node>[^:\s]+): tasks? (?P<ids>[\d,\-]+): (?P<what>.+?)\s*$")
_NODE_FAILURE = re.compile(r"srun: error: Node failure on (?P<node>\S+)")
_DUE = {"TIME LIMIT": TIMEOUT, "NODE FAILURE": NODE_FAIL, "PREEMPTION": PREEMPTED}


@dataclass(frozen=True)
class SlurmKill:
    """Slurm ended tasks: why (a run store reason), where, and what it measured."""

    cause: str  # Reason.OOM_KILLED, "Timeout", "NodeFail", "Preempted"
    node: str | None
    job_id: int | None  # the component's job id the line names (None: the whole job)
    used_bytes: int | None = None
    limit_bytes: int | None = None
    mechanism: str = ""  # "job accounting (OverMemoryKill)", "cgroup"
    line: str = ""


@dataclass(frozen=True)
class TaskLine:
    """srun's line for tasks of one node that ended: their numbers within their component."""

    node: str
    tasks: tuple[int, ...]
    what: str  # "Out Of Memory", "Killed", "Terminated", "Exited with exit code 1"


@dataclass(frozen=True)
class BatchSays:
    kills: tuple[SlurmKill, ...] = ()
    tasks: tuple[TaskLine, ...] = ()
    node_failures: tuple[str, ...] = ()


def _ids(text: str) -> tuple[int, ...]:
    """`0-2,5` -> (0, 1, 2, 5)."""
    out: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        if low.isdigit():
            out += range(int(low), int(high) + 1) if high.isdigit() else [int(low)]
    return tuple(out)


def expand_nodes(expression: str) -> list[str]:
    """A Slurm node list as names: `n[1-3],gpu7` -> n1, n2, n3, gpu7 (one bracket per name)."""
    names: list[str] = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]*)\])?", expression):
        prefix, ranges = m.group(1), m.group(2)
        if ranges is None:
            names.append(prefix)
            continue
        for part in ranges.split(","):
            low, _, high = part.partition("-")
            width = len(low)
            for n in range(int(low), int(high or low) + 1):
                names.append(f"{prefix}{n:0{width}d}")
    return names


def parse(lines: Iterable[str]) -> BatchSays:
    """What the batch output's lines say Slurm ended (lines it does not know are skipped)."""
    kills: list[SlurmKill] = []
    tasks: list[TaskLine] = []
    failures: list[str] = []
    for raw in lines:
        line = raw.strip()
        if "error" not in line:
            continue
        if m := _MEMORY_KILL.search(line):
            kills.append(
                SlurmKill(
                    Reason.OOM_KILLED,
                    m["node"],
                    int(m["job"]),
                    int(m["used"]),
                    int(m["limit"]),
                    "job accounting, OverMemoryKill" + (", virtual memory" if m["kind"] else ""),
                    line,
                )
            )
        elif m := _CGROUP_OOM.search(line):
            kills.append(SlurmKill(Reason.OOM_KILLED, m["node"], int(m["job"]), mechanism="cgroup", line=line))
        elif (m := _CANCELLED.search(line)) and m["due"] and m["due"] != "NODE FAILURE":
            # (a node failure cancels the steps on every node of the job, each line naming its own
            # node, not the one that failed: srun's "Node failure on <nodes>" names that one)
            job = int(m["job"]) if m["what"] == "STEP" else None
            kills.append(SlurmKill(_DUE[m["due"]], m["on"], job, line=line))
        elif m := _TASKS.search(line):
            tasks.append(TaskLine(m["node"], _ids(m["ids"]), m["what"]))
        elif m := _NODE_FAILURE.search(line):
            failures += expand_nodes(m["node"])
    return BatchSays(tuple(dict.fromkeys(kills)), tuple(tasks), tuple(dict.fromkeys(failures)))


@dataclass(frozen=True)
class JobLayout:
    """Which task is where: the components' sizes (in task order) and their job ids, and the
    node each started task reported."""

    sizes: Sequence[int]
    component_ids: Mapping[int, int]  # component job id -> component index
    nodes: Mapping[int, str] = field(default_factory=dict)  # procid -> node

    @classmethod
    def of(
        cls,
        leader: int,
        sizes: Sequence[int],
        starts: Mapping[int, dict[str, Any]],
        ids: Mapping[int, int] | None = None,
    ):
        """`ids`: the components' job ids as Slurm listed them; else the leader's id plus the
        offset (how slurmctld numbers a heterogeneous job's components)."""
        component_ids = dict(ids) if ids else {leader + k: k for k in range(len(sizes))}
        nodes = {procid: str(start.get("node")) for procid, start in starts.items() if start.get("node")}
        return cls(tuple(sizes), component_ids, nodes)

    def component_procids(self, k: int) -> range:
        offset = sum(self.sizes[:k])
        return range(offset, offset + self.sizes[k])

    def on_node(self, node: str | None, component: int | None) -> list[int]:
        """The procids (of one component, or all) that started on `node` (any node when None)."""
        procids = self.component_procids(component) if component is not None else range(sum(self.sizes))
        return [p for p in procids if node is None or self.nodes.get(p) == node]

    def from_srun(self, line: TaskLine) -> list[int]:
        """The procids srun's line means: task t of the component whose task t started on its node."""
        out = []
        for k in range(len(self.sizes)):
            procids = self.component_procids(k)
            for t in line.tasks:
                if t < len(procids) and self.nodes.get(procids[t]) == line.node:
                    out.append(procids[t])
        return out


def killed_tasks(says: BatchSays, layout: JobLayout) -> dict[int, SlurmKill]:
    """Each task Slurm killed, with the kill that hit it (the first line that names it)."""
    hit: dict[int, SlurmKill] = {}
    for kill in says.kills:
        component = layout.component_ids.get(kill.job_id) if kill.job_id is not None else None
        if kill.job_id is not None and component is None:
            continue  # another job's line (a step started by the user's own srun inside the job)
        if kill.cause == Reason.OOM_KILLED and kill.mechanism == "cgroup":
            continue  # the OOM killer picked tasks: their records, and srun's lines below, say which
        if kill.cause in (TIMEOUT, PREEMPTED):
            continue  # the whole job's end: its state says it, with the limit (`states.slurm_end`)
        for procid in layout.on_node(kill.node, component):
            hit.setdefault(procid, kill)
    for node in says.node_failures:
        for procid in layout.on_node(node, None):
            hit.setdefault(procid, SlurmKill(NODE_FAIL, node, None, line=f"srun: error: Node failure on {node}"))
    for line in says.tasks:
        if line.what == "Out Of Memory":
            for procid in layout.from_srun(line):
                hit.setdefault(procid, SlurmKill(Reason.OOM_KILLED, line.node, None, mechanism="cgroup", line=""))
    return hit


def mib(size: int | float) -> str:
    """Bytes as MiB, as a person reads them: `612.4 MiB`, `768 MiB`."""
    value = size / 2**20
    return f"{value:.0f} MiB" if abs(value - round(value)) < 0.05 else f"{value:.1f} MiB"
