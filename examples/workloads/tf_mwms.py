"""Keras on MultiWorkerMirroredStrategy: synchronous data-parallel training across the replicas.

    jupyter px run examples/workloads/tf_mwms.py -f examples/workloads/tf_mwms.yaml --wait -- --size tiny

Every replica gets `TF_CONFIG` (chief + workers); the strategy all-reduces the gradients. The
data is generated from `--seed` (no download): points around class centres, a `tf.data`
pipeline (shuffle with a seed, batch, prefetch) that the strategy shards across the workers.
`model.fit` runs with Keras' TensorBoard callback (into `tracking.get_tensorboard_path()`)
beside a callback that logs every step through `jupyter_px.tracking` and saves this replica's
weights every `--checkpoint-every` steps. Deterministic ops and one intra-op thread: the same
seed gives the same final loss wherever it runs. The last line each replica prints is
`RESULT {json}`.

Keras 2 (`tf_keras`): Keras 3's `model.fit` does not run on MultiWorkerMirroredStrategy (it
fails converting the strategy's per-replica batch to a tensor: keras-team/keras#20585).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# `tf.keras` is Keras 2 too, as TensorFlow says to ask for it; without this `import tensorflow`
# imports Keras 3 as well (and scikit-learn where it is installed): a second or two per replica.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import tensorflow as tf
import tf_keras as keras

from jupyter_px import tracking

SIZES = {
    "tiny": {"train": 1024, "eval": 256, "features": 16, "hidden": 32, "steps": 12, "batch": 64},
    "real": {"train": 65536, "eval": 4096, "features": 64, "hidden": 512, "steps": 400, "batch": 256},
}
CLASSES = 4


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--checkpoint-every", type=int, default=5)
    return parser.parse_args()


def make_points(n: int, features: int, seed: int, split: int) -> tuple[tf.Tensor, tf.Tensor]:
    """`n` points around CLASSES centres (the same for a seed); `split` draws other points."""
    centres = tf.random.stateless_normal([CLASSES, features], seed=[seed, 0], stddev=2.0)
    labels = tf.random.stateless_uniform([n], seed=[seed, 2 * split + 1], maxval=CLASSES, dtype=tf.int32)
    noise = tf.random.stateless_normal([n, features], seed=[seed, 2 * split + 2], stddev=2.0)
    return tf.gather(centres, labels) + noise, labels


class Track(keras.callbacks.Callback):
    """Every step into jupyter_px.tracking; this replica's weights every `every` steps."""

    def __init__(self, total: int, every: int, folder: str, global_batch: int):
        super().__init__()
        self.total, self.every, self.folder, self.global_batch = total, every, folder, global_batch
        self.step = 0
        self.started = time.perf_counter()

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self.step += 1
        logs = logs or {}
        elapsed = time.perf_counter() - self.started
        tracking.log_metrics(
            step=self.step,
            total_steps=self.total,
            loss=float(logs["loss"]),
            accuracy=float(logs["accuracy"]),
            samples_per_s=self.global_batch / elapsed,
        )
        self.started = time.perf_counter()
        if self.step % self.every == 0 or self.step == self.total:
            self.model.save_weights(os.path.join(self.folder, f"step-{self.step:06d}.weights.h5"))


def main() -> None:
    args = parse_args()
    size = SIZES[args.size]
    steps = args.steps or size["steps"]
    tf.config.threading.set_intra_op_parallelism_threads(1)
    keras.utils.set_random_seed(args.seed)
    tf.config.experimental.enable_op_determinism()

    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # the cluster from TF_CONFIG
    resolver = strategy.cluster_resolver
    task = f"{resolver.task_type}-{resolver.task_id}"
    world = strategy.num_replicas_in_sync

    x, y = make_points(size["train"], size["features"], args.seed, split=0)
    train = (
        tf.data.Dataset.from_tensor_slices((x, y))
        .shuffle(size["train"], seed=args.seed)
        .repeat()
        .batch(size["batch"], drop_remainder=True)  # the global batch: the strategy splits it
        .prefetch(2)
    )
    ex, ey = make_points(size["eval"], size["features"], args.seed, split=1)
    held_out = tf.data.Dataset.from_tensor_slices((ex, ey)).batch(size["batch"], drop_remainder=True)

    with strategy.scope():
        model = keras.Sequential(
            [
                keras.layers.Dense(size["hidden"], activation="relu", input_shape=(size["features"],)),
                keras.layers.Dense(size["hidden"], activation="relu"),
                keras.layers.Dense(CLASSES),
            ]
        )
        warmup = max(1, steps // 10)
        schedule = keras.optimizers.schedules.CosineDecay(1e-3, steps - warmup, warmup_target=1e-2, warmup_steps=warmup)
        model.compile(
            optimizer=keras.optimizers.AdamW(schedule),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
        # the loss and accuracy a step reports are already the global ones on every replica;
        # Keras 2's default ("auto": "sum" off TPUs) would add them up over the workers
        model.distribute_reduction_method = "first"

    folder = os.path.join(tracking.get_outputs_path(), "checkpoints", task)
    os.makedirs(folder, exist_ok=True)
    tracking.log_params(size=args.size, seed=args.seed, replicas=world)
    callbacks = [
        keras.callbacks.TensorBoard(log_dir=tracking.get_tensorboard_path(), update_freq=1),
        Track(steps, args.checkpoint_every, folder, size["batch"]),
    ]
    model.fit(train, epochs=1, steps_per_epoch=steps, callbacks=callbacks, verbose=0)
    eval_loss, eval_accuracy = model.evaluate(held_out, verbose=0)
    tracking.log_metrics(step=steps, eval_loss=eval_loss, eval_accuracy=eval_accuracy)
    result = {"task": task, "replicas": world, "steps": steps, "eval_loss": eval_loss, "eval_accuracy": eval_accuracy}
    print("RESULT " + json.dumps(result), flush=True)
    if resolver.task_type != "chief":
        outlive_the_chief(resolver)


def outlive_the_chief(resolver: tf.distribute.cluster_resolver.ClusterResolver, limit_s: float = 60.0) -> None:
    """A worker that exits right after the last collective can fail the chief, still reading
    from it (RecvBuf: "Connection reset by peer"), and nothing in the strategy holds it back: it
    stays until the chief's server is gone."""
    host, port = resolver.cluster_spec().task_address("chief", 0).rsplit(":", 1)
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
        except OSError:
            return
        time.sleep(0.1)


if __name__ == "__main__":
    main()
