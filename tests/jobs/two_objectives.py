"""A quick trial with two objectives that pull apart: a larger `x` raises the throughput
(maximized) and the loss (minimized); a larger `y` helps both."""

from jupyter_px import tracking

params = tracking.get_params()
x, y = float(params["x"]), float(params["y"])
for step in range(1, 3):
    tracking.log_metrics(step=step, loss=x**2 + 0.3 * (1 - y) + 1 / step, throughput=100 * x + 20 * y * step)
