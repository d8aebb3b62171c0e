"""`python -m jupyter_px.tensorboard.serve ARGS`: TensorBoard's own `main`, without TensorFlow.

TensorBoard imports TensorFlow whenever it is installed, which a notebook environment that trains
with Keras has: that is most of a TensorBoard's start (`benchmarks/bench_tensorboard_start.py`: a
run's first scalars 4.1 s after the start against 0.8 s, 4.25 s of CPU against 0.8 s) and some
500 MB more memory, for nothing jupyter-px shows. Its runs' logdirs are local folders of event files, which
TensorBoard's own reader (`tensorboard.compat.tensorflow_stub`) reads as TensorFlow's does, for
every plugin that reads events (scalars, histograms, distributions, images, text, graphs, hparams,
PR curves, custom scalars).

TensorBoard has a switch for this: where a module `tensorboard.compat.notf` can be imported (its
builds without TensorFlow ship one), its lazy `tensorboard.compat.tf` is the stub and TensorFlow is
never imported. This entry point registers that module, then hands over to `tensorboard.main`.

What needs TensorFlow itself: the projector's embeddings read from checkpoints, and logdirs on
filesystems only TensorFlow reaches (HDFS, for one). `JUPYTER_PX_TENSORBOARD_TENSORFLOW=1` starts
TensorBoard with TensorFlow, as `python -m tensorboard.main` would.
"""

from __future__ import annotations

import sys
import types

from .config import tensorflow_setting

#: The module whose presence makes TensorBoard use its own reader instead of TensorFlow's.
NO_TENSORFLOW = "tensorboard.compat.notf"


def main(argv: list[str]) -> None:
    if not tensorflow_setting():
        sys.modules[NO_TENSORFLOW] = types.ModuleType(NO_TENSORFLOW)
    from tensorboard import main as tensorboard_main

    sys.argv = ["tensorboard", *argv]
    tensorboard_main.run_main()


if __name__ == "__main__":
    main(sys.argv[1:])
