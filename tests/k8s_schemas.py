"""Offline validation of rendered manifests: core objects with kubernetes-validate (strict),
Kubeflow objects against the CRDs' openAPIV3Schema in ../shared/schemas (jsonschema).

The CRDs live beside the repository (`../shared/schemas/`); when they are missing the tests
fail, because a test that validates nothing must not pass.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

#: `../shared/schemas` beside the repository (as CI lays it out); PX_SHARED_DIR moves `shared/`.
SCHEMAS = Path(os.environ.get("PX_SHARED_DIR") or Path(__file__).resolve().parents[1].parent / "shared") / "schemas"
KUBERNETES_VERSION = "1.37.0"

CRD_FILES = {
    ("kubeflow.org/v1", "TFJob"): "kubeflow/kubeflow.org_tfjobs.yaml",
    ("kubeflow.org/v1", "PyTorchJob"): "kubeflow/kubeflow.org_pytorchjobs.yaml",
    ("kubeflow.org/v1", "MXJob"): "kubeflow/kubeflow.org_mxjobs.yaml",
    ("kubeflow.org/v1", "MPIJob"): "kubeflow/kubeflow.org_mpijobs.yaml",
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"): "kubeflow-trainer/trainer.kubeflow.org_trainjobs.yaml",
}


@functools.cache
def crd_validator(api_version: str, kind: str) -> jsonschema.protocols.Validator:
    path = SCHEMAS / CRD_FILES[(api_version, kind)]
    if not path.is_file():
        raise AssertionError(f"CRD schema {path} is missing: clone shared/ beside the repository")
    crd = yaml.safe_load(path.read_text())
    version = api_version.rsplit("/", 1)[1]
    (schema,) = [v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"] if v["name"] == version]
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    return cls(schema)


def pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod templates inside a Kubeflow job (validated strictly as core PodTemplates)."""
    spec = obj["spec"]
    if obj["kind"] == "TrainJob":
        out = []
        for patch in spec.get("runtimePatches", []):
            for job in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
                out.append(job["template"]["spec"]["template"])
        return out
    (replica_specs,) = [v for k, v in spec.items() if k.endswith("ReplicaSpecs")]
    return [r["template"] for r in replica_specs.values()]


def validate(obj: dict[str, Any]) -> None:
    """Raise if the object is not valid for the API server (as far as offline schemas tell)."""
    key = (obj["apiVersion"], obj["kind"])
    if key in CRD_FILES:
        errors = sorted(crd_validator(*key).iter_errors(obj), key=lambda e: list(e.path))
        assert not errors, f"{obj['kind']} {obj['metadata']['name']}: " + "; ".join(
            f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:5]
        )
        if obj["kind"] != "TrainJob":  # TrainJob patches hold partial containers (no image) by design
            for template in pod_templates(obj):
                kubernetes_validate.validate(
                    {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": template},
                    KUBERNETES_VERSION,
                    strict=True,
                )
    else:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
