"""The Grafana SDK's modules compiled with their annotations left as text, kept between runs of the command.

grafana-foundation-sdk's model modules annotate every attribute and every argument of every method
(`typing.Optional[common.DataSourceRef]`, `typing.Union[...]`, `typing.Literal[...]`): some 1,700 annotations in
`common` and `dashboard` alone, each evaluated to a `typing` object as its class or function is made, at every
`generate` that renders a Grafana dashboard: about a third of the CPU importing those two modules takes. Nothing
reads them (neither the SDK's code nor gpudash's: no `__annotations__`, no `get_type_hints`), so the command compiles
the SDK's modules as if each began with `from __future__ import annotations` (PEP 563: an annotation is kept as its
text and evaluated by no one): the same classes, functions and values, without the annotations' objects.

`install()` puts a finder on `sys.meta_path` just before the path finder (so any finder ahead of it is asked first, as
before) that gives the SDK's modules the path finder finds from their source a loader compiling them so; a module it
finds without its source (bytecode alone), in a zip or as an extension is imported as before. Their code is kept beside
gpudash's bytecode (`sdk-code.<tag>.marshal`, read, bounded and written by kept_code as dataclass_code's file is), each
module's with the length and hash of the source it was compiled from (the hash a hash-based .pyc holds, PEP 552), not
its size and modification time as the interpreter checks its own bytecode: an installer that keeps the times its archive
holds (reproducible builds give every file one fixed time; a store such as Nix's gives each the time 1) leaves an
upgraded module of the same size with its predecessor's time, and the cache, not beside the SDK, also serves an SDK of
another environment. A cache of another interpreter version, one that cannot be read or an entry of another shape is
compiled again too; a module's code is given the path of the source it is imported from. Where the code cannot be kept
(as bytecode: `sys.dont_write_bytecode`, or a folder this process cannot write), a module not held is imported as
before, from the SDK's own bytecode: compiling it from its source at every run would cost far more than the annotations.
Only the command installs the finder (generator/entry.py): importing gpudash's modules from a program of one's own
changes no import.
"""

from __future__ import annotations

import _imp
import _thread
import marshal
import os
import sys
from importlib.machinery import PathFinder, SourceFileLoader
from importlib.util import source_hash

from .kept_code import FOLDER, Kept, code as _loaded

_FILE = os.path.join(FOLDER, f"sdk-code.{sys.implementation.cache_tag}.marshal")
SDK = "grafana_foundation_sdk"
_ANNOTATIONS = 0x1000000  # __future__.annotations.compiler_flag (CO_FUTURE_ANNOTATIONS)


class _Finder(Kept):
    """The path finder's spec of each of the SDK's modules, with a loader that compiles its source as above."""

    def __init__(self, path: str) -> None:
        super().__init__(path, now=False)  # read at the first SDK module (most commands import none)
        self.writable: bool | None = None  # whether they can be written (keeps)
        self.lock = _thread.allocate_lock()  # two threads importing two modules at once read the file once

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(SDK + ".") or path is None:
            return None
        spec = PathFinder.find_spec(fullname, path, target)
        if spec is not None and type(spec.loader) is SourceFileLoader:
            spec.loader = _Loader(self, spec.loader.name, spec.loader.path)
        return spec

    def code(self, fullname: str, source_path: str, read):
        """The module's code: the one kept for its source (`read(source_path)`, its bytes), else compiled now from it
        where it can be kept; else None (the module's own bytecode)."""
        with self.lock:
            if self.codes is None:
                self.load()
        held = self.codes.get(fullname)
        if held is None and not self.keeps():
            return None  # compiled at every run, the SDK would cost more than its own bytecode: imported as before
        source = read(source_path)
        key = (len(source), source_hash(source))
        code = _loaded(held[1]) if type(held) is tuple and len(held) == 2 and held[0] == key else None
        if code is not None:
            _imp._fix_co_filename(code, source_path)  # as the interpreter does with a module's bytecode
            self.used.add(fullname)
            return code
        if not self.keeps():
            return None
        code = compile(source, source_path, "exec", flags=_ANNOTATIONS, dont_inherit=True)
        self.add(fullname, (key, marshal.dumps(code)))
        return code

    def keeps(self) -> bool:
        """Whether what this run compiles can be written for the next (as bytecode: not where
        `sys.dont_write_bytecode` is set, nor into a folder this process cannot write)."""
        if self.writable is None:
            folder = os.path.dirname(self.path)
            while folder and not os.path.isdir(folder):  # the first run makes the folder
                folder = os.path.dirname(folder)
            self.writable = not sys.dont_write_bytecode and os.access(folder or os.curdir, os.W_OK)
        return self.writable


class _Loader(SourceFileLoader):
    def __init__(self, finder: _Finder, fullname: str, path: str) -> None:
        super().__init__(fullname, path)
        self.finder = finder

    def get_code(self, fullname):
        source_path = self.get_filename(fullname)
        try:
            code = self.finder.code(fullname, source_path, self.get_data)
        except OSError:  # the source cannot be read: as the interpreter would (its bytecode, or its error)
            code = None
        return super().get_code(fullname) if code is None else code


def install(path: str = _FILE) -> _Finder | None:
    """Put the finder on `sys.meta_path` just before the path finder, once per process; its codes are written at exit.
    None where it is there already, where an SDK module was imported before (the SDK would then be of two
    compilations) or where no path finder is there to ask."""
    import atexit

    if SDK in sys.modules or any(isinstance(finder, _Finder) for finder in sys.meta_path):
        return None
    if PathFinder not in sys.meta_path:
        return None
    finder = _Finder(path)
    sys.meta_path.insert(sys.meta_path.index(PathFinder), finder)
    atexit.register(finder.save)
    return finder
