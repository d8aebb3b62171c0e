"""A small, stateful Kubernetes API server for tests (see server.py)."""

from .server import FakeKube, Fault

__all__ = ["FakeKube", "Fault"]
