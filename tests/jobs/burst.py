"""A replica that logs many metric points at once, then waits to be stopped: `burst.py N [stuck|steady]`.

Every replica logs N points as fast as it can (`log_metrics` only queues them; the tracking
thread writes them behind), records in PX_OUTPUTS_PATH that it has logged them all, then sleeps
until it is stopped. What a stop must keep is then exactly N points per replica.

`stuck`: the main thread then waits where no Python signal handler can run (SIGTERM blocked in
it, as for a thread inside a collective that waits for a dead peer), so only tracking's own
thread can react to a stop.

`steady`: after the burst, go on logging a point every 10 ms until stopped.
"""

import json
import os
import signal
import sys
import time

from jupyter_px import tracking

N = int(sys.argv[1])
STUCK = sys.argv[2:3] == ["stuck"]
STEADY = sys.argv[2:3] == ["steady"]
ME = f"{os.environ['PX_TASK_TYPE']}-{os.environ['PX_TASK_INDEX']}"
OUT = os.environ["PX_OUTPUTS_PATH"]

for step in range(N):
    tracking.log_metrics(step=step, loss=1.0 / (step + 1))
if STUCK:  # the tracking thread started above, with SIGTERM unblocked: the signal goes to it
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
with open(os.path.join(OUT, f".{ME}.tmp"), "w") as handle:
    json.dump({"logged": N, "pid": os.getpid()}, handle)
os.replace(os.path.join(OUT, f".{ME}.tmp"), os.path.join(OUT, f"{ME}.json"))
print(f"{ME}: logged {N} points", flush=True)
step = N
while STEADY:
    tracking.log_metrics(step=step, loss=1.0 / (step + 1))
    step += 1
    time.sleep(0.01)
time.sleep(600)
