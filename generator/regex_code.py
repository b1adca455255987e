"""The compiled regular expressions of a gpudash command, kept between runs.

Each pattern a process compiles is parsed and compiled to the regular expression engine's code by `re`'s pure-Python
compiler, at every start: the command compiles some 90 patterns (gpudash's own, PyYAML's, click's) before it writes
anything, about 25 ms of CPU of a small `generate`'s 190 ms, a fifth of that for PyYAML's pattern of the characters
it cannot print. That code depends on the pattern, its flags and the interpreter alone, so, as the interpreter keeps
each module's bytecode in `__pycache__`, the code of each pattern compiled is kept beside it
(`regex-code.<tag>.marshal`) and the next run gives it to the engine (`_sre.compile`, which checks it) instead of
compiling the pattern again.

`install()` gives `re` a compile of its own (re.compile and every function taking a pattern text call
`re._compiler.compile` for a pattern not in the process's cache). A pattern is its own key, with its flags, so a
changed pattern can only miss; what cannot be trusted (an entry of another shape, code the engine refuses, a pattern
with the DEBUG or LOCALE flag, or a compiled pattern given again) goes to `re`'s compiler as before. The file is read,
bounded and written by kept_code, as dataclass_code's is: only when written by this very interpreter version, whole,
at exit, when the run compiled a pattern it did not hold, not where `sys.dont_write_bytecode` is set; holding only the
patterns runs that wrote it lately used (a pattern made from a setting, such as the build folder's name, leaves once
no run uses it).
"""

from __future__ import annotations

import os
import sys

from .kept_code import FOLDER, Kept

_FILE = os.path.join(FOLDER, f"regex-code.{sys.implementation.cache_tag}.marshal")


class _Cache(Kept):
    def __init__(self, path: str, compiler) -> None:
        import _sre
        from re import _parser

        super().__init__(path)
        self.compiler, self.real = compiler, compiler.compile
        self.engine, self.parser = _sre, _parser
        self.untrusted = compiler.SRE_FLAG_DEBUG | compiler.SRE_FLAG_LOCALE

    def compile(self, pattern, flags=0):
        """`re._compiler.compile`, with the code of a pattern text compiled before taken from the cache."""
        if type(pattern) not in (str, bytes) or type(flags) is not int or flags & self.untrusted:
            return self.real(pattern, flags)
        key = (pattern, flags)
        held = self.codes.get(key)
        if _shaped(held):
            try:
                compiled = self.engine.compile(pattern, *held)
            except Exception:  # noqa: BLE001 - code the engine refuses (damaged): compiled again
                compiled = None
            if compiled is not None:
                self.used.add(key)
                return compiled
        # what re._compiler.compile does with a pattern text, its arguments to the engine kept
        parsed = self.parser.parse(pattern, flags)
        code = self.compiler._code(parsed, flags)
        groupindex = parsed.state.groupdict
        indexgroup = [None] * parsed.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        compiled = self.engine.compile(pattern, flags | parsed.state.flags, code, parsed.state.groups - 1, groupindex,
                                       tuple(indexgroup))
        # kept as plain values (the compiler's opcodes are named int constants, which marshal does not write)
        arguments = (int(flags | parsed.state.flags), [int(word) for word in code], int(parsed.state.groups - 1),
                     dict(groupindex), tuple(indexgroup))
        self.add(key, arguments)
        return compiled


def _shaped(held) -> bool:
    """An entry as `_Cache.compile` writes them: (flags, code, groups, group index, index group)."""
    return (type(held) is tuple and len(held) == 5 and type(held[0]) is int and type(held[1]) is list
            and type(held[2]) is int and type(held[3]) is dict and type(held[4]) is tuple)


def install(path: str = _FILE) -> _Cache | None:
    """Give `re` the caching compile, once per process; the cache is written at exit. None when `re`'s compiler is not
    the one this was written for (another version's) or has been replaced already."""
    import atexit
    from re import _compiler

    real = _compiler.compile
    if getattr(real, "__module__", None) != _compiler.__name__ or not hasattr(_compiler, "_code"):
        return None
    cache = _Cache(path, _compiler)
    _compiler.compile = cache.compile
    atexit.register(cache.save)
    return cache
