"""Each replica's CPU and memory, sampled by the local supervisor (`system/cpu_percent`,
`system/rss_mib`), on a real job: a master that spins while its worker sleeps shows as the busy
one; the samples are the replica's own series beside what its code logged, and take nothing from
its step progress or its pace."""

from __future__ import annotations

import statistics
import textwrap

import pytest
from local_support import describe, wait

from jupyter_px.presentation.run_view import RunViewSource
from jupyter_px.service import RunService, SourceText, Submission

SPIN_AND_SLEEP = textwrap.dedent("""\
    import os, time
    from jupyter_px import tracking

    busy = os.environ["PX_TASK_TYPE"] == "master"
    for step in range(3):
        tracking.log_metrics(step=step, loss=1.0 / (step + 1))
    end = time.time() + 10
    while time.time() < end:
        if not busy:
            time.sleep(0.5)
    held = bytearray(64 * 2**20) if busy else b""  # 64 MiB more resident in the master
    time.sleep(5)
    """)


@pytest.mark.jobs
def test_a_spinning_master_and_a_sleeping_worker_show_apart_in_system_metrics(px_home, launch):
    service = RunService()
    run_id = service.submit(
        Submission(
            SourceText(SPIN_AND_SLEEP),
            {
                "framework": "pytorch",
                "environment": {"resources": {"memory": {"limits": 900}}, "replicas": {"n_workers": 1}},
            },
        )
    )
    from jupyter_px.api import Run

    run = Run(run_id)
    status = wait(run)
    assert status.state.value == "Succeeded", describe(run)
    reader = service.metrics_reader(run_id)
    assert sorted(reader.replicas()) == ["master-0", "worker-0"]  # the samples are the replicas' own series
    cpu = {key: reader.series(key, "system/cpu_percent").values for key in ("master-0", "worker-0")}
    rss = {key: reader.series(key, "system/rss_mib").values for key in ("master-0", "worker-0")}
    assert all(len(values) >= 4 for values in cpu.values()), cpu  # every 2 s over about 15 s
    # the spinning master used far more CPU than the sleeping worker, however loaded the machine
    assert sum(cpu["master-0"]) > 3 * sum(cpu["worker-0"]) and max(cpu["master-0"]) > 15, cpu
    assert statistics.median(cpu["worker-0"]) < 5, cpu
    assert max(rss["master-0"]) > max(rss["worker-0"]) + 40, rss
    # an interpreter with its code loaded: a bare one is about 10 MiB (the first samples), a cold
    # runner with tracking 19.5-21 (20 failed CI once at 19.54), a warm one shares its template's
    assert all(values[-1] > 15 for values in rss.values()), rss
    # what the code logged is untouched: its step progress, its own series
    assert reader.progress("master-0")[0] == 2 and reader.series("master-0", "loss").steps == [0, 1, 2]
    assert all(step is None for step in reader.series("master-0", "system/rss_mib").steps)
    # the run view puts each replica's limit beside its usage: the master's 900 MiB, none for the worker
    rows = {row.key: row.memory_limit_mib for row in RunViewSource(service, run_id).view().replicas}
    assert rows == {"master-0": 900, "worker-0": None}, rows
