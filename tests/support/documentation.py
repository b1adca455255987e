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
