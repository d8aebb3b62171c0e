"""Start a Slurm cluster on this machine and keep it until interrupted:

    python -m tests.slurm_cluster [--nodes 3] [--cpus 4] [--memory 4000] [--accounting]
        [--site own|accounting-enforced] [--gpus 2]

then, in another terminal, `export SLURM_CONF=<the path it prints>` and use `sinfo`, `sbatch`, or
`jupyter px run train.py -f topology.yaml --backend slurm --wait`. Ctrl-C (or SIGTERM) stops every
daemon it started and removes what they left (cgroup folders, the temporary folder).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from .cluster import SlurmCluster
from .config import SITES
from .daemons import SlurmUnavailable


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.slurm_cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=3, help="slurmd nodes (default 3)")
    parser.add_argument("--cpus", type=int, default=4, help="CPUs each node offers (default 4)")
    parser.add_argument("--memory", type=int, default=4000, help="MiB each node offers (default 4000)")
    parser.add_argument("--gpus", type=int, default=0, help="fake GPUs each node offers, type fake (default 0)")
    parser.add_argument("--accounting", action="store_true", help="also slurmdbd + MariaDB, so sacct answers")
    parser.add_argument(
        "--site",
        choices=sorted(SITES),
        default="own",
        help="own: cgroups enforce memory (where usable here); "
        "accounting-enforced: jobacct_gather + OverMemoryKill, slurmdbd",
    )
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    cluster = SlurmCluster(
        args.nodes, args.cpus, args.memory, site=args.site, accounting=args.accounting, gpus=args.gpus
    )
    try:
        cluster.start()
    except SlurmUnavailable as error:
        print(f"python -m tests.slurm_cluster: {error}", file=sys.stderr)
        return 1
    try:
        nodes = ", ".join(cluster.nodes)
        print(f"Slurm cluster {cluster.name}: nodes {nodes} idle in partition {cluster.partition}", flush=True)
        print(f"export SLURM_CONF={cluster.conf}", flush=True)
        print("Ctrl-C to stop", flush=True)
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    finally:
        problems = cluster.stop()
    for problem in problems:
        print(f"left behind: {problem}", file=sys.stderr)
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
