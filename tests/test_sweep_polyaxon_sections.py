"""The top-level Polyaxon v0 sections a pasted polyaxonfile carries beside the job and its sweep:
`declarations` (and `params`, `inputs`), `build`, `run` honoured, the others refused with a line
that says what to do; Polyaxon's own grid and random-search examples read as printed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from jupyter_px.sweeps.spec import parse_polyaxonfile, read_sweep, try_parse_polyaxonfile
from jupyter_px.topology import parse_topology, to_yaml, try_parse
from jupyter_px.topology.values import command, declared_run, fill_args

DATA = Path(__file__).parent / "data" / "sweeps"
EXAMPLES = DATA / "polyaxon"


def example(name: str) -> str:
    return (EXAMPLES / name).read_text()


def test_the_grid_example_reads_as_printed():
    topology = parse_polyaxonfile(example("grid_search.yaml"))
    spec = read_sweep(topology)
    assert (spec.algorithm, spec.n_trials, spec.grid_size, spec.concurrency) == ("grid", 4, 10, 1)
    assert topology.declarations == {"batch_size": 128}
    assert topology.environment.image == "tensorflow/tensorflow:1.4.1-py3"  # build.image
    found = command(topology)
    assert found.script == "train.py"
    assert found.args == ("--batch-size={{batch_size}}", "--lr={{lr}}", "--dropout={{dropout}}")
    again = parse_polyaxonfile(to_yaml(topology))  # the YAML written back reads the same
    assert again.declarations == topology.declarations and read_sweep(again) == spec


def test_the_random_search_example_reads_as_printed():
    """Its `run.cmd` is continued over lines with backslashes, which YAML folds into one line."""
    topology = parse_polyaxonfile(example("random_search.yaml"))
    spec = read_sweep(topology)
    assert (spec.algorithm, spec.n_trials, spec.concurrency) == ("random", 40, 2)
    assert [(r.metric, r.value) for r in spec.stop_rules] == [("accuracy", 0.9), ("loss", 0.05)]
    assert command(topology).args == (
        "--batch-size={{batch_size}}",
        "--lr={{lr}}",
        "--dropout={{dropout}}",
        "--activation={{activation}}",
        "--param1={{param1}}",
    )


def test_declarations_params_and_inputs_are_the_runs_values():
    assert parse_topology("params: {batch_size: 64}").declarations == {"batch_size": 64}
    inputs = "inputs: [{name: lr, default: 0.1, type: float}, {name: act, default: relu, is_optional: true}]"
    assert parse_topology(inputs).declarations == {"lr": 0.1, "act": "relu"}
    data, args, push = declared_run(
        parse_topology(
            "declarations: {layers: [100, 200], conv: {k: 3}}\nrun:\n  cmd: python t.py --u={{ layers[1] }}"
        ),
        "t.py",
        (),
        {"extra": 1},
    )
    assert args == ["--u=200"] and push == {"layers": [100, 200], "conv": {"k": 3}, "extra": 1}
    assert data["environment"]["env"]["PX_PARAMS"] == '{"layers": [100, 200], "conv": {"k": 3}}'
    assert fill_args("--k={{ conv.k }} --n={{ nope }}", {"conv": {"k": 3}}) == "--k=3 --n={{ nope }}"


def test_build_env_vars_reach_the_environment_and_installed_steps_pass():
    topology = parse_topology(
        "build:\n  image: my/image:1\n"
        "  build_steps: [pip install -U pyyaml 'psutil>=5', python -m pip install optuna]\n"
        "  env_vars: [[A, '1'], [B, two]]\nenvironment: {env: {C: '3'}}"
    )
    assert topology.environment.image == "my/image:1" and topology.environment.env == {"A": "1", "B": "two", "C": "3"}


#: (the section, the one line it gives)
REFUSED = [(case["section"], case["message"]) for case in yaml.safe_load((DATA / "bad_v0_sections.yaml").read_text())]


@pytest.mark.parametrize(("text", "message"), REFUSED, ids=[str(i) for i in range(len(REFUSED))])
def test_every_other_section_is_refused_with_what_to_do(text, message):
    topology, problems = try_parse(text)
    assert topology is None
    assert [str(p) for p in problems] == [message]


def test_a_placeholder_without_a_value_is_refused():
    sweep = (
        "hptuning: {matrix: {lr: {values: [1, 2]}}}\nrun:\n  cmd: python3 train.py --lr={{ lr }} --bs={{ batch_size }}"
    )
    _, problems = try_parse_polyaxonfile(sweep)
    assert [str(p) for p in problems] == [
        "run.cmd: {{ batch_size }} names no value: add it to declarations or the sweep's parameters"
    ]
    assert try_parse_polyaxonfile(sweep + "\ndeclarations: {batch_size: 8}")[1] == []
    with pytest.raises(
        ValueError, match=r"run.cmd: {{ lr }}, {{ batch_size }} name no value: add them to declarations"
    ):
        declared_run(parse_topology(sweep), "train.py", (), None)  # one run: the sweep's values are not there
    with pytest.raises(ValueError, match=r"run.cmd: runs 'train.py' but the code submitted is 'model.py'"):
        declared_run(parse_topology(sweep + "\ndeclarations: {batch_size: 8, lr: 1}"), "model.py", (), None)
