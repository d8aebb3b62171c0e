"""Offline validation of rendered manifests: core objects with kubernetes-validate (strict),
Kubeflow objects against the CRDs' openAPIV3Schema (jsonschema), from the copies in
`tests/data/crds/` (see its README for where each came from).
"""

from __future__ import annotations

import functools
import gzip
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

#: The CRDs, gzip-compressed, with their upstream origin in README.md.
CRDS = Path(__file__).parent / "data" / "crds"
KUBERNETES_VERSION = "1.37.0"

CRD_FILES = {
    ("kubeflow.org/v1", "TFJob"): "kubeflow.org_tfjobs.yaml.gz",
    ("kubeflow.org/v1", "PyTorchJob"): "kubeflow.org_pytorchjobs.yaml.gz",
    ("kubeflow.org/v1", "MXJob"): "kubeflow.org_mxjobs.yaml.gz",
    ("kubeflow.org/v1", "MPIJob"): "kubeflow.org_mpijobs.yaml.gz",
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"): "trainer.kubeflow.org_trainjobs.yaml.gz",
}


def crd_text(file_name: str) -> str:
    """A CRD's YAML text, from its compressed copy."""
    return gzip.decompress((CRDS / file_name).read_bytes()).decode()


@functools.cache
def crd_validator(api_version: str, kind: str) -> jsonschema.protocols.Validator:
    crd = yaml.load(crd_text(CRD_FILES[(api_version, kind)]), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
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
