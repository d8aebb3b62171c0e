"""The Slurm backend without a cluster: a topology as one job (components by shape, task order),
the batch script `jupyter px render --backend slurm` prints, the settings and their one-line
errors, Slurm's words for a job's states, and `backend: slurm` in the topology the form edits."""

from __future__ import annotations

import subprocess
import sys

import pytest
from px_cli import CLI, ROOT

from jupyter_px.backends import BackendError
from jupyter_px.backends.slurm.allocations import (
    allocation_script,
    not_kept,
    run_over,
    shape_key,
    signal_run,
    take_number,
)
from jupyter_px.backends.slurm.arrays import ArrayRefused, array_script
from jupyter_px.backends.slurm.plan import job_plan, unsupported
from jupyter_px.backends.slurm.queue import Snapshot, array_tasks, reduce, split_ref
from jupyter_px.backends.slurm.script import job_script
from jupyter_px.backends.slurm.settings import SlurmSettings, load_settings
from jupyter_px.backends.slurm.states import pending_message, running_message, slurm_end
from jupyter_px.topology import json_schema, parse_topology

TF_PS = """
framework: tensorflow
backend: slurm
environment:
  resources: {cpu: 2, memory: 4096}
  replicas:
    n_workers: 3
    n_ps: 1
    default_worker: {resources: {cpu: 2, memory: 4096, gpu: 1}}
    default_ps: {resources: {cpu: 1, memory: 1024}}
    worker:
      - index: 2
        resources: {cpu: 2, memory: 8192, gpu: 1}
"""


def test_one_component_per_shape_in_the_order_shapes_first_appear():
    plan = job_plan(parse_topology(TF_PS))
    shapes = [(c.shape.cpus, c.shape.mem_per_cpu_mib, c.shape.gpus, c.replicas) for c in plan.components]
    assert shapes == [
        (2, 2048, 0, (("master", 0),)),
        (2, 2048, 1, (("worker", 0), ("worker", 1))),
        (2, 4096, 1, (("worker", 2),)),  # the per-index override: a component of its own
        (1, 1024, 0, (("ps", 0),)),
    ]
    assert [c.offset for c in plan.components] == [0, 1, 3, 4]  # each component's first SLURM_PROCID
    assert plan.tasks == (("master", 0), ("worker", 0), ("worker", 1), ("worker", 2), ("ps", 0))
    assert plan.heterogeneous


def test_without_gpus_one_task_per_node_forks_the_node_s_replicas():
    from jupyter_px.backends.slurm.script import job_script, rendered_text

    plan = job_plan(parse_topology(TF_PS.replace(", gpu: 1", "")))
    srun = next(line for line in job_script("r", "/r", plan, load_settings()).splitlines() if line.startswith("srun "))
    assert srun.count(" : ") == 2  # without GPUs, three shapes (worker-2's memory, the parameter server's)
    assert (
        '--het-group=0 --nodes="$SLURM_JOB_NUM_NODES_HET_GROUP_0" --ntasks="$SLURM_JOB_NUM_NODES_HET_GROUP_0" '
        '--ntasks-per-node=1 --whole --mem=0 bash "$RUN_DIR/slurm/node.sh" 0'
    ) in srun
    text = rendered_text("r", "/r", plan, load_settings(), "")
    assert "# exec " + sys.executable + ' "$RUN_DIR/slurm/node.py" "$RUN_DIR" "$1"' in text.splitlines()
    # `launcher: task`: a task (an interpreter) per replica, as with GPUs
    script = job_script("r", "/r", plan, load_settings(launcher="task"))
    srun = next(line for line in script.splitlines() if line.startswith("srun "))
    assert '--het-group=0 --ntasks=3 --cpus-per-task=2 bash "$RUN_DIR/slurm/task.sh"' in srun, srun
    with pytest.raises(BackendError, match="launcher: 'forks' is not one of node, task"):
        load_settings(launcher="forks")


def test_one_shape_makes_a_homogeneous_job():
    topology = parse_topology({"framework": "pytorch", "environment": {"replicas": {"n_workers": 3}}})
    plan = job_plan(topology)
    assert not plan.heterogeneous and len(plan.components[0].replicas) == 4


def test_render_prints_the_batch_script(tmp_path, monkeypatch):
    settings = tmp_path / "slurm.yaml"
    settings.write_text(
        "partition: gpu\naccount: ml-lab\ntime_limit: '02:00:00'\ngres_name: gpu:a100\n"
        "setup: ['module load cuda/12', 'source /opt/venv/bin/activate']\nsbatch_lines: ['--exclusive']\n"
    )
    topology = tmp_path / "tf.yaml"
    topology.write_text(TF_PS)
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    env = {"PX_SLURM_CONFIG": str(settings), "PX_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [*CLI, "render", str(script), "-f", str(topology), "--name", "tf ps"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, **env},
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout
    lines = text.splitlines()
    assert lines[0] == "#!/bin/bash"
    assert "#SBATCH --job-name=px-tf-ps" in lines and "#SBATCH --no-requeue" in lines
    assert f"#SBATCH --output={tmp_path / 'home' / 'runs' / 'tf-ps' / 'slurm' / 'batch.out'}" in lines
    assert "#SBATCH --exclusive" in lines
    assert lines.count("#SBATCH hetjob") == 3
    assert lines.count("#SBATCH --partition=gpu") == 4 and lines.count("#SBATCH --account=ml-lab") == 4
    assert lines.count("#SBATCH --time=02:00:00") == 4
    assert lines.count("#SBATCH --gpus-per-task=a100:1") == 2  # per task; the site's type named
    assert "#SBATCH --mem-per-cpu=1024M" in lines and "#SBATCH --mem-per-cpu=4096M" in lines
    assert not any(line.startswith("#SBATCH --mem=") for line in lines)  # per CPU only: Slurm refuses a mix
    srun = next(line for line in lines if line.startswith("srun "))
    assert srun.count(" : ") == 3 and "--het-group=3 --ntasks=1 --cpus-per-task=1" in srun
    # Slurm 22.05 binds a typed per-task request to no GPU (CUDA_VISIBLE_DEVICES empty) unless the step says so
    assert "--het-group=1 --ntasks=2 --cpus-per-task=2 --gpu-bind=per_task:1" in srun
    assert lines.index("module load cuda/12") < lines.index(srun)
    assert "# keys=(master-0 worker-0 worker-1 worker-2 ps-0)" in lines  # the per-task script, commented
    assert "# module load cuda/12" in lines


def test_gpus_as_the_site_spells_them():
    from jupyter_px.backends.slurm.script import gpu_options

    assert gpu_options(2, load_settings()) == ["--gpus-per-task=2"]
    assert gpu_options(1, load_settings(gres_name="gpu:a100")) == ["--gpus-per-task=a100:1"]
    # --gres counts per node: each replica gets its node alone
    assert gpu_options(1, load_settings(gpu_option="gres", gres_name="gpu:a100")) == [
        "--gres=gpu:a100:1",
        "--ntasks-per-node=1",
    ]
    assert gpu_options(4, load_settings(gres_name="mygpu")) == ["--gres=mygpu:4", "--ntasks-per-node=1"]
    with pytest.raises(BackendError, match="gpu_option: 'gpus' is not one of gpus-per-task, gres"):
        load_settings(gpu_option="gpus")


def test_render_refuses_what_it_cannot_run(tmp_path):
    topology = tmp_path / "mpi.yaml"
    topology.write_text("framework: horovod\nenvironment: {replicas: {n_workers: 2}}\n")
    script = tmp_path / "train.py"
    script.write_text("")
    done = subprocess.run(
        [*CLI, "render", str(script), "-f", str(topology), "--backend", "slurm"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "Horovod jobs are not supported on the Slurm backend" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("PX_SLURM_TIME_LIMIT", "5 minutes", "PX_SLURM_TIME_LIMIT: time_limit: '5 minutes' is not a Slurm time"),
        ("PX_SLURM_PARTITION", "gpu; rm -rf /", "PX_SLURM_PARTITION: partition: 'gpu; rm -rf /' is not a Slurm name"),
        ("PX_SLURM_POLL_INTERVAL_S", "soon", "PX_SLURM_POLL_INTERVAL_S: 'soon' is not a number of seconds"),
        (
            "PX_SLURM_SBATCH_LINES",
            "exclusive",
            "PX_SLURM_SBATCH_LINES: sbatch_lines: 'exclusive' is not an sbatch option",
        ),
        ("PX_SLURM_PROBE_SHARED", "maybe", "PX_SLURM_PROBE_SHARED: 'maybe' is not true or false"),
        ("PX_SLURM_PYTHON", "python3", "PX_SLURM_PYTHON: python: 'python3' is not an absolute path"),
        (
            "PX_SLURM_KEEP_ALLOCATION_S",
            "-5",
            "PX_SLURM_KEEP_ALLOCATION_S: keep_allocation_s: -5.0 is not a number of seconds (0: no allocation kept)",
        ),
        ("PX_STOP_GRACE_S", "-1", "PX_STOP_GRACE_S: '-1' is below 0"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(variable, value, says, tmp_path, monkeypatch):
    monkeypatch.setenv("PX_SLURM_CONFIG", str(tmp_path / "none.yaml"))
    monkeypatch.setenv(variable, value)
    with pytest.raises(BackendError) as error:
        load_settings()
    assert str(error.value).startswith(says) and "\n" not in str(error.value)


def test_the_settings_file_and_variables(tmp_path, monkeypatch):
    path = tmp_path / "slurm.yaml"
    monkeypatch.setenv("PX_SLURM_CONFIG", str(path))
    path.write_text("partition: debug\nqos: high\nreservaton: maint\n")
    with pytest.raises(BackendError, match=r"unknown setting 'reservaton'"):
        load_settings()
    path.write_text("partition: debug\nqos: high\ntime_limit: '1-12:00'\n")
    monkeypatch.setenv("PX_SLURM_QOS", "low")
    monkeypatch.setenv("PX_SLURM_SETUP", "module load a\nmodule load b")
    monkeypatch.setenv("PX_STOP_GRACE_S", "12")
    settings = load_settings()
    assert (settings.partition, settings.qos, settings.time_limit) == ("debug", "low", "1-12:00")
    assert settings.setup == ["module load a", "module load b"] and settings.stop_grace_s == 12.0
    monkeypatch.delenv("PX_STOP_GRACE_S")
    assert load_settings().stop_grace_s == 30.0  # the reliability rule's default grace


def test_frameworks_it_cannot_launch_are_named():
    assert "Horovod" in unsupported(
        parse_topology({"framework": "horovod", "environment": {"replicas": {"n_workers": 1}}})
    )
    assert (
        unsupported(parse_topology({"framework": "mxnet", "environment": {"replicas": {"n_workers": 1, "n_ps": 1}}}))
        is None
    )


def test_restarts_it_cannot_honour_are_refused_not_dropped():
    replicas = {"n_workers": 1, "default_worker": {"restart_policy": "OnFailure", "max_restarts": 2}}
    assert unsupported(parse_topology({"framework": "pytorch", "environment": {"replicas": replicas}})) == (
        "worker-0: restart_policy OnFailure with max_restarts 2: the Slurm backend does not restart replicas "
        "(a failed replica fails the run); remove them, or use the local or a Kubernetes backend"
    )


def test_slurm_words_for_a_job():
    assert (
        pending_message(42, "Priority", "gpu", 3, 7)
        == "Slurm job 42 is PENDING in partition gpu's queue: 3rd of 7 (Priority)"
    )
    assert running_message(42, "n[1-3]", 5, 1000.0, 1000.0 + 61) == (
        "Slurm job 42 RUNNING on n[1-3]; 3 min left of 00:05:00"
    )
    timeout = slurm_end(42, "TIMEOUT", 90, None)
    assert timeout is not None and (timeout.state.value, timeout.reason) == ("Failed", "Timeout")
    assert timeout.message == "Slurm job 42 reached its time limit (01:30:00): TIMEOUT"
    cancelled = slurm_end(42, "CANCELLED by 1000", None, "ana (uid 1000)")
    assert cancelled is not None and cancelled.state.value == "Stopped"
    assert cancelled.message == "Slurm job 42 was CANCELLED by ana (uid 1000), outside jupyter-px"
    for state, reason in (("NODE_FAIL", "NodeFail"), ("PREEMPTED", "Preempted"), ("OUT_OF_MEMORY", "OOMKilled")):
        ended = slurm_end(7, state, None, None)
        assert ended is not None and ended.reason == reason and state in ended.message
    assert slurm_end(7, "COMPLETED", None, None) is None  # the tasks' records decide


def test_queue_position_counts_the_jobs_slurm_considers_first():
    jobs = [
        {"job_id": 10, "job_state": "RUNNING", "user_id": 0, "partition": "debug", "priority": 5},
        {"job_id": 11, "job_state": "PENDING", "user_id": 7, "partition": "debug", "priority": 9},
        {
            "job_id": 12,
            "job_state": "PENDING",
            "user_id": 0,
            "partition": "debug",
            "priority": 5,
            "state_reason": "Priority",
        },
        {"job_id": 13, "job_state": "PENDING", "user_id": 7, "partition": "debug", "priority": 5},
        {"job_id": 14, "job_state": "PENDING", "user_id": 7, "partition": "gpu", "priority": 99},
        {
            "job_id": 15,
            "job_state": "PENDING",
            "user_id": 0,
            "partition": "debug",
            "priority": 5,
            "het_job_id": 12,
            "het_job_offset": 1,
        },
    ]
    mine, pending = reduce(jobs, 0, "root")
    assert sorted(mine) == ["10", "12", "15"]  # this user's jobs only, components included
    snapshot = Snapshot(0.0, None, {int(k): v for k, v in mine.items()}, [tuple(p) for p in pending])
    view = snapshot.job(12)
    assert view is not None and (view.position, view.pending_in_partition) == (2, 3)  # behind 11, before 13
    assert view.reason == "Priority"


def test_an_array_s_task_is_read_from_its_own_record_or_from_the_array_s_pending_one():
    # as Slurm 22.05's `squeue --json` showed `--array=0-3%2` with tasks 0 and 1 running
    base = {"user_id": 0, "partition": "debug", "priority": 5, "array_job_id": 5, "array_max_tasks": 2}
    jobs = [
        {**base, "job_id": 6, "array_task_id": 0, "job_state": "RUNNING", "nodes": "n1", "state_reason": "None"},
        {**base, "job_id": 7, "array_task_id": 1, "job_state": "RUNNING", "nodes": "n2", "state_reason": "None"},
        {**base, "job_id": 5, "array_task_id": None, "array_task_string": "2-3%2", "job_state": "PENDING"}
        | {"state_reason": "JobArrayTaskLimit"},
    ]
    mine, pending = reduce(jobs, 0, "root")
    snapshot = Snapshot(0.0, None, {int(k): v for k, v in mine.items()}, [tuple(p) for p in pending])
    running, waiting = snapshot.job("5_1"), snapshot.job("5_3")
    assert running is not None and (running.state, running.nodes, running.job_id) == ("RUNNING", "n2", 7)
    assert waiting is not None and (waiting.state, waiting.reason) == ("PENDING", "JobArrayTaskLimit")
    assert (waiting.position, waiting.pending_in_partition) == (1, 1)  # the array is one record in the queue
    assert snapshot.job("5_4") is None and snapshot.job("6_0") is None
    assert snapshot.component_ids("5_1") == {7: 0}  # its own job id names it in Slurm's kill lines
    assert snapshot.component_ids("5_2") is None  # not started: no id of its own yet
    assert array_tasks("2-3%2") == {2, 3} and array_tasks("0,4-6") == {0, 4, 5, 6} and array_tasks("0-8:4") == {0, 4, 8}
    assert split_ref("5_3") == (5, 3) and split_ref(12) == (12, None)


def test_runs_of_one_shape_become_one_array_script_and_others_are_refused(tmp_path):
    settings = SlurmSettings()  # the defaults
    works = []
    for index, workers in enumerate((1, 1, 2)):
        work = tmp_path / f"run-{index}"
        (work / "slurm").mkdir(parents=True)
        topology = parse_topology({"framework": "pytorch", "environment": {"replicas": {"n_workers": workers}}})
        (work / "slurm" / "job.sh").write_text(job_script(f"run-{index}", work, job_plan(topology), settings))
        works.append(work)
    folder = tmp_path / "arrays" / "sweep-1"
    script = array_script(folder, works[:2], concurrency=1, name="px-sweep-1").read_text()
    assert "#SBATCH --array=0-1%1\n" in script and "#SBATCH --job-name=px-sweep-1\n" in script
    assert f"#SBATCH --output={folder}/tasks/%a/slurm/batch.out\n" in script  # each run's own batch output
    assert script.count("--job-name") == 1 and "run-0" not in script  # the runs' own options left out
    assert "#SBATCH --ntasks=2" in script  # their shape, once
    assert [(folder / "tasks" / str(i)).resolve() for i in (0, 1)] == [w.resolve() for w in works[:2]]
    assert script.endswith(
        "cd " + str(folder / "tasks") + '/"$SLURM_ARRAY_TASK_ID" || exit 1\nexec bash slurm/job.sh\n'
    )
    with pytest.raises(ArrayRefused, match="task 2's job differs from task 0's"):
        array_script(tmp_path / "arrays" / "sweep-2", works, concurrency=2, name="px-sweep-2")
    assert "--array=0-1\n" in array_script(tmp_path / "arrays" / "s3", works[:2], 2, "px-s3").read_text()  # no throttle


def test_which_runs_a_kept_allocation_takes_and_what_its_script_and_claims_are(tmp_path):
    keep = SlurmSettings(keep_allocation_s=300, setup=["module load python"])
    plain = job_plan(parse_topology({"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}}))
    assert not_kept(plain, SlurmSettings()) == "keep_allocation_s is 0"  # off unless set
    assert not_kept(plain, keep) is None
    assert not_kept(job_plan(parse_topology(TF_PS)), keep) == "a heterogeneous job is not kept"
    retried = parse_topology(
        {"framework": "pytorch", "termination": {"max_retries": 2}, "environment": {"replicas": {"n_workers": 2}}}
    )
    assert "retries" in not_kept(job_plan(retried), keep)
    assert "node-launched" in not_kept(plain, SlurmSettings(keep_allocation_s=300, launcher="task"))

    # one key per shape: the same options, setup, interpreter and framework; a run's own name is not its shape
    one, two = (job_script(run, tmp_path / run, plain, keep) for run in ("run-a", "run-b"))
    assert shape_key(one, keep, "pytorch") == shape_key(two, keep, "pytorch")
    assert shape_key(one, keep, "pytorch") != shape_key(one, keep, "tensorflow")
    assert shape_key(one, keep, "pytorch") != shape_key(one, SlurmSettings(keep_allocation_s=300), "pytorch")
    bigger = job_plan(parse_topology({"framework": "pytorch", "environment": {"replicas": {"n_workers": 3}}}))
    assert shape_key(job_script("run-c", tmp_path, bigger, keep), keep, "pytorch") != shape_key(one, keep, "pytorch")

    folder = tmp_path / "allocations" / "abc-1"
    script = allocation_script(folder, one, keep)
    assert "#SBATCH --ntasks=3\n" in script and "run-a" not in script and "#SBATCH --job-name=px-keep\n" in script
    assert f"#SBATCH --output={folder}/batch.out\n" in script
    assert script.index("module load python") < script.index("srun ")  # the setup once, before the servers
    assert "--ntasks-per-node=1 --whole --mem=0 " in script and script.rstrip().endswith('"$SLURM_TASKS_PER_NODE"')

    # claims and the leader's close race for one number each; a closed allocation takes no claim
    (folder / "claims").mkdir(parents=True)
    assert take_number(folder, {"run_id": "r1"}) == 0 and take_number(folder, {"run_id": "r2"}) == 1
    (folder / "claims" / "2.json").write_text('{"closed": true}')
    assert take_number(folder, {"run_id": "r3"}) is None
    assert sorted(p.name for p in (folder / "claims").iterdir()) == ["0.json", "1.json", "2.json"]  # nothing left over
    signal_run(folder, 1, "TERM")
    signal_run(folder, 1, "KILL")
    signal_run(folder, 1, "TERM")  # a KILL asked stays asked
    assert (folder / "claims" / "1.signal").read_text() == "KILL"
    assert not run_over(folder, 1)  # no server has said how many they are, nor ended it
    (folder / "servers.json").write_text('{"count": 2}')
    (folder / "claims" / "1.done-n1").write_text("{}")
    assert not run_over(folder, 1)
    (folder / "claims" / "1.done-n2").write_text("{}")
    assert run_over(folder, 1)


def test_the_form_offers_slurm():
    assert "slurm" in json_schema()["properties"]["backend"]["enum"]  # the sidebar's form is made from it
    assert parse_topology({"backend": "slurm"}).backend_kind == "slurm"


#: Lines Slurm 22.05.8 wrote into the batch output of this project's test cluster: a
#: heterogeneous job (leader 4; its workers' component is job 5) whose workers' step job
#: accounting killed on node n2, the master then failing in gloo; and what cgroups, a time limit
#: and a node failure write (src/plugins/task/cgroup/task_cgroup_memory.c,
#: src/slurmd/slurmstepd/req.c, src/api/step_launch.c at slurm-22-05-8-1).
BATCH_OUT = """\
slurmstepd-n2: error: StepId=5.0 exceeded memory limit (630796288 > 629145600), being killed
srun: Job step aborted: Waiting up to 7 seconds for job step to finish.
slurmstepd-n2: error: *** STEP 5.0 ON n2 CANCELLED AT 2026-11-28T21:47:55 ***
srun: error: n2: tasks 0-1: Killed
srun: error: n1: task 0: Exited with exit code 1
slurmstepd-n3: error: Detected 1 oom-kill event(s) in StepId=7.0. Some of your processes may have been killed by \
the cgroup out-of-memory handler.
srun: error: n3: task 2: Out Of Memory
slurmstepd-n1: error: *** JOB 9 ON n1 CANCELLED AT 2026-11-28T22:01:00 DUE TO TIME LIMIT ***
srun: error: Node failure on n[3-4]
"""


def test_what_slurm_says_it_killed_is_read_from_the_batch_output():
    from jupyter_px.backends.slurm.kills import JobLayout, killed_tasks, mib, parse

    says = parse(BATCH_OUT.splitlines())
    memory = says.kills[0]
    assert (memory.cause, memory.node, memory.job_id) == ("OOMKilled", "n2", 5)
    assert (mib(memory.used_bytes), mib(memory.limit_bytes)) == ("601.6 MiB", "600 MiB")
    assert memory.mechanism == "job accounting, OverMemoryKill"
    assert [(k.cause, k.node, k.mechanism) for k in says.kills[1:]] == [
        ("OOMKilled", "n3", "cgroup"),
        ("Timeout", "n1", ""),
    ]
    assert [(t.node, t.tasks, t.what) for t in says.tasks] == [
        ("n2", (0, 1), "Killed"),
        ("n1", (0,), "Exited with exit code 1"),
        ("n3", (2,), "Out Of Memory"),
    ]
    assert says.node_failures == ("n3", "n4")
    # the job: master-0 alone in component 0 (job 4) on n1; worker-0, worker-1 in component 1 (job 5) on n2
    starts = {0: {"node": "n1"}, 1: {"node": "n2"}, 2: {"node": "n2"}}
    hit = killed_tasks(parse(BATCH_OUT.splitlines()[:5]), JobLayout.of(4, [1, 2], starts, None))
    assert sorted(hit) == [1, 2] and {k.cause for k in hit.values()} == {"OOMKilled"}  # never the master
    # srun numbers tasks within their component: "n3: task 2" is the procid whose component task 2 is on n3
    layout = JobLayout.of(7, [4], {0: {"node": "n1"}, 1: {"node": "n1"}, 2: {"node": "n3"}, 3: {"node": "n4"}}, None)
    no_node_failure = parse(BATCH_OUT.splitlines()[:-1])
    assert {p: k.cause for p, k in killed_tasks(no_node_failure, layout).items()} == {2: "OOMKilled"}
    assert {p: k.cause for p, k in killed_tasks(says, layout).items()} == {2: "NodeFail", 3: "NodeFail"}


def test_slurm_s_kill_is_the_cause_before_the_peers_it_took_down():
    from jupyter_px.backends.slurm.culprit import blame, mark_consequences
    from jupyter_px.runstore import ReplicaStatus
    from jupyter_px.topology.naming import ReplicaNames

    def replicas(master_failed_at: float):
        return [
            ReplicaStatus(
                role="master", index=0, state="Failed", reason="Error", exit_code=1, finished_at=master_failed_at
            ),
            ReplicaStatus(role="worker", index=0, state="Failed", reason="OOMKilled", finished_at=100.3),
            ReplicaStatus(role="worker", index=1, state="Running"),
        ]

    # the master's gloo error was read first, but the worker's kill is the cause (read 0.3 s later)
    seen = replicas(master_failed_at=100.0)
    decided = blame(seen, ReplicaNames())
    assert decided is not None and decided.outcome.cause == "worker-0"
    assert decided.outcome.message == "worker-0 failed (OOMKilled)"
    assert decided.consequence == "stopped because worker-0 was OOMKilled"
    mark_consequences(seen, decided.consequence)
    assert (seen[0].state.value, seen[0].reason, seen[0].exit_code) == ("Stopped", "StoppedByRun", 1)
    assert seen[2].state.value == "Running"  # still running: the run's stop takes it
    # a master that failed by itself well before the kill is still the cause
    decided = blame(replicas(master_failed_at=90.0), ReplicaNames())
    assert decided is not None and decided.outcome.cause == "master-0" and decided.consequence is None


@pytest.mark.parametrize(
    ("culprit_reason", "slurm_reason", "named"),
    [("NodeFail", "NodeFail", True), ("OOMKilled", "NodeFail", False), ("NodeFail", "Timeout", False)],
)
def test_a_job_that_ended_node_fail_names_the_replica_on_that_node(culprit_reason, slurm_reason, named):
    """The job may leave the queue as NODE_FAIL before the follower judged the batch output's
    "Node failure on" line: the replica on that node is still the culprit the run names (and its
    peers stopped because of it), not only "Slurm job N ended NODE_FAIL"."""
    from jupyter_px.backends.slurm.culprit import blame, explained_by_its_node
    from jupyter_px.runstore import ReplicaStatus
    from jupyter_px.topology.naming import ReplicaNames

    seen = [
        ReplicaStatus(role="master", index=0, state="Failed", reason="Error", exit_code=1, finished_at=100.2),
        ReplicaStatus(role="worker", index=1, state="Failed", reason=culprit_reason, finished_at=100.0),
    ]
    decided = blame(seen, ReplicaNames())
    assert decided is not None and decided.outcome.cause == "worker-1"
    assert explained_by_its_node(decided, slurm_reason) is named
    assert explained_by_its_node(None, slurm_reason) is False


def test_in_a_job_that_ended_node_fail_only_the_replica_on_the_failed_node_lost_it():
    """Slurm TERMs every task when a node fails; read after the job left the queue NODE_FAIL, the
    master's SIGTERM (its node sound, its record read first) is not "its node failed": the replica
    on the failed node is the cause, the master stopped because of it."""
    from jupyter_px.backends.slurm.culprit import blame, mark_consequences
    from jupyter_px.backends.slurm.kills import NODE_FAIL, SlurmKill
    from jupyter_px.backends.slurm.replicas import Hit, ended_replica
    from jupyter_px.runstore import ReplicaStatus
    from jupyter_px.topology.naming import ReplicaNames

    failed = ("n3",)
    kill = SlurmKill(NODE_FAIL, "n3", None, line="srun: error: Node failure on n3")
    master, worker = ReplicaStatus(role="master", index=0), ReplicaStatus(role="worker", index=1)
    for replica, at, hit in (
        (master, 100.0, Hit(None, "n1", failed_nodes=failed)),
        (worker, 100.4, Hit(kill, "n3", failed_nodes=failed)),
    ):
        record = {"code": 143, "signal": "SIGTERM", "finished_at": at}
        ended_replica(replica, record, hit=hit, stopped_by_us=None, slurm_state="NODE_FAIL")
    assert (master.reason, worker.reason) == ("Signaled", "NodeFail")
    decided = blame([master, worker], ReplicaNames())
    assert decided is not None and decided.outcome.message == "worker-1 failed (NodeFail): its node n3 failed"
    mark_consequences([master, worker], decided.consequence or "")
    assert (master.state.value, master.message, master.exit_code) == (
        "Stopped",
        "stopped because worker-1 lost its node",
        143,
    )
    # the failed nodes unnamed (no batch output line): the job's state is all there is to say
    alone = ReplicaStatus(role="master", index=0)
    ended_replica(
        alone, {"code": 143, "signal": "SIGTERM"}, hit=Hit(None, "n1"), stopped_by_us=None, slurm_state="NODE_FAIL"
    )
    assert (alone.reason, alone.message) == ("NodeFail", "its node n1 failed")
