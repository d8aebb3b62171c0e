"""The Slurm commands on PATH, as a login-node user runs them: sbatch, squeue, scontrol, sacct,
scancel, sinfo, srun. Argument lists only (never a shell string), a timeout on each, and only
their machine output is parsed: `--json` where Slurm 22.05 has it (squeue, sinfo),
`scontrol ... --oneliner` key=value records and `sacct --parsable2` elsewhere (22.05's scontrol
has no JSON; its sacct JSON does not say who cancelled a job), never the human tables.

Which cluster: whatever `SLURM_CONF` (or the system's configuration) names, as for the user's
own `sbatch`. The environment the commands get is this process's minus the `SLURM_*` variables
of an allocation it may run in (a notebook started by batchspawner or Open OnDemand runs inside a
Slurm job): sbatch would pass `SLURM_MEM_PER_CPU`, `SLURM_CPUS_PER_TASK`, ... on to the new job.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base import BackendError

log = logging.getLogger(__name__)

#: What a command may take before it counts as not answering (slurmctld busy or down).
TIMEOUT_S = 60.0
#: Variables of the environment kept for the Slurm commands (the rest of SLURM_* is an allocation's).
KEPT_SLURM_VARIABLES = frozenset({"SLURM_CONF", "SLURM_TIME_FORMAT"})
#: sacct's answer when the cluster keeps no accounting.
ACCOUNTING_DISABLED = "accounting storage is disabled"


class SlurmCommandError(BackendError):
    """A Slurm command failed; the message is one line: the command and what it said."""

    def __init__(self, message: str, returncode: int | None = None, stderr: str = ""):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


class SlurmUnreachable(SlurmCommandError):
    """No answer: the command is not installed, timed out, or could not reach slurmctld."""


def slurm_environ(base: Mapping[str, str] | None = None, slurm_conf: str | None = None) -> dict[str, str]:
    """`base` (default: this process's environment) without an enclosing allocation's SLURM_*
    variables; `SLURM_CONF` set to `slurm_conf` when given."""
    env = {
        k: v
        for k, v in (os.environ if base is None else base).items()
        if not k.startswith("SLURM_") or k in KEPT_SLURM_VARIABLES
    }
    if slurm_conf:
        env["SLURM_CONF"] = slurm_conf
    return env


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


@dataclass(frozen=True)
class NodeInfo:
    name: str
    address: str
    cpus: int
    memory_mib: int
    gres: str
    features: str
    state: str
    partitions: tuple[str, ...]


class SlurmCommands:
    """Runs the Slurm client commands for one cluster (`slurm_conf`: its SLURM_CONF, else the
    environment's)."""

    def __init__(self, slurm_conf: str | None = None, env: Mapping[str, str] | None = None, timeout: float = TIMEOUT_S):
        self.env = slurm_environ(env, slurm_conf)
        self.timeout = timeout

    @property
    def slurm_conf(self) -> str | None:
        return self.env.get("SLURM_CONF")

    def run(self, argv: Sequence[str], *, check: bool = True, cwd: str | None = None) -> subprocess.CompletedProcess:
        """Run one command (an argument list); SlurmUnreachable when it cannot, SlurmCommandError
        (with the command's last error line) when it fails and `check`."""
        program = argv[0]
        if shutil.which(program, path=self.env.get("PATH")) is None:
            raise SlurmUnreachable(
                f"{program} is not on PATH: the Slurm backend runs the Slurm commands of a login node "
                "(install Slurm's client commands, or load its module)"
            )
        try:
            done = subprocess.run(
                list(argv), env=self.env, capture_output=True, text=True, timeout=self.timeout, cwd=cwd
            )
        except subprocess.TimeoutExpired:
            raise SlurmUnreachable(f"{program} did not answer within {self.timeout:g} s") from None
        except OSError as error:
            raise SlurmUnreachable(f"{program}: {error.strerror or error}") from None
        if check and done.returncode != 0:
            said = _first_line(done.stderr) or _first_line(done.stdout) or f"exit code {done.returncode}"
            error_type = SlurmUnreachable if _unreachable(said) else SlurmCommandError
            raise error_type(f"{' '.join(argv[:2])}: {said}", done.returncode, done.stderr)
        return done

    # ---- submitting and cancelling -------------------------------------------------------------
    def sbatch(self, script: Path, *, cwd: str | None = None) -> int:
        """Submit a batch script; the job id (a heterogeneous job's leader)."""
        done = self.run(["sbatch", "--parsable", str(script)], cwd=cwd)
        text = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        try:
            return int(text.split(";")[0])  # "<id>" or "<id>;<cluster>"
        except ValueError:
            raise SlurmCommandError(f"sbatch answered {text!r}, not a job id") from None

    def test_only(self, script: Path) -> str | None:
        """`sbatch --test-only`: None when Slurm would take the job, else Slurm's reason (one line)."""
        done = self.run(["sbatch", "--test-only", str(script)], check=False)
        if done.returncode == 0:
            return None
        said = [line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        reasons = [line.removeprefix("sbatch: error: ").removeprefix("allocation failure: ") for line in said]
        if any(_unreachable(line) for line in said):
            raise SlurmUnreachable(f"sbatch --test-only: {reasons[-1] if reasons else done.returncode}")
        return "; ".join(dict.fromkeys(reasons)) or f"sbatch --test-only exited {done.returncode}"

    def scancel(self, job_id: int | str, *, signal: str | None = None) -> None:
        """Cancel the job, or (`signal`) send that signal to its tasks (not the batch shell).
        A job that has already ended is not an error."""
        argv = ["scancel", "--quiet"]
        if signal:
            argv.append(f"--signal={signal}")
        done = self.run([*argv, str(job_id)], check=False)
        if done.returncode != 0 and not re.search(r"already completing|already finished|Invalid job id", done.stderr):
            raise SlurmCommandError(f"scancel {job_id}: {_first_line(done.stderr)}", done.returncode, done.stderr)

    def requeue(self, job_id: int | str) -> None:
        """Put the job back in the queue (`scontrol requeue`, scontrol(1): "Requeue a running,
        suspended or finished Slurm batch job into pending state"); Slurm runs its batch script
        again, under the same id, once the job credential's lifetime has passed (slurm.conf(5)
        AuthInfo cred_expire: "how long a requeued job must wait before starting again", 120 s)."""
        done = self.run(["scontrol", "requeue", str(job_id)], check=False)
        if done.returncode != 0:
            raise SlurmCommandError(
                f"scontrol requeue {job_id}: {_first_line(done.stderr)}", done.returncode, done.stderr
            )

    # ---- reading -----------------------------------------------------------------------------------
    def squeue(self) -> list[dict[str, Any]]:
        """Every job slurmctld knows (`squeue --json`; Slurm 22.05 applies no filter to its JSON, so
        one call answers for all of this user's runs and the queue's order alike)."""
        done = self.run(["squeue", "--json"])
        try:
            return list(json.loads(done.stdout).get("jobs") or [])
        except (ValueError, AttributeError) as error:
            raise SlurmCommandError(f"squeue --json: not JSON ({error})") from None

    def left_queue(self, job_id: int | str, wait_s: float) -> bool:
        """Whether `scontrol show job` stops showing the job in an active state (its epilog,
        COMPLETING, included) within `wait_s`, looking every 0.2 s."""
        from .states import ACTIVE, base_state

        deadline = time.monotonic() + wait_s
        while True:
            shown = self.show_job(job_id)
            if not shown or all(base_state(part.get("JobState")) not in ACTIVE for part in shown):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)

    def show_job(self, job_id: int | str) -> list[dict[str, str]] | None:
        """`scontrol show job --oneliner`: one key=value record per component (a heterogeneous
        job has several), or None when slurmctld no longer knows the job."""
        done = self.run(["scontrol", "show", "job", "--oneliner", str(job_id)], check=False)
        if done.returncode != 0:
            if "Invalid job id" in done.stderr:
                return None
            said = _first_line(done.stderr)
            raise (SlurmUnreachable if _unreachable(said) else SlurmCommandError)(f"scontrol show job {job_id}: {said}")
        return [parse_record(line) for line in done.stdout.splitlines() if line.strip()]

    def node_addresses(self, names: Sequence[str]) -> dict[str, str]:
        """{node name: its NodeAddr} (node names need not resolve; their addresses do)."""
        if not names:
            return {}
        done = self.run(["scontrol", "show", "node", "--oneliner", ",".join(names)])
        out = {}
        for line in done.stdout.splitlines():
            record = parse_record(line)
            if "NodeName" in record:
                out[record["NodeName"]] = record.get("NodeAddr") or record["NodeName"]
        return out

    def hostnames(self, expression: str) -> list[str]:
        """`scontrol show hostnames n[1-3],m1` -> ["n1", "n2", "n3", "m1"]."""
        return self.run(["scontrol", "show", "hostnames", expression]).stdout.split()

    def nodes(self) -> list[NodeInfo]:
        """Every node (`sinfo --json`)."""
        done = self.run(["sinfo", "--json"])
        try:
            entries = json.loads(done.stdout).get("nodes") or []
        except (ValueError, AttributeError) as error:
            raise SlurmCommandError(f"sinfo --json: not JSON ({error})") from None
        out = []
        for entry in entries:
            out.append(
                NodeInfo(
                    name=str(entry.get("name") or ""),
                    address=str(entry.get("address") or entry.get("name") or ""),
                    cpus=int(entry.get("cpus") or 0),
                    memory_mib=int(entry.get("real_memory") or 0),
                    gres=str(entry.get("gres") or ""),
                    features=str(entry.get("features") or ""),
                    state=str(entry.get("state") or ""),
                    partitions=tuple(entry.get("partitions") or ()),
                )
            )
        return out

    def memory_default(self, partition: str | None) -> MemoryDefault:
        """The memory Slurm gives a job that declares none, in `partition` (None: the default
        partition): the partition's `DefMemPerCPU` / `DefMemPerNode` (`scontrol show partition`),
        else the cluster's (`scontrol show config`). Neither set: a whole node's memory."""
        argv = ["scontrol", "show", "partition", "--oneliner"] + ([partition] if partition else [])
        records = [parse_record(line) for line in self.run(argv).stdout.splitlines() if line.strip()]
        chosen = next((r for r in records if not partition and r.get("Default") == "YES"), None)
        record = chosen or (records[0] if records else {})
        name = record.get("PartitionName") or partition or ""
        for key, per in (("DefMemPerCPU", "cpu"), ("DefMemPerNode", "node")):
            value = _mib(record.get(key))
            if value is not None:
                return MemoryDefault(value, per, f"partition {name}'s {key}={record[key]}")
        config: dict[str, str] = {}
        for line in self.run(["scontrol", "show", "config"]).stdout.splitlines():
            key, sep, value = line.partition("=")
            if sep:
                config[key.strip()] = value.strip()
        for key, per in (("DefMemPerCPU", "cpu"), ("DefMemPerNode", "node")):
            value = _mib(config.get(key))
            if value is not None:
                return MemoryDefault(value, per, f"the cluster's {key}={config[key]}")
        return MemoryDefault(None, "node", "no DefMemPerCPU or DefMemPerNode: a whole node's memory")

    def sacct_state(self, job_id: int | str) -> str | None:
        """The job's state as accounting has it (`CANCELLED by 1000`), None when the cluster keeps
        no accounting or has no record of the job. `--parsable2`, not `--json`: 22.05's JSON
        leaves out who cancelled a job."""
        argv = ["sacct", "--noheader", "--parsable2", "--allocations", "--format=State", f"--jobs={job_id}"]
        done = self.run(argv, check=False)
        if done.returncode != 0 or ACCOUNTING_DISABLED in (done.stderr + done.stdout).lower():
            return None
        lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
        return lines[0] if lines else None

    def probe(
        self, argv: Sequence[str], *, partition: str | None, extra: Sequence[str] = ()
    ) -> subprocess.CompletedProcess:
        """A one-task job running `argv` now (`srun --immediate=5`: it waits for no queue, and at most
        5 s for a free CPU: on a full cluster, the run it checks for would wait in the queue anyway)."""
        options = ["srun", "--ntasks=1", "--nodes=1", "--immediate=5", "--quiet", "--job-name=px-probe", *extra]
        if partition:
            options.append(f"--partition={partition}")
        return self.run([*options, *argv], check=False)


@dataclass(frozen=True)
class MemoryDefault:
    """What a job that declares no memory gets: `mib` per CPU or per node (None: unlimited, a
    whole node's), and where Slurm's configuration says so."""

    mib: int | None
    per: str  # "cpu" | "node"
    source: str


def _mib(value: str | None) -> int | None:
    """`256`, `4G`, `2048M` -> MiB; UNLIMITED, 0, missing -> None."""
    if not value:
        return None
    m = re.match(r"^(\d+)([KMGT]?)$", value.strip().upper())
    if not m or int(m.group(1)) == 0:
        return None
    scale = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 * 1024}[m.group(2)]
    return int(int(m.group(1)) * scale)


def parse_record(line: str) -> dict[str, str]:
    """`scontrol --oneliner` output -> {key: value}. Values may contain spaces only in the last
    field(s) scontrol prints (Command=, WorkDir=): a token without `=` continues the previous value."""
    record: dict[str, str] = {}
    last: str | None = None
    for token in line.split():
        key, sep, value = token.partition("=")
        if sep and key and re.match(r"^[A-Za-z][A-Za-z0-9_/:]*$", key):
            record[key] = value
            last = key
        elif last is not None:
            record[last] += " " + token
    return record


def _unreachable(said: str) -> bool:
    """Does Slurm's message say it could not reach slurmctld (rather than refusing the request)?"""
    lowered = said.lower()
    return any(
        text in lowered
        for text in (
            "unable to contact slurm controller",
            "connection refused",
            "socket timed out",
            "could not establish a configuration source",
            "unable to establish",
            "zero bytes were transmitted",
        )
    )
