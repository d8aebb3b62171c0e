"""The docs (docs/*.md) and the README say what the code does, and cannot drift from it silently.

Every code block of every page is executed or checked by its language (the convention is in
docs/development.md, the checks in docs_checks.py), inline flags, paths and modules exist, the
prose has one spelling each, the architecture page's layout matches the repository's tree and its
layers match the import-linter contract, and the README stays two screens with its two commands
first and every dependency named with a reason. The last tests feed the checks broken pages, so a
check that cannot fail is seen.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from docs_checks import (
    ROOT,
    Block,
    check_block,
    check_page,
    layout_entries,
    layout_mentions,
    layout_problems,
    mention_problems,
    read_page,
)

PAGES = sorted(p.relative_to(ROOT) for p in (ROOT / "docs").glob("**/*.md") if "_build" not in p.parts)
README = ROOT / "README.md"


def _tracked() -> list[str]:
    listing = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return listing.stdout.splitlines()


@pytest.mark.parametrize("page", [Path("README.md"), *PAGES], ids=str)
def test_every_code_block_inline_name_and_word_of_a_page_is_checked(page):
    problems = check_page(read_page(ROOT / page))
    assert not problems, "\n".join(problems)


def test_the_docs_have_pages():
    assert {"index.md", "architecture.md", "development.md"} <= {p.name for p in PAGES}


def _layout_block() -> Block:
    blocks = [b for p in PAGES for b in read_page(ROOT / p).blocks if b.language == "text" and "layout" in b.markers]
    assert len(blocks) == 1, f"one ```text layout block in docs/, found {[b.where() for b in blocks]}"
    return blocks[0]


def test_the_layout_matches_the_tree():
    block = _layout_block()
    problems = layout_problems(layout_entries(block.content), _tracked()) + mention_problems(
        layout_mentions(block.content)
    )
    assert not problems, f"{block.where()}:\n" + "\n".join(problems)


def test_the_layers_table_is_the_import_linter_contract():
    text = (ROOT / "docs" / "architecture.md").read_text()
    table = text[text.index("## Layers") : text.index("## Layout")]
    rows = [set(re.findall(r"`([\w.]+)`", row)) for row in table.splitlines() if row.startswith("| ") and "`" in row]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contract = next(c for c in pyproject["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    layers = [set(re.findall(r"[\w.]+", layer)) for layer in contract["layers"]]
    assert rows == layers


def test_the_readme_is_two_screens_with_its_two_commands_first():
    text = README.read_text()
    assert len(text.splitlines()) <= 120
    first_fence = next(line for line in text.splitlines() if line.startswith("```"))
    assert first_fence == "```bash"
    # .ci/fresh-clone's own parsing, run as it is: it must find exactly the two commands
    script = (ROOT / ".ci" / "fresh-clone").read_text()
    pipeline = re.search(r"^mapfile -t commands < <\((.*)\)$", script, re.MULTILINE).group(1)
    found = subprocess.run(["bash", "-c", pipeline], cwd=ROOT, capture_output=True, text=True, check=True)
    commands = found.stdout.splitlines()
    assert len(commands) == 2
    assert commands[0].endswith("jupyter px run examples/allreduce.py -f examples/pytorch.yaml --wait")
    assert commands[1] == '.venv/bin/pip install -q -e ".[test]" && .venv/bin/python -m pytest'


def _requirement_names() -> set[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    requirements = [
        *pyproject["project"]["dependencies"],
        *(r for extra in pyproject["project"]["optional-dependencies"].values() for r in extra),
        *pyproject["build-system"]["requires"],
    ]
    names = {_normal(re.match(r"[A-Za-z0-9_.\-]+", r).group(0)) for r in requirements}
    return names - {_normal(pyproject["project"]["name"])}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_readme_names_every_dependency_with_its_reason():
    text = README.read_text()
    section = text[text.index("## Why each dependency") :].split("\n## ")[0]
    named = {}
    for row in section.splitlines()[4:]:
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        if len(cells) == 2:
            for word in re.findall(r"[A-Za-z0-9_.\-]+", cells[0].split(":", 1)[-1]):
                named[_normal(word)] = cells[1]
    missing = sorted(_requirement_names() - set(named))
    assert not missing, f"not in the README's dependency table: {missing}"
    assert all(len(named[name]) > 20 for name in _requirement_names())


# ---------------------------------------------------------------------------------------------
# The checks fail where they should: broken pages


def _problems(markdown: str, tmp_path) -> list[str]:
    page = tmp_path / "page.md"  # outside docs/: another worker collecting the pages never sees it
    page.write_text(markdown)
    return check_page(read_page(page))


BROKEN = {
    "a misspelled CLI flag": "```bash\njupyter px run examples/allreduce.py -f examples/pytorch.yaml --wokers 2\n```\n",
    "a CLI path that is gone": "```bash\njupyter px validate examples/gone.yaml\n```\n",
    "a magic flag that does not exist": "```python\n%%px_distributed --wiat\nprint(1)\n```\n",
    "a Python syntax error": "```python\nfor x in range(3)\n    print(x)\n```\n",
    "an import that is gone": "```python\nfrom jupyter_px.tracking import log_metric\n```\n",
    "an invalid topology": "```yaml\nframework: pytorch\nenvironment: {replicas: {n_workers: -1}}\n```\n",
    "a topology marked invalid that is valid": "```yaml invalid\nframework: pytorch\n```\n",
    "an unknown Kubernetes setting": "```yaml\n# ~/.jupyter_px/kubernetes.yaml\nnamespce: ml\n```\n",
    "a server setting that is not one": "```python\n# jupyter_server_config.py\nc.JupyterPxApp.keeper = 5\n```\n",
    "a server setting's bad value": "```python\n# jupyter_server_config.py\nc.JupyterPxApp.keeper_interval = -1\n```\n",
    "console output that is not what the command prints": (
        "```yaml invalid\nframework: pytorch\nenvironment: {replicas: {n_workers: 2, worker: [{index: 5}]}}\n```\n"
        "```console\n$ jupyter px validate topology.yaml\ninvalid topology: all is well\n```\n"
    ),
    "a block without a language": "```\njupyter px runs\n```\n",
    "a bash block with nothing checkable": "```bash\nkubectl get pods\n```\n",
    "notest without a reason": "```bash notest\nkubectl get pods\n```\n",
    "a pytest marker that is not declared": "```bash\n.venv/bin/python -m pytest -m gpu\n```\n",
    "a jlpm script that does not exist": "```bash\njlpm lint:fix-all\n```\n",
    "an inline magic flag that does not exist": "Use `%px_logs RUN --lines 5`.\n",
    "an inline CLI flag that does not exist": "Use `jupyter px runs --all`.\n",
    "an inline path that is gone": "See `jupyter_px/backends/kubernetes/nothing.py`.\n",
    "an inline module that cannot run": "Start `python -m jupyter_px.nothing RUN_DIR`.\n",
    "British spelling in the prose": "Each state has its own colour.\n",
    "k8s in the prose": "It runs on k8s too.\n",
}


@pytest.mark.parametrize("markdown", BROKEN.values(), ids=BROKEN.keys())
def test_a_broken_page_fails(markdown, tmp_path):
    assert _problems(markdown, tmp_path)


def test_a_good_page_passes(tmp_path):
    good = (
        "```bash\njupyter px run examples/allreduce.py -f examples/pytorch.yaml --workers 2 --wait\n```\n"
        "```yaml\nframework: pytorch\nenvironment: {replicas: {n_workers: 2}}\n```\n"
        "```python\n%%px_distributed --wait\nprint(1)\n```\n"
        "```bash notest: needs a real cluster\nkubectl get pods\n```\n"
        "Use `%px_logs RUN --follow` or `jupyter px runs --json`; each state has one color.\n"
    )
    assert _problems(good, tmp_path) == []


def test_a_layout_with_a_duplicate_a_ghost_and_a_gap_fails():
    layout = (
        "jupyter_px/        the package\n"
        "  magics/          magics\n"
        "  magics/          magics again\n"
        "  ghosts/          not there\n"
        "README.md          the README\n"
    )
    problems = "\n".join(layout_problems(layout_entries(layout), _tracked()))
    assert "jupyter_px/magics/ is named twice" in problems
    assert "jupyter_px/ghosts/ does not exist" in problems
    assert "jupyter_px/widgets/ is in the repository but not named" in problems
    assert "tests/ is in the repository but not named" in problems


def test_a_layout_naming_a_module_that_moved_fails():
    layout = "jupyter_px/        the package\n  topology/        the model; sweeps.py reads a sweep\n"
    problems = mention_problems(layout_mentions(layout))
    assert problems == ["layout line 2: sweeps.py, named under jupyter_px/topology/, is not in jupyter_px/topology/"]


def test_an_unknown_fence_is_refused():
    assert check_block(Block("x.md", 1, "ruby", (), "puts 1\n"), None)
