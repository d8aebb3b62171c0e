"""The REST API's answers about a run's stacks (`runs/<ref>/stacks`): a snapshot of every
replica's threads and the replicas grouped by identical stack (`jupyter_px.diagnostics.snapshots`)."""

from __future__ import annotations

from pydantic import Field

from .replies import Reply


class StackFrame(Reply):
    """One frame of a replica's thread (`jupyter_px.diagnostics.snapshots`), innermost first."""

    file: str
    line: int | None
    function: str
    cell: str | None = Field(description="the notebook cell it came from (`cell [4]`), where the source map knows")
    cell_line: int | None = Field(description="its line in that cell")
    user: bool = Field(description="whether it is the run's own code (shipped)")
    code: str | None = Field(description="then its line's source")


class StacksThread(Reply):
    """One thread of a replica: its frames, innermost first."""

    ident: str
    main: bool = Field(description="the interpreter's main thread (the one training runs in)")
    current: bool = Field(description="the thread the signal was delivered to")
    truncated: bool
    frames: list[StackFrame]


class StacksReplica(Reply):
    """One replica's threads, or why it gave none."""

    key: str
    pid: int | None
    error: str | None = Field(description="why it gave no stacks (gone, or no answer in time)")
    threads: list[StacksThread]


class StacksGroup(Reply):
    """Replicas whose main threads have the same stack, and that stack in one line."""

    replicas: list[str]
    summary: str


class StacksSnapshot(Reply):
    """`POST runs/<ref>/stacks` (taken now) and `GET runs/<ref>/stacks` (the newest kept)."""

    run_id: str
    taken_at: float
    why: str = Field(description="`on request`, or the stall that made the supervisor take it")
    replicas: list[StacksReplica]
    groups: list[StacksGroup]
    text: str = Field(description="the groups as text, one line each")
