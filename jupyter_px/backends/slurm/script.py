"""The batch script a run submits (`slurm/job.sh`) and what `srun` runs per task (`slurm/task.sh`).

Pure text from the plan, the settings and the run directory; `jupyter px render --backend slurm`
prints the same. Every value that reaches the shell is either ours (numbers, our paths) quoted
with `shlex.quote`, or the user's own `setup` lines (shell by design, from their settings file).

    #SBATCH options of component 0        (the job's name, output, time, partition, ...)
    #SBATCH hetjob                        (one per further shape: a heterogeneous job)
    #SBATCH options of component 1
    setup lines
    python slurm/entry.py prepare RUN &   (the nodes' addresses, once, while srun starts)
    srun <component 0> bash task.sh : <component 1> bash task.sh    (every task at once)

srun is given each component's task count and CPUs per task itself: since Slurm 22.05 a step no
longer inherits `--cpus-per-task` from the batch script, and without it the tasks would be packed
onto the first node's CPUs instead of the layout the job was allocated. `--kill-on-bad-exit=0`:
a task that fails does not take the others down at once; the backend stops them (SIGTERM first,
so they flush what tracking accepted) and records them as stopped because of it.

Each task's stdout and stderr go to its replica's own log in the run directory: `task.sh` maps
`SLURM_PROCID` to the replica (`logs/<role>-<index>.log`) before anything else runs (srun's
`--output=%t` cannot: its task number restarts in each component of a heterogeneous step).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from .handle import BATCH_OUTPUT, ENTRY, NODE_ENTRY, NODE_SCRIPT, REQUEUE_ENTRY, TASK_SCRIPT
from .plan import Component, JobPlan
from .settings import SlurmSettings


def job_name(run_id: str) -> str:
    return f"px-{run_id}"


def per_task_gpus(settings: SlurmSettings) -> bool:
    """GPUs asked per task (`--gpus-per-task`), which needs the GRES to be named `gpu`."""
    return settings.gpu_option == "gpus-per-task" and settings.gres_name.split(":")[0] == "gpu"


def gpu_options(gpus: int, settings: SlurmSettings) -> list[str]:
    """A task's GPUs as the site spells them (the `gpu_option` and `gres_name` settings)."""
    name, _, kind = settings.gres_name.partition(":")
    if per_task_gpus(settings):
        return [f"--gpus-per-task={kind + ':' if kind else ''}{gpus}"]
    return [f"--gres={settings.gres_name}:{gpus}", "--ntasks-per-node=1"]  # --gres counts per node


def _component_options(component: Component, settings: SlurmSettings) -> list[str]:
    shape = component.shape
    options = [f"--ntasks={len(component.replicas)}", f"--cpus-per-task={shape.cpus}"]
    if shape.mem_per_cpu_mib is not None:
        options.append(f"--mem-per-cpu={shape.mem_per_cpu_mib}M")
    if shape.gpus:
        options += gpu_options(shape.gpus, settings)
    for flag, value in (
        ("--partition", settings.partition),
        ("--account", settings.account),
        ("--qos", settings.qos),
        ("--time", settings.time_limit),
        ("--constraint", settings.constraint),
        ("--reservation", settings.reservation),
    ):
        if value:
            options.append(f"{flag}={value}")
    return options


def job_script(run_id: str, run_dir: Path | str, plan: JobPlan, settings: SlurmSettings, summary: str = "") -> str:
    root = str(run_dir)
    lines = ["#!/bin/bash", f"# jupyter-px run {run_id}" + (f": {summary}" if summary else "")]
    lines += [
        f"#SBATCH --job-name={job_name(run_id)}",
        f"#SBATCH --output={shlex.quote(str(Path(root) / BATCH_OUTPUT))}",
        *requeue_options(plan, settings),
    ]
    lines += [f"#SBATCH {option}" for option in settings.sbatch_lines]
    for k, component in enumerate(plan.components):
        if k:
            lines.append("#SBATCH hetjob")
        keys = ", ".join(f"{role}-{index}" for role, index in component.replicas[:4])
        more = f" and {len(component.replicas) - 4} more" if len(component.replicas) > 4 else ""
        lines.append(f"# component {k}: {keys}{more} ({component.shape.describe()} each)")
        lines += [f"#SBATCH {option}" for option in _component_options(component, settings)]
    python = shlex.quote(settings.interpreter)
    quoted = shlex.quote(root)
    # the nodes' addresses are looked up while srun starts the tasks (they wait for them)
    lines += ["", *settings.setup, f"RUN_DIR={quoted}", f'{python} "$RUN_DIR/{ENTRY}" prepare "$RUN_DIR" &']
    steps = []
    per_node = node_launched(plan, settings)
    for k, component in enumerate(plan.components):
        group = [f"--het-group={k}"] if plan.heterogeneous else []
        if per_node:  # one task per node, forking the node's replicas (node_entry.py)
            nodes = f'"$SLURM_JOB_NUM_NODES{f"_HET_GROUP_{k}" if plan.heterogeneous else ""}"'
            one = [f"--nodes={nodes}", f"--ntasks={nodes}", "--ntasks-per-node=1", "--whole", "--mem=0"]
            steps.append(" ".join([*group, *one, f'bash "$RUN_DIR/{NODE_SCRIPT}" {k}']))
            continue
        # each task its own GPUs, CUDA_VISIBLE_DEVICES naming them: 22.05 binds a typed request
        # (`--gpus-per-task=a100:1`) to no GPU unless the step says so
        gpus = component.shape.gpus
        bind = [f"--gpu-bind=per_task:{gpus}"] if gpus and per_task_gpus(settings) else []
        steps.append(
            " ".join(
                [*group, f"--ntasks={len(component.replicas)}", f"--cpus-per-task={component.shape.cpus}", *bind]
                + ['bash "$RUN_DIR/' + TASK_SCRIPT + '"']
            )
        )
    srun = "srun --kill-on-bad-exit=0 --wait=0 " + " : ".join(steps)
    if not plan.max_retries:
        lines += [srun, "exit $?"]
        return "\n".join(lines) + "\n"
    # Slurm's signal before the time limit (B: the batch shell alone): the replicas checkpoint,
    # then the job is requeued (requeue_entry.py); srun runs in the background so that the trap
    # runs at once (bash runs a trap only between commands, and `wait` returns for it)
    lines += [
        f'checkpoint_and_requeue() {{ {python} "$RUN_DIR/{REQUEUE_ENTRY}" "$RUN_DIR"; }}',
        "trap checkpoint_and_requeue USR1",
        f"{srun} &",
        "srun_pid=$!",
        'while :; do wait "$srun_pid"; code=$?; kill -0 "$srun_pid" 2>/dev/null || break; done',
        "exit $code",
    ]
    return "\n".join(lines) + "\n"


def requeue_options(plan: JobPlan, settings: SlurmSettings) -> list[str]:
    """`--no-requeue` for a run without retries: Slurm's default (`JobRequeue=1`, slurm.conf(5))
    would requeue it after a node failure or a preemption and run its script again. With retries
    (`termination.max_retries`): `--requeue` (sbatch(1): "eligible for requeuing ... after node
    failure, or upon preemption"), and `--signal=B:USR1@<checkpoint_grace_s>` (sbatch(1): "When a
    job is within sig_time seconds of its end time, send it the signal"; B: "signal only the batch
    shell"; "the signal may be sent up to 60 seconds earlier than specified"), Slurm 22.05.8; and
    `--open-mode=append`: a requeued job's batch output would otherwise be truncated when its
    script runs again (seen on 22.05.8), losing what Slurm said of the attempt before."""
    if not plan.max_retries:
        return ["#SBATCH --no-requeue"]
    grace = max(1, int(settings.checkpoint_grace_s))
    return ["#SBATCH --requeue", f"#SBATCH --signal=B:USR1@{grace}", "#SBATCH --open-mode=append"]


def task_script(run_dir: Path | str, plan: JobPlan, settings: SlurmSettings) -> str:
    root = shlex.quote(str(run_dir))
    keys = " ".join(f"{role}-{index}" for role, index in plan.tasks)
    lines = [
        "#!/bin/bash",
        "# one task of the job: SLURM_PROCID says which replica (the plan's task order)",
        f"RUN_DIR={root}",
        f"keys=({keys})",
        'key="${keys[$SLURM_PROCID]}"',
        'exec >>"$RUN_DIR/logs/$key.log" 2>&1',
        *settings.setup,
        f'exec {shlex.quote(settings.interpreter)} "$RUN_DIR/{ENTRY}" run "$RUN_DIR"',
    ]
    return "\n".join(lines) + "\n"


def node_launched(plan: JobPlan, settings: SlurmSettings) -> bool:
    """One task per node forking its replicas (`node_entry.py`), unless a replica has GPUs: then
    a task per replica, whose GPUs Slurm binds (and one way for the whole step: srun numbers a
    heterogeneous step's tasks across its components, which the task script relies on); or the
    `launcher` setting says `task`."""
    return settings.launcher == "node" and not any(component.shape.gpus for component in plan.components)


def node_script(run_dir: Path | str, settings: SlurmSettings) -> str:
    """What srun runs once per node of a component without GPUs: the setup, then the launcher
    that forks the node's replicas (each writes its own log; this script's output is the batch
    output's)."""
    lines = [
        "#!/bin/bash",
        "# one task per node: it forks the node's replicas (slurm/node.py); $1 is the job's component",
        f"RUN_DIR={shlex.quote(str(run_dir))}",
        *settings.setup,
        f'exec {shlex.quote(settings.interpreter)} "$RUN_DIR/{NODE_ENTRY}" "$RUN_DIR" "$1"',
    ]
    return "\n".join(lines) + "\n"


def rendered_text(run_id: str, run_dir: Path | str, plan: JobPlan, settings: SlurmSettings, summary: str) -> str:
    """What `jupyter px render --backend slurm` prints: the batch script, then `task.sh` as
    comments (so the whole text is still the script sbatch would take)."""

    def commented(text: str) -> str:
        return "".join(f"# {line}\n" if line else "#\n" for line in text.splitlines())

    text = job_script(run_id, run_dir, plan, settings, summary)
    if node_launched(plan, settings):
        text += f"\n# ---- {Path(str(run_dir)) / NODE_SCRIPT}: what srun runs on each node ----\n"
        text += commented(node_script(run_dir, settings))
    else:
        text += f"\n# ---- {Path(str(run_dir)) / TASK_SCRIPT}: what srun runs for each task ----\n"
        text += commented(task_script(run_dir, plan, settings))
    return text
