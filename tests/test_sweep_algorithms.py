"""Which trials each search algorithm asks for, through real Optuna studies (no runs): the grid's
order, and the samplers and pruners each name of Polyaxon's, Katib's and ours gets."""

from __future__ import annotations

import itertools

from jupyter_px.sweeps.engine import open_study
from jupyter_px.sweeps.space import suggest
from jupyter_px.sweeps.spec import parse_polyaxonfile, read_sweep


def spec_of(text: str):
    return read_sweep(parse_polyaxonfile(text))


def asked(spec, journal, n: int) -> list[dict]:
    study = open_study(spec, journal)
    out = []
    for _ in range(n):
        trial = study.ask()
        out.append(suggest(trial, spec))
        study.tell(trial, 0.0)
    return out


def test_a_grid_walks_the_product_in_the_order_written_and_resumes_in_it(tmp_path):
    spec = spec_of(
        "hptuning:\n  grid_search: {n_experiments: 5}\n  matrix:\n"
        "    lr: {values: [0.1, 0.01, 0.001]}\n    act: {values: [relu, tanh]}\n    depth: {range: [1, 3, 1]}\n"
    )
    product = [
        {"lr": lr, "act": act, "depth": depth}
        for lr, act, depth in itertools.product([0.1, 0.01, 0.001], ["relu", "tanh"], [1, 2])
    ]
    assert asked(spec, tmp_path / "a.journal", 5) == product[:5]
    assert asked(spec, tmp_path / "b.journal", 5) == product[:5]  # the same file, the same trials
    first = asked(spec, tmp_path / "c.journal", 2)
    assert first + asked(spec, tmp_path / "c.journal", 3) == product[:5]  # a resumed study goes on in order
