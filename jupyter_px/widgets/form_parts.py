"""The topology form's parts: its choices (from the topology model's schema), fields that show
their problems, the resources editor, a per-index override row, a saved topology's display.

`topology_form.TopologyForm` assembles them; kept apart so each file holds one job (the form's
layout and validation there, its building blocks here).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

from .. import backend_table
from ..topology import Topology
from ..topology.export import headline


def _choices(field: str) -> list[str]:
    """A field's values from the topology model's JSON Schema: the sidebar's form offers the
    same ones (one model, two front-ends); a backend's other names (`kubernetes` for `native`,
    `backend_table`) are not choices of their own."""
    from ..topology import json_schema

    node = json_schema()["properties"][field]
    options: list[str] = node.get("enum") or next((o["enum"] for o in node.get("anyOf", []) if "enum" in o), [])
    aliases = {alias for entry in backend_table.BACKENDS for alias in entry.aliases}
    return [value for value in options if value not in aliases]


FRAMEWORKS = [("(none)", "")] + [(name, name) for name in _choices("framework")]
BACKENDS = _choices("backend")
#: Frameworks whose jobs have parameter servers (TensorFlow's ps, MXNet's servers): the ps
#: fields are hidden for the others (unless a loaded topology has some, so nothing is hidden
#: that the topology holds).
FRAMEWORKS_WITH_PS = frozenset({"tensorflow", "mxnet"})
KINDS = ("cpu", "memory", "gpu")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
ERROR_COLOR = "var(--jp-error-color1, #d62728)"
#: Messages wrap inside the width they are given, so a long one adds lines, never width.
MESSAGE_STYLE = f"color:{ERROR_COLOR};font-size:12px;line-height:16px;white-space:normal;overflow-wrap:anywhere"
_PATH_STYLE = "opacity:0.7;font-size:11px"
#: How a widget at fault is outlined: a class (for the sidebar's and users' CSS) and a border
#: (which needs no stylesheet, so it shows in every front end).
INVALID_CLASS = "px-invalid"
_INVALID_BORDER = f"1px solid {ERROR_COLOR}"
#: The override rule, said where overrides are edited: polyaxon replaces the whole block.
OVERRIDE_RULE = (
    "An override's resources replace the role's default resources as a whole (polyaxon's rule): "
    "a field left empty is unset for that replica, not taken from the default. "
    "A new override starts from the role's default resources."
)

PATH_REPLICAS = "environment.replicas"


def _quantity(text: str) -> Any:
    """Text box -> YAML value: '' is unset, '2' and '0.5' are numbers, '500m'/'1Gi' stay text."""
    text = text.strip()
    if not text:
        return None
    if _NUMBER.match(text):
        number = float(text)
        return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
    return text


def _show(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def resources_value(boxes: dict[tuple[str, str], widgets.Text]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in KINDS:
        pair = {bound: _quantity(boxes[(kind, bound)].value) for bound in ("requests", "limits")}
        pair = {k: v for k, v in pair.items() if v is not None}
        if pair:
            out[kind] = pair
    return out


def load_resources(boxes: dict[tuple[str, str], widgets.Text], resources: dict[str, Any] | None) -> None:
    resources = resources or {}
    for kind in KINDS:
        pair = resources.get(kind) or {}
        if not isinstance(pair, dict):
            pair = {"requests": pair, "limits": pair}
        for bound in ("requests", "limits"):
            boxes[(kind, bound)].value = _show(pair.get(bound))


class Messages(widgets.HTML):
    """Where the problems of one field (or group of fields) appear: plain words first, the
    field path after them, small."""

    def __init__(self, **layout: str):
        super().__init__(layout=widgets.Layout(**layout))
        self.add_class("px-messages")

    def show(self, messages: Iterable[tuple[str, str]]) -> None:
        """(text, field path) pairs, one per line."""
        self.value = render_messages(messages)


def render_messages(messages: Iterable[tuple[str, str]]) -> str:
    return "".join(
        f"<div style='{MESSAGE_STYLE}'>{html.escape(text)}"
        + (f" <span style='{_PATH_STYLE}'>({html.escape(path)})</span>" if path else "")
        + "</div>"
        for text, path in messages
    )


def mark_invalid(control: widgets.DOMWidget, invalid: bool) -> None:
    if invalid:
        control.add_class(INVALID_CLASS)
        control.layout.border = _INVALID_BORDER
    else:
        control.remove_class(INVALID_CLASS)
        control.layout.border = None


@dataclass(frozen=True)
class Target:
    """Where the problems at one field path go: who they are about, the message area, the
    widgets to outline."""

    subject: str
    detail: str
    messages: Messages
    controls: tuple[widgets.DOMWidget, ...]

    def text(self, message: str, rest: str) -> str:
        detail = " ".join(part for part in (self.detail, rest) if part)
        return f"{self.subject}: {detail + ' ' if detail else ''}{message}"


class ResourcesEditor:
    """cpu / memory / gpu, each requests and limits, for one path (`environment.resources`, ...).

    Its width is fixed and its messages wrap inside it, so a long message never re-flows the
    editors beside it."""

    def __init__(self, title: str, subject: str, path: str, on_change: Callable[..., None]):
        self.path = path
        self.subject = subject
        self.boxes: dict[tuple[str, str], widgets.Text] = {}
        self.errors: dict[str, Messages] = {}
        rows: list[widgets.Widget] = [
            widgets.HTML(f"<b>{html.escape(title)}</b>"),
            widgets.HTML(
                "<span style='display:inline-block;width:60px'></span>"
                "<span style='display:inline-block;width:114px'>requests</span>limits"
            ),
        ]
        placeholders = {"cpu": "cores: 2, 500m", "memory": "MiB, or 1Gi", "gpu": "GPUs"}
        for kind in KINDS:
            cells: list[widgets.Widget] = [widgets.Label(kind, layout=widgets.Layout(width="56px"))]
            for bound in ("requests", "limits"):
                box = widgets.Text(placeholder=placeholders[kind], layout=widgets.Layout(width="110px"))
                box.observe(on_change, names="value")
                self.boxes[(kind, bound)] = box
                cells.append(box)
            rows.append(widgets.HBox(cells))
            self.errors[kind] = Messages(width="100%")
            rows.append(self.errors[kind])
        self.errors[""] = Messages(width="100%")
        rows.append(self.errors[""])
        self.widget = widgets.VBox(rows, layout=widgets.Layout(margin="4px 24px 8px 0", width="300px"))

    def value(self) -> dict[str, Any]:
        return resources_value(self.boxes)

    def load(self, resources: dict[str, Any] | None) -> None:
        load_resources(self.boxes, resources)

    def targets(self) -> dict[str, Target]:
        boxes = self.boxes
        out = {self.path: Target(self.subject, "resources", self.errors[""], tuple(boxes.values()))}
        for kind in KINDS:
            pair = (boxes[(kind, "requests")], boxes[(kind, "limits")])
            out[f"{self.path}.{kind}"] = Target(self.subject, kind, self.errors[kind], pair)
            for bound, box in zip(("requests", "limits"), pair, strict=True):
                out[f"{self.path}.{kind}.{bound}"] = Target(self.subject, f"{kind} {bound}", self.errors[kind], (box,))
        return out


class OverrideRow:
    """One per-index override: role, index, resources; other settings it had are kept."""

    def __init__(
        self,
        on_change: Callable[..., None],
        on_remove: Callable[[OverrideRow], None],
        role: str = "worker",
        index: int = 0,
        resources: dict | None = None,
        extra: dict | None = None,
    ):
        self.role = widgets.Dropdown(options=["worker", "ps"], value=role, layout=widgets.Layout(width="90px"))
        self.index = widgets.IntText(value=index, layout=widgets.Layout(width="70px"))
        self.boxes: dict[tuple[str, str], widgets.Text] = {}
        cells: list[widgets.Widget] = [self.role, self.index]
        for kind in KINDS:
            for bound in ("requests", "limits"):
                box = widgets.Text(
                    placeholder=f"{kind} {bound[:-1] if bound == 'limits' else 'request'}",
                    tooltip=OVERRIDE_RULE,
                    layout=widgets.Layout(width="105px"),
                )
                self.boxes[(kind, bound)] = box
                cells.append(box)
        self.remove = widgets.Button(
            description="", icon="trash", tooltip="remove this override", layout=widgets.Layout(width="36px")
        )
        self.error = Messages(width="100%")
        self.extra = dict(extra or {})
        self.widget = widgets.VBox([widgets.HBox(cells + [self.remove]), self.error])
        load_resources(self.boxes, resources)
        for control in [self.role, self.index, *self.boxes.values()]:
            control.observe(on_change, names="value")
        self.remove.on_click(lambda _b: on_remove(self))

    @property
    def label(self) -> str:
        """The row as the user reads it: `worker 3`."""
        return f"{self.role.value} {self.index.value}"

    def value(self) -> dict[str, Any]:
        entry = {"index": self.index.value, **self.extra}
        resources = resources_value(self.boxes)
        if resources:
            entry["resources"] = resources
        else:
            entry.pop("resources", None)
        return entry

    def targets(self, path: str) -> dict[str, Target]:
        """This row's fields, under the model's path for it (`...worker[1]`, its position among
        the rows of its role)."""
        label = self.label
        out = {
            path: Target(label, "", self.error, ()),
            f"{path}.index": Target(label, "index", self.error, (self.index,)),
            f"{path}.resources": Target(label, "resources", self.error, tuple(self.boxes.values())),
        }
        for kind in KINDS:
            pair = (self.boxes[(kind, "requests")], self.boxes[(kind, "limits")])
            out[f"{path}.resources.{kind}"] = Target(label, kind, self.error, pair)
            for bound, box in zip(("requests", "limits"), pair, strict=True):
                out[f"{path}.resources.{kind}.{bound}"] = Target(label, f"{kind} {bound}", self.error, (box,))
        return out


@dataclass(frozen=True)
class SavedTopology:
    """What `TopologyForm.save()` returns: a one-line confirmation in a cell, not the model's repr."""

    name: str
    topology: Topology

    def __repr__(self) -> str:
        return f"saved as {self.name!r}: {headline(self.topology)}; use it with %%px_distributed -t {self.name}"

    def _repr_html_(self) -> str:
        name = html.escape(self.name)
        return (
            f"saved as <code>{name}</code>: {html.escape(headline(self.topology))}; "
            f"use it with <code>%%px_distributed -t {name}</code>"
        )
