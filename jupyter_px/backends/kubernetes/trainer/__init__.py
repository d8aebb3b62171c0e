"""`kubeflow-trainer`: one Kubeflow Trainer v2 TrainJob on a training runtime.

`manifests.py` renders it (pure); `backend.py` is the backend class. The class is imported on
first use only (`jupyter px render` needs only the manifests)."""
