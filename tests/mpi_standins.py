"""Stand-ins for what an MPI image has and this machine does not, shared by the MPI tests on the
simulated cluster (training operator, mpi-operator, Kubeflow Trainer's MPI runtime).

The simulation has no `kubectl exec` and no sshd to reach the workers, so the launcher's `mpirun`
runs every rank itself, in the launcher's pod, their output on the launcher's, as Open MPI's
mpirun forwards it; and a worker's `sshd -De` becomes a process that waits, as sshd does until the
launcher is done."""

from __future__ import annotations

import sys
from typing import Any

#: The image's `mpirun`: `-np N` ranks of the command, each with OMPI_COMM_WORLD_RANK/SIZE. Without
#: `-np`, one rank per slot of the hostfile (`--hostfile` or OMPI_MCA_orte_default_hostfile), as
#: Open MPI does. `-x NAME` forwards a variable (every one is forwarded here: same process tree).
FAKE_MPIRUN = """#!{python} -I
import os, re, subprocess, sys
args, ranks, i, hostfile = sys.argv[1:], None, 0, os.environ.get("OMPI_MCA_orte_default_hostfile")
while args[i].startswith("-"):
    if args[i] in ("-np", "-n"):
        ranks = int(args[i + 1])
    if args[i] == "--hostfile":
        hostfile = args[i + 1]
    i += 1 if args[i] in ("--allow-run-as-root",) else 2
if ranks is None:
    slots = [int(m) for m in re.findall(r"slots=(\\d+)", open(hostfile).read())] if hostfile else []
    ranks = sum(slots) or 1
command = args[i:]
command[0] = sys.executable if command[0].startswith("python") else command[0]
procs = [subprocess.Popen(command, env={{**os.environ, "OMPI_COMM_WORLD_RANK": str(r),
         "OMPI_COMM_WORLD_SIZE": str(ranks)}}) for r in range(ranks)]
sys.exit(max(p.wait() for p in procs))
"""


def install_mpirun(cluster: Any) -> None:
    """Put the stand-in `mpirun` on the simulated kubelet's PATH."""
    shim = cluster.kubelet._shims() / "mpirun"
    shim.write_text(FAKE_MPIRUN.format(python=sys.executable))
    shim.chmod(0o755)


def sshd_waits(operation, resource, obj, old) -> None:
    """An admission hook: a container whose command is `sshd` (mpi-operator's workers, Trainer's MPI
    nodes) runs a process that waits instead."""
    if operation != "CREATE" or resource.plural != "pods":
        return
    for container in obj["spec"]["containers"]:
        if (container.get("command") or [""])[0].endswith("sshd"):
            container["command"] = ["python3", "-c", "import time; time.sleep(3600)"]
            container.pop("args", None)
