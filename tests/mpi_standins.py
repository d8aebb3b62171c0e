"""Stand-ins for what Kubeflow Trainer's DeepSpeed runtime image has and this machine does not, for
the Trainer MPI tests only (`test_kube_sim_trainer_mpi.py`).

MPIJobs (training-operator's v1 through kubexec.sh's `kubectl exec`, mpi-operator's v2beta1 over
ssh) run real `mpirun` on the simulated cluster (`test_kube_sim_mpirun.py`). The Trainer's
`deepspeed-distributed` runtime instead starts its nodes' sshd as user 1000 on port 2222 with the
image's /home/mpiuser/.sshd_config and ssh settings, which the simulation's images do not model
yet; so there the launcher's `mpirun` runs every rank itself, in the launcher's pod, their output
on the launcher's, as Open MPI's mpirun forwards it; and a node's `sshd -De` becomes a process that
waits, as sshd does until the launcher is done."""

from __future__ import annotations

import sys
from typing import Any

#: The image's `mpirun`: `-np N` ranks of the command (without `-np`, one per slot of the
#: hostfile: `--hostfile`, else OMPI_MCA_orte_default_hostfile), mapped onto the hostfile's hosts
#: slot by slot as Open MPI's default mapping does. A rank on the launcher's own host (the entry
#: whose first label is $HOSTNAME) inherits the launcher's environment; a rank on another host gets
#: what an ssh session there would have: a login environment, the variables named by `-x`, and
#: OMPI_COMM_WORLD_RANK/SIZE. Each rank's output is forwarded line by line, as mpirun's I/O
#: forwarding does.
FAKE_MPIRUN = """#!{python} -I
import os, re, subprocess, sys, threading
args, ranks, i, forwarded = sys.argv[1:], None, 0, []
hostfile = os.environ.get("OMPI_MCA_orte_default_hostfile")
while args[i].startswith("-"):
    if args[i] in ("-np", "-n"):
        ranks = int(args[i + 1])
    elif args[i] == "--hostfile":
        hostfile = args[i + 1]
    elif args[i] == "-x":
        forwarded.append(args[i + 1])
    i += 1 if args[i] in ("--allow-run-as-root",) else 2
hosts = []
for line in open(hostfile).read().splitlines() if hostfile else []:
    if line.strip():
        name, slots = line.split()[0], re.search(r"slots=(\\d+)", line)
        hosts += [name] * (int(slots.group(1)) if slots else 1)
ranks = ranks if ranks is not None else (len(hosts) or 1)
command = args[i:]
command[0] = sys.executable if command[0].startswith("python") else command[0]
me = os.environ.get("HOSTNAME", "")
login = {{k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}}
lock = threading.Lock()

def environment(rank):
    host = hosts[rank % len(hosts)] if hosts else me
    local = host.split(".")[0] == me
    env = dict(os.environ) if local else {{**login, **{{k: os.environ[k] for k in forwarded if k in os.environ}}}}
    return {{**env, "OMPI_COMM_WORLD_RANK": str(rank), "OMPI_COMM_WORLD_SIZE": str(ranks)}}

def forward(stream):
    for line in iter(stream.readline, b""):
        with lock:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

procs = [subprocess.Popen(command, env=environment(r), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
         for r in range(ranks)]
readers = [threading.Thread(target=forward, args=(p.stdout,)) for p in procs]
for reader in readers:
    reader.start()
code = max(p.wait() for p in procs)
for reader in readers:
    reader.join()
sys.exit(code)
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
