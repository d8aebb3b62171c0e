"""What a submitted run keeps about its cluster objects, in its run directory.

`kubernetes.json` (written once by submit) lets any process (the follower, `stop`, another
kernel) find the run's objects again; `kubernetes-stop` asks the follower to finish as Stopped;
`follower/<replica>.json` is the follower's resume point per replica. Who follows the run is not
here: it is the run's owner in status.json (pid and creation time, recorded by its starter).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from .... import backend_table
from ....runstore import atomic_write_json
from ...followed import FollowerSpec
from .resources import Kind, kind_of

HANDLE_FILE = "kubernetes.json"
STOP_FILE = "kubernetes-stop"
FOLLOWER_DIR = "follower"
FOLLOWER_LOG = "follower.log"
#: The run's follower: its module, the handshake's files (`backends/followed.py`).
FOLLOWER = FollowerSpec(
    module="jupyter_px.backends.kubernetes.follower",
    handle=HANDLE_FILE,
    stop=STOP_FILE,
    log=FOLLOWER_LOG,
    start_lock=f"{FOLLOWER_DIR}/.start.lock",
    lock=f"{FOLLOWER_DIR}/.lock",
)


@dataclass(frozen=True)
class RunHandle:
    backend: str  # native, kubeflow, kubeflow-trainer
    namespace: str
    base: str  # object name base; every object carries the run label with it
    context: str | None
    host: str
    job_kind: str | None = None  # TFJob, ..., TrainJob; None for native
    #: the job's apiVersion as rendered (an MPIJob is kubeflow.org/v1 or mpi-operator's v2beta1);
    #: None in handles of older versions: the kind's usual version
    job_api_version: str | None = None

    def job(self) -> Kind | None:
        """The run's job kind at the API version it was created with (None for native)."""
        if not self.job_kind:
            return None
        return kind_of({"kind": self.job_kind, "apiVersion": self.job_api_version})

    def save(self, run_dir: Path) -> None:
        atomic_write_json(run_dir / HANDLE_FILE, asdict(self))

    @classmethod
    def load(cls, run_dir: Path) -> RunHandle:
        fields = json.loads((run_dir / HANDLE_FILE).read_text())
        fields["backend"] = backend_table.canonical(fields.get("backend"))  # `kubernetes`: older versions' native
        return cls(**fields)
