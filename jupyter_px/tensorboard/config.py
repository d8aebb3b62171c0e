"""Names and settings every part of the TensorBoard package shares (the watchdog entry point too,
which imports nothing else of it)."""

from __future__ import annotations

import math
import os

HOST = "127.0.0.1"
#: The pid of the Jupyter server whose kernels start TensorBoards (set by `jupyter_px.server`):
#: a TensorBoard it proxies ends when that server has gone.
SERVER_PID_ENV = "JUPYTER_PX_SERVER_PID"
#: Seconds without use after which a TensorBoard stops itself (0: never).
IDLE_TIMEOUT_ENV = "JUPYTER_PX_TENSORBOARD_IDLE_TIMEOUT"
DEFAULT_IDLE_TIMEOUT_S = 3600.0
#: How often the watchdog looks (and how often the proxy records use, at most).
WATCH_INTERVAL_S = 2.0
#: What runs TensorBoard under its watchdog: `python -m WATCHDOG_MODULE ...` (see watchdog.py).
WATCHDOG_MODULE = "jupyter_px.tensorboard.watchdog"
#: What the watchdog runs: TensorBoard's main, without TensorFlow unless TENSORFLOW_ENV says so.
SERVE_MODULE = "jupyter_px.tensorboard.serve"
#: "1": TensorBoard starts with TensorFlow where it is installed (see serve.py); else without.
TENSORFLOW_ENV = "JUPYTER_PX_TENSORBOARD_TENSORFLOW"


def tensorflow_setting() -> bool:
    """`$JUPYTER_PX_TENSORBOARD_TENSORFLOW`: whether TensorBoard may import TensorFlow ("1") or
    reads events with its own reader ("0", unset)."""
    text = (os.environ.get(TENSORFLOW_ENV) or "0").strip()
    if text not in ("0", "1"):
        raise ValueError(f"{TENSORFLOW_ENV}: {text!r} is not 0 or 1")
    return text == "1"


def idle_timeout_setting() -> float:
    """`$JUPYTER_PX_TENSORBOARD_IDLE_TIMEOUT` in seconds (0: never), else `DEFAULT_IDLE_TIMEOUT_S`."""
    text = os.environ.get(IDLE_TIMEOUT_ENV)
    if text is None or not text.strip():
        return DEFAULT_IDLE_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{IDLE_TIMEOUT_ENV}: {text!r} is not a number of seconds") from None
    if not math.isfinite(value):
        raise ValueError(f"{IDLE_TIMEOUT_ENV}: {text!r} is not a finite number of seconds (0 means never)")
    if value < 0:
        raise ValueError(f"{IDLE_TIMEOUT_ENV}: {text!r} is negative (0 means never)")
    return value
