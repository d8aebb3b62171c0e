"""The other two real hangs of the hangs page, beside the rank asleep before its `all_reduce`
(tests/test_stacks.py): a rank whose DataLoader worker deadlocked, and a rank that skipped a
barrier. Each is a notebook cell a user could write, run as a 3-replica PyTorch job on gloo:
every rank logs 30 steps, then rank 2 (worker-1) goes wrong while the other two wait. The local,
simulated-cluster and Slurm tests run the same cells and assert the same things: the stacks taken
on the stall show worker-1 apart from its peers, at its cell and line, and with a short collective
timeout the run fails naming worker-1, not the ranks that waited for it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import nbformat
from waiting import wait_for

from jupyter_px.diagnostics import snapshots

#: How long the collectives wait before they give up (the topologies' `collectiveTimeout`). The
#: stall's stacks must be taken well before: at 20 s, on simulated pods on a loaded CI machine (a
#: load average of 13), they were taken as the ranks were already exiting from the timeout.
COLLECTIVE_TIMEOUT_S = 60

#: The steps every rank logs before rank 2 goes wrong (the stall check needs a step time).
STEPS = """dist.init_process_group("gloo")
rank = dist.get_rank()
for i in range(30):
    dist.all_reduce(torch.ones(1))
    tracking.log_metrics(step=i, loss=1.0 / (i + 1))
    time.sleep(0.05)
"""


@dataclasses.dataclass(frozen=True)
class Hang:
    """One kind of hang: its cell (after the magic and `STEPS`), how the stacks summarise the
    ranks that wait and the rank at fault, how the run's message places the rank at fault, and
    the collective it says its peers waited in; where the rank at fault waits in a collective of
    its own (a skipped barrier), that one: its timer starts with its peers', and whichever fires
    first ends the job (the others see the closed connection), so the run may say it timed out."""

    name: str
    cell: str
    peers: str
    culprit: str
    named: str
    waited_in: str
    culprit_waits_in: str | None = None


#: A lock held when the DataLoader forked its worker stays held in the worker for ever (here the
#: replica's own thread holds it; a logging handler's or a cache's lock does the same). The worker
#: blocks in `__getitem__`; rank 2 waits for its batch in `DataLoader.__next__`.
DATALOADER = Hang(
    name="dataloader",
    cell=STEPS
    + """held = threading.Lock()
class Numbers(torch.utils.data.Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        with held:
            return torch.ones(1)
if rank == 2:
    held.acquire()
for batch in torch.utils.data.DataLoader(Numbers(), batch_size=1, num_workers=1):
    dist.all_reduce(batch)
""",
    peers="all_reduce <- <module>, cell [4] line 18",
    culprit="__next__ (dataloader.py) <- <module>, cell [4] line 17",
    named="worker-1 was at __next__ (dataloader.py) <- <module>, cell [4] line 17",
    waited_in="all_reduce #31",  # the 30 steps' all_reduces are #1 to #30
)

#: Rank 2 skips the barrier the others wait in and calls the next collective: gloo matches
#: neither, and every rank waits until its timeout. Its peers' stacks are in `barrier`.
BARRIER = Hang(
    name="barrier",
    cell=STEPS
    + """if rank != 2:
    dist.barrier()
dist.all_reduce(torch.ones(1))
""",
    peers="barrier <- <module>, cell [4] line 9",
    culprit="all_reduce <- <module>, cell [4] line 10",
    named="worker-1 was in another collective than its peers (cell [4] line 10; they waited at cell [4] line 9)",
    waited_in="barrier #31",
    culprit_waits_in="all_reduce #31",
)

HANGS = (DATALOADER, BARRIER)


def notebook(tmp_path: Path, hang: Hang) -> Path:
    """The notebook whose cell [4] hangs as `hang` says; its path."""
    cells = [
        nbformat.v4.new_code_cell(
            "import threading, time\nimport torch\nimport torch.distributed as dist\nfrom jupyter_px import tracking",
            execution_count=1,
        ),
        nbformat.v4.new_code_cell(f"%%px_distributed\n{hang.cell}", execution_count=4),
    ]
    path = tmp_path / f"{hang.name}.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def groups(snapshot: dict) -> dict[str, list[str]]:
    return {group["summary"]: group["replicas"] for group in snapshot["groups"]}


def expected(hang: Hang) -> dict[str, list[str]]:
    """The stacks' groups while the job hangs: the two peers together, worker-1 apart."""
    return {hang.peers: ["master-0", "worker-0"], hang.culprit: ["worker-1"]}


def stall_snapshots(run) -> list[dict]:
    """The stacks the run's stall rule took, oldest first (not those taken on request)."""
    taken = (json.loads(path.read_text(encoding="utf-8")) for path in snapshots.kept(run.paths.root))
    return [one for one in taken if one["why"].startswith("stalled: ")]


def stacks_of_the_hang(run, hang: Hang, timeout: float) -> dict:
    """The stall stacks that show `hang`: worker-1 apart from its two peers (`expected`).

    The stall rule may fire before the hang as well, where a loaded machine makes a step slower
    than the limit (the project's CI, on Slurm: worker-0 and worker-1 in the warm-up's all_reduce
    while master-0 still computed). Those stacks show the job elsewhere; the ones taken once the
    stall changes to the hang's are what the user reads. AssertionError naming every stall's
    groups when none shows the hang within `timeout` s."""
    want = expected(hang)
    try:
        return wait_for(
            lambda: next((one for one in stall_snapshots(run) if groups(one) == want), None),
            f"the {hang.name} stall's stacks with worker-1 apart",
            timeout,
        )
    except AssertionError as error:
        raise AssertionError(
            f"{error}; the stall stacks taken: {[groups(one) for one in stall_snapshots(run)]}"
        ) from None


def assert_named(status, hang: Hang) -> None:
    """The run ended by its collective timeout, naming worker-1 as the rank its peers waited for."""
    assert status.state.value == "Failed" and status.reason == "CollectiveTimeout", status
    assert status.message.startswith("worker-1 never joined the collective its peers waited in ("), status.message
    # master-0 or worker-0 waited, in the collective the flight recorder saw last (or worker-1
    # timed out first, in a collective of its own)
    timed_out = [f"-0 timed out after {COLLECTIVE_TIMEOUT_S} s in {hang.waited_in}); "]
    if hang.culprit_waits_in:
        timed_out.append(f"(worker-1 timed out after {COLLECTIVE_TIMEOUT_S} s in {hang.culprit_waits_in}); ")
    assert any(said in status.message for said in timed_out), status.message
    assert status.message.endswith(f"; {hang.named}"), status.message
    by_key = {r.key: r for r in status.replicas}
    assert by_key["worker-1"].state.value == "Failed", by_key["worker-1"]
