"""How a message prints a path (or another name gpudash did not choose): as it is, or, where it holds a character a
terminal does not show as itself (a newline, a carriage return, a tab, an escape sequence's ESC, a right-to-left
override), quoted with each such character escaped. A path with a newline printed raw splits one line of gpudash's
output in two (the rest reads as another message), a carriage return or ESC rewrites what the terminal shows, and an
override shows the name reversed: printed escaped, what is shown is what is there, on one line."""

from __future__ import annotations

from pathlib import PurePath


def path(value: str | PurePath) -> str:
    """`value` as a message prints it: as it is where every character prints as itself (a space does, so do letters
    of every script), else as Python writes it as a string (quoted, `\\n`, `\\x1b`, `\\u202e`)."""
    text = str(value)
    return text if text.isprintable() else repr(text)


def argument(value: str | PurePath) -> str:
    """`value` as a command line a message suggests passes it: shell-quoted where every character prints as itself,
    else as `path` prints it (a shell would take the quoted form with the raw character, which splits the line)."""
    import shlex

    text = str(value)
    return shlex.quote(text) if text.isprintable() else repr(text)


def text(value: str) -> str:
    """`value` (a line of gpudash's report quoting what a server holds: a query, a unit, a title a person saved) with
    each character that does not print as itself escaped in place (`\\x1b`, `\\n`, `\\u202e`) and the rest as it is:
    an escape sequence in a dashboard's query reached the terminal, a newline split the report's line."""
    return value if value.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in value)
