"""Compiled code kept between runs of the command beside gpudash's bytecode: one file per kind (dataclass_code's
methods, regex_code's patterns, sdk_code's modules), read, bounded and written here alike.

A file is read only when it was written by this very interpreter version (`sys.hexversion` and bytecode's magic
number) and its bytes are those written: it ends in the CRC-32 of the rest (`sealed`), for a byte changed inside an
entry still reads as marshal's, and can load as code of another meaning (a byte flipped in each of the dataclass
methods' entries made the command fail at every run, TypeError in __create_fn__: nothing wrote the file again). One
that cannot be read, is not as written or of another shape is ignored (everything is compiled as before). It is written
(whole, replacing the previous one) when the run compiled an entry it did not hold, as bytecode is: not where
`sys.dont_write_bytecode` is set (PYTHONDONTWRITEBYTECODE) or the folder cannot be written.

The file holds what is in use, not every entry ever compiled (a checkout's classes change, an upgrade leaves the old
version's texts, regex_code's patterns follow the command's settings): with each entry it keeps how many writes ago a
run last used it, and a write keeps only the entries used by one of the last _WRITES runs that wrote the file (and
only those the writing run used once more than _KEEP remain). A run that compiles nothing writes nothing.
"""

from __future__ import annotations

import marshal
import os
import sys
import zlib

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
_KEEP = 2000  # entries kept at most (gpudash has a few hundred texts); past it, only those this run used are written
_WRITES = 8  # an entry no run writing the file used in this many writes is left out of the next


class Kept:
    """One file's entries (key -> what a run compiled, as its kind keeps it) for this run: `codes` (read now, or None
    until `load()` when `now` is false), which of them the run `used`, and how many it `compiled` (did not hold)."""

    def __init__(self, path: str, now: bool = True) -> None:
        self.path = path
        self.codes, self.ages = read(path) if now else (None, {})
        self.used: set = set()
        self.compiled = 0

    def load(self) -> None:
        self.codes, self.ages = read(self.path)

    def add(self, key, value) -> None:
        """An entry this run compiled: written at exit."""
        self.codes[key] = value
        self.used.add(key)
        self.compiled += 1

    def save(self) -> None:
        """Write the file when this run compiled an entry it did not hold (best effort, as bytecode)."""
        if self.compiled and self.codes is not None and not sys.dont_write_bytecode:
            write(self.path, self.codes, self.used, self.ages)
            self.compiled = 0


def _version() -> tuple[int, bytes]:
    """This interpreter's version and bytecode's magic number: marshalled code is read back only by the same."""
    try:
        from _frozen_importlib_external import MAGIC_NUMBER  # loaded at every start (importlib.util's is the same)
    except ImportError:  # pragma: no cover - another implementation
        MAGIC_NUMBER = b""
    return sys.hexversion, MAGIC_NUMBER


def write(path: str, codes: dict, used: set, ages: dict) -> None:
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
            stream.write(sealed(marshal.dumps((_version(), kept, kept_ages))))
        os.replace(partial, path)  # whole or not at all, also beside another process writing it
    except Exception:  # noqa: BLE001 - a cache that cannot be written is compiled again next time, as bytecode
        try:
            os.unlink(partial)
        except OSError:
            pass


_SEAL = 4  # bytes of the CRC-32 that ends a file


def _seal(body) -> bytes:
    return zlib.crc32(body).to_bytes(_SEAL, "little")


def sealed(body: bytes) -> bytes:
    """A file's bytes: `body` (marshal's) and the CRC-32 of it, which `read` checks."""
    return body + _seal(body)


def read(path: str) -> tuple[dict, dict]:
    """key -> its entry (code is kept marshalled, loaded only when used: a run uses a few); and key -> how many writes
    ago a run last used it."""
    try:
        with open(path, "rb") as stream:
            data = stream.read()  # marshal.load reads a file a few bytes at a time
        if data[-_SEAL:] != _seal(memoryview(data)[:-_SEAL]):
            return {}, {}
        version, codes, ages = marshal.loads(data)  # (it stops at the end of what it reads: the seal is left)
    except Exception:  # noqa: BLE001 - absent, unreadable, truncated, not marshal's, another shape: compiled as before
        return {}, {}
    if version != _version() or type(codes) is not dict or type(ages) is not dict:
        return {}, {}
    return codes, ages


def code(data):
    """The code marshalled in `data`, or None where it is not one (a damaged entry is compiled again)."""
    if type(data) is not bytes:
        return None
    try:
        loaded = marshal.loads(data)
    except Exception:  # noqa: BLE001 - a damaged entry is compiled again
        return None
    return loaded if type(loaded) is _CODE else None


_CODE = type(code.__code__)
