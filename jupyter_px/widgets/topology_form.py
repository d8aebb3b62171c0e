"""`TopologyForm`: build a topology with widgets, validated live by the topology model.

The form holds no rules of its own: on every change it builds the polyaxonfile dictionary,
hands it to `topology.try_parse` (the single source of truth also used by the YAML cell, the CLI
and the sidebar) and shows each problem beside the widget its field path points at
(`environment.replicas.worker[1].index` -> the index box of the second worker override row).

It scales with the number of *overrides*, not replicas: 256 workers are one number box; only
the per-index override rows (which a user adds one by one) are widgets. Fields the form does not
edit (image, env, node selectors, restart policy, evaluator, names, ...) are kept from the loaded
topology and written back unchanged, so loading and saving a topology loses nothing.
"""

from __future__ import annotations

import copy
import html
import re
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import yaml

from ..topology import Problem, Topology, TopologyError, parse_topology, to_dict, to_yaml, try_parse
from ..topology.export import headline
from ..topology.registry import topologies

FRAMEWORKS = [
    ("(none)", ""),
    ("tensorflow", "tensorflow"),
    ("pytorch", "pytorch"),
    ("mxnet", "mxnet"),
    ("horovod", "horovod"),
    ("mpi", "mpi"),
]
BACKENDS = ["local", "native", "kubeflow"]
KINDS = ("cpu", "memory", "gpu")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_ERROR_STYLE = "color:#d62728;font-size:12px"

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


def _resources_value(boxes: dict[tuple[str, str], widgets.Text]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in KINDS:
        pair = {bound: _quantity(boxes[(kind, bound)].value) for bound in ("requests", "limits")}
        pair = {k: v for k, v in pair.items() if v is not None}
        if pair:
            out[kind] = pair
    return out


def _load_resources(boxes: dict[tuple[str, str], widgets.Text], resources: dict[str, Any] | None) -> None:
    resources = resources or {}
    for kind in KINDS:
        pair = resources.get(kind) or {}
        if not isinstance(pair, dict):
            pair = {"requests": pair, "limits": pair}
        for bound in ("requests", "limits"):
            boxes[(kind, bound)].value = _show(pair.get(bound))


class _ErrorLabel(widgets.HTML):
    """Where the problems of one field (or group of fields) appear."""

    def show(self, messages: list[str]) -> None:
        self.value = "".join(f"<div style='{_ERROR_STYLE}'>{html.escape(m)}</div>" for m in messages)


class ResourcesEditor:
    """cpu / memory / gpu, each requests and limits, for one path (`environment.resources`, ...)."""

    def __init__(self, title: str, path: str, on_change: Callable[..., None]):
        self.path = path
        self.boxes: dict[tuple[str, str], widgets.Text] = {}
        self.errors: dict[str, _ErrorLabel] = {}
        rows = [
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
            self.errors[kind] = _ErrorLabel()
            cells.append(self.errors[kind])
            rows.append(widgets.HBox(cells))
        self.errors[""] = _ErrorLabel()
        rows.append(self.errors[""])
        self.widget = widgets.VBox(rows, layout=widgets.Layout(margin="4px 24px 8px 0", min_width="300px"))

    def value(self) -> dict[str, Any]:
        return _resources_value(self.boxes)

    def load(self, resources: dict[str, Any] | None) -> None:
        _load_resources(self.boxes, resources)

    def labels(self) -> dict[str, _ErrorLabel]:
        out = {f"{self.path}.{kind}": label for kind, label in self.errors.items() if kind}
        out[self.path] = self.errors[""]
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
                    layout=widgets.Layout(width="105px"),
                )
                self.boxes[(kind, bound)] = box
                cells.append(box)
        self.remove = widgets.Button(
            description="", icon="trash", tooltip="remove this override", layout=widgets.Layout(width="36px")
        )
        self.error = _ErrorLabel()
        self.extra = dict(extra or {})
        self.widget = widgets.VBox([widgets.HBox(cells + [self.remove]), self.error])
        _load_resources(self.boxes, resources)
        for control in [self.role, self.index, *self.boxes.values()]:
            control.observe(on_change, names="value")
        self.remove.on_click(lambda _b: on_remove(self))

    def value(self) -> dict[str, Any]:
        entry = {"index": self.index.value, **self.extra}
        resources = _resources_value(self.boxes)
        if resources:
            entry["resources"] = resources
        else:
            entry.pop("resources", None)
        return entry


class TopologyForm(widgets.VBox):
    """A form for a distributed topology, validated as you type.

    form = TopologyForm()                 # or TopologyForm(name="cluster") to edit a saved one
    form.workers.value = 4
    form.topology                         # the validated model (TopologyError if invalid)
    form.save("cluster")                  # now `%%px_distributed -t cluster` uses it
    """

    def __init__(self, topology: Topology | str | dict | None = None, *, name: str | None = None, **kwargs: Any):
        self._loading = False
        self._base: dict[str, Any] = {}
        self.problems: list[Problem] = []
        self._topology: Topology | None = None

        self.framework = widgets.Dropdown(options=FRAMEWORKS, value="", description="framework")
        self.backend = widgets.Dropdown(options=BACKENDS, value="local", description="backend")
        self.master = widgets.Checkbox(value=True, description="master replica", indent=False)
        self.workers = widgets.IntText(value=0, description="workers")
        self.ps = widgets.IntText(value=0, description="ps")
        for control in (self.framework, self.backend, self.master, self.workers, self.ps):
            control.observe(self._changed, names="value")
        self._field_errors = {key: _ErrorLabel() for key in ("framework", "backend", "n_masters", "n_workers", "n_ps")}

        self.master_resources = ResourcesEditor("master resources", "environment.resources", self._changed)
        self.worker_resources = ResourcesEditor(
            "default worker resources", f"{PATH_REPLICAS}.default_worker.resources", self._changed
        )
        self.ps_resources = ResourcesEditor(
            "default ps resources", f"{PATH_REPLICAS}.default_ps.resources", self._changed
        )

        self.rows: list[OverrideRow] = []
        self.rows_box = widgets.VBox()
        self.add_row_button = widgets.Button(
            description="add override", icon="plus", tooltip="resources for one worker or ps index"
        )
        self.add_row_button.on_click(lambda _b: self.add_override())

        self.general_errors = _ErrorLabel()
        self.summary = widgets.HTML()
        self.preview = widgets.HTML()
        self.name = widgets.Text(value=name or "", description="name", placeholder="topology name")
        self.save_button = widgets.Button(
            description="save", icon="save", tooltip="save under this name for %%px_distributed -t NAME"
        )
        self.save_status = widgets.HTML()
        self.save_button.on_click(lambda _b: self._save_clicked())

        def field(control: widgets.Widget, key: str) -> widgets.Widget:
            return widgets.HBox([control, self._field_errors[key]])

        super().__init__(
            children=[
                field(self.framework, "framework"),
                field(self.backend, "backend"),
                field(self.master, "n_masters"),
                field(self.workers, "n_workers"),
                field(self.ps, "n_ps"),
                widgets.HBox(
                    [self.master_resources.widget, self.worker_resources.widget, self.ps_resources.widget],
                    layout=widgets.Layout(flex_flow="row wrap"),
                ),
                widgets.HTML("<b>per-index overrides</b> <small>(replace the role's default for that index)</small>"),
                widgets.HTML(
                    "<small>role, index, cpu requests/limits, memory requests/limits (MiB), gpu requests/limits</small>"
                ),
                self.rows_box,
                self.add_row_button,
                self.general_errors,
                self.summary,
                widgets.Accordion(children=[self.preview], titles=["YAML"], selected_index=0),
                widgets.HBox([self.name, self.save_button, self.save_status]),
            ],
            **kwargs,
        )
        self.add_class("px-topology-form")
        if topology is None and name:
            topology = topologies.get(name)
        if topology is not None:
            self.load(topology)
        else:
            self._validate()

    def __repr__(self) -> str:
        if self._topology is not None:
            return f"<TopologyForm: {headline(self._topology)}>"
        return f"<TopologyForm: {len(self.problems)} problem(s)>"

    # ---- model <-> widgets ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The polyaxonfile dictionary the widgets describe (not validated)."""
        data = copy.deepcopy(self._base)
        data.pop("framework", None)
        if self.framework.value:
            data["framework"] = self.framework.value
        data["backend"] = self.backend.value
        env = data.setdefault("environment", {})
        _set(env, "resources", self.master_resources.value())
        replicas = env.setdefault("replicas", {})
        _set(replicas, "n_masters", None if self.master.value else 0)
        _set(replicas, "n_workers", self.workers.value or None)
        _set(replicas, "n_ps", self.ps.value or None)
        for role, editor in (("worker", self.worker_resources), ("ps", self.ps_resources)):
            default = dict(replicas.get(f"default_{role}") or {})
            _set(default, "resources", editor.value())
            _set(replicas, f"default_{role}", default)
            _set(replicas, role, [row.value() for row in self.rows if row.role.value == role])
        _set(env, "replicas", replicas)
        _set(data, "environment", env)
        return data

    def load(self, topology: Topology | str | dict) -> None:
        """Show a topology (a model, YAML text in either form, or a dict); raises TopologyError."""
        data = to_dict(parse_topology(topology))
        base = copy.deepcopy(data)
        env = base.get("environment", {})
        replicas = env.get("replicas", {})
        self._loading = True
        try:
            self.framework.value = base.pop("framework", "") or ""
            self.backend.value = base.pop("backend", "local")
            self.master.value = replicas.pop("n_masters", 1) != 0
            self.workers.value = replicas.pop("n_workers", 0)
            self.ps.value = replicas.pop("n_ps", 0)
            self.master_resources.load(env.pop("resources", None))
            for role, editor in (("worker", self.worker_resources), ("ps", self.ps_resources)):
                default = replicas.get(f"default_{role}") or {}
                editor.load(default.pop("resources", None))
            for row in list(self.rows):
                self._drop_row(row)
            for role in ("worker", "ps"):
                for entry in replicas.pop(role, []):
                    entry = dict(entry)
                    index = entry.pop("index")
                    resources = entry.pop("resources", None)
                    self.add_override(role, index, resources, extra=entry, validate=False)
            self._base = base
        finally:
            self._loading = False
        self._validate()

    def add_override(
        self,
        role: str = "worker",
        index: int | None = None,
        resources: dict | None = None,
        extra: dict | None = None,
        validate: bool = True,
    ) -> OverrideRow:
        """Add a per-index override row (the "add override" button)."""
        if index is None:
            taken = {row.index.value for row in self.rows if row.role.value == role}
            index = next(i for i in range(len(taken) + 1) if i not in taken)
        row = OverrideRow(self._changed, self.remove_override, role, index, resources, extra)
        self.rows.append(row)
        self.rows_box.children = [r.widget for r in self.rows]
        if validate:
            self._validate()
        return row

    def remove_override(self, row: OverrideRow) -> None:
        self._drop_row(row)
        self._validate()

    def _drop_row(self, row: OverrideRow) -> None:
        self.rows.remove(row)
        self.rows_box.children = [r.widget for r in self.rows]
        row.widget.close()

    # ---- validation ----------------------------------------------------------------------------
    def _changed(self, _change: Any = None) -> None:
        if not self._loading:
            self._validate()

    def _labels(self) -> dict[str, _ErrorLabel]:
        """Field path -> the label beside the widget that edits it."""
        labels: dict[str, _ErrorLabel] = {
            "framework": self._field_errors["framework"],
            "backend": self._field_errors["backend"],
            f"{PATH_REPLICAS}.n_masters": self._field_errors["n_masters"],
            f"{PATH_REPLICAS}.n_workers": self._field_errors["n_workers"],
            f"{PATH_REPLICAS}.worker": self._field_errors["n_workers"],
            f"{PATH_REPLICAS}.n_ps": self._field_errors["n_ps"],
            f"{PATH_REPLICAS}.ps": self._field_errors["n_ps"],
        }
        for editor in (self.master_resources, self.worker_resources, self.ps_resources):
            labels.update(editor.labels())
        positions = {"worker": 0, "ps": 0}
        for row in self.rows:
            role = row.role.value
            labels[f"{PATH_REPLICAS}.{role}[{positions[role]}]"] = row.error
            positions[role] += 1
        return labels

    def label_for(self, path: str) -> _ErrorLabel:
        """The label a problem at `path` is shown in (the longest matching field path)."""
        best, best_len = self.general_errors, -1
        for key, label in self._labels().items():
            if (path == key or path.startswith(key + ".") or path.startswith(key + "[")) and len(key) > best_len:
                best, best_len = label, len(key)
        return best

    def _validate(self) -> None:
        data = self.to_dict()
        topology, problems = try_parse(data)
        self._topology, self.problems = topology, problems
        shown: dict[int, tuple[_ErrorLabel, list[str]]] = {}
        for label in [self.general_errors, *self._labels().values()]:
            shown.setdefault(id(label), (label, []))
        for problem in problems:
            label = self.label_for(problem.path)
            text = str(problem) if label is self.general_errors else f"{problem.path}: {problem.message}"
            shown.setdefault(id(label), (label, []))[1].append(text)
        for label, messages in shown.values():
            label.show(messages)
        if topology is not None:
            self.summary.value = f"<span style='color:#2ca02c'>valid</span>: {html.escape(headline(topology))}"
            self.preview.value = f"<pre style='margin:0'>{html.escape(to_yaml(topology))}</pre>"
        else:
            count = len(problems)
            self.summary.value = f"<span style='color:#d62728'>{count} problem{'s' if count != 1 else ''}</span>"
            self.preview.value = (
                f"<pre style='margin:0;color:#888'>{html.escape(yaml.safe_dump(data, sort_keys=False))}</pre>"
            )

    @property
    def valid(self) -> bool:
        return self._topology is not None

    @property
    def topology(self) -> Topology:
        """The validated topology; raises TopologyError listing every problem."""
        if self._topology is None:
            raise TopologyError(self.problems)
        return self._topology

    @property
    def yaml(self) -> str:
        return to_yaml(self.topology)

    # ---- names ---------------------------------------------------------------------------------
    def save(self, name: str | None = None) -> Topology:
        """Save under `name` (default: the name box) as a `%%px_topology` name, and make it the
        session's current topology. Raises TopologyError if invalid, ValueError without a name."""
        name = (name if name is not None else self.name.value).strip()
        if not name:
            raise ValueError("give the topology a name to save it under")
        topology = self.topology
        topologies.put(name, topology)
        self.name.value = name
        self.save_status.value = (
            f"saved as <code>{html.escape(name)}</code>: <code>%%px_distributed -t {html.escape(name)}</code>"
        )
        return topology

    def _save_clicked(self) -> None:
        try:
            self.save()
        except (TopologyError, ValueError) as error:
            self.save_status.value = f"<span style='{_ERROR_STYLE}'>not saved: {html.escape(str(error))}</span>"


def _set(mapping: dict, key: str, value: Any) -> None:
    """Set a key, or remove it for an empty value, so the YAML only holds what was given."""
    if value is None or value == {} or value == []:
        mapping.pop(key, None)
    else:
        mapping[key] = value
