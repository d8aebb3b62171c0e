"""A replica's local ranks (`processes_per_replica`) get the replica's whole environment, even a
variable over Linux's 128 KiB limit for one exec string (a 5,000-replica run's PX_CLUSTER, which
the Kubernetes entry point builds in-process): it reaches them through a private file."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RANK_CODE = textwrap.dedent("""
    import hashlib, json, os
    big = os.environ["PX_CLUSTER"]
    with open(f"rank{os.environ['LOCAL_RANK']}.json", "w") as out:
        json.dump({"size": len(big), "sha": hashlib.sha256(big.encode()).hexdigest(),
                   "spill_var": os.environ.get("PX_SPILLED_ENV")}, out)
""")


def test_local_ranks_get_a_variable_too_large_for_exec(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "code").mkdir(parents=True)
    (run_dir / "code" / "main.py").write_text(RANK_CODE)
    topology = {"framework": "pytorch", "environment": {"processes_per_replica": 2}}
    record = {"topology": topology, "code": {"entrypoint": "main.py"}, "workdir": str(tmp_path)}
    (run_dir / "record.json").write_text(json.dumps(record))
    big = json.dumps({"worker": [f"worker-{i}.run.ns.svc:2222" for i in range(8000)]})
    assert len(big) > 128 * 1024
    replica = textwrap.dedent(f"""
        import os
        os.environ["PX_CLUSTER"] = {big!r}  # set in-process, as the Kubernetes entry point does
        from jupyter_px import runner
        runner.main([{str(run_dir)!r}])
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env["PYTHONPATH"] = str(ROOT)
    script = tmp_path / "replica.py"
    script.write_text(replica)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr

    import hashlib

    expected = hashlib.sha256(big.encode()).hexdigest()
    for rank in (0, 1):
        seen = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert seen == {"size": len(big), "sha": expected, "spill_var": None}
