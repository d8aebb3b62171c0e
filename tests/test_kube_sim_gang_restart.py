"""A native run with `termination: {maxRetries: N}` on the simulated cluster: when a replica's
failure is one the policy retries (Kubeflow's ExitCode rule: killed by a signal), every pod of the
attempt is deleted and the run's pods are made again, labelled with the next attempt, and the
replicas start anew (their environment says which attempt). A permanent failure (exit 1) is not
retried, and a run out of retries fails saying so; each attempt's boundary is in every log."""

from __future__ import annotations

import pytest
from kube_sim_support import backend_cluster
from px_cli import px
from waiting import wait_for

from jupyter_px.api import submit
from jupyter_px.backends.kubernetes.shared.attempt_pods import LABEL_ATTEMPT
from jupyter_px.backends.kubernetes.shared.names import LABEL_RUN, base_name
from jupyter_px.runstore import RunStore

pytestmark = pytest.mark.kube

#: Attempt 1 steps until the test kills worker-0 (`killed`), or worker-0 ends at once with
#: exit code 1 (`permanent`) or by SIGKILL (`killed-each-time`: in every attempt, while the master
#: steps on); a later attempt of `killed` takes three steps once the test has seen its pods
#: (`release`), and succeeds, its master ending after its worker: the master's success is the
#: run's, and a worker still running then is deleted (as Kubeflow's success policy does), its
#: last line with it. No process group: what is tested is the gang's restart.
CODE = """
import os, signal, sys, time
from jupyter_px import tracking
attempt = int(os.environ.get("PX_ATTEMPT", "1"))
worker = os.environ["PX_TASK_TYPE"] == "worker"
print(f"attempt {{attempt}} starts", flush=True)
if worker and {mode!r} == "permanent":
    sys.exit(1)
if worker and {mode!r} == "killed-each-time":
    time.sleep(1)
    os.kill(os.getpid(), signal.SIGKILL)
steps = 100000 if attempt == 1 or {mode!r} == "killed-each-time" else 3
while attempt > 1 and not os.path.exists({release!r}):  # until the test has seen the new pods
    time.sleep(0.05)
for step in range(steps):
    tracking.log_metrics(step=step, loss=1.0 / (step + 1))
    time.sleep(0.2)
ended = {release!r} and {release!r} + ".worker-ended"
while ended and attempt > 1 and not worker and not os.path.exists(ended):  # the master ends last
    time.sleep(0.05)
print(f"attempt {{attempt}} ends", flush=True)
if ended and attempt > 1 and worker:
    open(ended, "w").close()
"""


def _topology(retries: int) -> dict:
    return {
        "framework": "pytorch",
        "backend": "native",
        "environment": {"replicas": {"n_workers": 1}},
        "termination": {"maxRetries": retries},
    }


def _attempts_of_pods(sim, run_id: str) -> set[str]:
    pods = [p for p in sim.list("pods", "default") if p["metadata"]["labels"].get(LABEL_RUN) == base_name(run_id)]
    return {p["metadata"]["labels"].get(LABEL_ATTEMPT, "1") for p in pods}


def test_a_retried_failure_makes_the_gang_again_and_the_others_fail_saying_why(tmp_path, monkeypatch, px_home):
    with backend_cluster(tmp_path, monkeypatch, px_home) as sim:
        release = tmp_path / "release"
        killed = submit(CODE.format(mode="killed", release=str(release)), _topology(2), name="killed")
        permanent = submit(CODE.format(mode="permanent", release=""), _topology(2), name="permanent")
        each_time = submit(CODE.format(mode="killed-each-time", release=""), _topology(1), name="each-time")
        try:
            wait_for(lambda: {"worker-0", "master-0"} <= set(killed.metrics()), "both replicas to step", 180)
            done = px("kill", killed.run_id, "worker-0")
            assert done.returncode == 0, done.stderr
            wait_for(lambda: _attempts_of_pods(sim, killed.run_id) == {"2"}, "the pods of attempt 2 alone", 180)
            release.touch()
            status = killed.wait(timeout=240)
            failed_once = permanent.wait(timeout=240)
            out_of_retries = each_time.wait(timeout=240)
        finally:
            for run in (killed, permanent, each_time):
                run.stop()

        assert status.state.value == "Succeeded", status
        assert (status.attempt, status.max_attempts) == (2, 3), status
        first, second = status.attempts
        assert (first.failed, first.exit_code, first.retried) == ("worker-0", 137, True), first
        assert first.step is not None and first.step >= 0, first
        assert second.attempt == 2 and second.resumed_from is None and second.failed is None, second
        for replica in ("master", "worker"):
            log = killed.logs(replica, 0, tail=None)
            marker = "--- attempt 2 (from the start): worker-0 "
            assert log.index("attempt 1 starts") < log.index(marker) < log.index("attempt 2 starts"), log
            assert "attempt 2 ends" in log, log
            stored = RunStore(px_home).paths(killed.run_id).log(replica, 0).read_bytes()
            before = stored[: second.log_offsets[f"{replica}-0"]]  # attempt 2's log starts after its marker
            assert before.endswith(b" ---\n") and marker.encode() in before.splitlines()[-1], before[-200:]

        assert failed_once.state.value == "Failed", failed_once
        assert "not retried: exit code 1 of worker-0 is permanent" in failed_once.message, failed_once.message
        assert failed_once.attempt == 1 and not failed_once.attempts[0].retried, failed_once

        assert out_of_retries.state.value == "Failed", out_of_retries
        assert "out of retries: attempt 2 of 2 failed" in out_of_retries.message, out_of_retries.message
        assert [a.failed for a in out_of_retries.attempts] == ["worker-0", "worker-0"], out_of_retries.attempts
        assert "--- attempt 2 (from the start): worker-0 exited with code 137" in each_time.logs("worker", 0, tail=None)


#: Each replica checkpoints every step; attempt 1 steps until the test kills worker-0, a later
#: attempt resumes at its newest checkpoint and takes three more steps, its master ending after
#: its worker (as CODE's does, and for the same reason: ci71 lost worker-0's last step), told by
#: a file on the claim both pods mount. Every checkpoint is kept: the two replicas step without
#: a collective between them, so on a loaded machine one ran more than the three kept by default
#: ahead of the other (master 37-39, worker 34-36), they had no step in common, and the attempt
#: rightly began from the start; a real gang steps together.
RESUMING = """
import os, time
from jupyter_px import tracking
attempt = int(os.environ.get("PX_ATTEMPT", "1"))
saved = tracking.load_checkpoint()
start = 0 if saved is None else saved.step + 1
print(f"attempt {attempt} starts at step {start}", flush=True)
for step in range(start, 100000 if attempt == 1 else start + 3):
    tracking.log_metrics(step=step, loss=1.0 / (step + 1))
    tracking.save_checkpoint({"step": step}, step, keep=100000)
    time.sleep(0.2)
tracking.flush()
ended = os.path.join(tracking.get_outputs_path(), f"worker-ended-{attempt}")
if os.environ["PX_TASK_TYPE"] == "worker":
    open(ended, "w").close()
while not os.path.exists(ended):  # the master ends last
    time.sleep(0.05)
"""


def test_on_a_shared_claim_the_next_attempt_resumes_at_the_newest_checkpoint(tmp_path, monkeypatch, px_home):
    kubelet = {"backoff_base": 0.5, "claims": {"px-runs": str(px_home)}}
    with backend_cluster(tmp_path, monkeypatch, px_home, kubelet=kubelet):
        # the run store on a claim the pods mount where the notebook has it (`shared_claim`)
        monkeypatch.setenv("PX_K8S_SHARED_CLAIM", "px-runs")
        monkeypatch.setenv("PX_K8S_SHARED_MOUNT_PATH", str(px_home))
        run = submit(RESUMING, _topology(1), name="resuming")
        try:
            saved = RunStore(px_home).paths(run.run_id).outputs_dir / "checkpoints"

            def third_checkpoints() -> bool:
                return all(len(list(saved.glob(f"{key}/step-*"))) >= 3 for key in ("master-0", "worker-0"))

            wait_for(third_checkpoints, "both replicas' third checkpoint", 180)
            # the pods write to the claim themselves: the status may show them Running a tick later,
            # and `kill` acts on a replica the status shows running, as a user would see it
            wait_for(lambda: run.status().replica("worker", 0).state.value == "Running", "worker-0 Running", 60)
            done = px("kill", run.run_id, "worker-0")
            assert done.returncode == 0, done.stderr
            status = run.wait(timeout=240)
        finally:
            run.stop()
    assert status.state.value == "Succeeded", status
    first, second = status.attempts
    assert second.resumed_from is not None and second.resumed_from >= 2, second
    assert first.step is not None and first.step >= second.resumed_from, (first, second)
    for replica in ("master", "worker"):
        log = run.logs(replica, 0, tail=None)
        assert f"--- attempt 2 (from step {second.resumed_from:,}): worker-0 " in log, log
        assert f"attempt 2 starts at step {second.resumed_from + 1}" in log, log
    steps = list(run.metrics()["worker-0"]["loss"].steps)
    assert steps[-1] == second.resumed_from + 3, steps


#: A replica's first start steps until the test kills worker-0; a start after the JobSet's
#: restart (its marker file there: the pods share this machine's files outside their volumes)
#: takes three steps and ends.
RESTARTED_BY_THE_JOBSET = """
import os, time
from jupyter_px import tracking
marker = os.path.join({folder!r}, os.environ["PX_TASK_TYPE"] + os.environ["PX_TASK_INDEX"])
again = os.path.exists(marker)
open(marker, "a").close()
print("started again" if again else "started", flush=True)
for step in range(3 if again else 100000):
    tracking.log_metrics(step=step, loss=1.0 / (step + 1))
    time.sleep(0.2)
"""


def test_a_trainjob_whose_jobset_restarts_it_shows_the_restart_as_attempt_2(tmp_path, monkeypatch, px_home):
    with backend_cluster(tmp_path, monkeypatch, px_home) as sim:
        # the platform's runtime restarts the whole JobSet once on a failed node (its Jobs give up
        # on the first failure: backoffLimit 0), as a cluster admin would set it up for DDP
        runtimes = sim.api.resource("trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes")
        runtime = sim.api.get(runtimes, "", "torch-distributed")
        template = runtime["spec"]["template"]["spec"]
        template["failurePolicy"] = {"maxRestarts": 1}
        for replicated in template["replicatedJobs"]:
            replicated["template"]["spec"]["backoffLimit"] = 0
        sim.api.update(runtimes, runtime)
        folder = tmp_path / "markers"
        folder.mkdir()
        topology = {
            "framework": "pytorch",
            "backend": "kubeflow-trainer",
            "environment": {"replicas": {"n_workers": 1}},
        }
        run = submit(RESTARTED_BY_THE_JOBSET.format(folder=str(folder)), topology, name="jobset")
        try:
            wait_for(lambda: {"worker-0", "master-0"} <= set(run.metrics()), "both replicas to step", 180)
            done = px("kill", run.run_id, "worker-0")
            assert done.returncode == 0, done.stderr
            status = run.wait(timeout=240)
            jobsets = sim.api.resource("jobset.x-k8s.io", "v1alpha2", "jobsets")
            jobset = sim.api.get(jobsets, "default", base_name(run.run_id))
        finally:
            run.stop()
    assert jobset["status"]["restarts"] == 1, jobset["status"]  # the JobSet did restart the gang
    assert status.state.value == "Succeeded", status
    assert (status.attempt, status.max_attempts) == (2, 2), status
    first, second = status.attempts
    assert (first.failed, first.exit_code, first.retried) == ("worker-0", 137, True), first
    assert second.attempt == 2 and second.failed is None, second
