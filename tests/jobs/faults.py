"""One small job for the local backend's behaviour tests: `faults.py ACTION TARGET [VALUE]`.

The replica named TARGET (e.g. `worker-1`) does ACTION; every other replica waits to be stopped
(or, for `flaky`, for the target to succeed). Everything a test needs to check is written to
PX_OUTPUTS_PATH. No torch or TensorFlow here: these jobs start in a fraction of a second.

ACTION:
  exit N        exit with code N
  sigkill       kill itself with SIGKILL
  oom           allocate memory (20 MiB at a time, touched) until killed
  flaky N       fail (exit 5) on the first N attempts, then succeed; attempts are counted in
                outputs/, and the master exits 0 once the target succeeded
  sleep         (TARGET ignored) start two grandchildren - one in the replica's process group,
                one in a new session - record their pids, then sleep until stopped
  ports DIR N   bind and listen on this replica's own address from PX_CLUSTER, record it, then
                hold it until N replicas (of any run) have checked in under DIR: a barrier that
                proves the runs sharing DIR really ran at the same time
  escape        the target starts a daemon that leaves everything behind: setsid, a second fork,
                then execve of /bin/sleep with an empty environment (no PX_RUN_ID); once the exec is
                done it records the daemon's pid and exits 0
  daemon        the target starts a daemon the way a forked Python server does (setsid, a second
                fork, no exec: a warm replica's daemon shows the template's environ) that ignores
                SIGTERM; it records the daemon's pid and exits 0
  hog           the target double-forks a grandchild (setsid: its own session and group) that
                holds 700 MiB, records its pid, and waits to be stopped
  fail-when F   the target waits until file F exists, then exits 1 without writing anything
  env           record the environment contract, cwd, sys.path, argv, CPU affinity
"""

import json
import os
import signal
import subprocess
import sys
import time

ACTION = sys.argv[1]
TARGET = sys.argv[2] if len(sys.argv) > 2 else "none"
VALUE = sys.argv[3] if len(sys.argv) > 3 else ""
ME = f"{os.environ['PX_TASK_TYPE']}-{os.environ['PX_TASK_INDEX']}"
OUT = os.environ["PX_OUTPUTS_PATH"]


def record(name: str, data: dict) -> None:
    tmp = os.path.join(OUT, f".{name}.tmp")
    with open(tmp, "w") as handle:
        json.dump(data, handle)
    os.replace(tmp, os.path.join(OUT, f"{name}.json"))


def wait_to_be_stopped(seconds: float = 120) -> None:
    print(f"{ME}: waiting", flush=True)
    time.sleep(seconds)


if ACTION == "env":
    keys = [
        k
        for k in os.environ
        if k.startswith(
            ("PX_", "MASTER_", "TF_CONFIG", "CUDA_VISIBLE", "RANK", "WORLD_SIZE", "LOCAL_", "OMP_NUM_THREADS")
        )
    ]
    name = ME + (f"-local{os.environ['LOCAL_RANK']}" if "LOCAL_RANK" in os.environ else "")
    record(
        name,
        {
            "env": {k: os.environ[k] for k in keys},
            "cwd": os.getcwd(),
            "path": sys.path[:3],
            "argv": sys.argv,
            "affinity": sorted(os.sched_getaffinity(0)),
            "name": __name__,
        },
    )
    sys.exit(0)

if ACTION == "ports":
    host, port = json.loads(os.environ["PX_CLUSTER"])[os.environ["PX_TASK_TYPE"]][
        int(os.environ["PX_TASK_INDEX"])
    ].rsplit(":", 1)
    import socket

    barrier, expected = TARGET, int(VALUE)
    with socket.socket() as sock:
        sock.bind((host, int(port)))  # fails (and fails the run) if the port were taken
        sock.listen()
        record(ME, {"port": int(port), "run": os.environ["PX_RUN_ID"]})
        with open(os.path.join(barrier, f"{os.environ['PX_RUN_ID']}-{ME}"), "w") as handle:
            handle.write(port)
        deadline = time.monotonic() + 120
        while len(os.listdir(barrier)) < expected:  # every replica of every run holds its port now
            if time.monotonic() > deadline:
                sys.exit(f"{ME}: only {len(os.listdir(barrier))} of {expected} replicas checked in")
            time.sleep(0.02)
        record(ME, {"port": int(port), "run": os.environ["PX_RUN_ID"], "saw": sorted(os.listdir(barrier))})
    sys.exit(0)

if ACTION == "escape":
    if ME != TARGET:
        wait_to_be_stopped()
        sys.exit(0)
    read_end, write_end = os.pipe()
    if os.fork() == 0:  # the child: a new session, then the daemon, then go
        os.setsid()
        if os.fork() == 0:
            os.close(read_end)
            os.write(write_end, str(os.getpid()).encode())
            os.execve("/bin/sleep", ["sleep", "300"], {})  # execve closes write_end (close-on-exec)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:  # EOF once execve closed its (non-inheritable) end
        daemon = int(pipe.read())
    record("escaped", {"pid": daemon})
    sys.exit(0)

if ACTION in ("daemon", "hog"):
    if ME != TARGET:
        wait_to_be_stopped()
        sys.exit(0)
    read_end, write_end = os.pipe()
    go_read, go_write = os.pipe()  # the hog allocates once its pid is recorded (a busy machine is slow)
    if os.fork() == 0:  # the child: a new session, then the daemon, then go
        os.setsid()
        if os.fork() == 0:
            os.close(read_end)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            os.write(write_end, str(os.getpid()).encode())
            os.close(write_end)
            if ACTION == "hog":
                os.read(go_read, 1)
                held = bytearray(700 * 2**20)
                held[::4096] = b"x" * len(held[::4096])  # touched: resident
            time.sleep(300)
            os._exit(0)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:  # EOF once execve closed its (non-inheritable) end
        daemon = int(pipe.read())
    record("escaped", {"pid": daemon})
    os.write(go_write, b"!")
    if ACTION == "hog":
        wait_to_be_stopped()
    sys.exit(0)

if ACTION == "fail-when":
    if ME != TARGET:
        wait_to_be_stopped()
        sys.exit(0)
    while not os.path.exists(VALUE):
        time.sleep(0.02)
    os._exit(1)  # no output, no flush: nothing to write on a full disk

if ACTION == "sleep":
    sleeper = [sys.executable, "-c", "import time; time.sleep(120)"]
    same_group = subprocess.Popen(sleeper)
    new_session = subprocess.Popen(sleeper, start_new_session=True)
    record(ME, {"pid": os.getpid(), "children": [same_group.pid, new_session.pid]})
    wait_to_be_stopped()
    sys.exit(0)

if ACTION == "flaky":
    attempt = len([n for n in os.listdir(OUT) if n.startswith(f"attempt-{TARGET}-")]) if ME == TARGET else 0
    if ME == TARGET:
        record(f"attempt-{TARGET}-{attempt}", {"attempt": attempt})
        print(f"{ME}: attempt {attempt}", flush=True)
        if attempt < int(VALUE):
            sys.exit(5)
        record("succeeded", {"attempt": attempt})
        sys.exit(0)
    while not os.path.exists(os.path.join(OUT, "succeeded.json")):
        time.sleep(0.05)
    sys.exit(0)

if ME != TARGET:
    wait_to_be_stopped()
    sys.exit(0)

time.sleep(0.3)  # let the others start
print(f"{ME}: doing {ACTION} {VALUE or ''}", flush=True)
if ACTION == "exit":
    sys.exit(int(VALUE))
if ACTION == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
if ACTION == "oom":
    hoard = []
    for _ in range(200):  # 4 GiB at most, far above any limit a test sets
        chunk = bytearray(20 * 2**20)
        chunk[::4096] = b"x" * len(chunk[::4096])
        hoard.append(chunk)
        time.sleep(0.02)
    sys.exit(0)
raise SystemExit(f"unknown action {ACTION!r}")
