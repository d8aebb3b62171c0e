"""jupyter-px: distributed training from a notebook."""

__version__ = "0.1.0"
