"""Packages whose `__init__` runs only when a name it defines is read.

The Kubernetes client's package `__init__`s import every API class and every model (about a thousand
modules, most of `gpudash verify`'s time), and prometheus_client's its HTTP server, though gpudash reads
only a few of their modules. `defer("kubernetes", "kubernetes.client")` puts those packages in
sys.modules without running their `__init__`: a submodule is then imported as usual (its own code, the
package's untouched), and the first read of any other name runs the `__init__` in the same module object,
so a caller that wants the whole package (`from kubernetes.client import CoreV1Api`) still gets it. `names`
says where a name the `__init__` would define lives, so reading it imports that module alone.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
import threading
from types import ModuleType

_LOCK = threading.RLock()
_STATES: dict[str, dict[str, bool]] = {}  # package deferred here -> whether its __init__ has run


def clients_packages() -> None:
    """The clients' third-party packages without the `__init__`s of theirs that import what no client calls (12 to 18
    ms of CPU, 5 to 7% of the clients' imports): charset_normalizer's (requests reads its version when imported, and
    calls it only to guess a charset an answer does not name, which gpudash never asks for: `http.decode`), urllib3's
    HTTP/2 package's (its `__init__` imports importlib.metadata to check h2's version for `inject_into_urllib3`, which
    nothing calls; urllib3's connections read its `probe` module alone) and botocore's documentation package's (its
    service documenter; clients import its docstring helpers alone). urllib3 is imported whole here, with that package
    deferred: not by a thread later (see verify's `_BOTH_SIDES`). Any other name read runs the `__init__` (`defer`)."""
    with _LOCK, contextlib.suppress(ImportError):  # a package not installed (requests takes chardet too) is left out
        with contextlib.suppress(ImportError):
            defer("charset_normalizer", names={"charset_normalizer": {"__version__": "charset_normalizer.version"}})
        if "urllib3" not in sys.modules:
            with contextlib.suppress(ImportError):  # urllib3 1.x has no HTTP/2 package
                defer("urllib3", "urllib3.http2")
            import urllib3

            urllib3.__version__  # noqa: B018 - its __init__ run now, once, in this thread
        defer("botocore.docs")


def defer(*packages: str, names: dict[str, dict[str, str]] | None = None) -> None:
    """Each of `packages` (parents first) in sys.modules, its `__init__` not yet run; one already imported is left
    as it is. `names`: {package: {name: module defining it}} for names read without running the `__init__`."""
    with _LOCK:
        for package in packages:
            if package not in sys.modules:
                _deferred(package, (names or {}).get(package, {}))


@contextlib.contextmanager
def standing_in(package: str, name: str, stand_in):
    """While the block runs, `from package import name` gives `stand_in` when `package` is deferred and its
    `__init__` has not run (an import made in the block binds it for good); after the block, reading the name runs
    the `__init__` as reading any other name does, and gives the package's own."""
    module = sys.modules.get(package)
    pending = module is not None and _STATES.get(package, {}).get("ran") is False and name not in module.__dict__
    if pending:
        module.__dict__[name] = stand_in
    try:
        yield
    finally:
        if pending and module.__dict__.get(name) is stand_in:
            del module.__dict__[name]


def _deferred(name: str, names: dict[str, str]) -> ModuleType:
    parent, _, child = name.rpartition(".")
    if parent and parent not in sys.modules:
        importlib.import_module(parent)
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    module = importlib.util.module_from_spec(spec)
    lock, state = threading.RLock(), {"ran": False, "running": False}
    _STATES[name] = state

    def __getattr__(attr: str):
        if attr in names:
            return getattr(importlib.import_module(names[attr]), attr)
        if spec.submodule_search_locations is not None and not attr.startswith("__") \
                and importlib.util.find_spec(f"{name}.{attr}") is not None:
            return importlib.import_module(f"{name}.{attr}")
        with lock:
            # while the __init__ runs, a name it has not defined yet is missing: the import system then looks for
            # a submodule of that name, as it does for any package being imported
            if not state["ran"] and not state["running"]:
                state["running"] = True
                try:
                    spec.loader.exec_module(module)
                    state["ran"] = True
                    if module.__dict__.get("__getattr__") is __getattr__:  # a package like any other from now on
                        del module.__dict__["__getattr__"]
                finally:
                    state["running"] = False
        if attr in module.__dict__:
            return module.__dict__[attr]
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")

    module.__getattr__ = __getattr__
    sys.modules[name] = module
    if parent:
        setattr(sys.modules[parent], child, module)
    return module
