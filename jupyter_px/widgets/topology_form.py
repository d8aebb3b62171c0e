"""`TopologyForm`: build a topology with widgets, validated live by the topology model.

The form holds no rules of its own: on every change it builds the polyaxonfile dictionary,
hands it to `topology.try_parse` (the single source of truth also used by the YAML cell, the CLI
and the sidebar) and shows each problem beside the widget its field path points at, outlining
that widget. The path is the model's (`environment.replicas.worker[1].resources.memory.requests`:
the second *worker row*); a user reads rows by what they show, so the message names the row
("worker 3: memory requests 'lots' is not a size, ...") and keeps the path after it, small.

It scales with the number of *overrides*, not replicas: 256 workers are one number box; only
the per-index override rows (which a user adds one by one) are widgets. Fields the form does not
edit (image, env, node selectors, restart policy, evaluator, names, ...) are kept from the loaded
topology and written back unchanged, so loading and saving a topology loses nothing.
"""

from __future__ import annotations

import copy
import html
from typing import Any

import ipywidgets as widgets
import yaml

from ..topology import Problem, Topology, TopologyError, parse_topology, to_dict, to_yaml, try_parse
from ..topology.export import headline
from ..topology.registry import topologies
from .form_parts import (  # noqa: F401 (FRAMEWORKS, BACKENDS: the form's choices, re-exported)
    BACKENDS,
    ERROR_COLOR,
    FRAMEWORKS,
    FRAMEWORKS_WITH_PS,
    INVALID_CLASS,
    MESSAGE_STYLE,
    OVERRIDE_RULE,
    PATH_REPLICAS,
    Messages,
    OverrideRow,
    ResourcesEditor,
    SavedTopology,
    Target,
    load_resources,
    mark_invalid,
    render_messages,
    resources_value,
)


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
        #: The message area beside each top-level field (what the user reads there).
        self.field_messages = {
            key: Messages(flex="1 1 0%", min_width="0", margin="0 0 0 8px")
            for key in ("framework", "backend", "n_masters", "n_workers", "n_ps")
        }

        self.master_resources = ResourcesEditor("master resources", "master", "environment.resources", self._changed)
        self.worker_resources = ResourcesEditor(
            "default worker resources", "default worker", f"{PATH_REPLICAS}.default_worker.resources", self._changed
        )
        self.ps_resources = ResourcesEditor(
            "default ps resources", "default ps", f"{PATH_REPLICAS}.default_ps.resources", self._changed
        )

        self.rows: list[OverrideRow] = []
        self.rows_box = widgets.VBox()
        self.add_row_button = widgets.Button(
            description="add override", icon="plus", tooltip="resources for one worker or ps index"
        )
        self.add_row_button.on_click(lambda _b: self.add_override())

        self.general_messages = Messages(width="100%")
        self.summary = widgets.HTML()
        self.preview = widgets.HTML()
        self.name = widgets.Text(
            value=name or "", description="name", placeholder="topology name", layout=widgets.Layout(width="280px")
        )
        self.save_button = widgets.Button(
            description="save",
            icon="save",
            tooltip="save under this name for %%px_distributed -t NAME",
            layout=widgets.Layout(width="auto", min_width="90px", flex="0 0 auto"),
        )
        #: Below the name and the button, full width: a long report never squeezes the button.
        self.save_status = widgets.HTML(layout=widgets.Layout(width="100%"))
        self.save_button.on_click(lambda _b: self._save_clicked())

        def field(control: widgets.Widget, key: str) -> widgets.Widget:
            return widgets.HBox(
                [control, self.field_messages[key]], layout=widgets.Layout(width="100%", align_items="flex-start")
            )

        self.ps_field = field(self.ps, "n_ps")
        super().__init__(
            children=[
                field(self.framework, "framework"),
                field(self.backend, "backend"),
                field(self.master, "n_masters"),
                field(self.workers, "n_workers"),
                self.ps_field,
                widgets.HBox(
                    [self.master_resources.widget, self.worker_resources.widget, self.ps_resources.widget],
                    layout=widgets.Layout(flex_flow="row wrap", align_items="flex-start"),
                ),
                widgets.HTML(
                    "<b>per-index overrides</b> <small>(resources for one worker or ps index)</small>"
                    f"<div style='font-size:12px'>{html.escape(OVERRIDE_RULE)}</div>"
                ),
                widgets.HTML(
                    "<small>role, index, cpu requests/limits, memory requests/limits (MiB), gpu requests/limits</small>"
                ),
                self.rows_box,
                self.add_row_button,
                self.general_messages,
                self.summary,
                widgets.Accordion(children=[self.preview], titles=["YAML"], selected_index=0),
                widgets.HBox([self.name, self.save_button]),
                self.save_status,
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
                    # An override without resources keeps the default's: shown as empty boxes.
                    resources = entry.pop("resources", None) or {}
                    self.add_override(role, index, resources, extra=entry, validate=False)
            self._base = base
        finally:
            self._loading = False
        self._validate()

    def _default_resources(self, role: str) -> dict[str, Any]:
        return (self.worker_resources if role == "worker" else self.ps_resources).value()

    def add_override(
        self,
        role: str = "worker",
        index: int | None = None,
        resources: dict | None = None,
        extra: dict | None = None,
        validate: bool = True,
    ) -> OverrideRow:
        """Add a per-index override row (the "add override" button).

        Without `resources` the row starts from the role's default resources: an override
        replaces the whole block, so starting empty would silently drop what the default gives.
        """
        if index is None:
            taken = {row.index.value for row in self.rows if row.role.value == role}
            index = next(i for i in range(len(taken) + 1) if i not in taken)
        if resources is None:
            resources = self._default_resources(role)
        row = OverrideRow(self._changed, self.remove_override, role, index, resources, extra)
        row.role.observe(lambda change: self._row_role_changed(row, change), names="value")
        self.rows.append(row)
        self.rows_box.children = [r.widget for r in self.rows]
        if validate:
            self._validate()
        return row

    def _row_role_changed(self, row: OverrideRow, change: dict[str, Any]) -> None:
        """A row still holding its old role's defaults takes the new role's."""
        if row.value().get("resources", {}) == self._default_resources(change["old"]):
            self._loading = True
            try:
                load_resources(row.boxes, self._default_resources(change["new"]))
            finally:
                self._loading = False
            self._validate()

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

    @property
    def shows_ps(self) -> bool:
        """Whether the parameter-server fields are shown: for a framework that has them, or when
        the topology has some anyway (then the problem is shown beside them, not hidden)."""
        has_any = self.ps.value != 0 or any(row.role.value == "ps" for row in self.rows)
        has_any = has_any or bool(self.ps_resources.value())
        return self.framework.value in FRAMEWORKS_WITH_PS or has_any

    def _show_roles(self) -> None:
        display = None if self.shows_ps else "none"
        self.ps_field.layout.display = display
        self.ps_resources.widget.layout.display = display

    def _targets(self) -> dict[str, Target]:
        """Field path -> who it is about, where its messages go, what to outline."""
        messages = self.field_messages
        targets = {
            "framework": Target("framework", "", messages["framework"], (self.framework,)),
            "backend": Target("backend", "", messages["backend"], (self.backend,)),
            PATH_REPLICAS: Target("replicas", "", messages["n_workers"], (self.workers, self.ps)),
            f"{PATH_REPLICAS}.n_masters": Target("master replica", "", messages["n_masters"], (self.master,)),
            f"{PATH_REPLICAS}.n_workers": Target("workers", "", messages["n_workers"], (self.workers,)),
            f"{PATH_REPLICAS}.worker": Target("worker overrides", "", messages["n_workers"], (self.workers,)),
            f"{PATH_REPLICAS}.n_ps": Target("ps", "", messages["n_ps"], (self.ps,)),
            f"{PATH_REPLICAS}.ps": Target("ps overrides", "", messages["n_ps"], (self.ps,)),
        }
        for editor in (self.master_resources, self.worker_resources, self.ps_resources):
            targets.update(editor.targets())
        positions = {"worker": 0, "ps": 0}
        for row in self.rows:
            role = row.role.value
            targets.update(row.targets(f"{PATH_REPLICAS}.{role}[{positions[role]}]"))
            positions[role] += 1
        return targets

    def _locate(self, path: str, targets: dict[str, Target]) -> tuple[Target | None, str]:
        """The target of the longest field path that `path` is in, and what is left of it."""
        inside = [key for key in targets if path == key or path.startswith((key + ".", key + "["))]
        if not inside:
            return None, ""
        best = max(inside, key=len)
        return targets[best], path[len(best) :].lstrip(".").replace(".", " ")

    def describe(self, problem: Problem) -> tuple[str, str]:
        """A problem in the words the form shows: ("worker 3: memory requests 'lots' is not a
        size, ...", its field path)."""
        target, rest = self._locate(problem.path, self._targets())
        if target is None:
            return str(problem), ""
        return target.text(problem.message, rest), problem.path

    def _validate(self) -> None:
        self._show_roles()
        data = self.to_dict()
        topology, problems = try_parse(data)
        self._topology, self.problems = topology, problems
        targets = self._targets()
        areas: dict[int, tuple[Messages, list[tuple[str, str]]]] = {
            id(self.general_messages): (self.general_messages, [])
        }
        for each in targets.values():
            areas.setdefault(id(each.messages), (each.messages, []))
        at_fault: set[int] = set()
        for problem in problems:
            found, rest = self._locate(problem.path, targets)
            if found is None:
                areas[id(self.general_messages)][1].append((str(problem), ""))
                continue
            areas[id(found.messages)][1].append((found.text(problem.message, rest), problem.path))
            at_fault.update(id(control) for control in found.controls)
        for area, messages in areas.values():
            area.show(messages)
        for control in {id(c): c for target in targets.values() for c in target.controls}.values():
            mark_invalid(control, id(control) in at_fault)
        if topology is not None:
            self.summary.value = f"<span style='color:#2ca02c'>valid</span>: {html.escape(headline(topology))}"
            self.preview.value = f"<pre style='margin:0'>{html.escape(to_yaml(topology))}</pre>"
        else:
            count = len(problems)
            self.summary.value = f"<span style='color:{ERROR_COLOR}'>{count} problem{'s' if count != 1 else ''}</span>"
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
    def save(self, name: str | None = None) -> SavedTopology:
        """Save under `name` (default: the name box) as a `%%px_topology` name, and make it the
        session's current topology. Raises TopologyError if invalid, ValueError without a name.

        Returns a short confirmation (its repr is one line), not the model: a cell ending in
        `form.save(...)` shows what was saved and how to use it."""
        name = (name if name is not None else self.name.value).strip()
        if not name:
            raise ValueError("give the topology a name to save it under")
        topology = self.topology
        topologies.put(name, topology)
        self.name.value = name
        saved = SavedTopology(name, topology)
        self.save_status.value = saved._repr_html_()
        return saved

    def _save_clicked(self) -> None:
        try:
            self.save()
        except TopologyError as error:
            lines = [self.describe(problem) for problem in error.problems]
            count = len(lines)
            self.save_status.value = (
                f"<div style='{MESSAGE_STYLE}'><b>not saved: {count} problem{'s' if count != 1 else ''}</b></div>"
                + render_messages(lines)
            )
        except ValueError as error:
            self.save_status.value = f"<div style='{MESSAGE_STYLE}'>not saved: {html.escape(str(error))}</div>"


def _set(mapping: dict, key: str, value: Any) -> None:
    """Set a key, or remove it for an empty value, so the YAML only holds what was given."""
    if value is None or value == {} or value == []:
        mapping.pop(key, None)
    else:
        mapping[key] = value
