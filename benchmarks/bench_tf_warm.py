"""TensorFlow warm, without fork: `examples/workloads/tf_mwms.py --size tiny` on three replicas
(a chief and two workers, MultiWorkerMirroredStrategy), cold against warm, rounds interleaved.

    python benchmarks/bench_tf_warm.py              # 3 rounds, 3 pairs; --rounds N --pairs N

* `jupyter px run tf_mwms.py -f tf_mwms.yaml --wait --cold` (every replica a fresh interpreter
  importing TensorFlow and tf_keras);
* `jupyter px run tf_mwms.py -f tf_mwms.yaml --wait`, warm: the supervisor forked from the
  TensorFlow template, every replica handed to an interpreter of its spawn-ahead pool (which a
  first, unmeasured run sized: three interpreters, each with its replica's environment).

Then, as a user meets it (`--pairs`): in a fresh warm directory each time, the first run (cold:
it starts the template, and its supervisor sizes the pool, which imports beside it) and right
after it the second (warm, from that pool): second / first.

Each command is a whole process, timed from start to exit. Before each command the benchmark
waits until the pool's interpreters have imported (`jupyter px warm --json`: every one
`ready`), so that neither variant runs beside three imports; how long the pool took to be
ready after a run started is reported too. Every warm run must say it was served by the pool
(its `launch`), every run must succeed with the same final loss. Reported: medians and warm /
cold (goal at most 0.35). It exits 1 if a run failed or was not served by the pool.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from private_home import private_environ

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ROOT / "examples" / "workloads"
GOAL = 0.35
REPLICAS = 3


def _bin(name: str) -> str:
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else (shutil.which(name) or name)


class Bench:
    def __init__(self, work: Path):
        self.work = work
        for name in ("tf_mwms.py", "tf_mwms.yaml"):
            shutil.copy(WORKLOADS / name, work / name)
        self.env = private_environ(work, PYTHONWARNINGS="ignore")

    def run(self, *flags: str) -> tuple[float, dict]:
        argv = [
            _bin("jupyter"),
            "px",
            "run",
            "tf_mwms.py",
            "-f",
            "tf_mwms.yaml",
            "--wait",
            *flags,
            "--",
            "--size",
            "tiny",
        ]
        start = time.perf_counter()
        out = subprocess.run(argv, env=self.env, cwd=self.work, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - start
        run = sorted((self.work / "px_home" / "runs").iterdir(), key=lambda p: p.stat().st_mtime)[-1]
        status = json.loads((run / "status.json").read_text())
        losses = {
            json.loads(line.split("RESULT ", 1)[1])["eval_loss"]
            for log in (run / "logs").iterdir()
            for line in log.read_text().splitlines()
            if "RESULT {" in line
        }
        return seconds, {
            "ok": out.returncode == 0 and status.get("state") == "Succeeded",
            "launch": status.get("launch") or "",
            "replicas": [r.get("launch") for r in status.get("replicas") or []],
            "losses": losses,
            "tail": (out.stdout + out.stderr)[-1500:],
        }

    def pair(self, n: int) -> tuple[float, float, dict]:
        """A first and a second run in a warm directory of their own, back to back."""
        self.env["JUPYTER_PX_WARM_DIR"] = str(self.work / f"warm-pair-{n}")
        try:
            first, said_first = self.run()
            second, said = self.run()
        finally:
            subprocess.run([_bin("jupyter"), "px", "warm", "stop"], env=self.env, capture_output=True, check=False)
            self.env["JUPYTER_PX_WARM_DIR"] = str(self.work / "warm")
        said["ok"] = said["ok"] and said_first["ok"]
        return first, second, said

    def pool(self) -> dict:
        out = subprocess.run(
            [_bin("jupyter"), "px", "warm", "--json"], env=self.env, capture_output=True, text=True, check=False
        )
        entries = [e for e in json.loads(out.stdout or "[]") if e.get("running") and e.get("pool") is not None]
        return entries[0]["pool"] if entries else {}

    def wait_for_pool(self, limit_s: float = 300.0) -> float:
        """Seconds until every interpreter of the pool has imported (the pool as a user finds it)."""
        start = time.perf_counter()
        while time.perf_counter() - start < limit_s:
            members = self.pool().get("interpreters") or []
            if len(members) >= REPLICAS and all(m["state"] == "ready" for m in members):
                return time.perf_counter() - start
            time.sleep(0.5)
        raise RuntimeError(f"the pool was not ready within {limit_s:g} s: {self.pool()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="px-bench-tf-warm-"))
    bench = Bench(work)
    wall: dict[str, list[float]] = {"cold": [], "warm": []}
    ready_after: list[float] = []
    pairs: list[tuple[float, float]] = []
    failures = 0
    losses: set[float] = set()
    try:
        print(f"work dir {work}; {os.cpu_count()} cores; load average {os.getloadavg()}", flush=True)
        first, said = bench.run()  # starts the template; its supervisor sizes the pool
        print(f"  first run (starts the template, sizes the pool): {first:.2f} s; {said['launch']}", flush=True)
        failures += not said["ok"]
        losses |= said["losses"]
        ready_after.append(bench.wait_for_pool())
        for round_no in range(args.rounds):
            for name in ("cold", "warm") if round_no % 2 == 0 else ("warm", "cold"):
                seconds, said = bench.run("--cold") if name == "cold" else bench.run()
                served = all(str(r).startswith("spawn-ahead") for r in said["replicas"])
                good = said["ok"] and (name == "cold" or served) and len(said["replicas"]) == REPLICAS
                failures += not good
                losses |= said["losses"]
                wall[name].append(seconds)
                note = "" if good else f" FAILED\n{said['tail']}\nlaunch: {said['launch']} {said['replicas']}"
                print(f"  round {round_no + 1}: {name}: {seconds:.2f} s; {said['launch']}{note}", flush=True)
                waited = bench.wait_for_pool()
                if name == "warm":
                    ready_after.append(waited + seconds)
        pool = bench.pool()
        subprocess.run([_bin("jupyter"), "px", "warm", "stop"], env=bench.env, capture_output=True, check=False)
        for n in range(args.pairs):
            first, second, said = bench.pair(n)
            served = all(str(r).startswith("spawn-ahead") for r in said["replicas"])
            failures += not (said["ok"] and served)
            losses |= said["losses"]
            pairs.append((first, second))
            note = "" if said["ok"] and served else f" NOT SERVED: {said['launch']} {said['replicas']}"
            print(f"  pair {n + 1}: first {first:.2f} s, second {second:.2f} s: {second / first:.2f}{note}", flush=True)
        print(f"load average after: {os.getloadavg()}")
    finally:
        subprocess.run([_bin("jupyter"), "px", "warm", "stop"], env=bench.env, capture_output=True, check=False)
    cold, warm = statistics.median(wall["cold"]), statistics.median(wall["warm"])
    print()
    print(f"| tf_mwms.py --size tiny, {REPLICAS} replicas, {args.rounds} rounds interleaved | median (s) | min | max |")
    print("| --- | --- | --- | --- |")
    for name, values in wall.items():
        median = statistics.median(values)
        print(f"| `jupyter px run --wait` {name} | {median:.2f} | {min(values):.2f} | {max(values):.2f} |")
    print()
    print(f"warm / cold: {warm / cold:.3f} (goal at most {GOAL})")
    if pairs:
        ratio = statistics.median(second / first for first, second in pairs)
        print(f"second run / first run (fresh template each pair): median {ratio:.3f} (goal at most {GOAL})")
    print(f"the pool ready again after a run started: median {statistics.median(ready_after):.1f} s")
    interpreters = pool.get("interpreters") or []
    if interpreters:
        rss = statistics.median(m["memory"]["rss_mib"] for m in interpreters)
        uss = statistics.median(m["memory"]["uss_mib"] for m in interpreters)
        print(f"each idle pool interpreter: {rss:.0f} MiB resident, {uss:.0f} MiB its own")
    print(f"final losses seen: {sorted(losses)} (one value: every run computed the same)")
    failures += len(losses) != 1
    shutil.rmtree(work, ignore_errors=True)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
