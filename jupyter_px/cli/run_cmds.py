"""`jupyter px run/runs/status/logs/stop` (being built)."""


def register(commands) -> None:
    return None
