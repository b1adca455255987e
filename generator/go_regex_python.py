"""A Go regexp (RE2 syntax, as the CloudWatch agent and Prometheus compile it) written as a Python `re` pattern that
matches exactly the texts Go's matches, at the same places, with the same groups.

Python's `re` reads much of Go's syntax otherwise or not at all: `[[:digit:]]` is a class of '[', ':', 'd', 'i', 'g',
't' to it (with a FutureWarning), `\\z`, `\\pN`, `\\Q...\\E` and `(?U)` it refuses; `x{,2}` is a repeat to it and text to
Go; `$` also matches before a final newline (Go's only at the end of the text, without (?m)); its \\d, \\w, \\s and \\b
are Unicode (Go's are ASCII); its (?i) folds `i` with `İ` and `ı` (Go's does not). So nothing of Go's text is given to
`re` as is: it is read as Go reads it (go_regex.go_syntax's tokens, which also say what Go refuses) and written with
no flags: a class as the explicit code point ranges Go's parser makes (folded under (?i) as Go folds, then negated),
`.` as a class, `^`/`$`/`\\A`/`\\z` as the assertions of their meaning, \\b and \\B with ASCII lookarounds, and the
greediness (?U) gives written on each repeat.

What cannot be written exactly is refused (Unreadable): a Unicode script class (`\\p{Greek}`: Python holds no script
table). The general categories (`\\pL`, `\\p{Nd}`) are read from Python's unicodedata, and the case orbits (?i)
folds with from its case mappings (Unicode 14; Go 1.19 has 13, Go 1.21 on 15: they differ only on the characters
those versions add).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from functools import lru_cache

from .go_regex import GO_CATEGORIES, PERL_CLASSES, POSIX_CLASSES, go_flags, go_syntax, regex_problem

MAX_RUNE = 0x10FFFF
Ranges = tuple[tuple[int, int], ...]  # sorted, apart, inclusive code point ranges


class Unreadable(re.error):
    """The regex cannot be matched as Go matches it: Go refuses it (`refused`: the message is Go's), or Python cannot
    be told its meaning exactly (the message says what). An re.error: where lint meets one, it reads the regex as one
    that does not compile (PR005 says which it is)."""

    def __init__(self, message: str, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


def _normal(pairs) -> Ranges:
    out: list[list[int]] = []
    for low, high in sorted(pairs):
        if out and low <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], high)
        else:
            out.append([low, high])
    return tuple((low, high) for low, high in out)


def _negated(ranges: Ranges) -> Ranges:
    out, start = [], 0
    for low, high in ranges:
        if low > start:
            out.append((start, low - 1))
        start = high + 1
    if start <= MAX_RUNE:
        out.append((start, MAX_RUNE))
    return tuple(out)


def _ranges(*pairs: tuple[int, int]) -> Ranges:
    return _normal(pairs)


def _chars(text: str) -> Ranges:
    return _normal((ord(c), ord(c)) for c in text)


_KELVIN, _LONG_S = 0x212A, 0x17F  # the two letters outside ASCII Go folds with ASCII ones (k, s)
_EMPTY_WIDTH = ("\\A", "\\Z", "(?m:", "(?<", "(?=", "(?!")  # assertions written: a piece may match empty with them


def go_compiled(regex: str, groups: bool = False) -> re.Pattern:
    """`regex` (Go's syntax) as a compiled Python pattern that matches as Go's regexp does: its search is
    regexp.MatchString (the agent's unanchored matchers and selectors), its fullmatch Prometheus' anchored
    `^(?:regex)$` (relabel rules). Raises Unreadable where Go refuses the regex or Python cannot be told it exactly;
    with `groups` (a replacement reads them), also where its groups would hold otherwise than Go's: a group inside a
    loop (`*`, `+`, `{n,}`) that can match empty, as `(a*)*`, after which Python's re records one more, empty,
    pass of the loop and Go does not (on "aa" Go's group is "aa", re's "")."""
    pattern, loose, problem = _python(regex)
    if problem is not None:
        raise Unreadable(*problem)  # (a new one each time: one raised again would keep every traceback)
    if groups and loose:
        raise Unreadable(f"its groups: {loose}")
    return pattern


def go_readable(regex: str, groups: bool = False) -> re.Pattern | None:
    """go_compiled's pattern, None where it raises (a regex that, read by lint, matches nothing)."""
    try:
        return go_compiled(regex, groups)
    except Unreadable:
        return None


def unreadable(regex: str, groups: bool = False) -> Unreadable | None:
    """Why `regex` cannot be matched as Go matches it (None: it can)."""
    try:
        go_compiled(regex, groups)
    except Unreadable as exc:
        return exc
    return None


@lru_cache(maxsize=4096)
def _python(regex: str) -> tuple[re.Pattern | None, str, tuple[str, bool] | None]:
    """(the pattern, why its groups are not Go's or "", (why it is unreadable, whether Go refuses it) or None)."""
    problem = regex_problem(regex, anchored=False)
    if problem is not None:
        return None, "", (problem, True)
    reader = _Reader(regex)
    try:
        text = reader.read()
        return re.compile(text), reader.loose, None
    except Unreadable as exc:
        return None, "", (str(exc), exc.refused)
    except RecursionError:  # Go takes groups nested up to 1,000 deep; this reading and re's recurse per level
        return None, "", ("its groups nest deeper than Python's re reads", False)
    except re.error as exc:  # (not met: each piece is written in the syntax re takes)
        return None, "", (f"Python's re refuses its translation ({exc})", False)


class _Reader:
    """Writes Go's tokens (go_regex.go_syntax, of a regex Go takes) in Python's syntax, flags resolved on each
    piece."""

    def __init__(self, regex: str) -> None:
        self.regex = regex
        self.tokens, self.at = go_syntax(regex)[0], 0
        self.names: set[str] = set()
        self.loose = ""  # why its groups are not Go's (a group in a loop that can match empty), if they are not

    def read(self) -> str:
        return self._alternation(frozenset())

    def _alternation(self, flags: frozenset) -> str:
        """Branches up to the group's close (left unread) or the end. `flags` (i, m, s, U) as the group opens; a group
        of flags alone changes them for the rest of the group, across `|` too."""
        branches, pieces = [], []
        flags = set(flags)
        tokens = self.tokens
        while self.at < len(tokens) and tokens[self.at][0] != "close":
            token = tokens[self.at]
            if token[0] == "bar":
                branches.append("".join(pieces))
                pieces = []
                self.at += 1
            elif token[0] == "repeat":
                pieces[-1] = self._repeat(pieces[-1], flags, token)
                self.at += 1
            else:
                pieces += self._atoms(flags)
        branches.append("".join(pieces))
        return "|".join(branches)

    def _repeat(self, piece: str, flags: set, token: tuple) -> str:
        _, op, lazy, end, unbounded = token
        if lazy != ("U" in flags):  # (?U) swaps greedy and lazy
            op += "?"
        if unbounded:
            compiled = re.compile(piece)
            if compiled.groups and (compiled.fullmatch("") or any(a in piece for a in _EMPTY_WIDTH)):
                self.loose = (f"a group repeated without bound that can match empty (at {self.regex[:end]!r}): Go "
                              f"keeps the last pass that matched something, Python's re one more, empty")
        return f"(?:{piece}){op}"

    def _atoms(self, flags: set) -> list[str]:
        """The pieces of the token at `at`, each of which a repeat may follow, written for Python: one, or none (a
        group of flags alone, an empty \\Q\\E), or a character each of \\Q...\\E's text."""
        token = self.tokens[self.at]
        kind = token[0]
        if kind == "open":
            return [self._group(flags)]
        self.at += 1
        if kind == "lit":
            return [self._literal(token[1], flags)]
        if kind == "class":
            return [_class(self._class(token, flags))]
        if kind in ("perl", "unicode"):
            return [_class(self._class_escape(token, flags))]
        if kind == "meta":
            if token[1] == ".":
                return [_class(_ranges((0, MAX_RUNE)) if "s" in flags else _negated(_chars("\n")))]
            if token[1] == "^":
                return ["(?m:^)" if "m" in flags else r"\A"]
            return ["(?m:$)" if "m" in flags else r"\Z"]
        if kind == "assert":
            return [_ASSERTIONS[token[1]]]
        if kind == "quote":
            return [self._literal(ord(c), flags) for c in token[1]]
        new = _flags(token[1], flags)  # flags for the rest of the enclosing group
        flags.clear()
        flags.update(new)
        return []

    def _literal(self, code: int, flags: set) -> str:
        orbit = _orbits().get(code) if "i" in flags else None
        return _class(_chars("".join(map(chr, orbit)))) if orbit else re.escape(chr(code))

    def _group(self, flags: set) -> str:
        _, group_flags, name = self.tokens[self.at]
        self.at += 1
        opening, inner = "(", flags
        if group_flags is not None:
            opening, inner = "(?:", _flags(group_flags, flags)
        elif name is not None and name.isidentifier() and name not in self.names:
            self.names.add(name)
            opening = f"(?P<{name}>"
        text = self._alternation(frozenset(inner))
        self.at += 1  # the close
        return f"{opening}{text})"

    @staticmethod
    def _class_escape(token: tuple, flags: set) -> Ranges:
        """A Perl (\\d) or Unicode (\\pL) class, folded under (?i) and negated as Go does."""
        if token[0] == "perl":
            ranges, negated = PERL_CLASSES[token[1].lower()], token[1].isupper()
        else:
            ranges, negated = _unicode_class(token[1]), token[2]
        if "i" in flags:
            ranges = _folded(ranges)
        return _negated(ranges) if negated else ranges

    def _class(self, token: tuple, flags: set) -> Ranges:
        """A bracketed class as Go's parseClass makes it: each element (POSIX, Perl and Unicode classes, ranges)
        folded under (?i), then the class negated."""
        parts: list[tuple[int, int]] = []
        for item in token[2]:
            if item[0] == "posix":
                ranges = POSIX_CLASSES[item[1]]
                if "i" in flags:
                    ranges = _folded(ranges)
                parts += _negated(ranges) if item[2] else ranges
            elif item[0] == "range":
                parts += _folded(_ranges(item[1:])) if "i" in flags else [item[1:]]
            else:
                parts += self._class_escape(item, flags)
        ranges = _normal(parts)
        return _negated(ranges) if token[1] else ranges


def _flags(text: str, flags: set) -> set:
    """The flags after `(?text...` (go_flags)."""
    setting, cleared = go_flags(text)
    return (flags | setting) - cleared


def _class(ranges: Ranges) -> str:
    """Ranges as a Python class (one that matches nothing where there are none, as Go's empty class). One reaching
    the last code point is written as the negation of the rest: re compiles a class of the few characters a
    negated one leaves out as fast as those characters, the same class written out in ranges up to 0x10FFFF some 2 ms."""
    if not ranges:
        return "(?!)"
    if ranges[-1][1] == MAX_RUNE:
        rest = _negated(ranges)
        return f"[^{_ranges_text(rest)}]" if rest else "(?s:.)"
    return f"[{_ranges_text(ranges)}]"


def _ranges_text(ranges: Ranges) -> str:
    """The ranges inside a class, each character as itself (re reads a character faster than an escape), those the
    class syntax uses escaped."""
    return "".join(_in_class(low) + (f"-{_in_class(high)}" if high > low else "") for low, high in ranges)


def _in_class(code: int) -> str:
    return "\\" + chr(code) if chr(code) in "\\]^-[" else chr(code)


_WORD_CLASS = _class(PERL_CLASSES["w"])
_ASSERTIONS = {  # Go's empty-width assertions (\b and \B on ASCII word characters)
    "A": r"\A", "z": r"\Z",
    "b": f"(?:(?<={_WORD_CLASS})(?!{_WORD_CLASS})|(?<!{_WORD_CLASS})(?={_WORD_CLASS}))",
    "B": f"(?:(?<={_WORD_CLASS})(?={_WORD_CLASS})|(?<!{_WORD_CLASS})(?!{_WORD_CLASS}))",
}


def _folded(ranges: Ranges) -> Ranges:
    """The ranges with every character of Go's case orbit of each (regexp/syntax appendFoldedRange)."""
    orbits, codes = _orbits(), _orbit_codes()
    extra = [(other, other) for low, high in ranges
             for code in codes[bisect_left(codes, low):bisect_right(codes, high)] for other in orbits[code]]
    return _normal([*ranges, *extra]) if extra else ranges


@lru_cache(maxsize=1)
def _orbit_codes() -> list[int]:
    return sorted(_orbits())


@lru_cache(maxsize=1)
def _orbits() -> dict[int, frozenset[int]]:
    """Go's case orbits (unicode.SimpleFold): each character that has another case, with the others of its orbit.
    Read from Python's one-character case mappings (lower, upper, title, casefold) joined into orbits, as Go's come
    from Unicode's simple case folding: checked against Go 1.19's regexp (promtool) for each of the 2,831 characters,
    equal but for the letters of Unicode 14 (Go 1.19 has 13) and one link: Go joins no letter outside ASCII to an
    ASCII one but K (the Kelvin sign, with k) and ſ (with s), so ı is not I's. No character past plane 1 has a case."""
    links: dict[int, set[int]] = {}
    for code in range(0x41, 0x20000):
        char = chr(code)
        for mapped in {char.lower(), char.upper(), char.title(), char.casefold()}:
            other = ord(mapped) if len(mapped) == 1 else code
            if other != code and ((code < 0x80) == (other < 0x80) or code in (_KELVIN, _LONG_S)):
                links.setdefault(code, set()).add(other)
                links.setdefault(other, set()).add(code)
    orbits: dict[int, frozenset[int]] = {}
    for code in sorted(links):
        if code not in orbits:
            orbit, todo = {code}, [code]
            while todo:
                for other in links[todo.pop()] - orbit:
                    orbit.add(other)
                    todo.append(other)
            for member in orbit:
                orbits[member] = frozenset(orbit)
    return orbits


def _unicode_class(name: str) -> Ranges:
    if name == "Any":
        return _ranges((0, MAX_RUNE))
    if name not in GO_CATEGORIES:
        raise Unreadable(f"the Unicode script class \\p{{{name}}}: Python's re and unicodedata hold no script table")
    return _category(name)


@lru_cache(maxsize=64)
def _category(name: str) -> Ranges:
    """The code points of a general category (one letter: its two-letter ones; Go's C has no Cn, unassigned)."""
    table = _categories()
    return _normal(pair for category, ranges in table.items() if category == name or len(name) == 1 and
                   category[0] == name and category != "Cn" for pair in ranges)


@lru_cache(maxsize=1)
def _categories() -> dict[str, list[tuple[int, int]]]:
    table: dict[str, list[tuple[int, int]]] = {}
    start, current = 0, unicodedata.category("\0")
    for code in range(1, MAX_RUNE + 2):
        category = unicodedata.category(chr(code)) if code <= MAX_RUNE else None
        if category != current:
            table.setdefault(current, []).append((start, code - 1))
            start, current = code, category
    return table
