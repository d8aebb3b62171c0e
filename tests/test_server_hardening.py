"""The REST API under attack and under faults, against the real jupyter_server (pytest-jupyter).

A damaged run, a body nested a thousand deep, a log offset past any file, a metric that is NaN:
each is an answer with its reason (4xx, or a JSON the browser can parse), never a 500. The
disk-full and hung-API-server cases are in `test_server_faults.py`.
"""

from __future__ import annotations

import json
import math
import time

import pytest
from conftest import make_synthetic_run
from tornado.httpclient import HTTPClientError

pytest_plugins = ["pytest_jupyter.jupyter_server"]

TOPOLOGY = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}


@pytest.fixture
def jp_server_config(px_home):
    return {"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}}


def strict_json(body: bytes) -> object:
    """JSON as a browser's `JSON.parse` reads it: bare NaN / Infinity are errors."""

    def refuse(constant: str) -> object:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(body, parse_constant=refuse)


async def error_of(jp_fetch, *parts, **kwargs) -> tuple[int, str]:
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch(*parts, **kwargs)
    response = caught.value.response
    body = response.body if response is not None else b""
    return caught.value.code, json.loads(body).get("message", "")


# ---------------------------------------------------------------------------------------------
# Damaged runs (issue 20, item 4)


@pytest.mark.parametrize(
    "route, method",
    [((), "GET"), (("logs",), "GET"), (("metrics",), "GET"), ((), "DELETE")],
    ids=["detail", "logs", "metrics", "delete"],
)
async def test_a_damaged_run_is_a_409_with_the_stores_line_on_every_route(jp_fetch, px_home, route, method):
    run_dir = make_synthetic_run(px_home, "broken-1", TOPOLOGY, state="Running", metric_points=2)
    (run_dir / "status.json").write_text('{"run_id": "broken-1", "state": ')  # a crash mid-write
    code, message = await error_of(jp_fetch, "px", "api", "runs", "broken-1", *route, method=method)
    assert code == 409
    assert message.startswith("run broken-1 is damaged: status.json is not valid")


DAMAGES = {
    "status-cut": lambda run_dir: (run_dir / "status.json").write_text('{"run_id": "broken-1", "state": '),
    "status-missing": lambda run_dir: (run_dir / "status.json").unlink(),
    "record-cut": lambda run_dir: (run_dir / "record.json").write_text('{"run_id": "broken-1", "topo'),
    "record-missing": lambda run_dir: (run_dir / "record.json").unlink(),
    "status-not-a-run": lambda run_dir: (run_dir / "status.json").write_text('{"state": "Running"}'),
}
WHAT_IS_DAMAGED = {
    "status-cut": "status.json is not valid",
    "status-missing": "status.json is missing",
    "record-cut": "record.json is not valid",
    "record-missing": "record.json is missing",
    "status-not-a-run": "status.json is not valid",
}


@pytest.mark.parametrize("damage", list(DAMAGES))
async def test_every_route_of_a_damaged_run_agrees_and_says_what_is_damaged(jp_fetch, px_home, damage):
    """Whatever is damaged, each route of the run answers 409 with the store's line naming the
    file (once, one route answered 200 where the others said 409). Deleting the directory, the
    way to be rid of it, is refused only when the status cannot tell that the run finished."""
    run_dir = make_synthetic_run(px_home, "broken-1", TOPOLOGY, state="Succeeded", metric_points=2)
    DAMAGES[damage](run_dir)
    answers = {}
    for name, route, method, kwargs in [
        ("detail", (), "GET", {}),
        ("logs", ("logs",), "GET", {}),
        ("metrics", ("metrics",), "GET", {}),
        ("tensorboard", ("tensorboard",), "POST", {"body": "{}"}),
        ("stop", (), "DELETE", {}),
    ]:
        try:
            response = await jp_fetch("px", "api", "runs", "broken-1", *route, method=method, **kwargs)
            answers[name] = (response.code, "")
        except HTTPClientError as error:
            body = error.response.body if error.response is not None else b"{}"
            answers[name] = (error.code, json.loads(body).get("message", ""))
    expected = f"run broken-1 is damaged: {WHAT_IS_DAMAGED[damage]}"
    seen = {name: (code, message.startswith(expected)) for name, (code, message) in answers.items()}
    assert seen == dict.fromkeys(answers, (409, True)), answers
    assert run_dir.is_dir()  # nothing acted on it
    if damage.startswith("status"):  # whether it finished is unknown: not deleted
        code, message = await error_of(jp_fetch, "px", "api", "runs", "broken-1", "directory", method="DELETE")
        assert (code, message.startswith(expected)) == (409, True), message
    else:
        response = await jp_fetch("px", "api", "runs", "broken-1", "directory", method="DELETE")
        assert response.code == 200 and not run_dir.exists()


# ---------------------------------------------------------------------------------------------
# Bad input that once reached the stack or the file system (issue 20, item 4)

DEEP = "[" * 1000 + "]" * 1000


@pytest.mark.parametrize(
    "route",
    [("topology", "validate"), ("topology", "render"), ("runs",)],
    ids=["validate", "render", "submit"],
)
async def test_a_body_nested_a_thousand_deep_is_a_400(jp_fetch, px_home, route):
    body = '{"topology": {"environment": ' + DEEP + "}}"
    code, message = await error_of(jp_fetch, "px", "api", *route, method="POST", body=body)
    assert (code, message) == (400, "the request body nests arrays or objects too deeply (at most 64)")


@pytest.mark.parametrize(
    "route",
    [("topology", "validate"), ("topology", "render"), ("runs",)],
    ids=["validate", "render", "submit"],
)
async def test_a_topology_object_over_2_mib_is_a_400_with_a_short_answer(jp_fetch, px_home, route):
    """The 2 MiB limit on a topology's text holds for a JSON object too (a 10 MB one was
    accepted and answered with 21 MB)."""
    big = {"framework": "pytorch", "environment": {"env": {f"V{i}": "x" * 1000 for i in range(10_000)}}}
    body = json.dumps({"topology": big, "notebook": "n.ipynb"} if route == ("runs",) else {"topology": big})
    code, message = await error_of(jp_fetch, "px", "api", *route, method="POST", body=body)
    assert code == 400 and len(message) < 300, message
    assert message == (
        "topology: the topology, written as JSON, is over 2,097,152 characters; the limit is 2,097,152 (2 MiB)"
    )


async def test_compare_with_20000_ids_says_how_many_and_the_first_few(jp_fetch, px_home):
    runs = [f"run-{i:05d}" for i in range(20_000)]
    code, message = await error_of(jp_fetch, "px", "api", "compare", method="POST", body=json.dumps({"runs": runs}))
    assert code == 400 and len(message) < 300, message
    assert message.startswith("runs: a list of 20,000 items (['run-00000', 'run-00001', 'run-00002', ...])")
    assert "at most 1000" in message


def test_a_topology_dict_over_2_mib_is_refused_by_every_entry(px_home):
    from jupyter_px.api import submit
    from jupyter_px.topology import TopologyError, parse_topology

    big = {"framework": "pytorch", "environment": {"env": {"BIG": "x" * (3 * 2**20)}}}
    for attempt in (lambda: parse_topology(big), lambda: submit("print(1)\n", big)):
        with pytest.raises(TopologyError, match=r"written as JSON, is over 2,097,152 characters"):
            attempt()


async def test_a_log_offset_past_any_file_is_a_400(jp_fetch, px_home):
    make_synthetic_run(px_home, "logged-1", TOPOLOGY, state="Running")
    code, message = await error_of(jp_fetch, "px", "api", "runs", "logged-1", "logs", params={"offset": str(2**63)})
    assert code == 400
    assert message == f"offset: {2**63} is too large (at most {2**62})"


# ---------------------------------------------------------------------------------------------
# Non-finite metric values (issue 20, item 2)


async def test_nan_and_infinite_metrics_reach_the_browser_as_parseable_json(jp_fetch, px_home):
    run_dir = make_synthetic_run(px_home, "nan-1", TOPOLOGY, state="Running", metric_points=0)
    now = time.time()
    values = [0.5, float("nan"), float("inf"), float("-inf"), 0.25]
    with open(run_dir / "metrics" / "master-0.jsonl", "w") as out:
        for step, value in enumerate(values):
            out.write(json.dumps({"step": step, "time": now + step, "metrics": {"loss": value}}) + "\n")

    response = await jp_fetch("px", "api", "runs", "nan-1", "metrics")
    page = strict_json(response.body)
    assert isinstance(page, dict)
    loss = page["series"]["master-0"]["loss"]
    assert loss["steps"] == [0, 1, 2, 3, 4]
    assert loss["values"] == [0.5, None, None, None, 0.25]
    assert loss["nonfinite"] == {"1": "NaN", "2": "Infinity", "3": "-Infinity"}

    listing = await jp_fetch("px", "api", "runs")
    strict_json(listing.body)  # the progress beside the list parses too


def test_every_json_answer_is_written_without_nan():
    """The one writer of the handlers' JSON: any non-finite float anywhere becomes null."""
    from jupyter_px.server.base import finite_json

    data = {"a": [1.0, math.nan, {"b": math.inf}], "c": (-math.inf, "NaN"), "d": 2}
    assert finite_json(data) == {"a": [1.0, None, {"b": None}], "c": [None, "NaN"], "d": 2}
    json.dumps(finite_json(data), allow_nan=False)


async def test_a_diverged_run_compares_with_its_params_and_curves_as_parseable_json(jp_fetch, px_home):
    """A run whose learning rate was logged as infinite and whose loss diverged: POST compare
    answers in JSON a browser parses, the infinite param shown as such."""
    now = time.time()
    for run_id, lr, losses in (("div-1", math.inf, [1.0, math.inf, math.nan]), ("ok-1", 0.1, [1.0, 0.5, 0.25])):
        run_dir = make_synthetic_run(px_home, run_id, TOPOLOGY, state="Succeeded", metric_points=0)
        (run_dir / "params").mkdir(exist_ok=True)
        (run_dir / "params" / "master-0.json").write_text(json.dumps({"lr": lr}))
        with open(run_dir / "metrics" / "master-0.jsonl", "w") as out:
            for step, value in enumerate(losses):
                out.write(json.dumps({"step": step, "time": now + step, "metrics": {"loss": value}}) + "\n")
    response = await jp_fetch("px", "api", "compare", method="POST", body=json.dumps({"runs": ["div-1", "ok-1"]}))
    answer = strict_json(response.body)
    assert isinstance(answer, dict)
    rows = {row["run_id"]: row for row in answer["rows"]}
    assert rows["ok-1"]["final"]["loss"] == 0.25
    assert rows["div-1"]["params"]["lr"] == "inf"  # as logged, not null (never logged)
