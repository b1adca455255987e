"""The compiled methods of gpudash's dataclasses, kept between runs of the command.

Python's `dataclasses` writes each class's `__init__`, `__repr__`, `__eq__`, `__hash__`, `__setattr__` and
`__delattr__` as text and compiles that text (`exec`) every time the class is made, at every start: about 0.7 ms a
class, and `gpudash generate` makes some 55 of them before it builds anything (a fifth of a small build's CPU). The
code compiled from a text is always the same, so, as the interpreter keeps each module's bytecode in `__pycache__`,
the code compiled from each such text of gpudash's own modules is kept beside it (`dataclass-code.<tag>.marshal`) and
the next run executes it instead of compiling the text again.

`install()` gives `dataclasses` an `exec` of its own (a module's global name comes before the builtin) that looks the
text up first; everything else it executes, and any text not from a gpudash module, goes to the builtin `exec` as
before. A text is its own key, so a changed class can only miss, never get another class's code; the file is read
only when it was written by this very interpreter version (`sys.hexversion` and bytecode's magic number), and one that
cannot be read is ignored. It is written (whole, replacing the previous one) when the run compiled a text it did not
hold, as bytecode is: not where `sys.dont_write_bytecode` is set (PYTHONDONTWRITEBYTECODE) or the folder cannot be
written.

The file holds what is in use, not every text ever compiled (a checkout's classes change, an upgrade leaves the old
version's texts, regex_code's patterns follow the command's settings): with each entry it keeps how many writes ago a
run last used it, and a write keeps only the entries used by one of the last _WRITES runs that wrote the file (and
only those the writing run used once more than _KEEP remain). A run that compiles nothing writes nothing, as before.
"""

from __future__ import annotations

import builtins
import marshal
import os
import sys

_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
_FILE = os.path.join(_FOLDER, f"dataclass-code.{sys.implementation.cache_tag}.marshal")
_KEEP = 2000  # entries kept at most (gpudash has a few hundred texts); past it, only those this run used are written
_WRITES = 8  # an entry no run writing the file used in this many writes is left out of the next
_OWN = ("generator", "generator.")


def _version() -> tuple[int, bytes]:
    """This interpreter's version and bytecode's magic number: marshalled code is read back only by the same."""
    try:
        from _frozen_importlib_external import MAGIC_NUMBER  # loaded at every start (importlib.util's is the same)
    except ImportError:  # pragma: no cover - another implementation
        MAGIC_NUMBER = b""
    return sys.hexversion, MAGIC_NUMBER


class _Cache:
    def __init__(self, path: str):
        self.path = path
        self.codes, self.ages = _read(path)
        self.used: set[str] = set()
        self.compiled = 0  # texts this run compiled (not held by the file)

    def exec(self, source, *args, **kwargs):
        """The builtin `exec`, with the code of a gpudash dataclass method's text taken from the cache."""
        if type(source) is str and args and isinstance(args[0], dict) and _own(args[0]):
            code = _code(self.codes.get(source))
            if code is None:
                # what `exec(source)` compiles in the dataclasses module, which imports no __future__ feature
                code = compile(source, "<string>", "exec", dont_inherit=True)
                self.codes[source] = marshal.dumps(code)
                self.compiled += 1
            self.used.add(source)
            source = code
        return builtins.exec(source, *args, **kwargs)

    def save(self) -> None:
        """Write the cache when this run compiled a text it did not hold (best effort, as bytecode)."""
        if not self.compiled or sys.dont_write_bytecode:
            return
        save(self.path, self.codes, self.used, self.ages)
        self.compiled = 0


def save(path: str, codes: dict, used: set, ages: dict) -> None:
    """Write `codes` (what a run compiled or read, by its key) to `path` whole, as bytecode is written: not where
    `sys.dont_write_bytecode` is set or the folder cannot be written. An entry this run `used` is written as used now;
    one it did not, with its age (`ages`: writes since a run last used it, as read) one more, and not at all past
    _WRITES; of more than _KEEP left, only those this run used."""
    if sys.dont_write_bytecode:
        return
    # copies taken at once (a thread left running at exit may still compile)
    codes, used = dict(codes), set(used)
    kept, kept_ages = {}, {}
    for key, code in codes.items():
        before = ages.get(key)
        age = 0 if key in used else before + 1 if type(before) is int else _WRITES + 1
        if age <= _WRITES:
            kept[key], kept_ages[key] = code, age
    if len(kept) > _KEEP:
        kept = {key: code for key, code in kept.items() if key in used}
        kept_ages = dict.fromkeys(kept, 0)
    partial = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(partial, "wb") as stream:
            stream.write(marshal.dumps((_version(), kept, kept_ages)))
        os.replace(partial, path)  # whole or not at all, also beside another process writing it
    except Exception:  # noqa: BLE001 - a cache that cannot be written is compiled again next time, as bytecode
        try:
            os.unlink(partial)
        except OSError:
            pass


def _own(module_globals: dict) -> bool:
    name = module_globals.get("__name__")
    return isinstance(name, str) and (name == _OWN[0] or name.startswith(_OWN[1]))


def _read(path: str) -> tuple[dict, dict]:
    """key -> its code, marshalled (each is loaded only when its class is made: a run makes a few of them); and key ->
    how many writes ago a run last used it."""
    try:
        with open(path, "rb") as stream:
            version, codes, ages = marshal.loads(stream.read())  # marshal.load reads a file a few bytes at a time
    except Exception:  # noqa: BLE001 - absent, unreadable, truncated, not marshal's, another shape: compiled as before
        return {}, {}
    if version != _version() or type(codes) is not dict or type(ages) is not dict:
        return {}, {}
    return codes, ages


def _code(data):
    """The code marshalled in `data`, or None where it is not one."""
    if type(data) is not bytes:
        return None
    try:
        code = marshal.loads(data)
    except Exception:  # noqa: BLE001 - a damaged entry is compiled again
        return None
    return code if type(code) is _CODE else None


_CODE = type(_code.__code__)


def install(path: str = _FILE) -> _Cache | None:
    """Give `dataclasses` the caching `exec`, once per process; the cache is written at exit. None when
    `dataclasses` already has an `exec` of its own (installed before, or by someone else)."""
    import atexit
    import dataclasses

    if "exec" in vars(dataclasses):
        return None
    cache = _Cache(path)
    dataclasses.exec = cache.exec
    atexit.register(cache.save)
    return cache
