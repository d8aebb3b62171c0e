"""Where the README's test command spends its time: the per-test times of a JUnit XML report
(`.ci/run` writes ci-junit.xml), summed by file and by lane, longest first. The suite's wall
time is about the sum divided by its workers, so the files at the top are where a cut pays.

    python .ci/suite_time.py ci-junit.xml [--top 30]
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from collections import Counter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", help="a JUnit XML report (pytest --junitxml)")
    parser.add_argument("--top", type=int, default=30, help="how many files to list")
    args = parser.parse_args()
    by_file: Counter[str] = Counter()
    tests: Counter[str] = Counter()
    for case in ET.parse(args.report).getroot().iter("testcase"):
        name = case.get("classname", "").split(".")[-1] or "?"
        by_file[name] += float(case.get("time") or 0)
        tests[name] += 1
    total = sum(by_file.values())
    print(f"{sum(tests.values())} tests, {total / 60:.1f} min in all")
    for name, seconds in by_file.most_common(args.top):
        print(f"{seconds / 60:7.1f} min {100 * seconds / total:5.1f} %  {tests[name]:4d} tests  {name}")


if __name__ == "__main__":
    main()
