"""Server-side printing: the `meta.k8s.io/v1` Table an API server answers when the client asks for
one (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, what `kubectl get` sends), so kubectl
shows the columns a real cluster shows (READY / STATUS / RESTARTS / AGE for pods, the CRDs'
additionalPrinterColumns).

From kubernetes v1.33.0: pkg/printers/internalversion/printers.go (AddHandlers: the columns of
each kind; printPod, printService, printConfigMap, printSecret, printServiceAccount,
printNamespace, printNode, printEvent, printJob, printResourceQuota, printRole, printRoleBinding,
printCustomResourceDefinition), pkg/printers/tablegenerator.go and pkg/printers/storage (the
server generates every column, `Wide: true`; the client hides priority > 0 unless `-o wide`);
apiserver pkg/registry/rest/table.go DefaultTableConvertor (`Name`, `Created At`) for kinds
without a printer; apiextensions-apiserver pkg/registry/customresource/tableconvertor
(additionalPrinterColumns by simple JSONPath, `date` columns as ages, `Age` when a CRD has none);
apimachinery pkg/util/duration HumanDuration. `includeObject` (None / Metadata, the default /
Object) says what each row carries (pkg/endpoints/handlers/response.go).
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable
from typing import Any

from .resources import Resource

Obj = dict[str, Any]

NAME_DOC = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources may "
    "allow a client to request the generation of an appropriate name automatically. Name is primarily intended "
    "for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
AGE_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this value. "
    "It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. "
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


def wants_table(accept: str) -> str | None:
    """The Table version the Accept header asks for first (`v1`, `v1beta1`), or None."""
    for part in accept.split(","):
        params = dict(p.strip().split("=", 1) for p in part.split(";")[1:] if "=" in p)
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            return params.get("v", "v1")
    return None


def human_duration(seconds: float) -> str:
    """apimachinery pkg/util/duration/duration.go HumanDuration."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _seconds(stamp: str | None) -> float | None:
    if not stamp:
        return None
    return dt.datetime.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.UTC).timestamp()


def since(stamp: str | None) -> str:
    """printers.go translateTimestampSince: `<unknown>` for no time."""
    at = _seconds(stamp)
    return "<unknown>" if at is None else human_duration(time.time() - at)


def _col(name: str, description: str = "", priority: int = 0, kind: str = "string", fmt: str = "") -> Obj:
    return {"name": name, "type": kind, "format": fmt, "description": description, "priority": priority}


def _name() -> Obj:
    return _col("Name", NAME_DOC, fmt="name")


def _age() -> Obj:
    return _col("Age", AGE_DOC)


# ---- the printers of pkg/printers/internalversion/printers.go ------------------------------------


def _pod(pod: Obj) -> tuple[list[Any], list[Obj]]:
    spec, status, meta = pod.get("spec") or {}, pod.get("status") or {}, pod["metadata"]
    restarts = 0
    sidecar_restarts = 0
    total = len(spec.get("containers") or [])
    ready = 0
    last_restart = 0.0
    last_sidecar_restart = 0.0
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    conditions: list[Obj] = []
    if phase in ("Succeeded", "Failed"):
        # podSuccessConditions / podFailedConditions
        conditions = [
            {"type": "Completed", "status": "True", "reason": phase, "message": f"The pod has {phase.lower()}."}
        ]
    inits = {c["name"]: c for c in spec.get("initContainers") or []}
    total += sum(1 for c in inits.values() if c.get("restartPolicy") == "Always")
    initializing = False
    init_statuses = status.get("initContainerStatuses") or []
    for i, container in enumerate(init_statuses):
        restarts += int(container.get("restartCount") or 0)
        last = ((container.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
        if last and (_seconds(last) or 0) > last_restart:
            last_restart = _seconds(last) or 0
        sidecar = (inits.get(container["name"]) or {}).get("restartPolicy") == "Always"
        if sidecar:
            sidecar_restarts += int(container.get("restartCount") or 0)
            if last and (_seconds(last) or 0) > last_sidecar_restart:
                last_sidecar_restart = _seconds(last) or 0
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated and terminated.get("exitCode") == 0:
            continue
        if sidecar and container.get("started"):
            if container.get("ready"):
                ready += 1
            continue
        if terminated:
            if terminated.get("reason"):
                reason = "Init:" + terminated["reason"]
            elif terminated.get("signal"):
                reason = f"Init:Signal:{terminated['signal']}"
            else:
                reason = f"Init:ExitCode:{terminated.get('exitCode')}"
        elif waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(inits)}"
        initializing = True
        break
    initialized = any(
        c.get("type") == "Initialized" and c.get("status") == "True" for c in status.get("conditions") or []
    )
    if not initializing or initialized:
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        running = False
        for container in reversed(status.get("containerStatuses") or []):
            restarts += int(container.get("restartCount") or 0)
            last = ((container.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
            if last and (_seconds(last) or 0) > last_restart:
                last_restart = _seconds(last) or 0
            state = container.get("state") or {}
            waiting, terminated = state.get("waiting") or {}, state.get("terminated")
            if waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated and terminated.get("reason"):
                reason = terminated["reason"]
            elif terminated:
                reason = (
                    f"Signal:{terminated['signal']}"
                    if terminated.get("signal")
                    else f"ExitCode:{terminated.get('exitCode')}"
                )
            elif container.get("ready") and "running" in state:
                running = True
                ready += 1
        if reason == "Completed" and running:
            has_ready = any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
            )
            reason = "Running" if has_ready else "NotReady"
    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    shown = str(restarts)
    if restarts and last_restart:
        shown = f"{restarts} ({human_duration(time.time() - last_restart)} ago)"
    ips = status.get("podIPs") or []
    ip = ips[0].get("ip") if ips else ""
    gates = spec.get("readinessGates") or []
    gate_text = "<none>"
    if gates:
        true = {c["type"] for c in status.get("conditions") or [] if c.get("status") == "True"}
        gate_text = f"{sum(1 for g in gates if g.get('conditionType') in true)}/{len(gates)}"
    cells = [meta["name"], f"{ready}/{total}", reason, shown, since(meta.get("creationTimestamp"))]
    cells += [ip or "<none>", spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>", gate_text]
    return cells, conditions


POD_COLUMNS = [
    _name(),
    _col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    _col("Status", "The aggregate status of the containers in this pod."),
    _col(
        "Restarts",
        "The number of times the containers in this pod have been restarted and when the last container in this "
        "pod has restarted.",
    ),
    _age(),
    _col("IP", "IP address allocated to the pod. Routable at least within the cluster.", 1),
    _col("Node", "NodeName is a request to schedule this pod onto a specific node.", 1),
    _col("Nominated Node", "nominatedNodeName is set only when this pod preempts other pods on the node.", 1),
    _col("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness.", 1),
]


def _service(svc: Obj) -> list[Any]:
    spec, meta = svc.get("spec") or {}, svc["metadata"]
    kind = spec.get("type") or "ClusterIP"
    cluster_ip = spec.get("clusterIP") or "<none>"
    external = spec.get("externalIPs") or []
    ingress = [
        i.get("ip") or i.get("hostname")
        for i in ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    ]
    if kind == "LoadBalancer":
        shown = ",".join(ingress + external) or "<pending>"
    elif kind == "ExternalName":
        shown = spec.get("externalName") or "<none>"
    else:
        shown = ",".join(external) or "<none>"
    ports = []
    for port in spec.get("ports") or []:
        text = str(port.get("port"))
        if port.get("nodePort"):
            text += f":{port['nodePort']}"
        ports.append(f"{text}/{port.get('protocol') or 'TCP'}")
    selector = spec.get("selector") or {}
    selector_text = ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>"
    return [
        meta["name"],
        kind,
        cluster_ip,
        shown,
        ",".join(ports) or "<none>",
        since(meta.get("creationTimestamp")),
        selector_text,
    ]


SERVICE_COLUMNS = [
    _name(),
    _col("Type", "The type of the service."),
    _col("Cluster-IP", "The IP address of the service."),
    _col("External-IP", "The external IP address of the service."),
    _col("Port(s)", "The ports of the service."),
    _age(),
    _col("Selector", "Route service traffic to pods with label keys and values matching this selector.", 1),
]


def _job(job: Obj) -> list[Any]:
    spec, status, meta = job.get("spec") or {}, job.get("status") or {}, job["metadata"]
    succeeded = int(status.get("succeeded") or 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    elif int(spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        completions = f"{succeeded}/1"
    start, end = _seconds(status.get("startTime")), _seconds(status.get("completionTime"))
    took = "" if start is None else human_duration((end if end is not None else time.time()) - start)
    true = {c["type"] for c in status.get("conditions") or [] if c.get("status") == "True"}
    if "Complete" in true:
        shown = "Complete"
    elif "Failed" in true:
        shown = "Failed"
    elif meta.get("deletionTimestamp"):
        shown = "Terminating"
    elif "Suspended" in true:
        shown = "Suspended"
    elif "FailureTarget" in true:
        shown = "FailureTarget"
    elif "SuccessCriteriaMet" in true:
        shown = "SuccessCriteriaMet"
    else:
        shown = "Running"
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    labels = (spec.get("selector") or {}).get("matchLabels") or {}
    return [
        meta["name"], shown, completions, took, since(meta.get("creationTimestamp")),
        ",".join(c["name"] for c in containers), ",".join(c.get("image", "") for c in containers),
        ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>",
    ]  # fmt: skip


JOB_COLUMNS = [
    _name(),
    _col("Status", "Status of the job."),
    _col("Completions", "The completion status of the job."),
    _col("Duration", "Time required to complete the job."),
    _age(),
    _col("Containers", "Names of each container in the template.", 1),
    _col("Images", "Images referenced by each container in the template.", 1),
    _col("Selector", "A label query over pods that should match the pod count.", 1),
]


def _event(event: Obj) -> list[Any]:
    involved = event.get("involvedObject") or {}
    source = event.get("source") or {}
    last = event.get("lastTimestamp") or event.get("eventTime") or event["metadata"].get("creationTimestamp")
    return [
        since(last), event.get("type", ""), event.get("reason", ""),
        f"{(involved.get('kind') or '').lower()}/{involved.get('name', '')}", involved.get("fieldPath", ""),
        ", ".join(x for x in (source.get("component"), source.get("host")) if x), (event.get("message") or "").strip(),
        since(event.get("firstTimestamp") or last), int(event.get("count") or 1), event["metadata"]["name"],
    ]  # fmt: skip


EVENT_COLUMNS = [
    _col("Last Seen", "Time when this Event was last observed."),
    _col("Type", "Type of this event (Normal, Warning), new types could be added in the future."),
    _col("Reason", "This should be a short, machine understandable string that gives the reason for this event."),
    _col("Object", "The object that this event is about."),
    _col("Subobject", "The subobject that this event is about.", 1),
    _col("Source", "The component reporting this event.", 1),
    _col("Message", "A human-readable description of the status of this operation."),
    _col("First Seen", "The time at which the event was first recorded.", 1),
    _col("Count", "The number of times this event has occurred.", 1, kind="integer"),
    _col("Name", NAME_DOC, 1, fmt="name"),
]


def _simple(*cells: Callable[[Obj], Any]) -> Callable[[Obj], list[Any]]:
    return lambda obj: [
        obj["metadata"]["name"],
        *(c(obj) for c in cells),
        since(obj["metadata"].get("creationTimestamp")),
    ]


def _node(node: Obj) -> list[Any]:
    status = node.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c["type"] == "Ready"), None)
    shown = "Ready" if ready and ready.get("status") == "True" else "NotReady"
    if (node.get("spec") or {}).get("unschedulable"):
        shown += ",SchedulingDisabled"
    labels = node["metadata"].get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/")) or ["<none>"]
    version = (status.get("nodeInfo") or {}).get("kubeletVersion", "")
    return [node["metadata"]["name"], shown, ",".join(roles), since(node["metadata"].get("creationTimestamp")), version]


#: plural (core and batch kinds) -> (columns, row printer)
PRINTERS: dict[tuple[str, str], tuple[list[Obj], Callable[[Obj], Any]]] = {
    ("", "pods"): (POD_COLUMNS, _pod),
    ("", "services"): (SERVICE_COLUMNS, _service),
    ("", "configmaps"): (
        [_name(), _col("Data", "Number of data in configmap", kind="integer"), _age()],
        lambda o: [
            o["metadata"]["name"],
            len(o.get("data") or {}) + len(o.get("binaryData") or {}),
            since(o["metadata"].get("creationTimestamp")),
        ],
    ),  # fmt: skip
    ("", "secrets"): (
        [_name(), _col("Type", "The type of the secret"), _col("Data", "The number of data in the secret"), _age()],
        lambda o: [
            o["metadata"]["name"],
            o.get("type") or "Opaque",
            len(o.get("data") or {}),
            since(o["metadata"].get("creationTimestamp")),
        ],
    ),  # fmt: skip
    ("", "serviceaccounts"): (
        [_name(), _col("Secrets", "Secrets is a list of the secrets in the same namespace", kind="integer"), _age()],
        lambda o: [o["metadata"]["name"], len(o.get("secrets") or []), since(o["metadata"].get("creationTimestamp"))],
    ),
    ("", "namespaces"): (
        [_name(), _col("Status", "The status of the namespace"), _age()],
        _simple(lambda o: (o.get("status") or {}).get("phase", "")),
    ),
    ("", "nodes"): (
        [
            _name(),
            _col("Status", "The status of the node"),
            _col("Roles", "The roles of the node"),
            _age(),
            _col("Version", "Kubelet Version reported by the node."),
        ],
        _node,
    ),  # fmt: skip
    ("", "events"): (EVENT_COLUMNS, _event),
    ("events.k8s.io", "events"): (EVENT_COLUMNS, _event),
    ("batch", "jobs"): (JOB_COLUMNS, _job),
    ("", "resourcequotas"): (
        [
            _name(),
            _age(),
            _col("Request", "Request represents a minimum amount of cpu/memory that a container may consume."),
            _col(
                "Limit",
                "Limits control the maximum amount of cpu/memory that a container may use independent of "
                "contention on the node.",
            ),
        ],
        lambda o: [
            o["metadata"]["name"],
            since(o["metadata"].get("creationTimestamp")),
            ", ".join(
                f"{k}: {((o.get('status') or {}).get('used') or {}).get(k, '0')}/{v}"
                for k, v in sorted(((o.get("spec") or {}).get("hard") or {}).items())
                if not k.startswith("limits.")
            ),
            ", ".join(
                f"{k}: {((o.get('status') or {}).get('used') or {}).get(k, '0')}/{v}"
                for k, v in sorted(((o.get("spec") or {}).get("hard") or {}).items())
                if k.startswith("limits.")
            ),
        ],
    ),  # fmt: skip
    ("rbac.authorization.k8s.io", "roles"): (
        [_name(), _col("Created At", "Time at which the object was created.")],
        lambda o: [o["metadata"]["name"], o["metadata"].get("creationTimestamp", "")],
    ),
    ("rbac.authorization.k8s.io", "rolebindings"): (
        [
            _name(),
            _col("Role", "Role of the role binding."),
            _age(),
            _col("Users", "Users in the role binding.", 1),
            _col("Groups", "Groups in the role binding.", 1),
            _col("ServiceAccounts", "ServiceAccounts in the role binding.", 1),
        ],
        lambda o: [
            o["metadata"]["name"],
            f"{(o.get('roleRef') or {}).get('kind')}/{(o.get('roleRef') or {}).get('name')}",
            since(o["metadata"].get("creationTimestamp")),
            ", ".join(s["name"] for s in o.get("subjects") or [] if s.get("kind") == "User"),
            ", ".join(s["name"] for s in o.get("subjects") or [] if s.get("kind") == "Group"),
            ", ".join(
                f"{s.get('namespace', '')}/{s['name']}"
                for s in o.get("subjects") or []
                if s.get("kind") == "ServiceAccount"
            ),
        ],
    ),  # fmt: skip
    ("apiextensions.k8s.io", "customresourcedefinitions"): (
        [_name(), _col("Created At", "Time at which the object was created.", kind="date")],
        lambda o: [o["metadata"]["name"], o["metadata"].get("creationTimestamp", "")],
    ),
}

#: apiserver pkg/registry/rest/table.go DefaultTableConvertor
DEFAULT_COLUMNS = [_name(), _col("Created At", "Time at which the object was created.", kind="date")]


def _json_path(obj: Any, path: str) -> Any:
    """The simple JSONPaths a CRD's printer columns may use (`.status.conditions[0].type`,
    `.spec.x`, `.status.conditions[?(@.type=="Ready")].status`)."""
    current = obj
    for part in re.findall(r"\.([^.\[]+)|\[([^\]]+)\]", path):
        key, index = part
        if key:
            if not isinstance(current, dict) or key not in current:
                return None
            current = current[key]
            continue
        if not isinstance(current, list):
            return None
        match = re.fullmatch(r"""\?\(@\.(\w+)\s*==\s*["']([^"']*)["']\)""", index)
        if match:
            found = [i for i in current if isinstance(i, dict) and str(i.get(match.group(1))) == match.group(2)]
            if not found:
                return None
            current = found[0]
        elif index.lstrip("-").isdigit():
            try:
                current = current[int(index)]
            except IndexError:
                return None
        else:
            return None
    return current


def _custom(resource: Resource) -> tuple[list[Obj], Callable[[Obj], list[Any]]]:
    columns = list(resource.printer_columns) or [
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
    ]
    definitions = [_name()] + [
        {
            "name": c["name"],
            "type": c.get("type", "string"),
            "format": c.get("format", ""),
            "description": c.get("description")
            or f"Custom resource definition column (in JSONPath format): {c['jsonPath']}",
            "priority": int(c.get("priority") or 0),
        }
        for c in columns
    ]

    def cell(kind: str, value: Any) -> Any:  # tableconvertor.go cellForJSONValue
        if value is None:
            return None
        if kind == "string":
            return value if isinstance(value, str) else _go_print(value)
        if kind == "integer":
            return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if kind == "number":
            return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if kind == "boolean":
            return value if isinstance(value, bool) else None
        if kind == "date":
            return since(value) if isinstance(value, str) else None
        return None

    def row(obj: Obj) -> list[Any]:
        return [obj["metadata"]["name"]] + [
            cell(c.get("type", "string"), _json_path(obj, c["jsonPath"])) for c in columns
        ]

    return definitions, row


def _go_print(value: Any) -> str:
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _row_object(obj: Obj, resource: Resource, include: str) -> Obj | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}


def table(resource: Resource, items: list[Obj], metadata: Obj, include: str = "Metadata", version: str = "v1") -> Obj:
    """The Table of `items` (a list's or one object's), as the resource's printer makes it."""
    if resource.schema is not None:
        columns, printer = _custom(resource)
    else:
        columns, printer = PRINTERS.get(
            (resource.group, resource.plural),
            (DEFAULT_COLUMNS, lambda o: [o["metadata"]["name"], o["metadata"].get("creationTimestamp", "")]),
        )
    rows = []
    for obj in items:
        out = printer(obj)
        cells, conditions = out if isinstance(out, tuple) else (out, [])
        row: Obj = {"cells": cells}
        if conditions:
            row["conditions"] = conditions
        shown = _row_object(obj, resource, include)
        if shown is not None:
            row["object"] = shown
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    }
