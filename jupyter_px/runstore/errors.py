"""What the store says when an entry cannot be had: none by that id or name, a damaged one, or a
store folder that cannot be one. Every surface reports these as one line, never a traceback."""

from __future__ import annotations


class RunNotFound(KeyError):
    def __str__(self) -> str:  # KeyError quotes its argument; a message reads better
        return str(self.args[0])


class StoreUnusable(ValueError):
    """The run store's folder cannot be one: `$PX_HOME` (or its `runs/`) names a file, not a
    folder. One line naming the setting and the path; every command reports it before it acts."""


class RunDamaged(ValueError):
    """A run directory whose record or status is missing or unreadable (a crash, a full disk,
    a hand edit). Its message is one line naming the run and the damage; listings skip the run,
    commands that need it report the message instead of a traceback."""

    def __init__(self, run_id: str, what: str):
        self.run_id = run_id
        self.what = what
        super().__init__(f"run {run_id} is damaged: {what}")
