"""What runs inside a run's pods, not in this process: `entry.py`, shipped in the run's
ConfigMap as `lib/px_entry.py` (`payload.py`). Standard library and the shipped `jupyter_px`
modules only: the image needs Python and the framework, not jupyter_px."""
