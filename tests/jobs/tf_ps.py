"""TensorFlow ParameterServerStrategy: chief (coordinator) + 2 workers + 1 ps.

Workers and the parameter server only run a `tf.distribute.Server` and wait; the chief creates
the variables on the ps and schedules steps on the workers with a ClusterCoordinator. The
chief writes `<PX_OUTPUTS_PATH>/chief.json` with the count of steps run and the variable's
value, which equals that count (each step adds 1), so a test can check the work was done.
"""

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # no Keras 3 imported with TensorFlow: 1-2 s of CPU

import tensorflow as tf

STEPS = 6
resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()

if resolver.task_type in ("worker", "ps"):
    server = tf.distribute.Server(
        resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id, protocol="grpc", start=True
    )
    print(f"{resolver.task_type}:{resolver.task_id} serving", flush=True)
    server.join()  # stopped by the backend when the chief is done

strategy = tf.distribute.ParameterServerStrategy(resolver)
coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
with strategy.scope():
    counter = tf.Variable(0.0, name="counter")


@tf.function
def step():
    counter.assign_add(1.0)
    return tf.constant(1.0)


results = [coordinator.schedule(step) for _ in range(STEPS)]
coordinator.join()
done = sum(float(r.fetch()) for r in results)
out = {
    "steps": done,
    "counter": float(counter.numpy()),
    "workers": strategy.extended._num_workers,
    "ps": len(resolver.cluster_spec().as_dict().get("ps", [])),
}
with open(os.path.join(os.environ["PX_OUTPUTS_PATH"], "chief.json"), "w") as fh:
    json.dump(out, fh)
print(f"chief: {done:g} steps, counter {out['counter']:g}", flush=True)
