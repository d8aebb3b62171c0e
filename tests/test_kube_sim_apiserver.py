"""The simulated API server's rules, each against what the real one answers (the upstream file is
cited beside the rule in tests/kube_sim/). Through the official client over HTTP where the wire
shape matters; in-process where a controller's timing must be stepped (garbage collection)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest
import urllib3
from kube_sim import ApiError, Cluster
from kube_sim.gc import GarbageCollector
from kube_sim.scheduling import bind
from kube_sim_support import core_api, fresh_namespace, wait_for
from kubernetes import client, config, watch

pytestmark = pytest.mark.kube  # the simulated cluster: HTTP servers, controllers, processes


def pod(name: str, labels: dict[str, str] | None = None, **spec) -> dict:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "main", "image": "python:3.11"}], **spec},
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with Cluster(namespaces=("default", "ml"), controllers=()) as sim:
        yield sim


@pytest.fixture
def ns(cluster, request):
    """A fresh namespace per test (names from the test), so tests do not see each other."""
    return fresh_namespace(cluster, request.node.name, "t")


@pytest.fixture
def core(cluster, tmp_path):
    yield from core_api(cluster, tmp_path)


@pytest.fixture
def custom(cluster, tmp_path):
    api_client = config.new_client_from_config(cluster.kubeconfig(tmp_path / "kubeconfig-custom"))
    yield client.CustomObjectsApi(api_client)
    api_client.close()


def http(cluster, method: str, path: str, body=None, content_type="application/json"):
    """A raw request: (code, headers, parsed body)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        cluster.url + path, data=data, method=method, headers={"Content-Type": content_type}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.headers, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, error.headers, json.loads(error.read() or b"null")


# ---- validation ---------------------------------------------------------------------------------


def test_pod_defaults_match_the_api_servers(core, ns):
    created = core.create_namespaced_pod(ns, pod("p"))
    spec = created.spec
    assert (spec.restart_policy, spec.dns_policy, spec.termination_grace_period_seconds) == (
        "Always",
        "ClusterFirst",
        30,
    )
    assert spec.service_account_name == "default" and spec.scheduler_name == "default-scheduler"
    assert spec.containers[0].termination_message_path == "/dev/termination-log"
    assert spec.containers[0].image_pull_policy == "IfNotPresent"  # a tag other than latest
    assert {t.key for t in spec.tolerations} == {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
    assert created.status.phase == "Pending" and created.status.qos_class == "BestEffort"
    assert created.metadata.uid and created.metadata.generation == 1


def test_an_invalid_pod_gets_422_invalid_with_one_cause_per_field(core, ns):
    bad = pod("Bad_Name", restartPolicy="Sometimes")
    bad["spec"]["containers"][0].pop("image")
    with pytest.raises(client.ApiException) as caught:
        core.create_namespaced_pod(ns, bad)
    assert caught.value.status == 422
    status = json.loads(caught.value.body)
    assert status["reason"] == "Invalid" and status["details"]["kind"] == "Pod"
    assert status["message"].startswith(
        'Pod "Bad_Name" is invalid: [metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain'
    )
    assert [(c["reason"], c["field"]) for c in status["details"]["causes"]] == [
        ("FieldValueInvalid", "metadata.name"),
        ("FieldValueRequired", "spec.containers[0].image"),
        ("FieldValueNotSupported", "spec.restartPolicy"),
    ]
    assert status["details"]["causes"][2]["message"] == (
        'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'
    )


def test_a_single_error_message_is_not_bracketed(core, ns):
    with pytest.raises(client.ApiException) as caught:
        core.create_namespaced_pod(
            ns,
            {
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "a", "image": "x"}]},
            },
        )
    assert (
        json.loads(caught.value.body)["message"] == 'Pod "p" is invalid: spec.containers[1].name: Duplicate value: "a"'
    )


def test_unknown_core_fields_are_dropped_with_a_warning_or_refused_when_strict(cluster, ns):
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1"}, "datum": 1}
    code, headers, created = http(cluster, "POST", f"/api/v1/namespaces/{ns}/configmaps", body)
    assert code == 201 and "datum" not in created
    assert headers["Warning"] == '299 - "unknown field \\"datum\\""'
    body["metadata"]["name"] = "cm2"
    code, _, status = http(cluster, "POST", f"/api/v1/namespaces/{ns}/configmaps?fieldValidation=Strict", body)
    assert (code, status["reason"], status["message"]) == (
        400,
        "BadRequest",
        'strict decoding error: unknown field "datum"',
    )


def test_a_wrongly_typed_core_field_is_a_400_decode_error(cluster, ns):
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "a", "image": 7}]},
    }
    code, _, status = http(cluster, "POST", f"/api/v1/namespaces/{ns}/pods", body)
    assert code == 400 and status["message"].startswith(
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal integer'
    )


def pytorchjob(name: str, **extra) -> dict:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": {"spec": {"containers": [{"name": "pytorch", "image": "i"}]}}}
            },
            **extra,
        },
    }


def test_custom_resources_are_pruned_and_defaulted_silently(custom, ns):
    job = pytorchjob("j", runPolicy={"cleanPodPolicy": "None"}, unknownField={"x": 1})
    job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["metadata"] = {"labels": {"a": "b"}, "bogus": 1}
    created = custom.create_namespaced_custom_object("kubeflow.org", "v1", ns, "pytorchjobs", job)
    assert "unknownField" not in created["spec"]
    assert created["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["metadata"] == {"labels": {"a": "b"}}
    assert created["spec"]["runPolicy"]["suspend"] is False  # the CRD's `default: false`
    assert "status" not in created  # the status subresource: a create ignores status


def test_a_custom_resource_of_the_wrong_type_is_invalid_like_apiextensions_says(custom, ns):
    job = pytorchjob("j")
    job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = "one"
    with pytest.raises(client.ApiException) as caught:
        custom.create_namespaced_custom_object("kubeflow.org", "v1", ns, "pytorchjobs", job)
    status = json.loads(caught.value.body)
    assert status["message"] == (
        'PyTorchJob.kubeflow.org "j" is invalid: spec.pytorchReplicaSpecs.Master.replicas: Invalid value: "string": '
        'spec.pytorchReplicaSpecs.Master.replicas in body must be of type integer: "string"'
    )
    assert status["details"] == {
        "name": "j",
        "kind": "PyTorchJob",
        "group": "kubeflow.org",
        "causes": [
            {
                "reason": "FieldValueTypeInvalid",
                "field": "spec.pytorchReplicaSpecs.Master.replicas",
                "message": 'Invalid value: "string": spec.pytorchReplicaSpecs.Master.replicas in body '
                'must be of type integer: "string"',
            }
        ],
    }


def test_a_missing_required_custom_field(custom, ns):
    job = pytorchjob("j")
    del job["spec"]["pytorchReplicaSpecs"]
    with pytest.raises(client.ApiException) as caught:
        custom.create_namespaced_custom_object("kubeflow.org", "v1", ns, "pytorchjobs", job)
    assert (
        json.loads(caught.value.body)["message"]
        == 'PyTorchJob.kubeflow.org "j" is invalid: spec.pytorchReplicaSpecs: Required value'
    )


# ---- versions, conflicts, status ----------------------------------------------------------------


def test_updates_need_the_current_resource_version(core, ns):
    created = core.create_namespaced_config_map(ns, {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    created.data = {"a": "2"}
    updated = core.replace_namespaced_config_map("cm", ns, created)
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
    created.data = {"a": "3"}  # still the old version
    with pytest.raises(client.ApiException) as caught:
        core.replace_namespaced_config_map("cm", ns, created)
    assert caught.value.status == 409
    assert json.loads(caught.value.body)["message"] == (
        'Operation cannot be fulfilled on configmaps "cm": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def test_the_status_subresource_separates_spec_and_status_writes(custom, ns):
    custom.create_namespaced_custom_object("kubeflow.org", "v1", ns, "pytorchjobs", pytorchjob("j"))
    custom.patch_namespaced_custom_object_status(
        "kubeflow.org",
        "v1",
        ns,
        "pytorchjobs",
        "j",
        {"status": {"conditions": [{"type": "Created", "status": "True"}]}},
    )
    patched = custom.patch_namespaced_custom_object(
        "kubeflow.org",
        "v1",
        ns,
        "pytorchjobs",
        "j",
        {"status": {"conditions": []}, "spec": {"runPolicy": {"backoffLimit": 2}}},
    )
    assert patched["status"]["conditions"][0]["type"] == "Created"  # the main resource leaves status alone
    assert patched["spec"]["runPolicy"]["backoffLimit"] == 2 and patched["metadata"]["generation"] == 2


def test_a_pods_spec_is_immutable_except_images(cluster, core, ns):
    core.create_namespaced_pod(ns, pod("p"))
    with pytest.raises(client.ApiException) as caught:
        core.patch_namespaced_pod("p", ns, {"spec": {"restartPolicy": "Never"}})
    status = json.loads(caught.value.body)
    assert status["details"]["causes"][0]["reason"] == "FieldValueForbidden"
    assert "pod updates may not change fields other than `spec.containers[*].image`" in status["message"]
    core.patch_namespaced_pod("p", ns, {"spec": {"containers": [{"name": "main", "image": "python:3.12"}]}})


# ---- lists and watches --------------------------------------------------------------------------


def test_lists_page_with_limit_and_continue_over_one_snapshot(core, ns):
    for i in range(5):
        core.create_namespaced_config_map(ns, {"metadata": {"name": f"cm-{i}"}})
    first = core.list_namespaced_config_map(ns, limit=2)
    assert [c.metadata.name for c in first.items] == ["cm-0", "cm-1"]
    assert first.metadata.remaining_item_count == 3
    core.delete_namespaced_config_map("cm-3", ns)  # after the snapshot: the pages still show it
    second = core.list_namespaced_config_map(ns, limit=2, _continue=first.metadata._continue)
    third = core.list_namespaced_config_map(ns, limit=2, _continue=second.metadata._continue)
    assert [c.metadata.name for c in second.items + third.items] == ["cm-2", "cm-3", "cm-4"]
    assert third.metadata._continue is None
    assert second.metadata.resource_version == first.metadata.resource_version


def test_a_continue_token_older_than_compaction_is_410_expired(cluster, core, ns):
    for i in range(3):
        core.create_namespaced_config_map(ns, {"metadata": {"name": f"cm-{i}"}})
    first = core.list_namespaced_config_map(ns, limit=1)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "later"}})
    cluster.api.compact()
    with pytest.raises(client.ApiException) as caught:
        core.list_namespaced_config_map(ns, limit=1, _continue=first.metadata._continue)
    status = json.loads(caught.value.body)
    assert (caught.value.status, status["reason"]) == (410, "Expired")
    assert status["message"].startswith("The provided continue parameter is too old")


def test_selectors(core, ns):
    core.create_namespaced_pod(ns, pod("a", {"role": "worker", "index": "0"}))
    core.create_namespaced_pod(ns, pod("b", {"role": "master"}))
    names = lambda **kw: [p.metadata.name for p in core.list_namespaced_pod(ns, **kw).items]  # noqa: E731
    assert names(label_selector="role in (worker, launcher)") == ["a"]
    assert names(label_selector="role!=worker") == ["b"]
    assert names(label_selector="!index") == ["b"]
    assert names(field_selector="metadata.name=b") == ["b"]
    assert names(field_selector="status.phase=Pending") == ["a", "b"]
    with pytest.raises(client.ApiException) as caught:
        names(field_selector="spec.bogus=1")
    assert caught.value.status == 400


def test_a_watch_from_a_version_sees_what_came_after(core, ns):
    listed = core.list_namespaced_config_map(ns)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    core.patch_namespaced_config_map("cm", ns, {"data": {"a": "2"}})
    core.delete_namespaced_config_map("cm", ns)
    seen = [
        (e["type"], e["object"].metadata.name)
        for e in watch.Watch().stream(
            core.list_namespaced_config_map, ns, resource_version=listed.metadata.resource_version, timeout_seconds=1
        )
    ]
    assert seen == [("ADDED", "cm"), ("MODIFIED", "cm"), ("DELETED", "cm")]


def test_a_watch_without_a_version_starts_with_the_current_objects(core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "cm"}})
    seen = [
        (e["type"], e["object"].metadata.name)
        for e in watch.Watch().stream(core.list_namespaced_config_map, ns, timeout_seconds=1)
    ]
    assert seen == [("ADDED", "cm")]


@pytest.mark.parametrize(
    ("flag", "is_watch"),
    [("true", True), ("True", True), ("1", True), ("", True), ("False", False), ("0", False)],
)
def test_watch_is_read_as_the_api_server_reads_a_boolean(cluster, core, ns, flag, is_watch):
    """`watch=True` (what the official client before 37 sends for a Python bool) is a watch, as
    `true` is: apimachinery reads every value but absent, `0` and `false` as true."""
    start = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, {"metadata": {"name": "cm"}})
    query = f"watch={flag}&resourceVersion={start}&timeoutSeconds=1"
    with urllib.request.urlopen(f"{cluster.url}/api/v1/namespaces/{ns}/configmaps?{query}", timeout=30) as answer:
        lines = [json.loads(line) for line in answer.read().splitlines() if line.strip()]
    if is_watch:
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines] == [("ADDED", "cm")]
    else:
        assert len(lines) == 1 and lines[0]["kind"] == "ConfigMapList"


def test_a_watch_from_a_compacted_version_gets_an_error_event_410(cluster, core, ns):
    old = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, {"metadata": {"name": "cm"}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "cm2"}})
    cluster.api.compact()
    answer = core.list_namespaced_config_map(
        ns, watch=True, resource_version=old, timeout_seconds=5, _preload_content=False
    )
    lines = [json.loads(line) for line in answer.read().splitlines() if line.strip()]
    assert answer.status == 200 and len(lines) == 1 and lines[0]["type"] == "ERROR"
    status = lines[0]["object"]
    assert (status["code"], status["reason"]) == (410, "Expired")
    assert status["message"] == f"too old resource version: {old} ({cluster.api.rv})"


def test_a_selector_watch_sees_an_object_leave_as_deleted(core, ns):
    core.create_namespaced_pod(ns, pod("p", {"role": "worker"}))
    start = core.list_namespaced_pod(ns).metadata.resource_version
    core.patch_namespaced_pod("p", ns, {"metadata": {"labels": {"role": "other"}}})
    seen = [
        e["type"]
        for e in watch.Watch().stream(
            core.list_namespaced_pod, ns, label_selector="role=worker", resource_version=start, timeout_seconds=1
        )
    ]
    assert seen == ["DELETED"]


def test_bookmarks_only_when_asked(cluster, core, ns):
    cluster.api.bookmark_interval = 0.2
    try:
        start = core.list_namespaced_config_map(ns).metadata.resource_version
        asked = core.list_namespaced_config_map(
            ns,
            watch=True,
            resource_version=start,
            timeout_seconds=3,
            allow_watch_bookmarks=True,
            _preload_content=False,
        )
        events = [json.loads(line) for line in asked.read().splitlines() if line.strip()]
        assert events and {e["type"] for e in events} == {"BOOKMARK"}
        assert events[0]["object"] == {
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": str(cluster.api.rv)},
        }
        plain = core.list_namespaced_config_map(
            ns, watch=True, resource_version=start, timeout_seconds=1, _preload_content=False
        )
        assert plain.read().strip() == b""
    finally:
        cluster.api.bookmark_interval = 60.0


# ---- deletion -----------------------------------------------------------------------------------


def test_a_scheduled_pod_is_deleted_gracefully_an_unscheduled_one_at_once(cluster, core, ns):
    core.create_namespaced_pod(ns, pod("waiting"))
    core.delete_namespaced_pod("waiting", ns)
    assert core.list_namespaced_pod(ns).items == []
    core.create_namespaced_pod(ns, pod("running", terminationGracePeriodSeconds=20))
    bind(cluster.api, ns, "running", "node-1")
    answer = core.delete_namespaced_pod("running", ns)
    assert answer.metadata.deletion_timestamp is not None and answer.metadata.deletion_grace_period_seconds == 20
    still = core.read_namespaced_pod("running", ns)  # until the kubelet has stopped it
    assert still.metadata.deletion_timestamp is not None
    shorter = core.delete_namespaced_pod("running", ns, grace_period_seconds=5)
    assert shorter.metadata.deletion_grace_period_seconds == 5
    core.delete_namespaced_pod("running", ns, grace_period_seconds=0)  # --force
    assert core.list_namespaced_pod(ns).items == []


def test_finalizers_hold_an_object_until_removed(core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "cm", "finalizers": ["example.com/hold"]}})
    # not deleted yet: the object, not a Status (read as sent: older clients deserialize the
    # answer as the V1Status the API declares, whatever it holds: 34.1, the floor, does)
    marked = json.loads(core.delete_namespaced_config_map("cm", ns, _preload_content=False).data)
    assert (
        marked["kind"] == "ConfigMap"
        and marked["metadata"]["deletionTimestamp"]
        and core.read_namespaced_config_map("cm", ns).metadata.deletion_timestamp
    )
    core.patch_namespaced_config_map("cm", ns, {"metadata": {"finalizers": None}})
    assert core.list_namespaced_config_map(ns).items == []


def owned(cluster, ns: str, owner: dict, name: str, block: bool = False) -> None:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}
    if block:
        ref["blockOwnerDeletion"] = True
    cluster.api.create(
        cluster.api.resource("", "v1", "configmaps"), {"metadata": {"name": name, "ownerReferences": [ref]}}, ns
    )


def names(cluster, ns: str) -> list[str]:
    return [o["metadata"]["name"] for o in cluster.api.list(cluster.api.resource("", "v1", "configmaps"), ns)["items"]]


def test_background_garbage_collection_happens_after_the_delete_not_in_it(cluster, ns):
    configmaps = cluster.api.resource("", "v1", "configmaps")
    owner = cluster.api.create(configmaps, {"metadata": {"name": "owner"}}, ns)
    owned(cluster, ns, owner, "child-a")
    owned(cluster, ns, owner, "child-b")
    cluster.api.delete(configmaps, ns, "owner")
    assert names(cluster, ns) == ["child-a", "child-b"]  # the DELETE itself touched nothing else
    GarbageCollector(cluster.api).sweep()
    assert names(cluster, ns) == []


def test_an_owner_recreated_under_the_same_name_is_not_the_owner(cluster, ns):
    configmaps = cluster.api.resource("", "v1", "configmaps")
    owner = cluster.api.create(configmaps, {"metadata": {"name": "owner"}}, ns)
    owned(cluster, ns, owner, "child")
    cluster.api.delete(configmaps, ns, "owner")
    cluster.api.create(configmaps, {"metadata": {"name": "owner"}}, ns)
    GarbageCollector(cluster.api).sweep()
    assert names(cluster, ns) == ["owner"]


def test_foreground_deletion_waits_for_blocking_dependents(cluster, ns):
    configmaps = cluster.api.resource("", "v1", "configmaps")
    owner = cluster.api.create(configmaps, {"metadata": {"name": "owner"}}, ns)
    owned(cluster, ns, owner, "child", block=True)
    marked = cluster.api.delete(configmaps, ns, "owner", propagation="Foreground")
    assert marked["metadata"]["finalizers"] == ["foregroundDeletion"] and marked["metadata"]["deletionTimestamp"]
    assert names(cluster, ns) == ["child", "owner"]
    GarbageCollector(cluster.api).sweep()
    assert names(cluster, ns) == []
    gone = [e.key[2] for e in cluster.api.events if e.type == "DELETED" and e.key[1] == ns]
    assert gone == ["child", "owner"]  # the dependent first, then the owner's finalizer and the owner


def test_orphan_deletion_keeps_dependents_without_the_reference(cluster, ns):
    configmaps = cluster.api.resource("", "v1", "configmaps")
    owner = cluster.api.create(configmaps, {"metadata": {"name": "owner"}}, ns)
    owned(cluster, ns, owner, "child")
    cluster.api.delete(configmaps, ns, "owner", propagation="Orphan")
    GarbageCollector(cluster.api).sweep()
    assert names(cluster, ns) == ["child"]
    assert "ownerReferences" not in cluster.api.get(configmaps, ns, "child")["metadata"]


def test_a_deleted_namespace_is_emptied_then_removed(cluster, core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "cm"}})
    core.delete_namespace(ns)
    assert core.read_namespace(ns).status.phase == "Terminating"
    with pytest.raises(client.ApiException) as caught:
        core.create_namespaced_config_map(ns, {"metadata": {"name": "more"}})
    assert caught.value.status == 403 and "because it is being terminated" in json.loads(caught.value.body)["message"]
    gc = GarbageCollector(cluster.api)
    gc.sweep()
    gc.sweep()
    with pytest.raises(client.ApiException) as caught:
        core.read_namespace(ns)
    assert caught.value.status == 404


def test_the_collector_runs_by_itself_when_started(tmp_path):
    with Cluster() as sim:
        configmaps = sim.api.resource("", "v1", "configmaps")
        owner = sim.api.create(configmaps, {"metadata": {"name": "owner"}}, "default")
        owned(sim, "default", owner, "child")
        sim.api.delete(configmaps, "default", "owner")
        with sim.api.cond:
            sim.api.cond.wait_for(lambda: not sim.api.list(configmaps, "default")["items"], timeout=60)
        assert names(sim, "default") == []


# ---- logs, faults, outages, limits --------------------------------------------------------------


def test_logs_of_a_pod_with_several_containers_need_a_container_name(core, ns):
    two = pod("p")
    two["spec"]["containers"].append({"name": "side", "image": "busybox:1"})
    core.create_namespaced_pod(ns, two)
    with pytest.raises(client.ApiException) as caught:
        core.read_namespaced_pod_log("p", ns)
    assert (caught.value.status, json.loads(caught.value.body)["message"]) == (
        400,
        "a container name must be specified for pod p, choose one of: [main side]",
    )
    with pytest.raises(client.ApiException) as caught:
        core.read_namespaced_pod_log("p", ns, container="nope")
    assert json.loads(caught.value.body)["message"] == "container nope is not valid for pod p"
    assert core.read_namespaced_pod_log("p", ns, container="main") == ""  # no node yet: nothing


def test_injected_faults_hit_the_nth_call(cluster, core, ns):
    cluster.api.fail("POST", "configmaps", 500, "InternalError", "etcdserver: request timed out", nth=2)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "one"}})
    with pytest.raises(client.ApiException) as caught:
        core.create_namespaced_config_map(ns, {"metadata": {"name": "two"}})
    assert caught.value.status == 500
    core.create_namespaced_config_map(ns, {"metadata": {"name": "three"}})


def test_over_the_request_rate_is_429_with_retry_after(cluster, ns):
    cluster.api.rate_limit = (0.001, 2)
    try:
        codes = [http(cluster, "GET", f"/api/v1/namespaces/{ns}/configmaps") for _ in range(3)]
    finally:
        cluster.api.rate_limit = None
        cluster.api._bucket = (0.0, 0.0)
    assert [c[0] for c in codes] == [200, 200, 429]
    assert codes[2][1]["Retry-After"] == "1" and codes[2][2]["reason"] == "TooManyRequests"


def test_an_outage_refuses_connections_then_serves_the_same_state(tmp_path):
    with Cluster() as sim:
        core = client.CoreV1Api(config.new_client_from_config(sim.kubeconfig(tmp_path / "kc")))
        core.create_namespaced_config_map("default", {"metadata": {"name": "kept"}})
        with sim.outage(), pytest.raises(urllib3.exceptions.HTTPError):
            core.list_namespaced_config_map("default", _request_timeout=5)
        assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == ["kept"]


def test_in_process_errors_are_api_errors(cluster, ns):
    with pytest.raises(ApiError) as caught:
        cluster.api.get(cluster.api.resource("", "v1", "pods"), ns, "nope")
    assert caught.value.status["message"] == 'pods "nope" not found'


# ---- CEL rules (x-kubernetes-validations) -------------------------------------------------------


def trainjob(name: str, **spec) -> dict:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, **spec},
    }


def test_cel_rules_at_the_root_report_nil_and_the_schema_type(custom, ns):
    with pytest.raises(client.ApiException) as caught:
        custom.create_namespaced_custom_object("trainer.kubeflow.org", "v1alpha1", ns, "trainjobs", trainjob("1job"))
    status = json.loads(caught.value.body)
    assert status["message"] == (
        'TrainJob.trainer.kubeflow.org "1job" is invalid: <nil>: Invalid value: "object": '
        "metadata.name must match RFC 1035 DNS label format"
    )
    assert status["details"]["causes"][0]["field"] == "<nil>"


def test_cel_rules_on_a_field(custom, ns):
    with pytest.raises(client.ApiException) as caught:
        custom.create_namespaced_custom_object(
            "trainer.kubeflow.org", "v1alpha1", ns, "trainjobs", trainjob("job", managedBy="someone-else")
        )
    assert json.loads(caught.value.body)["message"].startswith(
        'TrainJob.trainer.kubeflow.org "job" is invalid: spec.managedBy: Invalid value: "string": '
        "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue"
    )
    custom.create_namespaced_custom_object("trainer.kubeflow.org", "v1alpha1", ns, "trainjobs", trainjob("job"))


def test_transition_rules_apply_on_update_only(custom, ns):
    job = pytorchjob("j", runPolicy={"schedulingPolicy": {"queue": "first"}})
    custom.create_namespaced_custom_object("kubeflow.org", "v1", ns, "pytorchjobs", job)
    with pytest.raises(client.ApiException) as caught:
        custom.patch_namespaced_custom_object(
            "kubeflow.org",
            "v1",
            ns,
            "pytorchjobs",
            "j",
            {"spec": {"runPolicy": {"schedulingPolicy": {"queue": "second"}}}},
        )
    assert json.loads(caught.value.body)["message"] == (
        'PyTorchJob.kubeflow.org "j" is invalid: spec.runPolicy.schedulingPolicy.queue: Invalid value: "string": '
        "spec.runPolicy.schedulingPolicy.queue is immutable"
    )


def test_a_watch_with_a_bad_selector_is_an_http_400_not_a_stream(cluster, ns):
    code, _, status = http(cluster, "GET", f"/api/v1/namespaces/{ns}/pods?watch=true&fieldSelector=spec.bogus%3D1")
    assert code == 400 and status["reason"] == "BadRequest"


def test_latency_and_the_most_requests_in_flight_are_there_for_tests(tmp_path):
    with Cluster(controllers=()) as sim:
        sim.latency = 0.2
        core = client.CoreV1Api(config.new_client_from_config(sim.kubeconfig(tmp_path / "kc")))
        threads = [threading.Thread(target=core.list_namespaced_config_map, args=("default",)) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert 1 <= sim.max_in_flight <= 3
        # the server counts a request out after its reply is sent, which the client may see first
        wait_for(lambda: sim.api.in_flight == 0, "every request counted out", timeout=10)


def test_a_cluster_with_part_of_kubeflow_installed(tmp_path):
    with Cluster(crds=("pytorchjobs.kubeflow.org",), controllers=("training-operator",)) as sim:
        api = client.ApiextensionsV1Api(config.new_client_from_config(sim.kubeconfig(tmp_path / "kc")))
        assert api.read_custom_resource_definition("pytorchjobs.kubeflow.org").spec.names.kind == "PyTorchJob"
        with pytest.raises(client.ApiException) as caught:
            api.read_custom_resource_definition("tfjobs.kubeflow.org")
        assert caught.value.status == 404
        code, _, status = http(sim, "GET", "/apis/kubeflow.org/v1/namespaces/default/tfjobs")
        assert code == 404 and status["message"] == "the server could not find the requested resource"
