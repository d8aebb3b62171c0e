"""YAML text -> data, refusing text that costs more than it says.

A topology's YAML arrives from files, notebook cells and the REST API, so it is read the way an
untrusted document must be: at most `MAX_DOCUMENT_CHARS` characters; nesting at most
`MAX_YAML_DEPTH` deep (libyaml's composer recurses in C, and crashes the interpreter on
100,000 nested `[`); and at most `MAX_YAML_VALUES` values once aliases are expanded (a "billion
laughs" of 400 bytes loads instantly as shared objects, then costs minutes and gigabytes in
whatever walks it). The shape is checked on libyaml's event stream, which is flat and cheap, before
anything is built, and each refusal is one problem with the line and column it happened at.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from .errors import Problem, TopologyError, clip, format_path
from .limits import MAX_DOCUMENT_CHARS, MAX_SHOWN_CHARS, MAX_YAML_DEPTH, MAX_YAML_VALUES

#: Polyaxon's docs elide parts of a file with `...` lines; in YAML that is a document end
#: marker, which would split or break the paste. Users paste the docs as written, so drop them.
_ELISION = re.compile(r"^[ \t]*\.\.\.[ \t]*$", re.MULTILINE)

#: libyaml's parser when PyYAML was built with it (10x faster on big topologies), same results.
_FAST = hasattr(yaml, "CSafeLoader")
_BASE_LOADER: type = yaml.CSafeLoader if _FAST else yaml.SafeLoader


class _Loader(_BASE_LOADER):
    """The safe loader, with integers too long for `int()` reported where they are written."""


class _WordyLoader(yaml.SafeLoader):
    """The same in pure Python, whose syntax errors are worded better (and alike everywhere)."""


def _construct_int(loader: Any, node: yaml.ScalarNode) -> Any:
    if ":" in str(node.value):  # YAML 1.1's base 60 (`1:30` = 90): kept as written, see _construct_float
        return str(node.value)
    try:
        return loader.construct_yaml_int(node)
    except ValueError:  # Python refuses to convert more than 4,300 digits
        raise yaml.constructor.ConstructorError(
            None, None, f"a number of {len(str(node.value))} digits is too long", node.start_mark
        ) from None


def _construct_float(loader: Any, node: yaml.ScalarNode) -> Any:
    """YAML 1.1 reads `0:1:0.1` as a base-60 number (60.1); Polyaxon's sweep ranges are written
    that way (`uniform: 0:1`, `quniform: 0:1:0.1`), and YAML 1.2 has no base 60: kept as text."""
    if ":" in str(node.value):
        return str(node.value)
    return loader.construct_yaml_float(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_WordyLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)
_WordyLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)


def check_document_size(data: Any) -> None:
    """A topology in any form holds at most MAX_DOCUMENT_CHARS characters: YAML text as written,
    a mapping (a JSON body, a dict given to `submit`) as JSON. TopologyError when it is larger;
    the encoding stops at the limit, so a huge mapping costs no more than that to refuse."""
    if isinstance(data, str):
        size = len(data)
    else:
        size = 0
        try:
            for chunk in json.JSONEncoder(ensure_ascii=False, default=str).iterencode(data):
                size += len(chunk)
                if size > MAX_DOCUMENT_CHARS:
                    break
        except (ValueError, RecursionError):  # an int past Python's 4,300 digits: the fields' checks name it
            return
    if size > MAX_DOCUMENT_CHARS:
        written = "the text" if isinstance(data, str) else "the topology, written as JSON,"
        more = f"{size:,} characters long" if isinstance(data, str) else f"over {MAX_DOCUMENT_CHARS:,} characters"
        raise TopologyError(
            [
                Problem(
                    "", f"{written} is {more}; the limit is {MAX_DOCUMENT_CHARS:,} ({MAX_DOCUMENT_CHARS / 2**20:g} MiB)"
                )
            ]
        )


def load_yaml(text: str) -> Any:
    """YAML text -> data, with `...` elisions removed; YAML syntax errors and text beyond the
    limits become a TopologyError."""
    if not isinstance(text, str):
        raise TopologyError([Problem("", f"expected YAML text, got {type(text).__name__}")])
    if len(text) > MAX_DOCUMENT_CHARS:
        raise TopologyError(
            [
                Problem(
                    "yaml",
                    f"the text is {len(text):,} characters long; the limit is {MAX_DOCUMENT_CHARS:,} "
                    f"({MAX_DOCUMENT_CHARS / 2**20:g} MiB)",
                )
            ]
        )
    text = _ELISION.sub("", text)
    try:
        try:
            _check_shape(text, _BASE_LOADER)
            return _load_unique(text, _Loader)
        except yaml.constructor.ConstructorError:
            raise
        except yaml.YAMLError:
            pass
        # A syntax error: read again in pure Python for its wording, the shape checked again in
        # case that parser accepts what libyaml did not.
        _check_shape(text, yaml.SafeLoader)
        return _load_unique(text, _WordyLoader)
    except yaml.YAMLError as error:
        raise TopologyError([_problem(error)]) from None
    except _Refused as refused:
        raise TopologyError([Problem("yaml", f"{_where(refused.mark)}{refused}")]) from None


def _load_unique(text: str, loader_class: type) -> Any:
    """`yaml.load`, refusing a key given twice in one mapping (YAML keeps the last, silently:
    `n_workers: 8` then `n_workers: 2` would run two). Each one is a problem at its field path."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        duplicates = _duplicate_keys(node)
        if duplicates:
            raise TopologyError(duplicates)
        return loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()


def _duplicate_keys(root: Any) -> list[Problem]:
    """Every key given more than once, in document order. Walks each node once (anchors shared
    through aliases are checked where they are defined); `_check_shape` bounded the walk."""
    problems: list[tuple[int, Problem]] = []  # (line, problem), sorted into document order
    seen: set[int] = set()
    stack: list[tuple[Any, tuple[Any, ...]]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first_line: dict[tuple[str, str], int] = {}
            children = []
            for key, value in node.value:
                if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
                    children.append((value, path))
                    continue
                where = (key.tag, key.value)
                if where in first_line:
                    line = key.start_mark.line + 1
                    problems.append(
                        (
                            line,
                            Problem(
                                format_path((*path, key.value)),
                                f"given more than once (lines {first_line[where]} and {line}); "
                                "YAML would keep only the last, so remove one",
                            ),
                        )
                    )
                else:
                    first_line[where] = key.start_mark.line + 1
                children.append((value, (*path, key.value)))
            stack.extend(reversed(children))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed([(item, (*path, i)) for i, item in enumerate(node.value)]))
    return [problem for _, problem in sorted(problems, key=lambda found: found[0])]


class _Refused(Exception):
    """Valid YAML that will not be expanded: where and why."""

    def __init__(self, mark: Any, problem: str):
        super().__init__(problem)
        self.mark = mark


def _where(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""


def _problem(error: yaml.YAMLError) -> Problem:
    what = clip(getattr(error, "problem", None) or str(error), 2 * MAX_SHOWN_CHARS)  # it may quote a tag
    return Problem("yaml", f"{_where(getattr(error, 'problem_mark', None))}{what}")


def _check_shape(text: str, loader: type) -> None:
    """Walk the event stream once: nesting depth, and how many values the aliases expand to.

    Sizes are counted, never built: an alias adds the size its anchor had when it was closed, so
    the count is exact for the expanded document and the walk is linear in the text.
    """
    sizes: dict[str, int] = {}  # anchor -> values under it, itself included
    open_anchors: set[str] = set()
    stack: list[list[Any]] = [[0, None]]  # per open collection: [values so far, its anchor]; [0] is the stream
    total = 0
    aliased = False
    scalar, alias = yaml.ScalarEvent, yaml.AliasEvent
    starts, ends = (yaml.MappingStartEvent, yaml.SequenceStartEvent), (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    event: Any  # each kind below has the attributes used on it
    for event in yaml.parse(text, Loader=loader):  # kinds tested by identity, commonest first: it is the hot loop
        kind = type(event)
        if kind is scalar:
            size = 1
            if event.anchor:
                sizes[event.anchor] = 1
        elif kind in starts:
            if len(stack) > MAX_YAML_DEPTH:
                raise _Refused(event.start_mark, f"nested more than {MAX_YAML_DEPTH} levels deep")
            if event.anchor:
                open_anchors.add(event.anchor)
            stack.append([1, event.anchor])
            total += 1
            continue
        elif kind in ends:
            size, anchor = stack.pop()
            if anchor:
                sizes[anchor] = size
                open_anchors.discard(anchor)
            stack[-1][0] += size
            continue
        elif kind is alias:
            if event.anchor in open_anchors:
                raise _Refused(
                    event.start_mark, f"alias *{clip(event.anchor)} is used inside the value it names (a loop)"
                )
            size = sizes.get(event.anchor or "", 1)  # an undefined alias: the loader reports it
            aliased = True
        else:
            continue
        total += size
        stack[-1][0] += size
        if total > MAX_YAML_VALUES:
            what = "aliases (*name) expand this document" if aliased else "this document holds"
            raise _Refused(
                event.start_mark, f"{what} beyond {MAX_YAML_VALUES:,} values; write the topology out instead"
            )
