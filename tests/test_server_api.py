"""The REST API behind the JupyterLab sidebar, against the real jupyter_server (pytest-jupyter).

Every route: with and without credentials, bad bodies (400 with the reason), unknown runs (404),
path tricks in URLs and bodies, a notebook outside the server root; an Authorizer that only
allows reading; and one real submission of a notebook that runs as local processes.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path

import nbformat
import pytest
import yaml
from conftest import make_synthetic_run
from jupyter_server.auth import Authorizer
from tornado.httpclient import HTTPClientError

from jupyter_px.runstore import RunState, RunStore

pytest_plugins = ["pytest_jupyter.jupyter_server"]

TOPOLOGY = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}


@pytest.fixture
def jp_server_config(px_home):
    """The server with our extension; `px_home` first, so the extension's store is the test's."""
    return {"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}}


async def fetch_json(jp_fetch, *parts, **kwargs):
    response = await jp_fetch(*parts, **kwargs)
    return response.code, json.loads(response.body) if response.body else None


async def error_of(jp_fetch, *parts, **kwargs) -> tuple[int, str]:
    """(status, message) of a request that must fail."""
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch(*parts, **kwargs)
    body = caught.value.response.body if caught.value.response is not None else b""
    try:
        message = json.loads(body).get("message", "")
    except ValueError:
        message = body.decode(errors="replace")
    return caught.value.code, message


def post(body) -> dict:
    return {"method": "POST", "body": body if isinstance(body, str) else json.dumps(body)}


def write_notebook(path: Path, cells: list[tuple[str, list[str]]]) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source, metadata={"tags": tags}) for source, tags in cells]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, str(path))


# ---------------------------------------------------------------------------------------------
# Topology


async def test_schema_is_the_models(jp_fetch):
    """The route serves the topology model's own JSON Schema (pydantic's, from `Topology`), with
    only the draft and a title added; and that schema accepts what the model writes and refuses
    what the model refuses."""
    import jsonschema

    from jupyter_px.topology import Topology, parse_topology, to_dict

    code, schema = await fetch_json(jp_fetch, "px", "api", "topology", "schema")
    assert code == 200
    model = json.loads(json.dumps(Topology.model_json_schema()))
    assert schema.pop("$schema") == "https://json-schema.org/draft/2020-12/schema"
    assert schema.pop("title") == "jupyter-px topology" and model.pop("title") == "Topology"
    assert schema == model
    assert "n_workers" in schema["$defs"]["Replicas"]["properties"]
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(to_dict(parse_topology({"framework": "pytorch", "environment": {"replicas": {"n_workers": 3}}})))
    assert not validator.is_valid({"framework": "pytorch", "environment": {"replicas": {"n_workers": -1}}})


async def test_validate_normalizes_a_form_and_imports_yaml(jp_fetch):
    code, body = await fetch_json(
        jp_fetch,
        "px/api/topology/validate",
        **post(
            {
                "topology": {
                    "framework": "pytorch",
                    "environment": {
                        "replicas": {
                            "n_workers": 3,
                            "default_worker": {"resources": {"cpu": {"requests": "500m"}}},
                            "worker": [{"index": 2, "resources": {"memory": {"limits": "1Gi"}}}],
                        }
                    },
                }
            }
        ),
    )
    assert code == 200 and body["valid"] is True
    worker = body["topology"]["environment"]["replicas"]["worker"]
    assert worker == [{"index": 2, "resources": {"memory": {"limits": 1024}}}]
    assert "n_workers: 3" in body["yaml"] and "worker" in body["summary"]

    # YAML in (the older polyaxon form) -> the same model out.
    code, imported = await fetch_json(
        jp_fetch,
        "px/api/topology/validate",
        **post({"topology": "environment:\n  pytorch:\n    n_workers: 2\n"}),
    )
    assert imported["valid"] and imported["topology"]["framework"] == "pytorch"
    assert imported["topology"]["environment"]["replicas"]["n_workers"] == 2


async def test_render_shows_the_manifests_of_the_notebook_for_each_backend(jp_fetch, jp_root_dir):
    """The sidebar's dry run: the same objects `jupyter px render` prints, the code inside."""
    write_notebook(jp_root_dir / "train.ipynb", [("print('hello from the cluster')", [])])
    topology = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}}
    code, native = await fetch_json(
        jp_fetch,
        "px/api/topology/render",
        **post({"topology": topology, "backend": "native", "name": "My Run", "notebook": "train.ipynb"}),
    )
    assert code == 200 and native["backend"] == "native"
    kinds = [o["kind"] for o in native["objects"]]
    assert kinds.count("Pod") == 3 and kinds.count("Service") == 1 and kinds[0] == "ConfigMap"
    assert {o["name"] for o in native["objects"] if o["kind"] == "Pod"} == {
        f"{native['objects'][0]['name']}-{key}" for key in ("master-0", "worker-0", "worker-1")
    }
    documents = list(yaml.safe_load_all(native["yaml"]))
    assert len(documents) == len(native["objects"])
    assert "hello from the cluster" in json.dumps(documents[0]["data"])
    code, kubeflow = await fetch_json(
        jp_fetch, "px/api/topology/render", **post({"topology": topology, "backend": "kubeflow"})
    )
    assert code == 200 and [o["kind"] for o in kubeflow["objects"]] == ["ConfigMap", "PyTorchJob"]


async def test_render_refuses_what_a_backend_cannot_express(jp_fetch):
    local = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}
    code, message = await error_of(jp_fetch, "px/api/topology/render", **post({"topology": local}))
    assert code == 400 and "'local' renders nothing" in message
    overridden = {
        "framework": "pytorch",
        "environment": {"replicas": {"n_workers": 2, "worker": [{"index": 1, "resources": {"cpu": 4}}]}},
    }
    code, message = await error_of(
        jp_fetch, "px/api/topology/render", **post({"topology": overridden, "backend": "kubeflow"})
    )
    assert code == 400 and "worker" in message and "native" in message
    code, message = await error_of(
        jp_fetch, "px/api/topology/render", **post({"topology": local, "backend": "native", "colour": 1})
    )
    assert code == 400 and "'colour'" in message


async def test_validate_reports_every_problem_with_its_path(jp_fetch):
    code, body = await fetch_json(
        jp_fetch,
        "px/api/topology/validate",
        **post(
            {
                "topology": {
                    "framework": "pytorch",
                    "environment": {"replicas": {"n_workers": 7, "worker": [{"index": 9}], "n_ps": -1}},
                }
            }
        ),
    )
    assert code == 200 and body["valid"] is False
    paths = {problem["path"]: problem["message"] for problem in body["problems"]}
    assert "environment.replicas.n_ps" in paths and "-1" in paths["environment.replicas.n_ps"]

    code, body = await fetch_json(
        jp_fetch,
        "px/api/topology/validate",
        **post(
            {
                "topology": {
                    "framework": "pytorch",
                    "environment": {"replicas": {"n_workers": 7, "worker": [{"index": 9}]}},
                }
            }
        ),
    )
    assert body["problems"] == [
        {"path": "environment.replicas.worker[0].index", "message": "9 is not below n_workers (7)"}
    ]


async def test_validate_refuses_what_no_backend_can_use(jp_fetch):
    """The form's dict and pasted YAML alike: bad env names, label syntax, boolean counts,
    duplicate keys, each at its field path."""
    code, body = await fetch_json(
        jp_fetch,
        "px/api/topology/validate",
        **post(
            {
                "topology": {
                    "framework": "pytorch",
                    "environment": {
                        "env": {"A\u0000B": "x"},
                        "node_selector": {"zone": "not ok"},
                        "replicas": {"n_workers": True},
                    },
                }
            }
        ),
    )
    assert code == 200 and body["valid"] is False
    assert [problem["path"] for problem in body["problems"]] == [
        "environment.env.A\\x00B",
        "environment.node_selector.zone",
        "environment.replicas.n_workers",
    ]
    code, body = await fetch_json(
        jp_fetch, "px/api/topology/validate", **post({"topology": "framework: pytorch\nframework: mxnet\n"})
    )
    assert body["valid"] is False
    assert body["problems"] == [
        {
            "path": "framework",
            "message": "given more than once (lines 1 and 2); YAML would keep only the last, so remove one",
        }
    ]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "must be a JSON object"),
        ({}, "topology: required field is missing"),
        ({"topology": 3}, "topology: expected an object or YAML text, got int"),
        ({"topology": {}, "extra": 1}, "unknown field 'extra'"),
    ],
)
async def test_validate_bad_bodies(jp_fetch, body, reason):
    code, message = await error_of(jp_fetch, "px/api/topology/validate", **post(body))
    assert code == 400 and reason in message


async def test_a_reason_with_a_percent_sign_is_sent_as_written(jp_fetch):
    """Tornado doubles `%` in an HTTPError's message given without arguments (it is a format
    string for the log); the answer a user reads must not show `%%`."""
    code, message = await error_of(jp_fetch, "px/api/topology/validate", **post({"topology": {}, "50%": 1}))
    assert code == 400 and "unknown field '50%'" in message and "%%" not in message


@pytest.mark.parametrize(
    ("route", "body", "reason"),
    [
        ("px/api/topology/render", {"topology": TOPOLOGY, "backend": 3}, "backend: 3 is not a string"),
        ("px/api/topology/render", {"topology": TOPOLOGY, "name": ["a"]}, "name: ['a'] is not a string"),
        ("px/api/topology/render", {"topology": TOPOLOGY, "cells": None}, "cells: None is not 'all' or 'tagged'"),
        ("px/api/runs/real-1/tensorboard", {"port": 1}, "unknown field 'port' (expected: also)"),
        ("px/api/runs/real-1/tensorboard", "[]", "must be a JSON object, got list"),
    ],
)
async def test_bad_bodies_name_the_field_and_the_value(jp_fetch, px_home, route, body, reason):
    make_synthetic_run(px_home, "real-1", TOPOLOGY, state="Succeeded")
    code, message = await error_of(jp_fetch, route, **post(body))
    assert code == 400 and reason in message, message


# ---------------------------------------------------------------------------------------------
# Runs list


async def test_runs_list_is_the_cli_shape_newest_first_paginated(jp_fetch, px_home):
    from jupyter_px.service.views import run_summary

    for number in range(5):
        make_synthetic_run(px_home, f"list-{number}", TOPOLOGY, state="Succeeded")
        time.sleep(0.01)
    code, body = await fetch_json(jp_fetch, "px/api/runs", params={"limit": "2", "offset": "1"})
    assert code == 200 and body["total"] == 5
    assert [run["run_id"] for run in body["runs"]] == ["list-3", "list-2"]
    store = RunStore(px_home)
    assert body["runs"][0] == json.loads(json.dumps(run_summary(store.record("list-3"), store.status("list-3"))))


async def test_runs_list_etag_answers_304_until_something_changes(jp_fetch, px_home):
    make_synthetic_run(px_home, "etag-1", TOPOLOGY, state="Succeeded")
    first = await jp_fetch("px/api/runs")
    etag = first.headers["Etag"]
    code, _ = await error_of(jp_fetch, "px/api/runs", headers={"If-None-Match": etag})
    assert code == 304

    make_synthetic_run(px_home, "etag-2", TOPOLOGY, state="Running")
    changed = await jp_fetch("px/api/runs", headers={"If-None-Match": etag})
    assert changed.code == 200 and changed.headers["Etag"] != etag
    assert [run["run_id"] for run in json.loads(changed.body)["runs"]] == ["etag-2", "etag-1"]

    # A status rewrite (a replica finished) changes the ETag too.
    store = RunStore(px_home)
    status = store.status("etag-2")
    status.state = RunState.SUCCEEDED
    store.write_status(status)
    again = await jp_fetch("px/api/runs", headers={"If-None-Match": changed.headers["Etag"]})
    assert again.code == 200 and json.loads(again.body)["runs"][0]["state"] == "Succeeded"


async def test_runs_list_reports_progress_of_running_runs(jp_fetch, px_home):
    make_synthetic_run(px_home, "prog-1", TOPOLOGY, state="Running", metric_points=30, total_steps=100)
    code, body = await fetch_json(jp_fetch, "px/api/runs")
    assert body["progress"]["prog-1"] == {"step": 29, "total_steps": 100}


@pytest.mark.parametrize(
    ("params", "reason"),
    [({"limit": "many"}, "limit: 'many'"), ({"limit": "-1"}, "limit: -1"), ({"offset": "-1"}, "offset: -1")],
)
async def test_runs_list_bad_parameters(jp_fetch, params, reason):
    code, message = await error_of(jp_fetch, "px/api/runs", params=params)
    assert code == 400 and reason in message


# ---------------------------------------------------------------------------------------------
# One run: detail, logs, metrics


async def test_run_detail_by_id_name_and_last(jp_fetch, px_home):
    from jupyter_px.runstore import RunRecord
    from jupyter_px.service.views import run_detail

    make_synthetic_run(px_home, "detail-1", TOPOLOGY, state="Succeeded")
    code, body = await fetch_json(jp_fetch, "px/api/runs/detail-1")
    store = RunStore(px_home)
    assert body == json.loads(json.dumps(run_detail(store.record("detail-1"), store.status("detail-1"))))
    assert [r["key"] for r in body["replicas"]] == ["master-0", "worker-0"]
    assert body["topology"]["framework"] == "pytorch"

    # By name (what users call it) and `last`.
    record = RunRecord(run_id="named-abc123", name="my exp", topology={"framework": "pytorch"})
    store.create(record, {"main.py": "pass\n"})
    assert (await fetch_json(jp_fetch, "px/api/runs/my exp"))[1]["run_id"] == "named-abc123"
    assert (await fetch_json(jp_fetch, "px/api/runs/last"))[1]["run_id"] == "named-abc123"


async def test_run_detail_and_list_report_a_gone_supervisor_without_acting(jp_fetch, px_home):
    """A run whose supervisor is gone reads as recorded (a GET never writes), with the problem."""
    import subprocess
    import sys

    from jupyter_px.runstore.models import RunOwner

    make_synthetic_run(px_home, "stale-1", TOPOLOGY, state="Running")
    store = RunStore(px_home)
    status = store.status("stale-1")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    status.owner = RunOwner(kind="supervisor", pid=dead.pid)
    store.write_status(status)
    stored = store.paths("stale-1").status.read_bytes()
    code, body = await fetch_json(jp_fetch, "px/api/runs/stale-1")
    assert (
        body["state"] == "Running"
        and body["owner_problem"] == f"the supervisor (pid {dead.pid}) is gone while the run was Running"
    )
    listed = (await fetch_json(jp_fetch, "px/api/runs"))[1]["runs"]
    assert listed[0]["state"] == "Running" and listed[0]["owner_problem"] == body["owner_problem"]
    assert store.paths("stale-1").status.read_bytes() == stored


@pytest.mark.parametrize(
    "ref",
    ["nope-1", "..", "..%2F..%2Fetc", "%2E%2E", "UPPER", "a" * 60],
)
@pytest.mark.parametrize("suffix", ["", "/logs", "/metrics"])
async def test_unknown_or_malicious_run_refs_are_404(jp_fetch, px_home, ref, suffix):
    make_synthetic_run(px_home, "real-1", TOPOLOGY, state="Succeeded")
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch(f"px/api/runs/{ref}{suffix}")
    assert caught.value.code == 404


async def test_unknown_run_for_post_and_delete_is_404(jp_fetch):
    code, message = await error_of(jp_fetch, "px/api/runs/nope-1", method="DELETE")
    assert code == 404 and "nope-1" in message
    code, message = await error_of(jp_fetch, "px/api/runs/nope-1/tensorboard", **post({}))
    assert code == 404


async def test_logs_follow_by_offset(jp_fetch, px_home):
    make_synthetic_run(px_home, "logs-1", TOPOLOGY, state="Running", log_lines=3)
    code, body = await fetch_json(jp_fetch, "px/api/runs/logs-1/logs", params={"role": "worker", "index": "0"})
    assert body["text"] == "worker-0 line 0\nworker-0 line 1\nworker-0 line 2\n" and body["finished"] is False
    log_path = RunStore(px_home).paths("logs-1").log("worker", 0)
    with open(log_path, "a") as handle:
        handle.write("more\n")
    code, more = await fetch_json(
        jp_fetch, "px/api/runs/logs-1/logs", params={"role": "worker", "index": "0", "offset": str(body["offset"])}
    )
    assert more["text"] == "more\n" and more["offset"] == body["offset"] + 5
    code, tail = await fetch_json(jp_fetch, "px/api/runs/logs-1/logs", params={"role": "worker", "offset": "-5"})
    assert tail["text"] == "more\n"


@pytest.mark.parametrize(
    ("params", "code", "reason"),
    [
        ({"role": "../../etc"}, 400, "role: '../../etc'"),
        ({"role": "worker", "index": "x"}, 400, "index: 'x'"),
        ({"role": "worker", "index": "-1"}, 400, "index: -1"),
        ({"role": "worker", "index": "5"}, 404, "no replica worker-5"),
        ({"role": "ps"}, 404, "no replica ps-0"),
    ],
)
async def test_logs_bad_parameters(jp_fetch, px_home, params, code, reason):
    make_synthetic_run(px_home, "logs-2", TOPOLOGY, state="Running")
    got, message = await error_of(jp_fetch, "px/api/runs/logs-2/logs", params=params)
    assert got == code and reason in message


def _flush(path: Path, step: int, when: float, tail: str = "\n") -> None:
    """A replica's flush of one point: a tracking-style JSONL line (`tail` "" leaves it torn)."""
    line = json.dumps({"step": step, "time": when, "metrics": {"loss": when}})
    with open(path, "a") as handle:
        handle.write(line + tail)


async def test_metrics_cursor_returns_every_point_once_across_interleaved_flushes(jp_fetch, px_home):
    """Replicas flush on their own timers, so a point stamped earlier can land after a later one
    was read: the cursor is a position in each file, not a time, and nothing is lost or repeated."""
    make_synthetic_run(px_home, "metrics-1", TOPOLOGY, state="Running", log_lines=0)
    paths = RunStore(px_home).paths("metrics-1")
    master, worker = paths.metrics("master", 0), paths.metrics("worker", 0)
    master.parent.mkdir(parents=True, exist_ok=True)
    seen: list[tuple[str, int, float]] = []
    cursor = None

    async def poll() -> dict:
        nonlocal cursor
        params = {} if cursor is None else {"since": cursor}
        code, body = await fetch_json(jp_fetch, "px/api/runs/metrics-1/metrics", params=params)
        assert code == 200 and isinstance(body["cursor"], str)
        for replica, metrics in body["series"].items():
            points = metrics["loss"]
            seen.extend((replica, step, when) for step, when in zip(points["steps"], points["times"], strict=True))
        cursor = body["cursor"]
        return body

    assert (await poll())["series"] == {}  # nothing yet: still a cursor to come back with
    _flush(master, 1, 100.4)
    await poll()
    _flush(worker, 1, 100.3)  # stamped before the master's point, landed after it was read
    _flush(master, 2, 101.4)
    await poll()
    _flush(worker, 2, 101.3, tail="")  # a flush caught half-written: not a point yet
    body = await poll()
    assert "worker-0" not in body["series"]
    with open(worker, "a") as handle:
        handle.write("\n")
    late = paths.metrics_dir / "worker-0.rank1.jsonl"  # a process whose file appears late
    _flush(late, 1, 99.0)
    _flush(worker, 3, 100.0)  # a restarted replica's new lines, stamped earlier still
    again = cursor
    body = await poll()
    assert body["progress"]["worker-0"] == {"step": 3, "total_steps": None}
    assert (await poll())["series"] == {}  # caught up: the same cursor, nothing new

    assert sorted(seen) == [
        ("master-0", 1, 100.4),
        ("master-0", 2, 101.4),
        ("worker-0", 1, 100.3),
        ("worker-0", 2, 101.3),
        ("worker-0", 3, 100.0),
        ("worker-0.rank1", 1, 99.0),
    ]
    # A position, not a session: the same cursor again answers the same points.
    code, replay = await fetch_json(jp_fetch, "px/api/runs/metrics-1/metrics", params={"since": again})
    assert replay["series"] == body["series"]


#: a time (the old cursor), not base64, JSON that is not an object, a negative offset, no inode
BAD_CURSORS = [
    "soon",
    "100.4",
    "nan",
    "p1.!!",
    "p1.eJyLjgUAARUAuQ",
    "p1.eJyrVkpUsorWNdQxja0FABUYA08",
    "p1.eJyrVkpUsoo2jK0FAA03AsE",
]


@pytest.mark.parametrize("bad", BAD_CURSORS)
async def test_metrics_bad_cursor_is_a_400_naming_it(jp_fetch, px_home, bad):
    make_synthetic_run(px_home, "metrics-1", TOPOLOGY, state="Running", metric_points=2)
    got, message = await error_of(jp_fetch, "px/api/runs/metrics-1/metrics", params={"since": bad})
    assert got == 400 and message.startswith("since:") and repr(bad) in message


# ---------------------------------------------------------------------------------------------
# Submitting


@pytest.mark.parametrize(
    ("body", "code", "reason"),
    [
        ({"notebook": "a.ipynb"}, 400, "topology: required field is missing"),
        ({"topology": TOPOLOGY}, 400, "exactly one of notebook"),
        ({"topology": TOPOLOGY, "notebook": "a.ipynb", "script": "b.py"}, 400, "exactly one of notebook"),
        ({"topology": TOPOLOGY, "notebook": 5}, 400, "notebook: 5 is not a path"),
        ({"topology": TOPOLOGY, "notebook": "a.txt"}, 400, "is not a notebook"),
        ({"topology": TOPOLOGY, "script": "a.ipynb"}, 400, "is not a Python script"),
        ({"topology": TOPOLOGY, "notebook": "a.ipynb", "cells": "some"}, 400, "cells: 'some'"),
        ({"topology": TOPOLOGY, "notebook": "a.ipynb", "tag": ""}, 400, "tag: ''"),
        ({"topology": TOPOLOGY, "notebook": "a.ipynb", "name": 3}, 400, "name: 3"),
        ({"topology": TOPOLOGY, "notebook": "a.ipynb", "code": "import os"}, 400, "unknown field 'code'"),
        ({"topology": TOPOLOGY, "notebook": "missing.ipynb"}, 404, "missing.ipynb"),
        ({"topology": TOPOLOGY, "notebook": "../outside.ipynb"}, 404, "outside"),
        ({"topology": TOPOLOGY, "notebook": "sub/../../outside.ipynb"}, 404, ""),
        ({"topology": TOPOLOGY, "notebook": "%2E%2E/outside.ipynb"}, 404, ""),
        ({"topology": TOPOLOGY, "script": "/etc/hostname.py"}, 404, ""),
        ({"topology": TOPOLOGY, "notebook": "empty.ipynb"}, 400, "has no code cells"),
        ({"topology": TOPOLOGY, "notebook": "a.ipynb", "cells": "tagged"}, 400, "has no cells tagged 'px'"),
        ({"topology": TOPOLOGY, "notebook": "magics.ipynb"}, 400, "the body of a px_distributed cell is shipped"),
    ],
)
async def test_submit_bad_bodies_and_paths(jp_fetch, jp_root_dir, px_home, body, code, reason):
    write_notebook(jp_root_dir / "a.ipynb", [("print(1)", [])])
    write_notebook(jp_root_dir / "empty.ipynb", [])
    write_notebook(jp_root_dir / "magics.ipynb", [("%%px_topology quick\nframework: pytorch", []), ("%px_runs", [])])
    write_notebook(jp_root_dir.parent / "outside.ipynb", [("print('outside')", ["px"])])
    got, message = await error_of(jp_fetch, "px/api/runs", **post(body))
    assert got == code and reason in message
    assert RunStore(px_home).run_ids() == []  # nothing was left behind


async def test_submit_invalid_topology_lists_the_problems(jp_fetch, jp_root_dir, px_home):
    write_notebook(jp_root_dir / "a.ipynb", [("print(1)", [])])
    body = {
        "topology": {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1, "worker": [{"index": 3}]}}}
    }
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch("px/api/runs", **post({**body, "notebook": "a.ipynb"}))
    answer = json.loads(caught.value.response.body)
    assert caught.value.code == 400
    assert answer["problems"] == [
        {"path": "environment.replicas.worker[0].index", "message": "3 is not below n_workers (1)"}
    ]
    assert RunStore(px_home).run_ids() == []


async def test_submit_unavailable_backend_is_a_clear_400(jp_fetch, jp_root_dir, px_home):
    write_notebook(jp_root_dir / "a.ipynb", [("print(1)", [])])
    topology = {**TOPOLOGY, "backend": "kubeflow"}
    code, message = await error_of(jp_fetch, "px/api/runs", **post({"topology": topology, "notebook": "a.ipynb"}))
    assert code == 400 and "could not start" in message and "kubeflow" in message
    assert RunStore(px_home).run_ids() == []


async def wait_finished(jp_fetch, run_id: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        code, body = await fetch_json(jp_fetch, f"px/api/runs/{run_id}")
        if body["finished"] or time.monotonic() > deadline:
            return body
        await asyncio.sleep(0.2)


async def assert_succeeded(jp_fetch, final: dict) -> None:
    """A run that did not succeed fails the test with its message and each replica's log tail."""
    if final["state"] == "Succeeded":
        return
    said = [f"{final['state']} ({final.get('reason')}): {final.get('message')}"]
    for entry in final.get("replicas", []):
        params = {"role": entry["role"], "index": str(entry["index"]), "offset": "-2000"}
        _code, logs = await fetch_json(jp_fetch, f"px/api/runs/{final['run_id']}/logs", params=params)
        said.append(f"--- {entry['role']}-{entry['index']} ({entry.get('state')}, {entry.get('reason')}):")
        said.append(logs.get("text", str(logs)))
    pytest.fail("\n".join(said))


@pytest.mark.jobs
async def test_submit_a_notebook_runs_its_tagged_cells(jp_fetch, jp_root_dir, px_home):
    """A real run: the notebook's `px`-tagged cells, IPython syntax included, in every replica."""
    write_notebook(
        jp_root_dir / "exp" / "train.ipynb",
        [
            ("%load_ext jupyter_px", []),
            ("import os\nmessage = 'hello from ' + os.environ['PX_TASK_TYPE']", ["px"]),
            ("print('not shipped')", []),
            ("x = !echo shell-ok\nprint(message, x[0], os.getcwd())", ["px"]),
        ],
    )
    code, run = await fetch_json(
        jp_fetch,
        "px/api/runs",
        **post({"topology": TOPOLOGY, "notebook": "exp/train.ipynb", "cells": "tagged", "name": "from sidebar"}),
    )
    assert code == 201 and run["name"] == "from sidebar" and run["submitted_from"] == "sidebar"
    assert run["code"]["source"] == "notebook:exp/train.ipynb" and run["code"]["language"] == "ipython"
    await assert_succeeded(jp_fetch, await wait_finished(jp_fetch, run["run_id"]))
    code, logs = await fetch_json(
        jp_fetch, f"px/api/runs/{run['run_id']}/logs", params={"role": "worker", "index": "0"}
    )
    assert f"hello from worker shell-ok {jp_root_dir / 'exp'}" in logs["text"]
    assert "not shipped" not in logs["text"]


@pytest.mark.jobs
async def test_run_distributed_on_the_quickstart_notebook(jp_fetch, jp_root_dir, px_home):
    """The sidebar's "Run distributed" on quickstart.ipynb, whose code cells are all magics: the
    `%%px_distributed` cell's body runs in every replica, with the `%%px_topology` cell's topology
    (what the sidebar's form loads from the notebook)."""
    quickstart = Path(__file__).parent.parent / "notebooks" / "quickstart.ipynb"
    (jp_root_dir / "quickstart.ipynb").write_text(quickstart.read_text(encoding="utf-8"), encoding="utf-8")
    notebook = nbformat.read(str(quickstart), as_version=4)
    cell = next(c.source for c in notebook.cells if c.source.startswith("%%px_topology"))
    topology = yaml.safe_load(cell.split("\n", 1)[1])

    code, run = await fetch_json(
        jp_fetch, "px/api/runs", **post({"topology": topology, "notebook": "quickstart.ipynb"})
    )
    assert code == 201 and run["code"]["source"] == "notebook:quickstart.ipynb", run
    await assert_succeeded(jp_fetch, await wait_finished(jp_fetch, run["run_id"], timeout=180))
    code, logs = await fetch_json(
        jp_fetch, f"px/api/runs/{run['run_id']}/logs", params={"role": "worker", "index": "1"}
    )
    assert "rank 2 of 3: sum of ranks = 3" in logs["text"]


@pytest.mark.jobs
async def test_submit_a_script_and_stop_it(jp_fetch, jp_root_dir, px_home):
    (jp_root_dir / "loop.py").write_text("import time\nprint('started', flush=True)\ntime.sleep(120)\n")
    code, run = await fetch_json(jp_fetch, "px/api/runs", **post({"topology": TOPOLOGY, "script": "loop.py"}))
    assert code == 201 and run["code"]["source"] == "script:loop.py"
    code, stopped = await fetch_json(jp_fetch, f"px/api/runs/{run['run_id']}", method="DELETE")
    assert code == 200 and stopped["state"] == "Stopped"


# ---------------------------------------------------------------------------------------------
# Credentials


def px_routes(serverapp) -> list[tuple[str, type]]:
    """(pattern, handler) of every registered route whose path contains px/api."""
    found = []
    stack = list(serverapp.web_app.default_router.rules)
    while stack:
        rule = stack.pop()
        target = rule.target
        if hasattr(target, "rules"):
            stack.extend(target.rules)
            continue
        pattern = getattr(rule.matcher, "regex", None)
        if pattern is not None and "px/api" in pattern.pattern:
            found.append((pattern.pattern, target))
    return found


def concrete(pattern: str, run_id: str) -> str:
    """A URL the route answers: its run reference `run_id`, a replica's role and index `worker-0`."""
    path = pattern.rstrip("$").replace("/?", "")
    path = path.replace("([a-z]{1,16})", "worker").replace("([0-9]{1,5})", "0")
    return re.sub(r"\([^)]*\)", run_id, path)


async def test_no_px_route_answers_without_credentials(jp_serverapp, http_server_client, px_home, jp_root_dir):
    """Enumerate what the server registered (not our own list): every method of every px route
    refuses an anonymous request, and nothing happens (no run created, none stopped)."""
    from jupyter_px.server import ROUTES

    make_synthetic_run(px_home, "guarded-1", TOPOLOGY, state="Running")
    write_notebook(jp_root_dir / "a.ipynb", [("print(1)", [])])
    routes = px_routes(jp_serverapp)
    assert len(routes) == len(ROUTES) == 18
    tried = 0
    for pattern, handler in routes:
        url = concrete(pattern, "guarded-1")
        for method in ("GET", "POST", "DELETE", "PUT", "PATCH"):
            if getattr(handler, method.lower()) is getattr(handler.__mro__[-2], method.lower(), None):
                continue  # not implemented by this handler
            if method not in handler.__dict__ and method.lower() not in handler.__dict__:
                continue
            body = json.dumps({"topology": TOPOLOGY, "notebook": "a.ipynb"}) if method in ("POST", "PUT") else None
            with pytest.raises(HTTPClientError) as caught:
                await http_server_client.fetch(url, method=method, body=body, follow_redirects=False)
            assert caught.value.code in (401, 403), (method, url, caught.value.code)
            tried += 1
    # schema GET, validate POST, render POST, runs GET+POST, run GET+DELETE, directory DELETE, logs,
    # metrics, tensorboard, view, stacks GET+POST, a replica's kill POST; sweeps GET, sweep
    # GET+DELETE, sweep view GET; compare POST, compare/tensorboard POST; warm GET+DELETE
    assert tried == 23
    store = RunStore(px_home)
    assert store.run_ids() == ["guarded-1"] and store.status("guarded-1").state.value == "Running"


async def test_cookie_session_needs_the_xsrf_token(jp_serverapp, http_server_client, jp_fetch, jp_root_dir, px_home):
    """A browser session (cookie, no token header) cannot POST without the XSRF token."""
    token = jp_serverapp.identity_provider.token
    login = await http_server_client.fetch(
        f"{jp_serverapp.base_url}?token={token}", follow_redirects=False, raise_error=False
    )
    cookies = "; ".join(c.split(";")[0] for c in login.headers.get_list("Set-Cookie"))
    assert "username-" in cookies
    url = f"{jp_serverapp.base_url}px/api/topology/validate"
    ok = await http_server_client.fetch(f"{jp_serverapp.base_url}px/api/runs", headers={"Cookie": cookies})
    assert ok.code == 200  # the cookie authenticates reads
    with pytest.raises(HTTPClientError) as caught:
        await http_server_client.fetch(
            url, method="POST", body=json.dumps({"topology": {}}), headers={"Cookie": cookies}
        )
    assert caught.value.code == 403
    xsrf = re.search(r"_xsrf=([^;]+)", cookies)
    assert xsrf is not None
    answer = await http_server_client.fetch(
        url, method="POST", body=json.dumps({"topology": {}}), headers={"Cookie": cookies, "X-XSRFToken": xsrf.group(1)}
    )
    assert answer.code == 200


class ReadOnlyAuthorizer(Authorizer):
    """A deployment's policy: may look at runs, may not start or stop them."""

    def is_authorized(self, handler, user, action, resource) -> bool:
        return resource != "px" or action == "read"


async def test_an_authorizer_can_restrict_px(jp_fetch, jp_serverapp, px_home, jp_root_dir, monkeypatch):
    make_synthetic_run(px_home, "authz-1", TOPOLOGY, state="Running")
    write_notebook(jp_root_dir / "a.ipynb", [("print(1)", [])])
    jp_serverapp.web_app.settings["authorizer"] = ReadOnlyAuthorizer(parent=jp_serverapp)
    assert (await jp_fetch("px/api/runs")).code == 200
    assert (await jp_fetch("px/api/runs/authz-1/logs", params={"role": "worker"})).code == 200
    for parts, kwargs in [
        (("px/api/runs",), post({"topology": TOPOLOGY, "notebook": "a.ipynb"})),
        (("px/api/runs/authz-1",), {"method": "DELETE"}),
        (("px/api/runs/authz-1/directory",), {"method": "DELETE"}),
        (("px/api/runs/authz-1/tensorboard",), post({})),
        (("px/api/runs/authz-1/stacks",), post("")),  # signals the replicas: not a read
    ]:
        code, _ = await error_of(jp_fetch, *parts, **kwargs)
        assert code == 403
    assert RunStore(px_home).status("authz-1").state.value == "Running"
