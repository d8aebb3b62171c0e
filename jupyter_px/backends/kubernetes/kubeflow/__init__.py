"""`kubeflow`: the training operator's v1 jobs (TFJob, PyTorchJob, MXJob, MPIJob), and
mpi-operator's MPIJob v2beta1.

`manifests.py` renders them (pure); `backend.py` is the backend class. The class is imported on
first use only (`jupyter px render` needs only the manifests)."""
