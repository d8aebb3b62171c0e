"""A sweep trial that takes its value as a script argument (`-- --x={{ x }}`)."""

import sys

from jupyter_px import tracking

x = float(sys.argv[1].split("=", 1)[1])
tracking.log_metrics(step=1, loss=(x - 3) ** 2)
