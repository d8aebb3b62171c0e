"""A quick sweep trial without a framework: logs `loss = (x - 3)**2 + 1/step` for a few steps."""

from jupyter_px import tracking

x = tracking.get_params()["x"]
for step in range(1, 4):
    tracking.log_metrics(step=step, loss=(x - 3) ** 2 + 1 / step)
