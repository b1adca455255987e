"""The compiled methods of gpudash's dataclasses, kept between runs of the command.

Python's `dataclasses` writes each class's `__init__`, `__repr__`, `__eq__`, `__hash__`, `__setattr__` and
`__delattr__` as text and compiles that text (`exec`) every time the class is made, at every start: about 0.7 ms a
class, and `gpudash generate` makes some 55 of them before it builds anything (a fifth of a small build's CPU). The
code compiled from a text is always the same, so, as the interpreter keeps each module's bytecode in `__pycache__`,
the code compiled from each such text of gpudash's own modules is kept beside it (`dataclass-code.<tag>.marshal`) and
the next run executes it instead of compiling the text again.

`install()` gives `dataclasses` an `exec` of its own (a module's global name comes before the builtin) that looks the
text up first; everything else it executes, and any text not from a gpudash module, goes to the builtin `exec` as
before. A text is its own key, so a changed class can only miss, never get another class's code; the file is read,
bounded and written as kept_code reads, bounds and writes each such file (only when written by this very interpreter
version, whole, at exit, when the run compiled a text it did not hold, holding what runs use lately).
"""

from __future__ import annotations

import builtins
import marshal
import os
import sys

from .kept_code import FOLDER, Kept, code

_FILE = os.path.join(FOLDER, f"dataclass-code.{sys.implementation.cache_tag}.marshal")
_OWN = ("generator", "generator.")


class _Cache(Kept):
    def exec(self, source, *args, **kwargs):
        """The builtin `exec`, with the code of a gpudash dataclass method's text taken from the cache."""
        if type(source) is str and args and isinstance(args[0], dict) and _own(args[0]):
            compiled = code(self.codes.get(source))
            if compiled is None:
                # what `exec(source)` compiles in the dataclasses module, which imports no __future__ feature
                compiled = compile(source, "<string>", "exec", dont_inherit=True)
                self.add(source, marshal.dumps(compiled))
            else:
                self.used.add(source)
            source = compiled
        return builtins.exec(source, *args, **kwargs)


def _own(module_globals: dict) -> bool:
    name = module_globals.get("__name__")
    return isinstance(name, str) and (name == _OWN[0] or name.startswith(_OWN[1]))


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
