"""A sweep trial that diverges for x = 2: its loss becomes infinite (and NaN for x = 4)."""

import math

from jupyter_px import tracking

x = tracking.get_params()["x"]
for step in range(1, 4):
    loss = {2: math.inf, 4: math.nan}.get(x, (x - 3) ** 2 + 1 / step) if step > 1 else 10.0
    tracking.log_metrics(step=step, loss=loss)
