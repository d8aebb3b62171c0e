"""What the three Kubernetes backends (`native/`, `kubeflow/`, `trainer/`) share: names, settings,
the payload ConfigMap, the cluster file, pod template pieces, render and dry run, the client,
preflight, per-kind API calls, all-or-nothing create, cleanup, the run's handle, which pod is which
replica, pod states, and `KubernetesBackend`, the base of the three (the package's docstring says
more of each). Kept in a folder of its own beside the backends' folders, so that the
`kubernetes/` folder reads as its siblings do: one folder per backend, plus what they share.
"""
