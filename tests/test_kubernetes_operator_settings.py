"""Settings the operators' backends read: checked values, pinned default images."""

from __future__ import annotations

import pytest

from jupyter_px.backends.base import BackendError
from jupyter_px.backends.kubernetes.shared.settings import DEFAULT_IMAGES, GPU_IMAGES, KubernetesSettings, load_settings


@pytest.fixture(autouse=True)
def no_settings_file(tmp_path, monkeypatch):
    monkeypatch.setenv("PX_K8S_CONFIG", str(tmp_path / "none.yaml"))


def test_every_default_image_is_pinned():
    for framework, image in {**DEFAULT_IMAGES, **GPU_IMAGES}.items():
        name, _, tag = image.rpartition(":")
        assert name and tag and tag != "latest", (framework, image)


def test_a_replica_with_gpus_gets_the_frameworks_gpu_image_unless_one_is_named():
    settings = KubernetesSettings()
    assert settings.image_for("tensorflow", None, gpus=True).endswith("-gpu")
    assert not settings.image_for("tensorflow", None).endswith("-gpu")
    assert settings.image_for("tensorflow", "mine:1", gpus=True) == "mine:1"
    assert settings.image_for("mxnet", None) != DEFAULT_IMAGES[None], "a bare python image has no mxnet"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("PX_K8S_CLEAN_POD_POLICY", "Sometimes", "clean_pod_policy: 'Sometimes' is not one of Running, All, None"),
        ("PX_K8S_TRAINER_VERSION", "v3", "trainer_version: 'v3' is not one of auto, v2.2, v2.1, v2.0"),
        ("PX_K8S_MPIJOB_VERSION", "v2", "mpijob_version: 'v2' is not one of auto, v1, v2beta1"),
        ("PX_K8S_RESTRICTED_SECURITY_CONTEXT", "maybe", "'maybe' is not true or false"),
    ],
)
def test_a_bad_setting_names_itself_and_its_value(monkeypatch, name, value, message):
    monkeypatch.setenv(name, value)
    with pytest.raises(BackendError, match=message):
        load_settings()


def test_defaults_clean_up_and_restrict(monkeypatch):
    settings = load_settings()
    assert settings.clean_pod_policy == "None"  # the operators' default; the follower deletes what still runs
    assert settings.restricted_security_context is True
    monkeypatch.setenv("PX_K8S_RESTRICTED_SECURITY_CONTEXT", "off")
    assert load_settings().restricted_security_context is False
