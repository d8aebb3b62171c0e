"""`POST px/api/compare` against the real jupyter_server (pytest-jupyter's jp_fetch): the answer
is the model, curves are bounded, bad bodies and unknown runs are 400s naming what, a request
without credentials is refused, and the server reads a run once while its files do not change."""

from __future__ import annotations

import json
import re

import pytest
from compare_support import make_run
from tornado.httpclient import HTTPClientError

from jupyter_px.runstore import RunStore
from jupyter_px.server import models

pytest_plugins = ["pytest_jupyter.jupyter_server"]

#: How long a request that starts a TensorBoard may take (its start, on a loaded machine).
TENSORBOARD_START_S = 120


@pytest.fixture
def jp_server_config(px_home):
    return {"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}}


@pytest.fixture
def runs(px_home) -> list[str]:
    store = RunStore(px_home)
    ids = []
    for index, lr in enumerate([0.001, 0.1, 0.01]):
        ids.append(f"lr-{index}")
        make_run(
            store,
            ids[-1],
            name=f"sweep-lr-{lr}",
            curves={"loss": lambda k, lr=lr: 1 / (1 + k * lr), "acc": lambda k, lr=lr: 1 - 1 / (1 + k * lr)},
            steps=5_000,
            params={"lr": lr, "batch": 32},
        )
    return ids


async def compare(jp_fetch, body: dict) -> dict:
    response = await jp_fetch("px", "api", "compare", method="POST", body=json.dumps(body))
    assert response.code == 200
    assert re.fullmatch(r"compare;dur=\d+\.\d", response.headers["Server-Timing"])  # the server's CPU time
    return json.loads(response.body)


async def refused(jp_fetch, body: object, **kwargs) -> tuple[int, str]:
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch("px", "api", "compare", method="POST", body=json.dumps(body), **kwargs)
    text = caught.value.response.body if caught.value.response is not None else b"{}"
    return caught.value.code, json.loads(text or b"{}").get("message", "")


async def test_a_comparison_is_the_model_with_bounded_curves_and_the_best_run(jp_fetch, runs):
    answer = await compare(jp_fetch, {"pattern": "sweep-lr-*", "points": 50})
    models.Comparison.model_validate(answer)  # the declared shape, nothing more
    assert sorted(run["run_id"] for run in answer["runs"]) == sorted(runs)
    by_name = {metric["name"]: metric for metric in answer["metrics"]}
    assert by_name["loss"]["optimization"] == "min" and by_name["acc"]["optimization"] == "max"
    assert by_name["loss"]["best_run"] == "lr-1" and by_name["acc"]["best_run"] == "lr-1"
    for metric in answer["metrics"]:
        assert len(metric["curves"]) == 3
        for curve in metric["curves"]:
            assert curve["total"] == 5_000 and 0 < len(curve["steps"]) == len(curve["values"]) <= 50
            assert curve["steps"][0] == 0 and curve["steps"][-1] == 4_999
    assert answer["params"] == ["lr"] and answer["hidden_params"] > 0
    row = next(row for row in answer["rows"] if row["run_id"] == "lr-0")
    assert row["params"] == {"lr": 0.001}
    assert row["final"]["loss"] == pytest.approx(1 / (1 + 4_999 * 0.001))


@pytest.mark.parametrize("field", ["optimization", "optimisation"])  # the field's first spelling is still read
async def test_explicit_runs_metrics_and_directions(jp_fetch, runs, field):
    answer = await compare(jp_fetch, {"runs": ["lr-0", "sweep-lr-0.01"], "metrics": ["loss"], field: {"loss": "max"}})
    assert [run["run_id"] for run in answer["runs"]] == ["lr-0", "lr-2"]
    assert [metric["name"] for metric in answer["metrics"]] == ["loss"]
    assert answer["metrics"][0]["optimization"] == "max" and answer["metrics"][0]["best_run"] in ("lr-0", "lr-2")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"runs": ["nope"]}, "no run with id or name 'nope'"),
        ({"pattern": "zzz*"}, "pattern: 'zzz*' matches no run's name or id"),
        ({}, "no runs to compare"),
        ({"runs": ["lr-0"], "metrics": ["bleu"]}, "metrics: no run has 'bleu'"),
        ({"runs": ["lr-0"], "points": 5}, "points: 5 is not a whole number from 10 to 10000"),
        ({"runs": ["lr-0"], "optimization": {"loss": "down"}}, "optimization.loss"),
        ({"runs": "lr-0"}, "runs"),
        ({"runs": ["lr-0"], "colour": 1}, "colour"),
    ],
)
async def test_bad_requests_name_what_is_wrong(jp_fetch, runs, body, message):
    code, text = await refused(jp_fetch, body)
    assert code == 400 and message in text, text


async def test_tensorboard_over_runs_refuses_what_is_not_a_run(jp_fetch, runs):
    for body, message in [({"runs": ["lr-0", "nope"]}, "no run with id or name 'nope'"), ({"runs": []}, "runs")]:
        with pytest.raises(HTTPClientError) as caught:
            await jp_fetch("px", "api", "compare", "tensorboard", method="POST", body=json.dumps(body))
        assert caught.value.code == 400
        assert message in json.loads(caught.value.response.body)["message"]


async def test_without_credentials_nothing_is_answered(jp_fetch, runs):
    code, _ = await refused(jp_fetch, {"runs": runs}, headers={"Authorization": ""})
    assert code == 403


async def test_the_server_reads_each_run_once_until_it_changes(jp_fetch, jp_serverapp, runs, px_home):
    from jupyter_px.server import compare_handlers

    first = await compare(jp_fetch, {"runs": runs})
    again = await compare(jp_fetch, {"runs": runs})
    assert first == again

    def caches(router) -> list:
        found = []
        for rule in getattr(router, "rules", []):
            if rule.target is compare_handlers.CompareHandler:
                found.append(rule.target_kwargs["state"].service.digests)
            found.extend(caches(rule.target))
        return found

    (cache,) = {id(cache): cache for cache in caches(jp_serverapp.web_app.default_router)}.values()
    assert cache.reads == 3
    path = RunStore(px_home).paths("lr-0").metrics("master", 0)
    with open(path, "a") as handle:
        handle.write('{"step":5000,"time":1.0,"metrics":{"loss":0.00001,"acc":0.1}}\n')
    changed = await compare(jp_fetch, {"runs": runs, "metrics": ["loss"]})
    assert cache.reads == 4 and changed["metrics"][0]["best_run"] == "lr-0"


@pytest.mark.tensorboard
async def test_one_tensorboard_over_the_compared_runs(jp_fetch, jp_base_url, runs, px_home):
    from jupyter_px import tensorboard

    async def start() -> dict:
        body = json.dumps({"runs": runs[:2]})
        # (a TensorBoard started on a loaded machine takes longer than jp_fetch's own 20 s)
        response = await jp_fetch(
            "px", "api", "compare", "tensorboard", method="POST", body=body, request_timeout=TENSORBOARD_START_S
        )
        return json.loads(response.body)

    try:
        first = await start()
        assert first["status"] == "launched"
        assert first["url"] == f"{jp_base_url}px/tensorboard/{first['port']}/"
        served = await jp_fetch(*first["url"][len(jp_base_url) :].strip("/").split("/"), "data", "logdir")
        assert served.code == 200
        again = await start()
        assert again["status"] == "reused" and again["key"] == first["key"]
        (server,) = [info for info in tensorboard.list_servers(px_home) if info.key == first["key"]]
        assert server.port == first["port"]
    finally:
        for server in tensorboard.list_servers(px_home):
            tensorboard.stop(server.key, home=px_home)
