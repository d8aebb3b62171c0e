"""What a replica's process inherits, recorded for tests/test_warm_inherits.py: each replica
writes `<PX_OUTPUTS_PATH>/<role>-<index>.json` (its random draws, time zone, niceness, limits,
umask, locale and thread pools)."""

import json
import locale
import os
import random
import resource
import time

import numpy
import torch

ME = f"{os.environ['PX_TASK_TYPE']}-{os.environ['PX_TASK_INDEX']}"
umask = os.umask(0)
os.umask(umask)
record = {
    "torch_seed": torch.initial_seed(),
    "torch_draw": torch.rand(3).tolist(),
    "numpy_draw": numpy.random.rand(3).tolist(),
    "random_draw": random.random(),
    "tzname": list(time.tzname),
    "utc_offset": time.strftime("%z", time.localtime()),
    "nice": os.getpriority(os.PRIO_PROCESS, 0),
    "nofile": list(resource.getrlimit(resource.RLIMIT_NOFILE)),
    "umask": umask,
    "lc_ctype": locale.setlocale(locale.LC_CTYPE),
    "omp": os.environ.get("OMP_NUM_THREADS"),
    "mkl": os.environ.get("MKL_NUM_THREADS"),
    "torch_threads": torch.get_num_threads(),
}
with open(os.path.join(os.environ["PX_OUTPUTS_PATH"], f"{ME}.json"), "w") as handle:
    json.dump(record, handle)
