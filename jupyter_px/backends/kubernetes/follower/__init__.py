"""The per-run follower: `python -m jupyter_px.backends.kubernetes.follower RUN_DIR`.

`follower.py` is the process (watch the run's pods, write its status); `log_sink.py` stores one
replica's log, resumable by time; `log_streams.py` decides whose logs are read, and when;
`tensorboard_events.py` turns the logs' metrics into event files. It imports neither the runner
nor tracking (a contract in pyproject.toml): it needs the store and the cluster only."""
