"""The topology form, driven in-process as a user drives it: widget values, button clicks, and
what is rendered (the messages' text, the outlines on the widgets at fault, the widget tree).
ipywidgets works without a kernel: the widgets keep their state, nothing is sent."""

from __future__ import annotations

import html
import re

import ipywidgets as widgets
import pytest

from jupyter_px import TopologyForm
from jupyter_px.topology import TopologyError, parse_topology
from jupyter_px.topology.registry import topologies
from jupyter_px.widgets.topology_form import INVALID_CLASS, OVERRIDE_RULE


@pytest.fixture(autouse=True)
def _private_registry(px_home):
    topologies.clear()
    yield
    topologies.clear()


def tree(widget: widgets.Widget) -> list[widgets.Widget]:
    """Every widget on screen under `widget` (accordions and boxes opened)."""
    out = [widget]
    for child in getattr(widget, "children", ()):
        out += tree(child)
    return out


def lines(area: widgets.HTML) -> list[str]:
    """The message lines an HTML area shows, as text."""
    return [html.unescape(re.sub(r"<[^>]+>", "", line)) for line in re.findall(r"<div[^>]*>(.*?)</div>", area.value)]


def shown(form: TopologyForm) -> list[str]:
    """Every message line on screen in the form, wherever it is."""
    return [
        line
        for widget in tree(form)
        if isinstance(widget, widgets.HTML) and "px-messages" in widget.get_state()["_dom_classes"]
        for line in lines(widget)
    ]


def outlined(widget: widgets.Widget) -> bool:
    invalid = INVALID_CLASS in widget.get_state()["_dom_classes"]
    assert invalid == bool(widget.layout.border), "class and border must agree"
    return invalid


def outlined_widgets(form: TopologyForm) -> list[widgets.Widget]:
    return [widget for widget in tree(form) if isinstance(widget, widgets.DOMWidget) and outlined(widget)]


# ---- building a topology ------------------------------------------------------------------------


def test_form_starts_valid_and_previews_yaml():
    form = TopologyForm()
    assert form.valid and form.problems == [] and shown(form) == []
    form.framework.value = "pytorch"
    form.workers.value = 2
    assert form.topology.counts() == {"master": 1, "worker": 2}
    assert "n_workers: 2" in form.preview.value and "framework: pytorch" in form.preview.value
    assert "3 replicas" in form.summary.value


def test_form_with_256_workers_creates_no_widget_per_worker():
    form = TopologyForm()
    form.framework.value = "tensorflow"
    form.workers.value = 2
    before = len(tree(form))
    form.workers.value = 256
    form.ps.value = 8
    assert len(tree(form)) == before
    topology = form.topology
    assert topology.counts() == {"master": 1, "worker": 256, "ps": 8}
    assert len(topology.replicas()) == 265
    # an override row is a handful of widgets, whatever the worker count
    form.add_override("worker", 255, {"gpu": {"requests": 1, "limits": 1}})
    per_row = len(tree(form)) - before
    form.add_override("ps", 7)
    assert len(tree(form)) - before == 2 * per_row
    assert form.topology.replica("worker", 255).resources.gpus() == 1
    assert form.topology.replica("worker", 254).resources.gpus() == 0


def test_per_index_rows_add_edit_remove():
    form = TopologyForm()
    form.framework.value = "pytorch"
    form.workers.value = 4
    form.worker_resources.boxes[("cpu", "requests")].value = "1"
    row = form.add_override()  # first free worker index
    assert (row.role.value, row.index.value) == ("worker", 0)
    second = form.add_override()
    assert second.index.value == 1
    row.boxes[("cpu", "requests")].value = "3"
    row.boxes[("memory", "limits")].value = "2Gi"
    topology = form.topology
    assert topology.replica("worker", 0).resources.cpu.requests == 3
    assert topology.replica("worker", 0).resources.memory.limits == 2048
    assert topology.replica("worker", 2).resources.cpu.requests == 1  # the default
    row.remove.click()
    assert [r.index.value for r in form.rows] == [1]
    assert form.topology.replica("worker", 0).resources.cpu.requests == 1


def test_a_new_override_starts_from_the_roles_default_resources():
    """An override replaces the role's whole resources block (polyaxon's rule): starting from the
    default keeps what the user did not mean to change (seed 000's worker 2 lost its GPU)."""
    form = TopologyForm()
    form.framework.value = "tensorflow"
    form.workers.value = 3
    form.ps.value = 1
    form.worker_resources.boxes[("cpu", "requests")].value = "1"
    form.worker_resources.boxes[("gpu", "limits")].value = "1"
    form.ps_resources.boxes[("memory", "limits")].value = "512"

    form.add_row_button.click()
    (row,) = form.rows
    assert row.boxes[("cpu", "requests")].value == "1" and row.boxes[("gpu", "limits")].value == "1"
    row.boxes[("memory", "limits")].value = "4Gi"  # more memory headroom, and still its cpu and GPU
    worker = form.topology.replica("worker", row.index.value)
    assert (worker.resources.cpu.requests, worker.resources.gpus(), worker.resources.memory.limits) == (1, 1, 4096)

    ps_row = form.add_override("ps")
    assert ps_row.boxes[("memory", "limits")].value == "512" and ps_row.boxes[("gpu", "limits")].value == ""
    ps_row.role.value = "worker"  # still the ps defaults: it takes the worker's
    ps_row.index.value = 2
    assert ps_row.boxes[("gpu", "limits")].value == "1" and ps_row.boxes[("memory", "limits")].value == ""
    # and the form says what an override does, where overrides are edited
    texts = " ".join(html.unescape(w.value) for w in tree(form) if isinstance(w, widgets.HTML))
    assert OVERRIDE_RULE in texts


# ---- problems, where and how they are shown ----------------------------------------------------


def test_live_validation_shows_each_problem_beside_its_field_and_outlines_it():
    form = TopologyForm()
    form.framework.value = "pytorch"
    form.workers.value = 2

    form.workers.value = -1
    assert not form.valid
    assert lines(form.field_messages["n_workers"]) == ["workers: -1 is not >= 0 (environment.replicas.n_workers)"]
    assert outlined_widgets(form) == [form.workers]
    with pytest.raises(TopologyError) as raised:
        _ = form.topology
    assert raised.value.problems[0].path == "environment.replicas.n_workers"
    form.workers.value = 2
    assert form.valid and shown(form) == [] and outlined_widgets(form) == []

    # an override index out of range: beside that row, naming it as shown
    good = form.add_override("worker", 0)
    bad = form.add_override("worker", 7)
    assert lines(bad.error) == ["worker 7: index 7 is not below n_workers (2) (environment.replicas.worker[1].index)"]
    assert shown(form) == lines(bad.error)
    assert outlined_widgets(form) == [bad.index]
    assert lines(good.error) == []

    # requests above limits: beside the cpu of the default worker resources, both boxes outlined
    bad.index.value = 1
    form.worker_resources.boxes[("cpu", "requests")].value = "4"
    form.worker_resources.boxes[("cpu", "limits")].value = "2"
    assert lines(form.worker_resources.errors["cpu"]) == [
        "default worker: cpu requests 4 is above limits 2 (environment.replicas.default_worker.resources.cpu)"
    ]
    assert outlined_widgets(form) == [
        form.worker_resources.boxes[("cpu", "requests")],
        form.worker_resources.boxes[("cpu", "limits")],
    ]

    # a bad quantity in the master's memory: beside the master's memory, in plain words
    form.worker_resources.boxes[("cpu", "limits")].value = "8"
    form.master_resources.boxes[("memory", "requests")].value = "lots"
    assert lines(form.master_resources.errors["memory"]) == [
        "master: memory requests 'lots' is not a size, e.g. 4Gi, 512Mi or 4096 (MiB) "
        "(environment.resources.memory.requests)"
    ]
    assert outlined_widgets(form) == [form.master_resources.boxes[("memory", "requests")]]
    assert "1 problem" in form.summary.value

    # a role the framework does not have: beside the ps count
    form.master_resources.boxes[("memory", "requests")].value = "512"
    form.ps.value = 1
    assert lines(form.field_messages["n_ps"]) == [
        "ps: 1 is not allowed: pytorch has no ps replicas (roles: master, worker) (environment.replicas.n_ps)"
    ]
    form.ps.value = 0
    assert form.valid and shown(form) == [] and outlined_widgets(form) == []


def test_an_override_rows_problem_names_the_row_the_user_sees():
    """Rows are numbered by position among their role in the model's path; the user reads the
    index the row shows. Here worker 3 is the second worker row and worker 1 the first."""
    form = TopologyForm()
    form.framework.value = "tensorflow"
    form.workers.value = 4
    form.ps.value = 1
    first = form.add_override("worker", 1)
    form.add_override("ps", 0)
    third = form.add_override("worker", 3)
    third.boxes[("memory", "requests")].value = "lots"
    assert lines(third.error) == [
        "worker 3: memory requests 'lots' is not a size, e.g. 4Gi, 512Mi or 4096 (MiB) "
        "(environment.replicas.worker[1].resources.memory.requests)"
    ]
    assert lines(first.error) == []
    assert outlined_widgets(form) == [third.boxes[("memory", "requests")]]
    # the text leads with the row and the words; the field path follows
    assert form.describe(form.problems[0]) == (
        "worker 3: memory requests 'lots' is not a size, e.g. 4Gi, 512Mi or 4096 (MiB)",
        "environment.replicas.worker[1].resources.memory.requests",
    )


def test_long_messages_wrap_in_place():
    """Message areas take the width they are given and wrap (no width of their own), and the
    resources editors have a fixed width: a long message adds lines, it does not push widgets."""
    form = TopologyForm()
    form.framework.value = "pytorch"
    form.master_resources.boxes[("memory", "requests")].value = "x" * 500
    area = form.master_resources.errors["memory"]
    assert "overflow-wrap:anywhere" in area.value and "white-space:normal" in area.value
    assert area.layout.width == "100%"
    assert form.master_resources.widget.layout.width == "300px"
    assert all(m.layout.min_width == "0" for m in form.field_messages.values())
    assert "..." in lines(area)[0] and len(lines(area)[0]) < 250  # the value is quoted in part


# ---- saving ---------------------------------------------------------------------------------------


def test_round_trip_through_a_topology_name():
    source = parse_topology("""
framework: tensorflow
environment:
  image: my/image:1
  resources: {cpu: {requests: 1, limits: 2}}
  replicas:
    n_workers: 3
    n_ps: 1
    default_worker:
      restart_policy: OnFailure
      max_restarts: 2
      resources: {memory: {requests: 512, limits: 1024}}
    worker:
      - index: 2
        env: {SPECIAL: "1"}
        resources: {gpu: {requests: 1, limits: 1}}
""")
    topologies.put("cluster", source)
    form = TopologyForm(name="cluster")
    assert form.framework.value == "tensorflow" and form.workers.value == 3 and form.ps.value == 1
    assert form.master_resources.boxes[("cpu", "limits")].value == "2"
    assert [(r.role.value, r.index.value) for r in form.rows] == [("worker", 2)]
    assert form.topology == source  # nothing the form does not edit was lost

    form.ps.value = 2
    form.name.value = "bigger"
    form.save_button.click()
    saved = topologies.require("bigger")
    assert saved.counts() == {"master": 1, "worker": 3, "ps": 2}
    assert saved.replica("worker", 2).env == {"SPECIAL": "1"}
    assert saved.replica("worker", 0).restart_policy == "OnFailure"
    assert topologies.current is saved  # %%px_distributed without -t uses it
    assert "saved as bigger" in html.unescape(re.sub(r"<[^>]+>", "", form.save_status.value))


def test_save_returns_a_one_line_confirmation_not_the_model():
    form = TopologyForm()
    form.framework.value = "pytorch"
    form.workers.value = 2
    result = form.save("pair")
    assert repr(result) == (
        "saved as 'pair': pytorch on local: 3 replicas (master 1, worker 2); use it with %%px_distributed -t pair"
    )
    assert "\n" not in repr(result) and "<code>pair</code>" in result._repr_html_()
    assert result.topology is topologies.require("pair")


def test_save_with_problems_keeps_the_button_and_lists_each_problem():
    form = TopologyForm()
    with pytest.raises(ValueError, match="name"):
        form.save()
    form.save_button.click()
    assert lines(form.save_status) == ["not saved: give the topology a name to save it under"]

    form.framework.value = "pytorch"
    form.workers.value = -1
    form.master_resources.boxes[("cpu", "requests")].value = "two"
    form.name.value = "x"
    form.save_button.click()
    assert lines(form.save_status) == [
        "not saved: 2 problems",
        "master: cpu requests 'two' is not a number of cores, e.g. 2, 0.5 or 500m (environment.resources.cpu.requests)",
        "workers: -1 is not >= 0 (environment.replicas.n_workers)",
    ]
    assert topologies.get("x") is None
    assert form.save_button.description == "save"
    # the report is below the name and the button, not squeezed beside them
    assert form.save_status in form.children and form.save_button.layout.flex == "0 0 auto"

    form.master_resources.boxes[("cpu", "requests")].value = ""
    form.workers.value = 1
    with pytest.raises(ValueError, match="topology name 'two words' is not valid"):
        form.save("two words")


def test_parameter_servers_show_only_where_the_framework_has_them():
    """PyTorch, Horovod and MPI jobs have no parameter servers: their fields are hidden; they
    come back for TensorFlow and MXNet, and for a topology that has some whatever its framework
    (so a problem with them is never hidden)."""
    form = TopologyForm({"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}})

    def ps_shown() -> bool:
        return form.ps_field.layout.display != "none" and form.ps_resources.widget.layout.display != "none"

    assert not ps_shown()
    for framework, shows in [("tensorflow", True), ("mxnet", True), ("horovod", False), ("pytorch", False)]:
        form.framework.value = framework
        assert ps_shown() is shows, framework
    form.load({"framework": "tensorflow", "environment": {"replicas": {"n_workers": 1, "n_ps": 1}}})
    assert ps_shown()
    form.framework.value = "pytorch"  # a topology with ps under PyTorch: shown with its problem
    assert ps_shown() and not form.valid
