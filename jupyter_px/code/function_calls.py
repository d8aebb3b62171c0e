"""A function runs distributed, and every replica's result comes back through the run store.

    run = jupyter_px.submit(train, topology, args=(lr,), kwargs={"epochs": 3})
    run.results()        # [master's value, worker 0's, ...] in rank order, or re-raises

**Shipping (the submitter).** `pack` pickles the function, its arguments and every notebook
global it uses *by value* with cloudpickle (a function or lambda defined in a notebook is not
importable anywhere else; the Kubeflow SDK's `CustomTrainer(func)` ships source text instead,
which loses closures and globals). cloudpickle's own source goes along (`cloudpickle/` in the
code directory), so a replica whose image lacks it can still load the call: every backend runs
the same thing. The cells the function was compiled from go into the source map
(`source_map`), so its tracebacks name them.

**Calling (the replica runner).** `call` loads and calls it with the run's environment (the
contract is in `os.environ` already). The code of a `%%px_distributed` cell that ends with an
expression runs by `run_keeping_last_expression`, whose value is the replica's result too.

**Results.** `keep` writes each process's outcome, `results/<role>-<index>[.rank<k>].pkl`: the
value, or the exception with its formatted traceback. Where the run directory is not writable
(a Kubernetes pod), the outcome is one `@px-result <key> <tag> <base64>` line at the start of a
line of the replica's log, which the backend streams into the store; `read_results` finds it
there. `read_results` returns the values in rank order (replicas in the topology's order, each
replica's processes by rank), or re-raises the first replica's exception, its remote traceback
as the `__cause__` (as `concurrent.futures` does) and a note naming the replica.

**Authenticated.** An outcome is a pickle, and unpickling runs code, so none is read that the
runner did not write. Each run has a secret (`result.key` in its directory, 0600, shipped in
the Kubernetes ConfigMap); the runner reads it before the user's code runs and keeps it out of
the environment. Every outcome carries `tag` = HMAC-SHA256(secret, process key + newline +
pickle), in the file's first line and in the log line; the submitter checks it in constant time
before unpickling, and a line or file that does not verify is not a result (a dataset's text or
a library's output that contains the marker is only a log line). The user's own code runs in
the same process as the runner, so this guards against text that looks like a result, not
against code that sets out to read the secret.

The replica side (`call`, `keep`, `run_keeping_last_expression`) is standard library only: the
runner imports it in every replica.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import hmac
import os
import pickle
import sys
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..runstore.layout import RESULT_KEY_FILE

#: The pickled call in the run's code directory.
FUNCTION_FILE = "function.pkl"
#: A result that could not be written to the store travels in the log after this marker.
RESULT_LOG_PREFIX = "@px-result "
#: Where each process's outcome is kept, under the run directory.
RESULTS_DIR = "results"
#: The first bytes of a signed outcome file (then the tag in hex and a newline, then the pickle).
SIGNED_HEADER = b"px-result-v1 "


# ---- the submitter ---------------------------------------------------------------------------------


def describe(fn: Callable[..., Any]) -> str:
    """`train` / `<lambda>` / `module.train`: how a run records its function."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    module = getattr(fn, "__module__", None)
    return name if module in (None, "__main__") else f"{module}.{name}"


def pack(fn: Callable[..., Any], args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None) -> dict[str, bytes]:
    """The files a call ships in the run's code directory: the pickled call, cloudpickle's
    source. TypeError (naming what cannot be shipped) when it cannot."""
    import cloudpickle

    if not callable(fn):
        raise TypeError(f"{fn!r} is not a function")
    # cloudpickle names every code object it ships `<dynamic-code>`; the replica gives each back
    # the file it was compiled from (a notebook cell's), so its tracebacks can name the cell
    filenames = {_code_key(code): code.co_filename for code in _codes(fn)}
    call = {"fn": fn, "args": tuple(args), "kwargs": dict(kwargs or {}), "filenames": filenames}
    try:
        payload = cloudpickle.dumps(call)
    except Exception as error:
        raise TypeError(f"cannot ship {describe(fn)} to the replicas: {type(error).__name__}: {error}") from None
    files = {FUNCTION_FILE: payload}
    package = Path(cloudpickle.__file__).parent
    for path in sorted(package.glob("*.py")):
        files[f"cloudpickle/{path.name}"] = path.read_bytes()
    return files


def _functions(fn: Any) -> list[types.FunctionType]:
    """`fn` and the functions it reaches: those among the globals it reads, in its closure, and
    theirs (what cloudpickle ships by value along with it)."""
    found: list[types.FunctionType] = []
    seen: set[int] = set()
    pending: list[Any] = [fn]
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, types.MethodType):
            pending.append(item.__func__)
            continue
        if not isinstance(item, types.FunctionType):
            continue
        found.append(item)
        names = {name for code in _code_tree(item.__code__) for name in code.co_names}
        pending += [item.__globals__[name] for name in names if name in item.__globals__]
        for cell in item.__closure__ or ():
            try:
                pending.append(cell.cell_contents)
            except ValueError:
                continue
    return found


def _code_tree(code: types.CodeType) -> list[types.CodeType]:
    codes, pending = [], [code]
    while pending:
        current = pending.pop()
        codes.append(current)
        pending += [c for c in current.co_consts if isinstance(c, types.CodeType)]
    return codes


def _codes(fn: Any) -> list[types.CodeType]:
    return [code for function in _functions(fn) for code in _code_tree(function.__code__)]


def _code_key(code: types.CodeType) -> str:
    return f"{getattr(code, 'co_qualname', code.co_name)}@{code.co_firstlineno}"


def cells_of(fn: Callable[..., Any], cell_of: Callable[[str], dict[str, Any] | None]) -> dict[str, dict[str, Any]]:
    """The source-map `code` entries (`source_map`) of the files every code object `fn`
    reaches was compiled from, by `cell_of(filename)` (None: not a cell)."""
    found: dict[str, dict[str, Any]] = {}
    for code in _codes(fn):
        if code.co_filename not in found:
            cell = cell_of(code.co_filename)
            if cell is not None:
                found[code.co_filename] = cell
    return found


# ---- the replica -------------------------------------------------------------------------------------


def call(code_dir: Path) -> Any:
    """Load the shipped call and make it (its exceptions propagate)."""
    with open(code_dir / FUNCTION_FILE, "rb") as handle:
        shipped = pickle.load(handle)
    _restore_filenames(shipped["fn"], shipped.get("filenames") or {})
    return shipped["fn"](*shipped["args"], **shipped["kwargs"])


def _restore_filenames(fn: Any, filenames: Mapping[str, str]) -> None:
    """Give each shipped code object back the file name it was compiled from."""

    def restored(code: types.CodeType) -> types.CodeType:
        consts = tuple(restored(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
        name = filenames.get(_code_key(code), code.co_filename)
        return code.replace(co_filename=name, co_consts=consts)

    for function in _functions(fn):
        function.__code__ = restored(function.__code__)


def run_keeping_last_expression(entrypoint: str, init_globals: Mapping[str, Any]) -> Any:
    """Run a file as `__main__` (as `runpy.run_path` does) and return the value of its last
    statement when that is an expression (a notebook cell's result), else None."""
    source = Path(entrypoint).read_text(encoding="utf-8")
    tree = ast.parse(source, entrypoint)
    keeps = bool(tree.body) and isinstance(tree.body[-1], ast.Expr)
    if keeps:
        last = tree.body[-1]
        assert isinstance(last, ast.Expr)
        target = ast.Name(id="__px_result__", ctx=ast.Store())
        tree.body[-1] = ast.copy_location(ast.Assign(targets=[target], value=last.value), last)
        ast.fix_missing_locations(tree)
    code = compile(tree, entrypoint, "exec")
    module = types.ModuleType("__main__")
    namespace = module.__dict__
    namespace.update(init_globals)
    namespace.update(__name__="__main__", __file__=entrypoint, __loader__=None, __package__=None, __spec__=None)
    namespace["__builtins__"] = __builtins__
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        exec(code, namespace)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved
    return namespace.get("__px_result__") if keeps else None


def _process_key(environ: Mapping[str, str]) -> str:
    key = f"{environ.get('PX_TASK_TYPE', 'master')}-{environ.get('PX_TASK_INDEX', '0')}"
    process = environ.get("LOCAL_RANK") or environ.get("PX_MPI_RANK_IN_WORKER") or "0"
    return key if process in ("", "0") else f"{key}.rank{process}"


def _dumps(outcome: Any) -> bytes:
    """With cloudpickle where the replica has it (values of classes defined in the notebook)."""
    try:
        import cloudpickle

        return cloudpickle.dumps(outcome)
    except ImportError:
        return pickle.dumps(outcome)


def read_key(run_dir: Path) -> bytes | None:
    """The run's result secret (None: a run made before results were signed)."""
    try:
        return (run_dir / RESULT_KEY_FILE).read_bytes().strip() or None
    except OSError:
        return None


def sign(key: bytes, process: str, data: bytes) -> str:
    """The tag that authenticates `data` as the outcome of `process` of the run keyed `key`."""
    return hmac.new(key, process.encode() + b"\n" + data, hashlib.sha256).hexdigest()


def keep(
    run_dir: Path,
    *,
    value: Any = None,
    error: BaseException | None = None,
    traceback_text: str = "",
    key: bytes | None = None,
) -> None:
    """Keep this process's outcome where the submitter reads it, signed with the run's secret
    `key` (see the module doc)."""
    if error is None:
        outcome: dict[str, Any] = {"ok": True, "value": value}
    else:
        outcome = _failure(error, traceback_text)
    try:
        data = _dumps(outcome)
    except Exception as problem:  # a value (or an exception) that does not pickle: say so, as the outcome
        if error is None:
            outcome = {"ok": False, "error": None, "type": "TypeError", "traceback": ""}
            outcome["message"] = f"the return value ({type(value).__name__}) cannot be pickled: {problem}"
        else:
            outcome = {**outcome, "error": None}
        data = pickle.dumps(outcome)
    process = _process_key(os.environ)
    tag = sign(key, process, data) if key else "-"
    target = run_dir / RESULTS_DIR / f"{process}.pkl"
    try:
        # every process of the run makes it: the one that comes second finds it there
        target.parent.mkdir(exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}")
        tmp.write_bytes((SIGNED_HEADER + tag.encode() + b"\n" if key else b"") + data)
        os.replace(tmp, target)
    except OSError:
        line = f"{RESULT_LOG_PREFIX}{process} {tag} {base64.b64encode(data).decode()}\n"
        # at the start of a line, whatever the user's code left unfinished on stdout
        sys.stdout.flush()
        os.write(sys.stdout.fileno(), b"\n" + line.encode())


def _failure(error: BaseException, traceback_text: str) -> dict[str, Any]:
    """A failed outcome: the exception pickled by itself (`error`: its class may not rebuild in
    the submitter, whose unpickling then fails alone) and what shows it when it does not: its
    class's qualified name and module, its message, the replica's traceback."""
    kind = type(error)
    try:
        pickled: bytes | None = _dumps(error)
    except Exception:
        pickled = None
    return {
        "ok": False,
        "error": pickled,
        "traceback": traceback_text,
        "type": kind.__qualname__,
        "module": kind.__module__,
        "message": _message(error),
    }


def _message(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:
        return repr(error.args)


# ---- the submitter, afterwards -----------------------------------------------------------------------


class RemoteTraceback(Exception):
    """The traceback of a replica's exception, as the replica printed it."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


class RemoteError(RuntimeError):
    """A replica's exception whose class cannot be rebuilt here (its `__init__` takes other
    arguments than its `args`, or its module is not importable): its class and message."""

    def __init__(self, type_name: str, message: str):
        super().__init__(f"{type_name}: {message}" if message else type_name)
        self.type_name = type_name
        self.message = message


def _rebuilt(outcome: Mapping[str, Any]) -> BaseException:
    """The replica's exception, else a RemoteError naming its class and message."""
    error: Any = outcome.get("error")
    if isinstance(error, bytes):
        try:
            error = pickle.loads(error)
        except Exception:
            error = None
    if isinstance(error, BaseException):
        return error
    module, name = outcome.get("module"), outcome.get("type") or "Exception"
    qualified = name if module in (None, "builtins", "__main__") else f"{module}.{name}"
    return RemoteError(qualified, outcome.get("message") or "")


class ResultMissing(RuntimeError):
    """A replica that kept no result (it was killed, or the run was not a function's)."""


class ResultForged(RuntimeError):
    """An outcome that does not carry the run's signature: never unpickled."""


def _verified(key: bytes | None, process: str, tag: str, data: bytes) -> bool:
    return key is not None and hmac.compare_digest(tag, sign(key, process, data))


def _from_file(path: Path, key: bytes | None, process: str) -> bytes:
    raw = path.read_bytes()
    if key is None:  # a run made before results were signed: its own file, in the user's store
        return raw
    head, newline, data = raw.partition(b"\n")
    if raw.startswith(SIGNED_HEADER) and newline:
        tag = head[len(SIGNED_HEADER) :].decode("ascii", "replace")
        if _verified(key, process, tag, data):
            return data
    raise ResultForged(f"{process}'s result file is not signed with the run's secret: it was not kept by the runner")


def _from_log(log: Path, key: bytes | None, process: str) -> bytes | None:
    """The last outcome line of `process` in its replica's log whose tag verifies (None: none does)."""
    if key is None:
        return None  # unsigned log lines are never results
    marker = f"{RESULT_LOG_PREFIX}{process} "
    found = None
    try:
        with open(log, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if not line.startswith(marker):
                    continue
                tag, _, text = line[len(marker) :].strip().partition(" ")
                try:
                    data = base64.b64decode(text, validate=True)
                except ValueError:
                    continue
                if _verified(key, process, tag, data):
                    found = data
    except OSError:
        return None
    return found


def read_results(
    run_dir: Path,
    processes: Iterable[tuple[str, int, str]],
    why_missing: Callable[[str], str],
    blame: Callable[[str], int] = lambda key: 0,
    succeeded: Callable[[str], bool] = lambda key: False,
) -> list:
    """Every process's value in rank order (`processes`: (role, index, key) in that order), or
    the first exception re-raised; else ResultMissing naming a process without one
    (`why_missing(key)` says what became of it). Of several without one, the first by
    `blame(key)` (lowest first): a replica killed outright is named before the ones stopped
    because of it, whichever ended first.

    A process whose replica `succeeded(key)` but kept no outcome ended through `sys.exit(0)` or
    `os._exit(0)` before its last expression gave a value (a script pasted into a cell often ends
    with `sys.exit(main())`): its result is None, as a cell without a value shows none."""
    values: list[Any] = []
    missing: list[str] = []
    secret = read_key(run_dir)
    for role, index, key in processes:
        path = run_dir / RESULTS_DIR / f"{key}.pkl"
        log = run_dir / "logs" / f"{role}-{index}.log"
        data = _from_file(path, secret, key) if path.is_file() else _from_log(log, secret, key)
        if data is None:
            if succeeded(key):
                values.append(None)
            else:
                missing.append(key)
            continue
        outcome = pickle.loads(data)
        if outcome["ok"]:
            values.append(outcome["value"])
            continue
        error = _rebuilt(outcome)
        if outcome.get("traceback"):
            error.__cause__ = RemoteTraceback("\n" + outcome["traceback"])
        error.add_note(f"raised in {key} of the run (its traceback is the cause above)")
        raise error
    if missing:
        key = min(missing, key=blame)  # min keeps rank order among equals
        raise ResultMissing(f"{key} returned no result: {why_missing(key)}")
    return values
