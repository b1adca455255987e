"""Load dashboard and alarm definitions: Python files in the configured folders.

A file defines what it contributes in one of two ways:
  * a function `dashboards(ctx)` (or `alarms(ctx)`) returning an iterable, or
  * a module-level `dashboard` (or `alarm`) object, or a list `DASHBOARDS` (`ALARMS`).
Dashboard files may also hold plain grafanalib `Dashboard` objects.
`ctx` gives read access to the metric catalog and the settings.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .catalog import Catalog
from .errors import InputError
from .model import DefinitionError
from .settings import Levels, Settings


@dataclass(frozen=True)
class Context:
    """What a definition may read: the catalog and the settings."""

    catalog: Catalog
    settings: Settings

    def has(self, *metrics: str) -> bool:
        """True when every named field is collected (listed in the counters CSV)."""
        return all(name in self.catalog for name in metrics)

    def available(self, panels):
        """The panels whose fields are all collected: bundled dashboards adapt to any CSV."""
        return [panel for panel in panels
                if all(q.raw_promql or self.has(*q.metrics) for q in panel.queries)]

    def levels(self, name: str) -> tuple[float, float]:
        value: Levels = self.settings.levels(name)
        return (value.warning, value.critical)

    def threshold(self, name: str) -> float:
        return self.settings.threshold(name)


@dataclass(frozen=True)
class Loaded:
    """One object a definition file contributed, with the file it came from."""

    value: Any
    source: Path


def _where_in(path: Path, exc: BaseException) -> str:
    """file:line of the deepest traceback frame inside the definition file."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == path.resolve():
            line = frame.lineno
    if isinstance(exc, SyntaxError) and exc.lineno:
        line = exc.lineno
    return f"{path}:{line}" if line else str(path)


def _execute(path: Path, namespace: str):
    name = f"gpudash_definitions.{namespace}.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InputError("cannot load this file as Python", where=str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except DefinitionError as exc:
        raise InputError(str(exc), where=exc.where, hint="fix the definition") from exc
    except Exception as exc:  # a user's definition may raise anything
        raise InputError(f"the definition raised {type(exc).__name__}: {exc}", where=_where_in(path, exc),
                         hint="fix the definition, or run with --debug for the full traceback") from exc
    finally:
        sys.modules.pop(name, None)
    return module


def load(kind: str, folders: tuple[Path, ...], ctx: Context) -> list[Loaded]:
    """Every object that the `*.py` files in `folders` define for `kind` ('dashboards' or 'alarms')."""
    singular = kind[:-1]
    loaded: list[Loaded] = []
    for folder in folders:
        if not folder.is_dir():
            raise InputError(f"{kind} folder not found", where=str(folder),
                             hint=f"create it, or fix definitions.{kind} in the settings")
        for path in sorted(folder.glob("*.py")):
            if path.name.startswith("_"):
                continue
            module = _execute(path, kind)
            found: list[Any] = []
            try:
                if callable(getattr(module, kind, None)):
                    found = list(getattr(module, kind)(ctx))
                elif hasattr(module, singular):
                    found = [getattr(module, singular)]
                elif hasattr(module, kind.upper()):
                    found = list(getattr(module, kind.upper()))
                elif kind == "dashboards":
                    found = [v for v in vars(module).values() if is_grafanalib_dashboard(v)]
            except DefinitionError as exc:
                raise InputError(str(exc), where=exc.where, hint="fix the definition") from exc
            except Exception as exc:
                raise InputError(f"{kind}(ctx) raised {type(exc).__name__}: {exc}", where=_where_in(path, exc),
                                 hint="fix the definition, or run with --debug for the full traceback") from exc
            loaded.extend(Loaded(value, path) for value in found)
    return loaded


def is_grafanalib_dashboard(value: Any) -> bool:
    cls = type(value)
    return cls.__name__ == "Dashboard" and cls.__module__.startswith("grafanalib")
