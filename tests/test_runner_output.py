"""Replicas write whole lines: the ranks of an MPI job share one stdout (mpirun's), and with
PYTHONUNBUFFERED an unbuffered `print` writes its pieces one call at a time, so two ranks'
lines interleaved mid-line (and a rank's `@px-metrics` line glued after another's fragment was
lost). Two real runner processes on one pipe, as under mpirun."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PRINTS = textwrap.dedent("""
    import os
    rank = os.environ["RANK_UNDER_TEST"]
    for i in range(400):
        print("rank", rank, "line", i, "x" * 40, flush=True)
""")


def test_two_ranks_on_one_stdout_never_interleave_mid_line(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "code").mkdir(parents=True)
    (run_dir / "code" / "main.py").write_text(PRINTS)
    record = {"topology": {"framework": "horovod"}, "code": {"entrypoint": "main.py"}, "workdir": str(tmp_path)}
    (run_dir / "record.json").write_text(json.dumps(record))
    read_end, write_end = os.pipe()
    ranks = []
    for rank in (0, 1):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "RANK_UNDER_TEST": str(rank)}
        command = [sys.executable, "-m", "jupyter_px.runner", str(run_dir)]
        ranks.append(subprocess.Popen(command, env=env, stdout=write_end))
    os.close(write_end)
    with open(read_end, encoding="utf-8") as shared_stdout:
        lines = shared_stdout.read().splitlines()
    assert [rank.wait(timeout=120) for rank in ranks] == [0, 0]

    well_formed = re.compile(r"rank [01] line \d+ x{40}")
    assert [line for line in lines if not well_formed.fullmatch(line)] == []
    assert len(lines) == 800
