"""The runner's guard against the gloo teardown hang (`diagnostics/group_teardown.py`): a DDP model
freed after `destroy_process_group()` no longer frees the process group, so its destructor joins
no gloo thread with the GIL held. Checked in a fresh interpreter with real torch: installed before
torch is imported (a cold replica) and after (a replica forked from a warm template)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

#: A one-rank gloo job that keeps its DDP model past destroy_process_group(), as the hang needed;
#: prints what the guard kept, whether the group outlived the model, and that a new group works.
JOB = textwrap.dedent("""\
    import gc, os, socket, sys, weakref
    from jupyter_px.diagnostics import group_teardown
    if sys.argv[1] == "cold":
        group_teardown.install()
    import torch, torch.distributed as dist
    if sys.argv[1] == "warm":
        group_teardown.install()
    def free_port():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    group = dist.group.WORLD
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    model(torch.randn(8, 4)).sum().backward()
    dist.destroy_process_group()
    del model
    gc.collect()
    print(len(group_teardown.KEPT), group_teardown.KEPT[0] is group, dist.is_initialized())
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    value = torch.ones(1)
    dist.all_reduce(value)
    dist.destroy_process_group()
    print(value.item(), len(group_teardown.KEPT), flush=True)
    os._exit(0)  # as the runner ends a replica: torch.distributed's static destructors once aborted here
    """)


@pytest.mark.parametrize("when", ["cold", "warm"])
def test_destroy_process_group_keeps_the_group_the_ddp_model_frees_after_it(when):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", JOB, when], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    first, second = done.stdout.split("\n")[:2]
    assert first.split() == ["1", "True", "False"]  # kept (the model's Reducer dropped no last reference)
    assert second.split() == ["1.0", "2"]  # a new group after it works, and is kept in its turn
