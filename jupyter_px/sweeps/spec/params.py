"""One hyperparameter of a sweep: every way Polyaxon writes it, read into one `Param`.

Polyaxon v0 (`hptuning.matrix.<name>: {<kind>: <value>}`) and v1 (`matrix.params.<name>:
{kind: <kind>, value: <value>}`) name the same kinds (v1 calls `values` `choice` and `pvalues`
`pchoice`), and each kind's value may be written three ways, as Polyaxon's docs show them
(docs/references/polyaxonfile-yaml-specification/hptuning.md, and the v1 `V1Hp*` classes):
a list `[0, 1, 0.1]`, a mapping `{low: 0, high: 1, q: 0.1}`, or a string `"0:1:0.1"`.

Discrete kinds are expanded here into their values (a range, a linspace...), so a grid's size
and a space's distinct points are known before anything runs. The numbers follow NumPy, as
Polyaxon computed them: `range` is `arange(start, stop, step)`, `linspace`/`geomspace` run from
start to stop, `logspace` from base**start to base**stop (base 10 unless given: v1's optional
fourth number, which only means something under NumPy's definition; the v0 prose "from 0.01 to
0.1" under `logspace: 0.01:0.1:5` describes `geomspace`). Bounds of `loguniform`/`qloguniform` are
exponents (the value is `exp(uniform(low, high))`), and `lognormal` is `exp(normal(loc, scale))`,
as in Hyperopt, whose distributions Polyaxon's are.
"""

from __future__ import annotations

import math
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict

from ...topology.errors import Problem, show_value

#: A parameter's kind: the listed or computed ones first (what a grid can walk), then the sampled.
ParamKind = Literal[
    "values",
    "range",
    "linspace",
    "logspace",
    "geomspace",
    "pvalues",
    "uniform",
    "quniform",
    "loguniform",
    "qloguniform",
    "normal",
    "qnormal",
    "lognormal",
    "qlognormal",
]
#: Every kind, in the order above: those whose values are listed or computed (what a grid can walk)
#: first, then those that are sampled (random search, Hyperband, Bayesian optimization only).
KINDS: tuple[str, ...] = get_args(ParamKind)
DISCRETE_KINDS = KINDS[: KINDS.index("pvalues")]
DISTRIBUTION_KINDS = KINDS[len(DISCRETE_KINDS) :]
#: Polyaxon v1's names for two of them.
V1_NAMES = {"choice": "values", "pchoice": "pvalues"}

#: Values one discrete parameter may expand to (a `range` of a billion steps is refused, not built).
MAX_DISCRETE_VALUES = 100_000


#: Fields that may be left out, with their default (v1's logspace takes a `base`, 10 by default,
#: which is NumPy's `logspace(start, stop, num, base=base)`: values from base**start to base**stop).
_OPTIONAL: dict[str, dict[str, float]] = {"logspace": {"base": 10}}

#: The fields of each computed kind, in the order a list or "a:b:c" string gives them.
_FIELDS: dict[str, tuple[str, ...]] = {
    "range": ("start", "stop", "step"),
    "linspace": ("start", "stop", "num"),
    "logspace": ("start", "stop", "num", "base"),
    "geomspace": ("start", "stop", "num"),
    "uniform": ("low", "high"),
    "loguniform": ("low", "high"),
    "quniform": ("low", "high", "q"),
    "qloguniform": ("low", "high", "q"),
    "normal": ("loc", "scale"),
    "lognormal": ("loc", "scale"),
    "qnormal": ("loc", "scale", "q"),
    "qlognormal": ("loc", "scale", "q"),
}


class Param(BaseModel):
    """One hyperparameter, normalized: its kind, the values of a discrete kind (or of pvalues)
    with their probabilities, and the numbers of a distribution."""

    model_config = ConfigDict(frozen=True)

    kind: ParamKind
    values: list[Any] | None = None
    probabilities: list[float] | None = None
    low: float | None = None
    high: float | None = None
    loc: float | None = None
    scale: float | None = None
    q: float | None = None

    @property
    def discrete(self) -> bool:
        return self.kind in DISCRETE_KINDS

    def describe(self) -> str:
        """One line for a table: `uniform 0.001..0.1`, `values [relu, tanh]`."""
        if self.values is not None:
            shown = ", ".join(str(v) for v in self.values[:6]) + (", ..." if len(self.values) > 6 else "")
            return f"{self.kind} [{shown}] ({len(self.values)})"
        if self.low is not None:
            return f"{self.kind} {self.low:g}..{self.high:g}" + (f" step {self.q:g}" if self.q else "")
        return f"{self.kind} loc {self.loc:g} scale {self.scale:g}" + (f" step {self.q:g}" if self.q else "")


def parse_param(raw: Any, path: str, problems: list[Problem], *, v1: bool) -> Param | None:
    """`raw` as written under the parameter's name; None (and problems) when it is not valid."""
    if not isinstance(raw, dict):
        example = "{kind: uniform, value: [0, 1]}" if v1 else "{uniform: [0, 1]}"
        problems.append(Problem(path, f"{show_value(raw)} is not a parameter: write it as {example}"))
        return None
    if v1:
        unknown = sorted(set(raw) - {"kind", "value"})
        if unknown:
            problems.append(Problem(f"{path}.{unknown[0]}", "unknown field (a v1 parameter has kind and value)"))
            return None
        if "kind" not in raw:
            problems.append(Problem(f"{path}.kind", f"required field is missing (one of {', '.join(_v1_kinds())})"))
            return None
        kind, value, where = V1_NAMES.get(str(raw["kind"]), raw["kind"]), raw.get("value"), f"{path}.value"
        if kind not in KINDS:
            problems.append(
                Problem(f"{path}.kind", f"{show_value(raw['kind'])} is not one of {', '.join(_v1_kinds())}")
            )
            return None
        if "value" not in raw:
            problems.append(Problem(where, "required field is missing"))
            return None
    else:
        kinds = [key for key in raw if key in KINDS]
        unknown = [key for key in raw if key not in KINDS]
        if unknown:
            problems.append(Problem(f"{path}.{unknown[0]}", f"unknown kind of parameter (one of {', '.join(KINDS)})"))
            return None
        if len(kinds) != 1:
            problems.append(
                Problem(path, f"give exactly one of {', '.join(KINDS)}" + (f", not {kinds}" if kinds else ""))
            )
            return None
        kind = kinds[0]
        value, where = raw[kind], f"{path}.{kind}"
    before = len(problems)
    param = _build(kind, value, where, problems)
    return param if len(problems) == before else None


def _v1_kinds() -> list[str]:
    return ["choice", "pchoice", *[k for k in KINDS if k not in ("values", "pvalues")]]


def _build(kind: str, value: Any, where: str, problems: list[Problem]) -> Param | None:
    if kind == "values":
        return _values(value, where, problems)
    if kind == "pvalues":
        return _pvalues(value, where, problems)
    numbers = _numbers(kind, value, where, problems)
    if numbers is None:
        return None
    if kind in ("range", "linspace", "logspace", "geomspace"):
        values = _expand(kind, numbers, where, problems)
        return None if values is None else Param(kind=kind, values=values)  # type: ignore[arg-type]
    return _distribution(kind, numbers, where, problems)


def _values(value: Any, where: str, problems: list[Problem]) -> Param | None:
    if not isinstance(value, list) or not value:
        problems.append(Problem(where, f"{show_value(value)} is not a non-empty list of values"))
        return None
    return Param(kind="values", values=value)


def _pvalues(value: Any, where: str, problems: list[Problem]) -> Param | None:
    """`[[value, prob], ...]`; Polyaxon's docs write pairs as `(value, prob)`, which YAML reads as
    the string "(value, prob)": that form is read too."""
    if not isinstance(value, list) or not value:
        problems.append(Problem(where, f"{show_value(value)} is not a non-empty list of [value, probability] pairs"))
        return None
    values, probabilities = [], []
    for i, pair in enumerate(_rejoin_tuples(value)):
        if isinstance(pair, str) and pair.strip().startswith("(") and pair.strip().endswith(")"):
            parts = [p.strip() for p in pair.strip()[1:-1].split(",")]
            pair = [_scalar(parts[0]), _scalar(parts[1])] if len(parts) == 2 else pair
        if not isinstance(pair, list) or len(pair) != 2:
            problems.append(Problem(f"{where}[{i}]", f"{show_value(pair)} is not a [value, probability] pair"))
            return None
        probability = pair[1]
        if isinstance(probability, bool) or not isinstance(probability, (int, float)) or not 0 < probability <= 1:
            problems.append(Problem(f"{where}[{i}]", f"probability {show_value(probability)} is not in (0, 1]"))
            return None
        values.append(pair[0])
        probabilities.append(float(probability))
    if not math.isclose(sum(probabilities), 1.0, abs_tol=1e-6):
        problems.append(Problem(where, f"the probabilities add up to {sum(probabilities):g}, not 1"))
        return None
    return Param(kind="pvalues", values=values, probabilities=probabilities)


def _rejoin_tuples(items: list[Any]) -> list[Any]:
    """In a YAML flow list, `[(a, 0.2), (b, 0.8)]` arrives as "(a", 0.2)"...: the docs' tuples,
    put back together as "(a, 0.2)" strings."""
    out: list[Any] = []
    open_parts: list[str] | None = None
    for item in items:
        text = str(item).strip()
        if open_parts is not None:
            open_parts.append(text)
            if text.endswith(")"):
                out.append(", ".join(open_parts))
                open_parts = None
        elif isinstance(item, str) and text.startswith("(") and not text.endswith(")"):
            open_parts = [text]
        else:
            out.append(item)
    if open_parts is not None:
        out.append(", ".join(open_parts))
    return out


def _scalar(text: str) -> Any:
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def _numbers(kind: str, value: Any, where: str, problems: list[Problem]) -> dict[str, float] | None:
    """The kind's numbers from a list, a mapping or an "a:b:c" string, by name."""
    fields = _FIELDS[kind]
    shown = [f for f in fields if f not in _OPTIONAL.get(kind, {})]
    example = f"[{', '.join(shown)}], {{{', '.join(f'{f}: ...' for f in shown)}}} or '{':'.join(shown)}'"
    if isinstance(value, str):
        items: list[Any] = [_scalar(part.strip()) for part in value.split(":")]
    elif isinstance(value, list):
        items = list(value)
    elif isinstance(value, dict):
        unknown = sorted(set(value) - set(fields), key=str)
        if unknown:
            problems.append(Problem(f"{where}.{unknown[0]}", f"unknown field ({kind} has {', '.join(fields)})"))
            return None
        missing = [f for f in fields if f not in value and f not in _OPTIONAL.get(kind, {})]
        if missing:
            problems.append(Problem(f"{where}.{missing[0]}", "required field is missing"))
            return None
        items = [value[f] if f in value else _OPTIONAL[kind][f] for f in fields]
    else:
        problems.append(Problem(where, f"{show_value(value)} is not a {kind}: write {example}"))
        return None
    optional = _OPTIONAL.get(kind, {})
    if len(items) < len(fields) and len(items) >= len(fields) - len(optional):
        items += [optional[f] for f in fields[len(items) :]]
    if len(items) != len(fields):
        problems.append(Problem(where, f"{show_value(value)} has {len(items)} numbers; {kind} takes {example}"))
        return None
    numbers = {}
    for name, item in zip(fields, items, strict=True):
        if isinstance(item, bool) or not isinstance(item, (int, float)) or not math.isfinite(item):
            problems.append(Problem(where, f"{name} {show_value(item)} is not a finite number"))
            return None
        numbers[name] = item
    return numbers


def _expand(kind: str, n: dict[str, float], where: str, problems: list[Problem]) -> list[Any] | None:
    if kind == "range":
        start, stop, step = n["start"], n["stop"], n["step"]
        if step == 0:
            problems.append(Problem(where, "step is 0: the range never ends"))
            return None
        count = max(0, math.ceil((stop - start) / step))
        if count == 0:
            problems.append(Problem(where, f"range({start:g}, {stop:g}, {step:g}) has no values"))
            return None
        if count > MAX_DISCRETE_VALUES:
            problems.append(Problem(where, f"range has {count:,} values; at most {MAX_DISCRETE_VALUES:,}"))
            return None
        whole = all(isinstance(v, int) for v in (start, stop, step))
        return [start + i * step if whole else _tidy(start + i * step) for i in range(count)]
    num = n["num"]
    if not isinstance(num, int) or isinstance(num, bool) or num < 1:
        problems.append(Problem(where, f"num {show_value(num)} is not a whole number of values >= 1"))
        return None
    if num > MAX_DISCRETE_VALUES:
        problems.append(Problem(where, f"num {num:,} is above the limit of {MAX_DISCRETE_VALUES:,} values"))
        return None
    start, stop = n["start"], n["stop"]
    steps = [i / (num - 1) if num > 1 else 0.0 for i in range(num)]
    if kind == "linspace":
        return [_tidy(start + (stop - start) * t) for t in steps]
    if kind == "logspace":
        base = n["base"]
        if base <= 0:
            problems.append(Problem(where, f"base {base:g} is not above 0"))
            return None
        return [_tidy(base ** (start + (stop - start) * t)) for t in steps]
    if start <= 0 or stop <= 0:
        problems.append(Problem(where, f"geomspace needs start and stop above 0, got {start:g} and {stop:g}"))
        return None
    return [_tidy(math.exp(math.log(start) + (math.log(stop) - math.log(start)) * t)) for t in steps]


def _tidy(value: float) -> float:
    """0.30000000000000004 -> 0.3: values are shown to people and compared in tests."""
    return float(f"{value:.12g}")


def _distribution(kind: str, n: dict[str, float], where: str, problems: list[Problem]) -> Param | None:
    q = n.get("q")
    if q is not None and q <= 0:
        problems.append(Problem(where, f"q {q:g} is not above 0 (it is the quantization step)"))
        return None
    if "low" in n:
        low, high = float(n["low"]), float(n["high"])
        if not low < high:
            problems.append(Problem(where, f"low {low:g} is not below high {high:g}: nothing can be sampled"))
            return None
        if kind in ("loguniform", "qloguniform") and (high > 700 or low < -700):
            problems.append(
                Problem(where, "loguniform bounds are exponents (exp(low)..exp(high)); keep them within ±700")
            )
            return None
        if q is not None and kind == "quniform" and q > high - low:
            problems.append(Problem(where, f"q {q:g} is wider than the interval {low:g}..{high:g}"))
            return None
        return Param(kind=kind, low=low, high=high, q=q)  # type: ignore[arg-type]
    if n["scale"] <= 0:
        problems.append(Problem(where, f"scale {n['scale']:g} is not above 0: nothing can be sampled"))
        return None
    return Param(kind=kind, loc=float(n["loc"]), scale=float(n["scale"]), q=q)  # type: ignore[arg-type]
