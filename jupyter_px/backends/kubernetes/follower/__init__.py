"""The follower: `python -m jupyter_px.backends.kubernetes.follower RUN_DIR` per run, or a
Jupyter server's followers, one watch per namespace.

`follower.py` is the follower (watch the run's pods, write its status); `feeds.py` where its pod
events come from (a watch of its own, or its share of `namespace_watch.py`'s); `host.py` a Jupyter
server's followers (taken from their own followers with `handover.py`, given back when it stops);
`log_sink.py` stores one replica's log, resumable by time; `log_streams.py` decides whose logs
are read, and when; `tensorboard_events.py` turns the logs' metrics into event files. It imports
neither the runner nor tracking (a contract in pyproject.toml): it needs the store and the
cluster only."""
