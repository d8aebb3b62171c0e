"""Keras `model.fit` on ParameterServerStrategy: a chief, workers and parameter servers.

    jupyter px run examples/workloads/tf_ps.py -f examples/workloads/tf_ps.yaml --wait -- --size tiny

The topology is the seeds' (`framework: tensorflow`, `n_workers`, `n_ps`): every replica gets
`TF_CONFIG`. The workers and the parameter servers only run a `tf.distribute.Server`; the chief
holds the model, whose variables live on the parameter servers, and `model.fit` schedules the
steps on whichever worker is free (a `ClusterCoordinator` inside Keras). The run succeeds when
the chief does (Kubeflow's rule), which then stops the servers.

Parameter-server training is Keras 2's (`tf_keras`): Keras 3 does not support it. The data is
generated from `--seed` (no download), read through `tf.data` on each worker. `model.fit` runs
with Keras' TensorBoard callback beside a callback that logs every step through
`jupyter_px.tracking` and checkpoints the model (from the parameter servers) every
`--checkpoint-every` steps. The updates are asynchronous, so the final loss depends on which
worker ran which step: it falls, but is not the same from run to run. The chief's last line is
`RESULT {json}`.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# `tf.keras` is Keras 2 too, as TensorFlow says to ask for it; without this `import tensorflow`
# imports Keras 3 as well (and scikit-learn where it is installed): a second or two per replica.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import tensorflow as tf
import tf_keras as keras

from jupyter_px import tracking

SIZES = {
    # steps per epoch: Keras calls a callback at an epoch's end only, on parameter servers
    "tiny": {"train": 1024, "eval": 256, "features": 16, "hidden": 32, "steps": 12, "batch": 32, "per_epoch": 1},
    "real": {"train": 65536, "eval": 4096, "features": 64, "hidden": 512, "steps": 400, "batch": 256, "per_epoch": 10},
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
    """Every epoch's end into jupyter_px.tracking (batch-level callbacks do not run on parameter
    servers: the steps run on the workers); the model's checkpoint every `every` steps."""

    def __init__(self, total: int, per_epoch: int, every: int, folder: str, batch: int):
        super().__init__()
        self.total, self.per_epoch, self.every, self.folder, self.batch = total, per_epoch, every, folder, batch
        self.started = time.perf_counter()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        step = (epoch + 1) * self.per_epoch
        logs = logs or {}
        elapsed = time.perf_counter() - self.started
        tracking.log_metrics(
            step=step,
            total_steps=self.total,
            loss=float(logs["loss"]),
            accuracy=float(logs["accuracy"]),
            samples_per_s=self.batch * self.per_epoch / elapsed,
        )
        self.started = time.perf_counter()
        if step % self.every == 0 or step == self.total:
            self.model.save_weights(os.path.join(self.folder, f"step-{step:06d}", "weights"))


def serve(resolver: tf.distribute.cluster_resolver.TFConfigClusterResolver) -> None:
    """A worker or a parameter server: serve the chief until the run stops us."""
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=resolver.task_type,
        task_index=resolver.task_id,
        protocol="grpc",
        start=True,
    )
    print(f"{resolver.task_type} {resolver.task_id} serving", flush=True)
    server.join()


def main() -> None:
    args = parse_args()
    size = SIZES[args.size]
    steps = args.steps or size["steps"]
    tf.keras.utils.set_random_seed(args.seed)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.task_type in ("worker", "ps"):
        serve(resolver)
        return

    strategy = tf.distribute.ParameterServerStrategy(resolver)

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        x, y = make_points(size["train"], size["features"], args.seed, split=0)
        dataset = tf.data.Dataset.from_tensor_slices((x, y))
        dataset = dataset.shard(context.num_input_pipelines, context.input_pipeline_id)
        return dataset.shuffle(size["train"], seed=args.seed).repeat().batch(size["batch"]).prefetch(2)

    with strategy.scope():
        model = keras.Sequential(
            [
                keras.layers.Dense(size["hidden"], activation="relu", input_shape=(size["features"],)),
                keras.layers.Dense(size["hidden"], activation="relu"),
                keras.layers.Dense(CLASSES),
            ]
        )
        schedule = keras.optimizers.schedules.CosineDecay(1e-2, decay_steps=steps)
        model.compile(
            optimizer=keras.optimizers.legacy.Adam(schedule),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )

    folder = os.path.join(tracking.get_outputs_path(), "checkpoints", "chief-0")
    tracking.log_params(size=args.size, seed=args.seed, workers=strategy.extended._num_workers)
    callbacks = [
        keras.callbacks.TensorBoard(log_dir=tracking.get_tensorboard_path()),
        Track(steps, size["per_epoch"], args.checkpoint_every, folder, size["batch"]),
    ]
    train = keras.utils.experimental.DatasetCreator(dataset_fn)
    epochs = max(1, steps // size["per_epoch"])
    model.fit(train, epochs=epochs, steps_per_epoch=size["per_epoch"], callbacks=callbacks, verbose=0)

    ex, ey = make_points(size["eval"], size["features"], args.seed, split=1)
    logits = model(ex, training=False)  # on the chief, with the variables from the parameter servers
    eval_loss = float(keras.losses.SparseCategoricalCrossentropy(from_logits=True)(ey, logits))
    eval_accuracy = float(tf.reduce_mean(tf.cast(tf.argmax(logits, 1, output_type=tf.int32) == ey, tf.float32)))
    tracking.log_metrics(step=steps, eval_loss=eval_loss, eval_accuracy=eval_accuracy)
    result = {"task": "chief-0", "steps": steps, "eval_loss": eval_loss, "eval_accuracy": eval_accuracy}
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
