"""Answers worked out once per build: a table held for the objects one build asks about (its catalog, its settings).

A build asks the same questions again and again (a field per pod on every cluster's dashboard), each answer costly;
another build's objects replace the table whole. A caller keeps the table it was given, so two builds at once in
threads never read or write each other's answers (they only work some out again). Objects are compared by identity
and held while their table is, so an id is never reused for another object meanwhile.
"""

from __future__ import annotations

from typing import Any


class BuildMemo:
    def __init__(self) -> None:
        self._held: tuple[tuple[Any, ...], dict] | None = None

    def table(self, *owners: Any) -> dict:
        """The answers held for exactly these objects (a fresh table when they are not the last ones asked about)."""
        held = self._held
        if held is None or len(held[0]) != len(owners) or any(a is not b for a, b in zip(held[0], owners)):
            held = self._held = (owners, {})
        return held[1]
