"""Load dashboard and alarm definitions: Python files in the configured folders.

A file defines what it contributes in one of two ways:
  * a function `dashboards(ctx)` (or `alarms(ctx)`) returning an iterable, or
  * a module-level `dashboard` (or `alarm`) object, or a list `DASHBOARDS` (`ALARMS`).
Dashboard files may also hold plain grafanalib `Dashboard` objects.
`ctx` gives read access to the metric catalog and the settings.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.machinery
import importlib.util
import os
import signal
import sys
import threading
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Iterator

from . import printed
from .catalog import Catalog
from .errors import EXIT_INPUT, InputError
from .model import Alarm, DefinitionError, _caller, named_apart, shown_path
from .reading import list_folder
from .resources import closest_field, known_fields
from .settings import Levels, Settings, told_at_key

TIME_LIMIT_VARIABLE = "GPUDASH_DEFINITION_TIME_LIMIT"
DEFAULT_TIME_LIMIT = 60.0  # seconds for all definitions of one kind; a definition that needs more is stuck
STUBBORN_FIRINGS = 6  # repeats of the time limit (every half second, or every time limit when it is
# shorter) before a definition that swallows it is ended


class UnknownMetric(DefinitionError):
    """A definition names a field that no DCGM version has: a typo, never a panel to drop quietly."""


def unknown_metric_hint(name: str, catalog: Catalog) -> str:
    """What to write instead of a name no DCGM field has: the closest field, collected ones first."""
    close = closest_field(name, (m.name for m in catalog))
    guess = f"did you mean {close}? " if close else ""
    return f"{guess}fix the name (`gpudash metrics` lists the fields your counters CSV collects)"


@dataclass(frozen=True)
class Context:
    """What a definition may read: the catalog and the settings."""

    catalog: Catalog
    settings: Settings
    # (where, why) of each panel left out, for generate and lint
    notes: list[tuple[str, str]] = field(default_factory=list, compare=False)

    def _known(self, name: str, where: str) -> None:
        if name not in self.catalog and name not in known_fields():
            raise UnknownMetric(f"unknown metric {name}: no DCGM field has this name", where,
                                unknown_metric_hint(name, self.catalog))

    def has(self, *metrics: str) -> bool:
        """True when every named field is collected (listed in the counters CSV)."""
        where = _caller()
        for name in metrics:
            self._known(name, where)
        return all(name in self.catalog for name in metrics)

    def available(self, items):
        """The panels (or alarms) whose fields are all collected: bundled definitions adapt to any CSV.

        A name that is not a DCGM field at all is an error; a panel or alarm left out is noted, so
        that `generate` says so and `lint` lists it (DF001): nothing vanishes from a build unsaid."""
        kept = []
        for item in items:
            missing = []
            for query in item.queries:
                if query.raw_promql:
                    continue
                for name in query.metrics:
                    self._known(name, query.defined_at)
                    if name not in self.catalog and name not in missing:
                        missing.append(name)
            if missing:
                kind, name = ("alarm", item.id) if isinstance(item, Alarm) else ("panel", item.title)
                self.notes.append((item.defined_at, f"{kind} {name!r} left out: the counters CSV does not "
                                                    f"collect {', '.join(missing)}"))
            else:
                kept.append(item)
        return kept

    def levels(self, name: str) -> tuple[float, float]:
        """(warning, critical) of a pair of levels in the settings' `thresholds`."""
        value = self._thresholds(name, Levels, "levels")
        return (value.warning, value.critical)

    def threshold(self, name: str) -> float:
        """A single value of the settings' `thresholds`."""
        return self._thresholds(name, float, "threshold")

    def _thresholds(self, name: str, kind: type, asked: str) -> Any:
        """The `thresholds` value `name`, when it is of `kind`; else the definition's error naming those that are."""
        thresholds = self.settings.thresholds
        if name in thresholds and isinstance(thresholds[name], kind):
            return thresholds[name]
        pairs = [key for key in thresholds if isinstance(thresholds[key], Levels)]
        singles = [key for key in thresholds if not isinstance(thresholds[key], Levels)]
        what = f"the settings have no thresholds.{name}" if name not in thresholds else (
            f"thresholds.{name} is one number, not a warning and critical pair" if kind is Levels else
            f"thresholds.{name} is a warning and critical pair, not one number")
        raise DefinitionError(f"ctx.{asked}({name!r}): {what}", _caller(),
                              f"ctx.levels takes one of {', '.join(pairs)}; ctx.threshold one of {', '.join(singles)}")


@dataclass(frozen=True)
class Loaded:
    """One object a definition file contributed, with the file and line it came from."""

    value: Any
    source: Path
    line: int | None = None
    # `folder/file.py:line`, as every message names a definition (shown_path: not where the project is), named as it
    # loads: a message said after the loading (a grafanalib dashboard written as JSON) names two folders of one name
    # apart too (model.named_apart)
    where: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        shown = shown_path(self.source)
        object.__setattr__(self, "where", f"{shown}:{self.line}" if self.line else shown)


class TimeLimit(BaseException):
    """Raised inside a definition that ran past the time limit (not an Exception: `except Exception`
    in a definition's loop does not swallow it)."""


def _time_limit() -> float:
    value = os.environ.get(TIME_LIMIT_VARIABLE, "")
    try:
        seconds = float(value) if value else DEFAULT_TIME_LIMIT
    except ValueError:
        raise InputError(f"{TIME_LIMIT_VARIABLE}={value!r} is not a number of seconds",
                         hint=f"unset it, or set e.g. {TIME_LIMIT_VARIABLE}=60") from None
    if not seconds > 0:
        raise InputError(f"{TIME_LIMIT_VARIABLE}={value!r} must be more than 0 seconds",
                         hint=f"unset it, or set e.g. {TIME_LIMIT_VARIABLE}=60")
    return seconds


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Interrupt the running definition after `seconds` (a timer signal; main thread only)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    fired = []

    def expired(signum, frame):
        # On a busy machine a repeat can fire while this handler (or the cleanup below) runs: the interrupted
        # frame is then this module's, and the place to name is the definition's frame that called into it.
        while frame is not None and frame.f_code.co_filename == __file__:
            frame = frame.f_back
        fired.append(frame)
        if len(fired) > STUBBORN_FIRINGS:  # a bare `except:` in a loop keeps swallowing TimeLimit
            frame = next((f for f in reversed(fired) if f is not None), None)
            where = f"{shown_path(frame.f_code.co_filename)}:{frame.f_lineno}" if frame else "a definition"
            os.write(2, f"error: {where}: the definition did not finish within {seconds:g} s and would not "
                        f"stop (it catches every exception)\n  fix: fix the loop; if it really needs longer, "
                        f"set {TIME_LIMIT_VARIABLE}=<seconds>\n".encode())
            os._exit(EXIT_INPUT)
        raise TimeLimit()

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds, min(seconds, 0.5))  # repeats until the definition lets it through
    try:
        yield
    finally:
        # A repeat may fire while this very cleanup runs (a busy machine, or a first TimeLimit still
        # unwinding): catch it and finish, so that no timer outlives the definition and ends the process.
        while True:
            try:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
                break
            except TimeLimit:
                continue


def _where_in(path: Path, exc: BaseException) -> str:
    """file:line of the deepest traceback frame inside the definition file or a `_*.py` helper beside it."""
    import traceback

    def own(file_name: str) -> Path | None:
        file = Path(file_name).resolve()
        if file == path.resolve():
            return path
        return path.parent / file.name if file.parent == path.parent.resolve() and file.name.startswith("_") else None

    file, line = path, None
    for frame in traceback.extract_tb(exc.__traceback__):
        if own(frame.filename):
            file, line = own(frame.filename), frame.lineno
    if isinstance(exc, SyntaxError) and exc.lineno and own(exc.filename or ""):
        file, line = own(exc.filename or ""), exc.lineno
    return f"{shown_path(file)}:{line}" if line else shown_path(path)


def _failure(path: Path, exc: BaseException, doing: str, seconds: float) -> InputError:
    """The one message for a definition that failed while `doing` something."""
    if isinstance(exc, DefinitionError):
        return InputError(str(exc), where=exc.where, hint=exc.hint)
    where = _where_in(path, exc)
    if isinstance(exc, TimeLimit):
        return InputError(f"{doing} did not finish within {seconds:g} s (stopped here): an endless loop, or work "
                          f"that does not belong in a definition", where=where,
                          hint=f"fix the loop; if it really needs longer, set {TIME_LIMIT_VARIABLE}=<seconds>")
    if isinstance(exc, SystemExit):
        return InputError(f"{doing} called sys.exit({exc.code!r}): a definition cannot end gpudash", where=where,
                          hint="remove the exit; raise an exception to report a problem")
    if isinstance(exc, RecursionError):
        return InputError(f"{doing} recursed without end (RecursionError)", where=where,
                          hint="fix the recursion in the definition")
    return InputError(f"{doing} raised {type(exc).__name__}: {exc}", where=where,
                      hint=_keyword_hint(exc) or _context_hint(exc) or "fix the definition; --debug before the command "
                                                                       "(`gpudash --debug generate`) shows the full "
                                                                       "traceback")


def _context_hint(exc: BaseException) -> str | None:
    """For `ctx` read outside a function (`dashboard = ... ctx.levels(...)`): ctx is what dashboards(ctx) and alarms(ctx)
    are given, not a name of the file."""
    if not isinstance(exc, NameError) or getattr(exc, "name", None) != "ctx":
        return None
    return ("ctx is given to a function, not to the file: write `def dashboards(ctx):` (or `def alarms(ctx):`) that "
            "returns or yields the objects, as in the README's example")


def _keyword_hint(exc: BaseException) -> str | None:
    """For `Panel.__init__() got an unexpected keyword argument 'colour'` of a model class (Python 3.13 adds its own
    guess after it where a field is close: `. Did you mean 'color'?`): the fields it takes, the one meant first."""
    import re

    from . import model

    found = re.fullmatch(r"(\w+)\.__init__\(\) got an unexpected keyword argument '(\w+)'(?:\. Did you mean '\w+'\?)?",
                         str(exc)) if isinstance(exc, TypeError) else None
    kind = getattr(model, found.group(1), None) if found else None
    if kind is None or not hasattr(kind, "__dataclass_fields__") or not _called_there(exc, kind):
        return None
    from .guesses import did_you_mean

    taken = [name for name, f in kind.__dataclass_fields__.items() if f.init and name != "defined_at"]
    return (f"{did_you_mean(found.group(2), taken)}{found.group(1)} takes "
            f"{', '.join(taken)} (docs/definitions.md)")


def _called_there(exc: BaseException, kind: type) -> bool:
    """Whether the class the call raising `exc` named is `kind` as far as the calling line's names show: each class of
    that name it can reach (bound to the name, or a module's attribute) is `kind`. Another of the same name (grafanalib's
    Dashboard, Row, Panel, which a definition may build) takes other fields."""
    from types import ModuleType

    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return False
    names = {**tb.tb_frame.f_globals, **tb.tb_frame.f_locals}
    reached = [names[kind.__name__]] if kind.__name__ in names else []
    reached += [getattr(value, kind.__name__) for value in names.values()
                if isinstance(value, ModuleType) and isinstance(getattr(value, kind.__name__, None), type)]
    return bool(reached) and all(value is kind for value in reached)


class _HelperLoader(importlib.machinery.SourceFileLoader):
    """Runs a `_*.py` helper compiled from its source: a __pycache__ left in the folder (by Python's own import
    in an earlier version, or a hand-made sys.path entry) is never read, and none is written."""

    def get_code(self, fullname):
        return compile(self.get_data(self.path), self.path, "exec", dont_inherit=True)


class _Helpers:
    """Finds the `_*.py` helpers beside the definitions of one folder by their module name (`from _shared
    import X`), ahead of sys.path, while that folder's definitions run. A meta path finder: the import system asks it
    only find_spec (importlib.abc.MetaPathFinder, its base before, cost every start ~8 ms of imports)."""

    def __init__(self, folder: Path, names: set[str]):
        self.folder, self.names = folder, names

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.names:
            return None
        file = str(self.folder / f"{fullname}.py")
        return importlib.util.spec_from_file_location(fullname, file, loader=_HelperLoader(fullname, file))


_IMPORTING = threading.RLock()


@contextlib.contextmanager
def _helpers(folder: Path, names: list[str]) -> Iterator[None]:
    """While the definitions of `folder` run, `import _x` reads `folder/_x.py`, compiled from its source once per
    run; afterwards Python forgets it, and whatever that name meant before is back. Two folders' helpers of one
    name stay each their own folder's, and a helper edited between two runs of one process is read as edited."""
    own = {name[:-3] for name in names if name.startswith("_") and name.endswith(".py") and name[:-3].isidentifier()
           and name[:-3] not in sys.stdlib_module_names}  # a `_io.py` must not stand in for Python's own
    if not own:
        yield
        return

    def ours(module_name: str) -> bool:
        return module_name.partition(".")[0] in own

    with _IMPORTING:
        before = {name: module for name, module in sys.modules.items() if ours(name)}
        for name in before:
            del sys.modules[name]
        finder = _Helpers(folder, own)
        sys.meta_path.insert(0, finder)
        try:
            yield
        finally:
            sys.meta_path.remove(finder)
            for name in [name for name in sys.modules if ours(name)]:
                del sys.modules[name]
            sys.modules.update(before)


def _execute(path: Path, namespace: str):
    """Run a definition file as a module, compiled from its source every time. Python's import would reuse
    the bytecode it cached in __pycache__ when the file's size and modification second are unchanged: a
    threshold edited from 5 to 7 and built within the same second ran as 5. No bytecode is written while it
    runs either: a module it imports that Python's own import finds (a definition may still put a folder on
    sys.path) would otherwise be cached in a __pycache__ in the user's folder, and the next run would read that
    cache for a file edited within the same second at the same size (the `_*.py` helpers beside it are read by
    _helpers, from source). Compiling the bundled definitions takes about 3 ms."""
    name = f"gpudash_definitions.{namespace}.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InputError("cannot load this file as Python", where=shown_path(path))
    module = importlib.util.module_from_spec(spec)
    code = compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    sys.modules[name] = module
    writes, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    own = _OwnModules(dont_write=writes)
    sys.meta_path.insert(0, own)
    try:
        exec(code, module.__dict__)  # noqa: S102 - the user's own definition, as importing it would run it
    finally:
        sys.meta_path.remove(own)
        sys.dont_write_bytecode = writes
        sys.modules.pop(name, None)
    return module


class _OwnLoader(importlib.machinery.SourceFileLoader):
    """One of gpudash's own modules, first imported by a definition: its bytecode is read from and written to
    gpudash's __pycache__ as when gpudash imports it (`dont_write`: this process's sys.dont_write_bytecode)."""

    def __init__(self, fullname: str, path: str, dont_write: bool):
        super().__init__(fullname, path)
        self.dont_write = dont_write

    def get_code(self, fullname):
        held, sys.dont_write_bytecode = sys.dont_write_bytecode, self.dont_write
        try:
            return super().get_code(fullname)
        finally:
            sys.dont_write_bytecode = held


class _OwnModules:
    """While a definition runs, finds gpudash's own modules (`generator.*`) it imports, to be loaded by _OwnLoader:
    the definition's bytecode is never written, but gpudash's modules it imports first (generator.panels,
    generator.container_insights) were compiled from their source at every run."""

    def __init__(self, dont_write: bool):
        self.dont_write = dont_write

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(f"{__package__}.") or not path:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _OwnLoader(fullname, spec.origin, self.dont_write)
        return spec


_PARSING = threading.Lock()


def _syntax_tree(path: Path) -> ast.Module:
    """The file's syntax tree. CPython 3.11 before 3.11.9 keeps one recursion counter for every thread's
    conversion of a tree into `ast` objects, so a parse that another thread's parse overlaps (the traceback
    module parses source lines too, to underline a failing expression) fails with SystemError "AST
    constructor recursion depth mismatch": parses here take turns, and one that fails so is done again."""
    source = path.read_bytes()
    for _ in range(2):
        try:
            with _PARSING:
                return ast.parse(source)
        except SystemError as exc:
            if "recursion depth mismatch" not in str(exc):
                raise
    with _PARSING:
        return ast.parse(source)


@cache
def _assignment_lines(path: Path) -> dict[str, int]:
    """Line of each top-level `name = ...` in a definition file (for messages about its value)."""
    try:
        tree = _syntax_tree(path)
    except (OSError, SyntaxError, ValueError, RecursionError):
        return {}
    lines: dict[str, int] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            if isinstance(target, ast.Name):
                lines[target.id] = node.lineno
    return lines


def _return_line(function, path: Path) -> int:
    """Line of the function's `return` statement when it has one, else of its `def`."""
    first = function.__code__.co_firstlineno
    try:
        tree = _syntax_tree(path)
    except (OSError, SyntaxError, ValueError, RecursionError):
        return first
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function.__name__ and \
                first in (node.lineno, *(d.lineno for d in node.decorator_list)):
            returns = [n.lineno for n in ast.walk(node) if isinstance(n, ast.Return)]
            return returns[0] if len(returns) == 1 else node.lineno
    return first


def _called(function, ctx: Context, path: Path) -> list[tuple[Any, int | None]]:
    """What `function(ctx)` returns or yields, each with the line that returned or yielded it."""
    result = function(ctx)
    if hasattr(result, "__next__") and hasattr(result, "gi_frame"):  # a generator: the line of each yield
        items = []
        while True:
            try:
                value = next(result)
            except StopIteration:
                return items
            frame = result.gi_frame
            items.append((value, frame.f_lineno if frame is not None else None))
    line = _return_line(function, path)
    if isinstance(result, (str, bytes, dict)) or not hasattr(result, "__iter__"):
        raise InputError(f"{function.__name__}(ctx) returned {type(result).__name__}, not a list of objects",
                         where=f"{shown_path(path)}:{line}", hint=f"return a list (or yield each object) from {function.__name__}(ctx)")
    return [(value, line) for value in result]


def _defines(module, kind: str) -> bool:
    """Whether the module defines something for `kind` in one of the forms _contributions reads."""
    return (callable(getattr(module, kind, None)) or hasattr(module, kind[:-1]) or hasattr(module, kind.upper())
            or (kind == "dashboards" and any(is_grafanalib_dashboard(v) for v in vars(module).values())))


def _contributions(module, kind: str, ctx: Context, path: Path) -> list[tuple[Any, int | None]]:
    """What the module defines for `kind`; a file that defines nothing for it is an error, not "no objects":
    a definition renamed by mistake would otherwise become a prune of what it used to publish."""
    singular = kind[:-1]
    if callable(getattr(module, kind, None)):
        return _called(getattr(module, kind), ctx, path)
    lines = _assignment_lines(path)
    if hasattr(module, singular):
        return [(getattr(module, singular), lines.get(singular))]
    if hasattr(module, kind.upper()):
        value = getattr(module, kind.upper())
        if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
            raise InputError(f"{kind.upper()} is a {type(value).__name__}, not a list", where=f"{shown_path(path)}:"
                             f"{lines.get(kind.upper(), 1)}", hint=f"write {kind.upper()} = [ ... ]")
        return [(item, lines.get(kind.upper())) for item in value]
    if kind == "dashboards":
        found = [(value, lines.get(name)) for name, value in vars(module).items() if is_grafanalib_dashboard(value)]
        if found:
            return found
    also = " or a grafanalib Dashboard" if kind == "dashboards" else ""
    raise InputError(f"the file defines no {kind} (no `{singular}`, `{kind}(ctx)` or `{kind.upper()}`{also})",
                     where=shown_path(path), hint=f"define them, or give the file a name starting with _ if it is a "
                                          f"helper module (gpudash reads no _*.py file as a definition)")


def load(kind: str, folders: tuple[Path, ...], ctx: Context) -> list[Loaded]:
    """Every object that the `*.py` files in `folders` define for `kind` ('dashboards' or 'alarms')."""
    seconds = _time_limit()
    loaded: list[Loaded] = []
    hint = f"create it, or fix definitions.{kind} in the settings"
    # a folder listed for both kinds holds files of either: one that defines only the other kind defines nothing here
    other = "alarms" if kind == "dashboards" else "dashboards"
    shared = {f.resolve() for f in ctx.settings.definition_dirs(other)} if ctx.settings is not None else set()
    for folder in folders:
        names = _listed(folder, kind, hint, ctx.settings)
        if not any(name.endswith(".py") and not name.startswith("_") for name in names):
            raise InputError(f"the {kind} folder holds no definition (no *.py file but _*.py helpers)",
                             where=str(folder), hint=f"a git submodule not checked out? Fill it, or remove it from "
                                                     f"definitions.{kind} in the settings")
        with _helpers(folder, names):
            loaded.extend(_load_folder(kind, other, folder, names, folder.resolve() in shared, ctx, seconds))
    return loaded


def places_named(settings: Settings) -> contextlib.AbstractContextManager[None]:
    """While `settings`' definitions load: the files of two of its definitions folders of one name are named apart
    (model.named_apart)."""
    kinds = ("dashboards", "alarms")
    return named_apart([folder for kind in kinds for folder in settings.definition_dirs(kind)],
                       [folder for kind in kinds if getattr(settings.definitions, kind) is not None
                        for folder in settings.definition_dirs(kind)], settings.base_dir)


def _listed(folder: Path, kind: str, hint: str, settings: Settings | None) -> list[str]:
    """The names in a definitions folder; one the settings name that cannot be listed is told at their key."""
    try:
        return list_folder(folder, kind, hint)
    except InputError as error:
        written = getattr(settings.definitions, kind) if settings is not None else None
        if written is None or error.where != str(folder) or folder.is_dir():  # a folder it may not read: its own fix
            raise
        path: list[Any] = ["definitions", kind]
        raw = settings.raw.get("definitions", {}).get(kind)
        if isinstance(raw, list):
            path.append(next((i for i, name in enumerate(raw) if settings.base_dir / str(name) == folder), 0))
        raise told_at_key(settings, path, error, f"create it, or fix definitions.{kind} (a folder, or a list of "
                                                 f"folders, from the settings file's folder, "
                                                 f"{printed.path(settings.base_dir)})") from None


def _load_folder(kind: str, other: str, folder: Path, names: list[str], shared: bool, ctx: Context,
                 seconds: float) -> list[Loaded]:
    """What the definitions in one folder define for `kind`."""
    loaded: list[Loaded] = []
    for file_name in names:
        path = folder / file_name
        if not file_name.endswith(".py") or file_name.startswith("_"):
            continue
        if path.is_symlink() and not path.exists():
            raise InputError("a link to a definition that does not exist", where=shown_path(path),
                             hint="fix or remove the link; its dashboards would silently be missing")
        if not path.is_file():
            continue
        stage = "the definition"
        try:
            # what a definition prints goes to stderr: stdout holds the command's output (JSON a machine reads)
            with _deadline(seconds), contextlib.redirect_stdout(sys.stderr):
                module = _execute(path, kind)
                if shared and _defines(module, other) and not _defines(module, kind):
                    continue
                stage = f"{kind}(ctx)" if callable(getattr(module, kind, None)) else stage
                found = _contributions(module, kind, ctx, path)
        except (InputError, KeyboardInterrupt):  # (Ctrl-C: gpudash's own handling, exit 130)
            raise
        # a user's definition may raise anything: an Exception, sys.exit, the time limit, and what derives from
        # BaseException alone (GeneratorExit, asyncio.CancelledError, pytest.skip's and pytest.fail's outcomes, a
        # class of its own), which escaped as a traceback and exit 1 ("differences")
        except BaseException as exc:
            raise _failure(path, exc, stage, seconds) from exc
        loaded.extend(Loaded(value, path, line) for value, line in found)
    return loaded


def is_grafanalib_dashboard(value: Any) -> bool:
    cls = type(value)
    return cls.__name__ == "Dashboard" and cls.__module__.startswith("grafanalib")
