"""Reading the user's input files: one place that turns every way a read can fail into a message.

A path may be missing, a folder, unreadable, endless (`/dev/zero`) or not UTF-8; each is an input
error naming the file (and the line, for bad text), never a crash.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .errors import InputError

# No settings file, counters CSV or build file comes anywhere near this; /dev/zero would be endless.
MAX_INPUT_BYTES = 64 * 1024 * 1024
# Pipes a shell hands over open (`--config <(...)`, `--csv /dev/stdin`): their writer is already there.
INHERITED_PIPES = ("/dev/stdin", "/dev/fd/", "/proc/self/fd/")


def read_bytes(path: Path, what: str, hint: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of `path`, or an InputError naming `what` the file was meant to be."""
    try:
        if path.is_dir():
            raise InputError(f"{what} is a folder, not a file", where=str(path), hint=hint)
        if (path.is_fifo() or path.is_socket()) and not str(path).startswith(INHERITED_PIPES):
            # a named pipe with no writer would be waited on forever
            raise InputError(f"{what} is a pipe or socket, not a file", where=str(path), hint=hint)
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise InputError(f"{what} not found", where=str(path), hint=hint) from None
    except OSError as exc:
        raise InputError(f"cannot read {what} ({exc.strerror or exc})", where=str(path),
                         hint="check the path and its permissions") from None
    if len(data) > limit:
        raise InputError(f"{what} is larger than {limit // (1024 * 1024)} MiB: this is not a {what}",
                         where=str(path), hint=hint)
    return data


def decode_utf8(data: bytes, path: Path | str, what: str, keep_bom: bool = False) -> str:
    """Text of `data`, or an InputError naming the line of the first byte that is not UTF-8. A leading byte order
    mark is dropped, unless `keep_bom` (a file whose other reader keeps it, judged by its parser)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"not UTF-8 text (byte 0x{data[exc.start]:02x})", where=f"{path}:{line}",
                         hint=f"save the {what} as UTF-8") from None
    return text if keep_bom else text.removeprefix("\ufeff")


def list_folder(folder: Path, what: str, hint: str) -> list[str]:
    """Entry names of `folder`; a missing or unreadable folder is an error, never an empty list."""
    try:
        with os.scandir(folder) as entries:
            return sorted(entry.name for entry in entries)
    except FileNotFoundError:
        raise InputError(f"{what} folder not found", where=str(folder), hint=hint) from None
    except NotADirectoryError:
        raise InputError(f"{what} folder is a file, not a folder", where=str(folder), hint=hint) from None
    except OSError as exc:
        raise InputError(f"cannot read the {what} folder ({exc.strerror or exc})", where=str(folder),
                         hint="check the folder's permissions: gpudash must be able to list and read it") from None


def read_json(path: Path, what: str, hint: str, unique_keys: bool = False):
    """The JSON document in `path`, or an InputError naming the file and the line that is not JSON; with
    `unique_keys`, or naming a key an object holds twice (json keeps the last silently, a value the user wrote over)."""
    import json

    text = decode_utf8(read_bytes(path, what, hint), path, what)
    try:
        return json.loads(text, object_pairs_hook=_unique_keys(path, what) if unique_keys else None)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} is not JSON ({exc.msg}, column {exc.colno})", where=f"{path}:{exc.lineno}",
                         hint=hint) from None


def _unique_keys(path: Path, what: str):
    """json's object_pairs_hook refusing an object that holds a key twice."""
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                raise InputError(f"{what}: key {key!r} appears twice in one object ({json_text(seen[key])} and "
                                 f"{json_text(value)})", where=str(path),
                                 hint="keep one of the two; JSON readers silently use the last")
            seen[key] = value
        return seen
    return pairs


def json_text(value: Any) -> str:
    """`value` as JSON writes it, cut short."""
    import json

    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def read_json_schema(path: Path, what: str, hint: str, validator_class):
    """A JSON schema from `path` checked against its metaschema, or an InputError saying why not."""
    document = read_json(path, what, hint)
    from jsonschema.exceptions import SchemaError

    try:
        validator_class.check_schema(document)
    except SchemaError as exc:
        at = "/".join(str(p) for p in exc.absolute_path) or "the top level"
        raise InputError(f"{what} is not a valid JSON schema (at {at}: {exc.message})", where=str(path),
                         hint=hint) from None
    unresolved = _unresolved_reference(document, validator_class)
    if unresolved is not None:
        at, ref = unresolved
        raise InputError(f"{what} is not a valid JSON schema (at {at}: $ref {ref!r} points at nothing it holds)",
                         where=str(path), hint=hint)
    return document


def _unresolved_reference(document: Any, validator_class) -> tuple[str, str] | None:
    """(where, $ref) of the first reference of the schema that does not resolve within it, or None. jsonschema
    follows a $ref only where an instance reaches it, and an unresolvable one raised then, while lint validated: an
    internal error, exit 4, for a file the user gave (a pointer to nowhere, another file's address)."""
    from referencing import Registry
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import specification_with

    if not isinstance(document, dict):
        return None
    specification = specification_with(validator_class.META_SCHEMA.get("$schema", ""))
    resolver = Registry().resolver_with_root(specification.create_resource(document))
    pending: list[tuple[Any, str]] = [(document, "")]
    while pending:
        node, at = pending.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                try:
                    resolver.lookup(ref)
                except Unresolvable:
                    return at or "the top level", ref
            pending.extend((value, f"{at}/{key}" if at else str(key)) for key, value in node.items())
        elif isinstance(node, list):
            pending.extend((value, f"{at}/{index}" if at else str(index)) for index, value in enumerate(node))
    return None


# libyaml's first release that stops deep nesting (an error past 1,000 levels): 0.2.5 composes until the C stack runs
# out, and the process dies of a segmentation fault (settings nested 50,000 deep). PyYAML's wheels bundle 0.2.6 from
# PyYAML 6.0.4; a PyYAML built from source links the system's libyaml, which may be older.
LIBYAML_NESTING_LIMITED = (0, 2, 6)


def yaml_begun(exc) -> str:
    """Where the YAML construct a parser error stopped inside began, for its message: ` (while parsing a flow
    sequence at line 3)`, or nothing. An unclosed `[`, `{` or quote is found lines later, at the next text that cannot
    continue it: the line it began on is where the mistake is."""
    begun, context = getattr(exc, "context_mark", None), getattr(exc, "context", None)
    return f" ({context} at line {begun.line + 1})" if context and begun is not None else ""


def yaml_loader():
    """PyYAML's safe loader: libyaml's (several times faster) where PyYAML has it and its libyaml stops deep nesting,
    else the pure-Python one (whose deep nesting ends in RecursionError)."""
    import yaml

    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None and tuple(yaml._yaml.get_version()) >= LIBYAML_NESTING_LIMITED:
        return fast
    return yaml.SafeLoader
