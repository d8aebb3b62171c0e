"""Where the README's test command spends its time: the per-test times of a JUnit XML report
(`.ci/run` writes ci-junit.xml), summed by file, longest first. The suite's wall time is about the
sum divided by its workers, so the files at the top are where a cut pays. Beside each file, the
CPU its tests used in the pytest worker's own process (the `worker_cpu_s` property
tests/conftest.py records): on two busy cores, CPU is what a cut must save.

    python .ci/suite_time.py ci-junit.xml [--top 30] [--write-durations tests/durations.json]

`--write-durations` records each file's time for the suite's scheduling (tests/conftest.py runs
the longest files first): run it on a CI run's report when files were added or changed pace.
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ABOUT = (
    "Each test file's time in a CI run (seconds, all its tests), so tests/conftest.py hands the "
    "longest files to xdist's workers first. Written by `python .ci/suite_time.py ci-junit.xml "
    "--write-durations tests/durations.json`; a file not here is estimated from its lanes."
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", help="a JUnit XML report (pytest --junitxml)")
    parser.add_argument("--top", type=int, default=30, help="how many files to list")
    parser.add_argument("--write-durations", metavar="PATH", help="record each file's time there (JSON)")
    args = parser.parse_args()
    by_file: Counter[str] = Counter()
    worker_cpu: Counter[str] = Counter()
    children_cpu: Counter[str] = Counter()
    tests: Counter[str] = Counter()
    for case in ET.parse(args.report).getroot().iter("testcase"):
        # `tests.test_store.TestDiskFull`: the module is the last part before a class's
        module = [part for part in case.get("classname", "").split(".") if not part[:1].isupper()]
        name = module[-1] if module else "?"
        by_file[name] += float(case.get("time") or 0)
        tests[name] += 1
        for prop in case.iter("property"):
            if prop.get("name") == "worker_cpu_s":
                worker_cpu[name] += float(prop.get("value") or 0)
            elif prop.get("name") == "children_cpu_s":
                children_cpu[name] += float(prop.get("value") or 0)
    total = sum(by_file.values())
    print(
        f"{sum(tests.values())} tests, {total / 60:.1f} min in all; "
        f"the workers' own CPU {sum(worker_cpu.values()) / 60:.1f} core-min"
    )
    for name, seconds in by_file.most_common(args.top):
        print(
            f"{seconds / 60:7.1f} min {100 * seconds / total:5.1f} %  {tests[name]:4d} tests  "
            f"worker CPU {worker_cpu[name] / 60:5.2f} core-min  {name}"
        )
    print("the heaviest files by the workers' own CPU:")
    for name, seconds in worker_cpu.most_common(args.top):
        print(f"{seconds / 60:7.2f} core-min  {tests[name]:4d} tests  {name}")
    if children_cpu:
        print("the heaviest files by their reaped children's CPU (pods, CLI calls, kernels):")
        for name, seconds in children_cpu.most_common(args.top):
            print(f"{seconds / 60:7.2f} core-min  {tests[name]:4d} tests  {name}")
    if args.write_durations:
        seconds = {f"tests/{name}.py": round(time, 1) for name, time in sorted(by_file.items())}
        Path(args.write_durations).write_text(json.dumps({"about": ABOUT, "seconds": seconds}, indent=1) + "\n")


if __name__ == "__main__":
    main()
