"""`native`: plain Pods, one headless Service per run, the ConfigMap with the code.

`manifests.py` renders them (pure); `backend.py` is the backend class. The class is imported on
first use only (`jupyter px render` needs only the manifests)."""
