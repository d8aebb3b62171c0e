"""The sweep side of the magics in a real IPython shell (the notebook test runs them in a kernel):
`%%px_distributed` on a topology with a sweep starts one, trial values count as defined, a bad
sweep section is one line; `%px_sweeps`, `%px_attach SWEEP`, `%px_sweep_stop`."""

from __future__ import annotations

import pytest
from magics_support import magic_shell, run, usage_error

pytestmark = pytest.mark.jobs

SWEEP = """%%px_topology grid
hptuning:
  concurrency: 2
  matrix:
    x: {values: [1, 3]}
  metric: {name: loss, optimization: minimize}
"""


@pytest.fixture
def ip(px_home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    yield from magic_shell(forget=("x",))


def test_px_distributed_starts_a_sweep(ip):
    run(ip, SWEEP)
    ip.user_ns["x"] = 100  # the notebook's own x: a trial's x is the trial's, not shipped from here
    result, captured = run(
        ip,
        "%%px_distributed -t grid --name mg --wait -o s\n"
        "from jupyter_px import tracking\n"
        "tracking.log_metrics(step=1, loss=(x - 3) ** 2)\n",
    )
    assert result.success, (captured.stdout, captured.stderr, result.error_in_exec)
    sweep = ip.user_ns["s"]
    started = f"started sweep {sweep.sweep_id}: 2 trials (grid), 2 at a time, each 1 replica"
    assert captured.stdout.startswith(started)
    assert sorted((r.params["x"], r.value) for r in sweep.rows()) == [(1, 4.0), (3, 0.0)]
    _, listed = run(ip, "%px_sweeps")
    text = listed.outputs[0].data["text/plain"]
    assert sweep.sweep_id in text and "2/2 done" in text
    _, attached = run(ip, "%px_attach mg")
    assert f"<Sweep {sweep.sweep_id} Succeeded (2 succeeded)>" in attached.stdout
    _, stopped = run(ip, "%px_sweep_stop mg")
    assert stopped.stdout.strip() == f"sweep {sweep.sweep_id}: Succeeded"


def test_names_the_trial_does_not_get_are_still_reported(ip):
    run(ip, SWEEP)
    ip.user_ns["lr_table"] = {1: 0.1}
    message = usage_error(ip, "%%px_distributed -t grid\nprint(x, lr_table)\n")
    assert message.startswith("not submitted:") and "lr_table" in message and "'x'" not in message


def test_a_bad_sweep_section_is_one_line(ip):
    message = usage_error(ip, "%%px_topology bad\nhptuning:\n  matrix:\n    x: {uniform: [1, 0]}\n")
    assert "hptuning.matrix.x.uniform: low 1 is not below high 0: nothing can be sampled" in message
    assert usage_error(ip, "%px_attach nothing-by-that-name").startswith("unknown run 'nothing-by-that-name'")
