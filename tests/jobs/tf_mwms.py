"""TensorFlow MultiWorkerMirroredStrategy (chief + worker) with a custom loop (strategy.run).

Each replica writes `<PX_OUTPUTS_PATH>/<role>-<index>.json`: the number of replicas in sync,
a cross-replica sum of (task index + 1) and the model's weights after training, so a test can
check that both took part and that the weights stayed identical.
"""

import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy()
task = json.loads(os.environ["TF_CONFIG"])["task"]

with strategy.scope():
    weights = tf.Variable(tf.zeros([3, 1]), name="w")
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)


@tf.function
def train_step(x, y):
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.matmul(x, weights) - y) ** 2)
        grads = tape.gradient(loss, [weights])
        # MWMS all-reduces the gradients across workers inside apply_gradients.
        optimizer.apply_gradients(zip(grads, [weights], strict=False))
        return loss

    losses = strategy.run(step, args=(x, y))
    return strategy.reduce(tf.distribute.ReduceOp.MEAN, losses, axis=None)


@tf.function
def cross_sum(value):
    return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(lambda: tf.constant(value)), axis=None)


seed = 10 + task["index"] + (100 if task["type"] == "chief" else 0)  # different data per worker
x = tf.random.stateless_normal([16, 3], seed=[seed, 0])
y = tf.reduce_sum(x, axis=1, keepdims=True)
losses = [float(train_step(x, y)) for _ in range(3)]
total = float(cross_sum(float(task["index"] + (0 if task["type"] == "chief" else 1) + 1)))

out = {
    "task": task,
    "replicas_in_sync": strategy.num_replicas_in_sync,
    "cross_sum": total,
    "losses": losses,
    "weights": weights.numpy().flatten().tolist(),
}
outputs = os.environ["PX_OUTPUTS_PATH"]
with open(os.path.join(outputs, f"{os.environ['PX_TASK_TYPE']}-{os.environ['PX_TASK_INDEX']}.json"), "w") as fh:
    json.dump(out, fh)
print(
    f"{task['type']}:{task['index']} in sync {strategy.num_replicas_in_sync}, "
    f"cross sum {total:g}, loss {losses[-1]:.4f}"
)

# A worker that exits right after the last collective can close its gRPC server while the chief
# is still pulling that worker's buffer (`RecvBuf ... Socket closed` fails the chief); nothing in
# MWMS holds it back. So a worker stays up until the chief has written its result.
if task["type"] != "chief":
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(outputs, "master-0.json")) and time.monotonic() < deadline:
        time.sleep(0.05)
