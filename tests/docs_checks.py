"""What tests/test_docs.py checks in a page of the docs (docs/*.md, README.md): its code blocks, its
inline code and its prose, each against the real thing (the CLI's argparse parser, the magics'
parsers, the topology parser, the Kubernetes settings loader, the repository's tree).

The convention, stated for writers in docs/development.md ("Code blocks in the docs"): a fenced
block is checked by its language, the first word of its info string; `notest REASON` after the
language marks a block that cannot be checked and says why. Each check returns problems as
`"<page>:<line>: <what>"` strings, so a failing test lists every one at once.

Pages are read with MyST's own Markdown parser (what Sphinx reads them with), so a fence this sees
is a fence the docs show.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import os
import re
import shlex
import subprocess
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser

ROOT = Path(__file__).resolve().parents[1]

#: Directives whose body is not Markdown (their fences are not the docs' own code blocks).
OPAQUE_DIRECTIVES = {"toctree", "literalinclude", "include", "eval-rst", "math", "raw"}
#: Directives that would hide a code block from this convention: a plain fence says it better.
CODE_DIRECTIVES = {"code-block", "code", "sourcecode", "code-cell"}
#: Top-level folders whose paths, named in the docs, must exist.
REPO_DIRS = (
    "jupyter_px",
    "tests",
    "labextension",
    "benchmarks",
    "examples",
    "notebooks",
    "ui-tests",
    "docs",
    "schema",
    "style",
    "jupyter-config",
    ".ci",
)
#: One spelling each in the prose (code spans and blocks quote identifiers as the code has them).
SPELLING = [
    (re.compile(r"\bcolour", re.IGNORECASE), "color"),
    (re.compile(r"\boptimis", re.IGNORECASE), "optimization (Polyaxon's spelling)"),
    (re.compile(r"\bk8s\b", re.IGNORECASE), "Kubernetes"),
    (re.compile(r"\bkube\b(?!-)", re.IGNORECASE), "Kubernetes"),
]
TOPOLOGY_CELL = "%%px_topology"
SETTINGS_FILE_LINE = "# ~/.jupyter_px/kubernetes.yaml"
SLURM_SETTINGS_FILE_LINE = "# ~/.jupyter_px/slurm.yaml"
LOCAL_SETTINGS_FILE_LINE = "# ~/.jupyter_px/local.yaml"
SSH_SETTINGS_FILE_LINE = "# ~/.jupyter_px/ssh.yaml"
SERVER_CONFIG_LINE = "# jupyter_server_config.py"
#: Commands from `.ci/run` checked by running them there (a docs line identical to one is checked).
CI_RUN = ROOT / ".ci" / "run"


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    language: str
    markers: tuple[str, ...]
    content: str

    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass(frozen=True)
class Page:
    name: str  # relative to the repository root
    blocks: list[Block]
    code_spans: list[tuple[int, str]]
    prose: list[tuple[int, str]]


def _parser():
    return create_md_parser(MdParserConfig(enable_extensions={"deflist"}), RendererHTML)


def read_page(path: Path) -> Page:
    name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
    blocks: list[Block] = []
    spans: list[tuple[int, str]] = []
    prose: list[tuple[int, str]] = []
    _walk(_parser().parse(path.read_text(encoding="utf-8")), name, 0, blocks, spans, prose)
    return Page(name, blocks, spans, prose)


def _walk(tokens: list[Token], page: str, offset: int, blocks, spans, prose) -> None:
    for token in tokens:
        line = offset + (token.map[0] + 1 if token.map else 0)
        if token.type == "fence":
            info = token.info.strip()
            if info.startswith("{"):
                name = info[1 : info.index("}")] if "}" in info else info[1:]
                if name in CODE_DIRECTIVES:
                    blocks.append(Block(page, line, f"{{{name}}}", (), token.content))
                elif name not in OPAQUE_DIRECTIVES:  # an admonition etc.: its body is Markdown
                    body = "\n".join(x for x in token.content.split("\n") if not re.match(r"^:\w[\w-]*:", x))
                    _walk(_parser().parse(body), page, line, blocks, spans, prose)
                continue
            words = [w.rstrip(":") for w in info.split()]
            blocks.append(Block(page, line, words[0] if words else "", tuple(words[1:]), token.content))
        elif token.type == "code_block":  # an indented block: no language to check it by
            blocks.append(Block(page, line, "", (), token.content))
        elif token.type == "inline":
            for child in token.children or []:
                if child.type == "code_inline":
                    spans.append((line, child.content))
                elif child.type == "text":
                    prose.append((line, child.content))


# ---------------------------------------------------------------------------------------------
# The real parsers


def cli_parser() -> argparse.ArgumentParser:
    from jupyter_px.cli import build_parser

    return build_parser()


def parse_cli(argv: list[str]) -> str | None:
    """None when `jupyter px ARGV` parses, else argparse's own message."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            cli_parser().parse_args(argv)
    except SystemExit as exit:
        if exit.code:
            return stderr.getvalue().strip().splitlines()[-1]
    return None


def cli_subparser(words: list[str]) -> argparse.ArgumentParser:
    """The parser of `jupyter px WORDS...` as deep as its words name subcommands."""
    parser = cli_parser()
    for word in words:
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subparsers or word not in subparsers[0].choices:
            break
        parser = subparsers[0].choices[word]
    return parser


def magic_function(name: str) -> Callable | None:
    from jupyter_px.magics import MAGIC_CLASSES

    for magics in MAGIC_CLASSES:
        for names in magics.magics.values():
            if name in names:
                return getattr(magics, names[name])
    return None


def parse_magic(name: str, arguments: str) -> str | None:
    """None when `%name arguments` parses with the magic's own parser, else why not."""
    from IPython.core.error import UsageError
    from IPython.core.magic_arguments import parse_argstring

    function = magic_function(name)
    if function is None:
        return f"%{name} is not a magic of jupyter_px"
    if not hasattr(function, "parser"):
        return None
    try:
        parse_argstring(function, arguments)
    except UsageError as error:
        return f"%{name} {arguments}: {error}"
    return None


def topology_problem(text: str) -> str | None:
    """Why a polyaxonfile (its sweep section included) does not validate, or None."""
    from jupyter_px.sweeps.spec import parse_polyaxonfile
    from jupyter_px.topology import TopologyError

    try:
        parse_polyaxonfile(text)
    except TopologyError as error:
        return str(error).replace("\n", "; ")
    return None


@contextlib.contextmanager
def _environment(**values: str) -> Iterator[None]:
    saved = dict(os.environ)
    try:
        for name in [n for n in os.environ if n.startswith(("PX_K8S_", "PX_SLURM_", "PX_SSH_"))]:
            del os.environ[name]
        os.environ.update(values)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def settings_problem(text: str, backend: str = "kubernetes") -> str | None:
    """What the settings loader of the Kubernetes (or Slurm, or local) backends says of a settings file."""
    from jupyter_px.backends.base import BackendError
    from jupyter_px.backends.kubernetes.shared.settings import load_settings as kubernetes_settings
    from jupyter_px.backends.local.settings import load_settings as local_settings
    from jupyter_px.backends.slurm.settings import load_settings as slurm_settings
    from jupyter_px.backends.ssh.settings import load_settings as ssh_settings

    loaders = {"slurm": slurm_settings, "local": local_settings, "ssh": ssh_settings}
    load_settings = loaders.get(backend, kubernetes_settings)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{backend}.yaml"
        path.write_text(text)
        variables = {"slurm": "PX_SLURM_CONFIG", "local": "PX_LOCAL_CONFIG", "ssh": "PX_SSH_CONFIG"}
        variable = variables.get(backend, "PX_K8S_CONFIG")
        with _environment(**{variable: str(path)}):
            try:
                load_settings()
            except BackendError as error:
                return str(error)
    return None


def run_cli(argv: list[str], files: dict[str, str]) -> str:
    """What `jupyter px ARGV` prints (stdout, then stderr), run in a folder holding `files` and
    the repository's examples/, with a run store of its own."""
    from jupyter_px.cli import main

    with tempfile.TemporaryDirectory() as folder:
        for name, text in files.items():
            (Path(folder) / name).write_text(text)
        (Path(folder) / "examples").symlink_to(ROOT / "examples")
        out, err = io.StringIO(), io.StringIO()
        with (
            _environment(PX_HOME=str(Path(folder) / "home")),
            contextlib.chdir(folder),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            main(argv)
    return out.getvalue() + err.getvalue()


# ---------------------------------------------------------------------------------------------
# Code blocks


def check_block(block: Block, previous: Block | None) -> list[str]:
    if "notest" in block.markers:
        reason = block.markers[block.markers.index("notest") + 1 :]
        return [] if reason else [f"{block.where()}: `notest` without a reason after it"]
    checks = {"bash": check_shell, "console": check_console, "yaml": check_yaml, "python": check_python}
    if block.language == "text" and "layout" in block.markers:
        return []  # checked against the tree by test_docs.py::test_the_layout_matches_the_tree
    if block.language in checks:
        return checks[block.language](block, previous)
    what = f"```{block.language}" if block.language else "a block without a language"
    return [
        f"{block.where()}: {what} is not a kind tests/test_docs.py checks: check it by its language or mark it notest"
    ]


def shell_commands(text: str) -> Iterator[tuple[str, list[str]]]:
    """(the source line, argv) of each simple command: lines joined at a trailing backslash,
    comments dropped, split at `|`, `&&`, `||`, `;`, redirections and leading `X=y` dropped."""
    for line in text.replace("\\\n", " ").split("\n"):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        argv: list[str] = []
        words = list(lexer)
        skip = False
        for word in [*words, ";"]:
            if skip:
                skip = False
            elif word in ("|", "||", "&&", ";", "&"):
                while argv and re.match(r"^[A-Za-z_]\w*=", argv[0]):
                    argv.pop(0)
                if argv:
                    yield line.strip(), argv
                argv = []
            elif word in (">", ">>", "<", "2>", "2>&1", ">&"):
                skip = word != "2>&1"
            else:
                argv.append(word)


def _package_scripts(folder: Path) -> set[str]:
    import json

    package = json.loads((folder / "package.json").read_text())
    names = set(package.get("scripts", {}))
    binaries = {"playwright": "@playwright/test", "jest": "jest", "tsc": "typescript"}
    dev = set(package.get("devDependencies", {})) | set(package.get("dependencies", {}))
    return names | {"install"} | {name for name, dep in binaries.items() if dep in dev}


def _markers() -> set[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {m.split(":")[0].strip() for m in pyproject["tool"]["pytest"]["ini_options"]["markers"]}


def _module_runs(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    if path.with_suffix(".py").is_file() or (path / "__main__.py").is_file():
        return True
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _build_output(path: str) -> bool:
    """A path that a command makes (a build's output, git-ignored): absent in a fresh clone."""
    import subprocess

    return subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT, capture_output=True).returncode == 0


def _paths(argv: list[str]) -> list[str]:
    return [w for w in argv if w.split("/")[0] in REPO_DIRS and "/" in w and "<" not in w]


def check_command(argv: list[str], cwd: Path) -> tuple[bool, list[str]]:
    """(whether this test could check the command, its problems)."""
    problems = [
        f"{path}: no such file in the repository"
        for path in _paths(argv)
        if not (cwd / path).exists() and not _build_output(path)
    ]
    program = argv[0].rsplit("/", 1)[-1]
    if program in ("jupyter", "jupyter-px") and (program == "jupyter-px" or argv[1:2] == ["px"]):
        message = parse_cli(argv[2:] if program == "jupyter" else argv[1:])
        return True, problems + ([f"jupyter px {shlex.join(argv[2:])}: {message}"] if message else [])
    if program.startswith("python") and argv[1:2] == ["-m"] and len(argv) > 2:
        if argv[2] == "pytest":
            return True, problems + check_pytest(argv[3:], cwd)
        return True, problems + ([] if _module_runs(argv[2]) else [f"python -m {argv[2]}: no such module"])
    if program.startswith("python") and len(argv) > 1 and argv[1].endswith(".py"):
        return True, problems + ([] if (cwd / argv[1]).is_file() else [f"{argv[1]}: no such file"])
    if program == "pytest":
        return True, problems + check_pytest(argv[1:], cwd)
    if program == "jlpm" and len(argv) > 1:
        known = _package_scripts(cwd)
        return True, problems + (
            [] if argv[1] in known else [f"jlpm {argv[1]}: not a script of {cwd.name}/package.json"]
        )
    if argv[0].startswith(".ci/"):
        return True, problems + ([] if (cwd / argv[0]).is_file() else [f"{argv[0]}: no such script"])
    return False, problems


def check_pytest(arguments: list[str], cwd: Path) -> list[str]:
    problems = []
    markers = _markers()
    for flag, value in zip(arguments, arguments[1:], strict=False):
        if flag == "-m":
            for word in re.findall(r"[A-Za-z_]\w*", value):
                if word not in ("and", "or", "not") and word not in markers:
                    problems.append(f"pytest -m {value!r}: {word} is not a marker declared in pyproject.toml")
    for word in arguments:
        path = not word.startswith("-") and (word.endswith(".py") or "/" in word)
        if path and not (cwd / word.split("::")[0]).exists():
            problems.append(f"pytest {word}: no such path")
    return problems


def check_shell(block: Block, previous: Block | None = None, commands=None) -> list[str]:
    where = block.where()
    problems = []
    syntax = subprocess.run(["bash", "-n"], input=block.content, capture_output=True, text=True)
    if syntax.returncode:
        problems.append(f"{where}: bash -n: {syntax.stderr.strip()}")
    ci_lines = {line.split(" #")[0].strip() for line in CI_RUN.read_text().splitlines()}
    checked = False
    cwd = ROOT
    for line, argv in commands if commands is not None else shell_commands(block.content):
        if argv[0] == "cd" and len(argv) > 1:
            cwd = cwd / argv[1]
            continue
        could, found = check_command(argv, cwd)
        checked = checked or could or line in ci_lines
        problems += [f"{where}: {p}" for p in found]
    if not checked:
        problems.append(f"{where}: no command here that tests/test_docs.py can check: mark the block `notest REASON`")
    return problems


#: Commands whose output a `console` block shows is compared with what they really print.
EXECUTED = ("validate", "env")


def check_console(block: Block, previous: Block | None) -> list[str]:
    where = block.where()
    runs: list[tuple[str, list[str]]] = []  # (command line, expected output lines)
    for line in block.content.rstrip("\n").split("\n"):
        if line.startswith("$ "):
            runs.append((line[2:], []))
        elif runs:
            runs[-1][1].append(line.rstrip())
        else:
            return [f"{where}: a console block starts with a `$ ` command line"]
    commands = [(command, argv) for command, _ in runs for _, argv in shell_commands(command)]
    problems = check_shell(Block(block.page, block.line, "bash", (), "\n".join(c for c, _ in runs)), None, commands)
    files = {}
    if previous is not None and previous.language == "yaml":
        files["topology.yaml"] = previous.content.removeprefix(TOPOLOGY_CELL)
    for command, expected in runs:
        argv = shlex.split(command)
        if argv[:2] == ["jupyter", "px"] and argv[2:3] and argv[2] in EXECUTED:
            printed = run_cli(argv[2:], files).rstrip("\n").split("\n")
            if printed != expected:
                problems.append(f"{where}: `{command}` prints {printed!r}, the block shows {expected!r}")
    return problems


def check_yaml(block: Block, previous: Block | None = None) -> list[str]:
    where = block.where()
    text = block.content
    first = text.split("\n", 1)[0].strip()
    if first == SETTINGS_FILE_LINE:
        problem = settings_problem(text)
        return [f"{where}: Kubernetes settings: {problem}"] if problem else []
    if first == SLURM_SETTINGS_FILE_LINE:
        problem = settings_problem(text, "slurm")
        return [f"{where}: Slurm settings: {problem}"] if problem else []
    if first == SSH_SETTINGS_FILE_LINE:
        problem = settings_problem(text, "ssh")
        return [f"{where}: SSH settings: {problem}"] if problem else []
    if first == LOCAL_SETTINGS_FILE_LINE:
        problem = settings_problem(text, "local")
        return [f"{where}: local backend settings: {problem}"] if problem else []
    problems = []
    if first.startswith(TOPOLOGY_CELL):
        message = parse_magic("px_topology", first[len(TOPOLOGY_CELL) :].strip())
        problems += [f"{where}: {message}"] if message else []
        text = text.split("\n", 1)[1] if "\n" in text else ""
    problem = topology_problem(text)
    if "invalid" in block.markers:
        return problems + ([] if problem else [f"{where}: marked invalid, but the topology parser accepts it"])
    return problems + ([f"{where}: {problem}"] if problem else [])


def check_python(block: Block, previous: Block | None = None) -> list[str]:
    from IPython.core.inputtransformer2 import TransformerManager

    where = block.where()
    code = block.content
    problems = []
    first, _, body = code.partition("\n")
    if first.startswith("%%"):
        name, _, arguments = first[2:].partition(" ")
        message = parse_magic(name, arguments.strip()) if name.startswith("px_") else None
        problems += [f"{where}: {message}"] if message else []
        if name == "px_topology":
            problem = topology_problem(body)
            return problems + ([f"{where}: {problem}"] if problem else [])
        if name != "px_distributed":
            return problems
        code = body
    for match in re.finditer(r"^\s*%(?!%)(\w+)[ \t]*(.*)$", code, re.MULTILINE):
        if match.group(1).startswith("px_"):
            message = parse_magic(match.group(1), match.group(2).strip())
            problems += [f"{where}: {message}"] if message else []
    try:
        tree = ast.parse(TransformerManager().transform_cell(code))
    except SyntaxError as error:
        return problems + [f"{where}: line {error.lineno}: {error.msg}"]
    problems += [f"{where}: {p}" for p in _import_problems(tree)]
    if code.startswith(SERVER_CONFIG_LINE):
        problems += [f"{where}: {p}" for p in _server_config_problems(code)]
    return problems


def _import_problems(tree: ast.AST) -> list[str]:
    import importlib

    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [(alias.name, None) for alias in node.names if alias.name.split(".")[0] == "jupyter_px"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "jupyter_px":
            names = [(node.module or "", alias.name) for alias in node.names]
        else:
            continue
        for module_name, attribute in names:
            try:
                module = importlib.import_module(module_name)
            except ImportError as error:
                problems.append(f"import {module_name}: {error}")
                continue
            if attribute and not hasattr(module, attribute):
                try:
                    importlib.import_module(f"{module_name}.{attribute}")
                except ImportError:
                    problems.append(f"from {module_name} import {attribute}: no such name")
    return problems


def _server_config_problems(code: str) -> list[str]:
    from traitlets import TraitError
    from traitlets.config import Config

    from jupyter_px.server.app import JupyterPxApp

    config = Config()
    exec(compile(code, "jupyter_server_config.py", "exec"), {"c": config})
    traits = JupyterPxApp.class_traits(config=True)
    problems = [f"c.JupyterPxApp.{name}: not a setting" for name in config.JupyterPxApp if name not in traits]
    try:
        JupyterPxApp(config=config)
    except TraitError as error:
        problems.append(str(error))
    return problems


# ---------------------------------------------------------------------------------------------
# Inline code and prose


def _placeholder(name: str) -> bool:
    """`.ci/NAME`, `python -m MODULE`, `runs/<id>`: a name a reader fills in."""
    return bool(re.search(r"[<{*]", name)) or any(re.fullmatch(r"[A-Z][A-Z_]+", p) for p in re.split(r"[/.]", name))


def _ignored(path: str) -> bool:
    """A path git ignores (`ui-tests/screenshots/`): written by a run, not in a clone."""
    return subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT).returncode == 0


def check_code_span(line: int, span: str, page: str) -> list[str]:
    where = f"{page}:{line}"
    problems = []
    text = span.replace("\\|", "|")
    magic = re.match(r"^%%?(px_\w+)(.*)$", text)
    if magic:
        function = magic_function(magic.group(1))
        if function is None:
            return [f"{where}: `{span}`: %{magic.group(1)} is not a magic of jupyter_px"]
        options = set(function.parser._option_string_actions) if hasattr(function, "parser") else set()
        problems += [
            f"{where}: `{span}`: %{magic.group(1)} has no option {flag}"
            for flag in re.findall(r"(?<![\w-])--[a-z][\w-]*", magic.group(2))
            if flag not in options
        ]
    command = re.match(r"^jupyter px\b(.*)$", text)
    if command:
        words = re.findall(r"[a-z][\w-]*", command.group(1).split("-")[0] if command.group(1) else "")
        parser = cli_subparser(words)
        problems += [
            f"{where}: `{span}`: `{parser.prog}` has no option {flag}"
            for flag in re.findall(r"(?<![\w-])--[a-z][\w-]*", command.group(1))
            if flag not in parser._option_string_actions
        ]
    module = re.match(r"^python -m ([\w.]+)", text)
    if module and not _placeholder(module.group(1)) and not _module_runs(module.group(1)):
        problems.append(f"{where}: `{span}`: no module {module.group(1)} to run")
    path = re.match(r"^([\w.-]+/[^\s`]*)$", text.rstrip(".,;:"))
    named = path.group(1) if path and path.group(1).split("/")[0] in REPO_DIRS else None
    gone = named and not _placeholder(named.replace("*", "")) and not any(ROOT.glob(named.rstrip("/")))
    if gone and not _ignored(str(named)):
        problems.append(f"{where}: `{span}`: no such path in the repository")
    return problems


def check_prose(line: int, text: str, page: str) -> list[str]:
    return [
        f"{page}:{line}: {match.group(0)!r}: write {spelling}"
        for pattern, spelling in SPELLING
        for match in pattern.finditer(text)
    ]


def check_page(page: Page) -> list[str]:
    problems = []
    previous = None
    for block in page.blocks:
        problems += check_block(block, previous)
        previous = block
    for line, span in page.code_spans:
        problems += check_code_span(line, span, page.name)
    for line, text in page.prose:
        problems += check_prose(line, text, page.name)
    return problems


# ---------------------------------------------------------------------------------------------
# The layout


def layout_entries(text: str) -> list[tuple[int, str]]:
    """(line number in the block, path) of every entry the layout names: an entry line is indented
    by 0, 2, 4 or 6 spaces (its depth), its names before the first two spaces, comma-separated;
    deeper-indented lines describe the entry above."""
    entries: list[tuple[int, str]] = []
    parents: list[str] = []
    for number, line in enumerate(text.split("\n"), 1):
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip() or indent >= 8 or indent % 2:
            continue
        depth = indent // 2
        parents = parents[:depth]
        if len(parents) < depth:
            entries.append((number, f"! indented under nothing: {line.strip()}"))
            continue
        names = [n.strip() for n in re.split(r"\s{2,}", line.strip())[0].split(",") if n.strip()]
        prefix = parents[-1] if parents else ""
        for name in names:
            entries.append((number, prefix + name))
        parents.append(prefix + (names[-1] if names[-1].endswith("/") else "?/"))
    return entries


#: A file named in an entry's description: `sweep.py`, `*_support.py`, `labextension/src/types.ts`.
MENTION = re.compile(r"(?<![\w/*.-])([\w*][\w./*-]*\.(?:py|ts|tsx|json|md|css|yaml|toml))\b")


def layout_mentions(text: str) -> list[tuple[int, str, str]]:
    """(line, entry, file) for every file an entry's description names, so a module that moves
    out of the folder whose description names it is seen (the entry's folder is searched first,
    then the repository's root)."""
    mentions = []
    entries = dict(layout_entries(text))
    owner = ""
    for number, line in enumerate(text.split("\n"), 1):
        indent = len(line) - len(line.lstrip(" "))
        description = line
        if line.strip() and indent < 8 and not indent % 2:
            owner = entries.get(number, owner)
            description = " ".join(re.split(r"\s{2,}", line.strip())[1:])
        mentions += [(number, owner, name) for name in MENTION.findall(description)]
    return mentions


def mention_problems(mentions: list[tuple[int, str, str]]) -> list[str]:
    problems = []
    for number, owner, name in mentions:
        folder = ROOT / owner if owner.endswith("/") else (ROOT / owner).parent
        pattern = name if "/" in name else f"**/{name}"
        if not any(folder.glob(pattern)) and not any(ROOT.glob(name)):
            problems.append(f"layout line {number}: {name}, named under {owner}, is not in {folder.relative_to(ROOT)}/")
    return problems


def layout_problems(entries: list[tuple[int, str]], tracked: list[str]) -> list[str]:
    """Every named path exists, none is named twice, every top-level entry of the repository and
    every package of jupyter_px/ is named."""
    problems = []
    named: dict[str, int] = {}
    for number, path in entries:
        if path.startswith("!"):
            problems.append(f"layout line {number}: {path[2:]}")
            continue
        if path in named:
            problems.append(f"layout line {number}: {path} is named twice (also line {named[path]})")
        named[path] = number
        target = ROOT / path
        if not (target.is_dir() if path.endswith("/") else target.is_file()):
            problems.append(f"layout line {number}: {path} does not exist")
    top = {p.split("/")[0] + ("/" if "/" in p else "") for p in tracked}
    packages = {
        "/".join(p.split("/")[:2]) + "/"
        for p in tracked
        if p.startswith("jupyter_px/") and p.count("/") == 2 and p.endswith("/__init__.py")
    }
    for entry in sorted(top | packages):
        if entry not in named:
            problems.append(f"{entry} is in the repository but not named in the layout: add a line for it")
    return problems
