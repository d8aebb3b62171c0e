"""The `train.py` of Polyaxon's own examples (docs/references/polyaxon-optimization-engine/ in
polyaxon/polyaxon, v0.x): it takes `--batch-size`, `--lr`, `--dropout` and, in the random-search
example, `--activation` and `--param1`, as `run.cmd` passes them.

Every replica writes `<PX_OUTPUTS_PATH>/seen-<role>-<index>.json`: its arguments, and the values
as `tracking.get_params()`, `PX_PARAMS` and the globals give them, so a test can check that every
replica of every trial saw the declarations and the trial's values. The chief logs `accuracy`
and `loss` (the examples' early-stopping metrics): `accuracy` reaches 0.9 only where `param1` is
above 0.5.
"""

import argparse
import json
import os

from jupyter_px import tracking

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, required=True)
parser.add_argument("--lr", type=float, required=True)
parser.add_argument("--dropout", type=float, required=True)
parser.add_argument("--activation")
parser.add_argument("--param1", type=float, default=0.0)
args = parser.parse_args()

params = tracking.get_params()
seen = {
    "args": vars(args),
    "get_params": params,
    "env": json.loads(os.environ.get("PX_PARAMS") or "{}"),
    "globals": {name: globals().get(name) for name in params},
}
role, index = os.environ["PX_TASK_TYPE"], int(os.environ["PX_TASK_INDEX"])
with open(os.path.join(tracking.get_outputs_path(), f"seen-{role}-{index}.json"), "w") as handle:
    json.dump(seen, handle)

if tracking.get_task_info().is_master:
    for step in range(1, 4):
        accuracy = 0.8 + 0.2 * args.param1 * step / 3
        tracking.log_metrics(step=step, accuracy=accuracy, loss=args.lr * args.dropout + 1 / step)
