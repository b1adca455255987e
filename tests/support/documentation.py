"""The user's documentation: README.md and the files of docs/ it links to, read by the tests that hold the text to
what the product does."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"


def files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def text(name: str = "") -> str:
    """One file (`README.md`, or a docs/ file by its name: `commands.md`), or every file of the documentation."""
    if name:
        return (README if name == "README.md" else DOCS / name).read_text(encoding="utf-8")
    return "\n".join(path.read_text(encoding="utf-8") for path in files())


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(path: Path) -> list[str]:
    """The file's headings, outside fenced code blocks (where `#` starts a comment)."""
    found, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6} (.+)", line)):
            found.append(match.group(1))
    return found


# A command line: `gpudash` (a path to it, variables set before it, options before the command) and the word the
# command is, at a line's start or after a shell's `&&`, `||`, `;`, `$(` or a prompt.
COMMAND_LINE = re.compile(r"(?:^|&&|\|\||;|\$\(|\$ )\s*(?:[A-Z_]+=\S+\s+)*(?:\S*/)?gpudash(?:\s+--?[a-z][\w-]*)*"
                          r"\s+([a-z][\w-]*)(?=\s|$)")
# Code spans listed together in prose (`plan`, `push` and `apply`; `gpudash generate` and `apply`)
NAME_LIST = re.compile(r"`(?:gpudash )?[a-z][a-z-]*`(?:(?:, | and | or |, and |, or )`(?:gpudash )?[a-z-][a-z-]*`)+")


def commands_named(text: str, commands: set[str]) -> list[tuple[str, str]]:
    """(what names it, the word) of each command `text` names that is not one of `commands`: the word of each command
    line in a fenced block or a code span, and in prose each code span listed together with a command's (a list that
    names one command names commands; an option listed with them is not one)."""
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M)
    lines = [line for block in fenced for line in block.splitlines()] + re.findall(r"`([^`\n]+)`", text)
    found = [(line, match.group(1)) for line in lines for match in COMMAND_LINE.finditer(line)
             if match.group(1) not in commands]
    for listed in NAME_LIST.finditer(text):
        names = [name.removeprefix("gpudash ") for name in re.findall(r"`([^`]+)`", listed.group(0))]
        if any(name in commands for name in names):
            found += [(listed.group(0), name) for name in names if name not in commands and not name.startswith("-")]
    return found
