"""Go's regexp syntax (RE2, as Prometheus compiles a matcher's or relabel rule's regex) read as Go reads it: why Go
refuses a regex (regex_problem), and the same regex written for Rust's regex crate, which promql_parser compiles
(re2_judged). Go and Rust differ in escapes, classes, flags, repeat counts and \\Q...\\E; what Go's reading leaves
to judge, Rust's compiler judges."""

from __future__ import annotations

import re
from functools import lru_cache

from ..promql_text import double_quoted

_RE2_FLAGS = set("imsU-")
_REPEAT = re.compile(r"\{(0|[1-9]\d*)(,(0|[1-9]\d*)?)?\}")  # Go reads `{01}` (a leading zero) as plain text
REPEAT_LIMIT = 1000  # Go's regexp: the most copies of one thing a repeat, or repeats nested, may ask for
# Go's escapes outside a class that are not one character: assertions, Perl classes (\p, \P and \Q apart)
_GO_ASSERTIONS = set("AbBz")
_GO_PERL_CLASSES = set("dDsSwW")
_GO_POSIX_CLASSES = {"alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space",
                     "upper", "word", "xdigit"}
# A group's opening other than `(`: flags (for the rest of the group, `)`, or for its own, `:`), or a name
_GROUP_OPENING = re.compile(r"\(\?(?:([^:)<]*)([:)])|P?<[^>]*>)")
_GO_C_ESCAPES = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
_UNICODE_CLASS = re.compile(r"\\[pP](?:\{(\^?)([^}]*)\}|(.))", re.DOTALL)


def regex_problem(regex: str, anchored: bool = True) -> str | None:
    """Why Go's regexp (RE2 syntax, as Prometheus compiles a matcher or relabel regex) refuses `regex`, or None.
    Prometheus compiles a matcher's or relabel rule's regex `anchored`, as `^(?:regex)$`: an unterminated \\Q
    quotes the `)$` and the regex does not compile (where a regex is compiled as written, as the agent's metric
    declarations are, it is judged as refused all the same: gpudash writes no unterminated \\Q there). The
    syntax is read here as Go reads it (escapes, classes, flags, repeat counts, \\Q...\\E) and written for Rust's regex
    crate, whose compiler judges the rest."""
    problem = re2_judged(regex)[0]
    if problem is None and anchored and _unterminated_quote(regex):
        return f"missing closing ): `^(?:{regex})$` (an unterminated \\Q quotes the anchoring's close)"
    return problem


def _unterminated_quote(regex: str) -> bool:
    """Whether a \\Q outside a class is left open (no \\E after it)."""
    at = 0
    while at < len(regex):
        if regex.startswith("\\Q", at):
            end = regex.find("\\E", at + 2)
            if end < 0:
                return True
            at = end + 2
        elif regex[at] == "\\":
            at += 2
        elif regex[at] == "[":
            try:
                at = _go_class(regex, at)[1]
            except _Refused:
                return False  # refused whatever follows
        else:
            at += 1
    return False


class _Refused(ValueError):
    """Go's regexp refuses the regex (the message says why)."""


def _go_escape(regex: str, at: int) -> tuple[int, int]:
    """The character (code point) an escape at `at` stands for, as Go's parseEscape reads it, and where it ends."""
    if at + 1 >= len(regex):
        raise _Refused("trailing backslash at end of expression")
    char, end = regex[at + 1], at + 2
    if ord(char) < 128 and not char.isalnum():
        return ord(char), end
    if char in "01234567" and (char == "0" or end < len(regex) and regex[end] in "01234567"):
        value = int(char)
        for _ in range(2):  # up to two more octal digits
            if end < len(regex) and regex[end] in "01234567":
                value, end = value * 8 + int(regex[end]), end + 1
        return value, end
    if char == "x":
        if regex[end:end + 1] == "{":
            close = regex.find("}", end)
            digits = regex[end + 1:close] if close >= 0 else ""
            if digits and all(d in "0123456789abcdefABCDEF" for d in digits) and int(digits, 16) <= 0x10FFFF:
                return int(digits, 16), close + 1
        elif len(regex[end:end + 2]) == 2 and all(d in "0123456789abcdefABCDEF" for d in regex[end:end + 2]):
            return int(regex[end:end + 2], 16), end + 2
    if char in _GO_C_ESCAPES:
        return _GO_C_ESCAPES[char], end
    raise _Refused(f"invalid escape sequence: `{regex[at:end]}`")


def _unicode_class(regex: str, at: int) -> tuple[str, int] | None:
    """A \\p or \\P class at `at` as Rust reads the same class (Go's negation inside braces, `\\p{^Greek}`, written as
    \\P{Greek}), and where it ends; None when none stands there."""
    found = _UNICODE_CLASS.match(regex, at)
    if not found:
        if regex.startswith(("\\p", "\\P"), at):
            raise _Refused(f"invalid character class range: `{regex[at:at + 3]}`")
        return None
    letter = regex[at + 1]
    if found.group(1):
        letter = "P" if letter == "p" else "p"
    name = found.group(2) if found.group(3) is None else found.group(3)
    return (f"\\{letter}{{{name}}}" if len(name) != 1 else f"\\{letter}{name}"), found.end()


def _go_class(regex: str, at: int) -> tuple[str, int]:
    """The class opening at `at` as Go reads it (Perl's syntax: `-` literal where it makes no range, `[` and `&`, `~`
    plain characters, POSIX and Unicode classes inside), written for Rust with each character as an escape (so
    Rust's nested classes and set operators `--`, `&&`, `~~` never read it otherwise), and where it ends."""
    out, at, first = ["["], at + 1, True
    if regex[at:at + 1] == "^":
        out.append("^")
        at += 1
    while first or at < len(regex) and regex[at] != "]":
        first = False
        if at >= len(regex):
            raise _Refused(f"missing closing ]: `{regex[regex.rfind('[', 0, at):]}`")
        if regex.startswith("[:", at) and regex.find(":]", at + 2) >= 0:
            close = regex.find(":]", at + 2)
            name = regex[at + 2:close].removeprefix("^")
            if name not in _GO_POSIX_CLASSES:
                raise _Refused(f"invalid character class range: `{regex[at:close + 2]}`")
            out.append(regex[at:close + 2])
            at = close + 2
            continue
        if regex.startswith(("\\p", "\\P"), at):
            text, at = _unicode_class(regex, at)
            out.append(text)
            continue
        if regex[at] == "\\" and regex[at + 1:at + 2] in _GO_PERL_CLASSES:
            out.append(regex[at:at + 2])
            at += 2
            continue
        start = at
        low, at = _go_escape(regex, at) if regex[at] == "\\" else (ord(regex[at]), at + 1)
        high = low
        if regex[at:at + 1] == "-" and at + 1 < len(regex) and regex[at + 1] != "]":
            high, at = _go_escape(regex, at + 1) if regex[at + 1] == "\\" else (ord(regex[at + 1]), at + 2)
            if high < low:
                raise _Refused(f"invalid character class range: `{regex[start:at]}`")
        out.append(f"\\x{{{low:X}}}" + (f"-\\x{{{high:X}}}" if high != low else ""))
    if at >= len(regex):
        raise _Refused(f"missing closing ]: `{regex[regex.rfind('[', 0, at):]}`")
    return "".join(out) + "]", at + 1


@lru_cache(maxsize=4096)
def re2_judged(regex: str) -> tuple[str | None, str]:
    """(regex_problem's answer, the same regex as Rust's regex crate reads it: each character Go reads from an
    escape or a class written as \\x{...}, \\Q...\\E as escapes) but for the anchoring's, which regex_problem adds."""
    try:
        rust = _go_read(regex)
    except _Refused as exc:
        return f"illegal regex for {regex}: {exc}", regex
    import promql_parser

    try:
        promql_parser.parse("up{a=~" + double_quoted(rust) + "}")
    except ValueError as exc:
        return str(exc), regex
    return None, rust


def _go_read(regex: str) -> str:
    """`regex` as Go reads it, written for Rust (re2_judged); _Refused where Go refuses what Rust would take."""
    rust, at = [], 0
    repeated = 0  # 1 right after a repetition operator, 2 after its lazy `?`: RE2 refuses one more (`a**`, `a{2}{3}`)
    # Go refuses a repeat that, with the repeats nested in it, asks for more than REPEAT_LIMIT copies of one thing:
    # `most` is the largest such count inside the innermost open group, `groups` the enclosing groups' (a stack),
    # `last` the count of the last atom (None: none yet; a repeat applies to it).
    groups: list[int] = []
    most, last = 1, None
    flags_after = ""  # a group of flags alone, written after the repeat that follows it (Go repeats the atom before)

    def atom(count: int = 1) -> None:
        nonlocal most, last
        most = max(most, last or 1)
        last = count

    while at < len(regex):
        char = regex[at]
        if char in "*+?" or char == "{" and _REPEAT.match(regex, at):
            if repeated == 1 and char == "?":
                repeated = 2
            elif repeated:
                raise _Refused(f"invalid nested repetition operator: `{regex[max(0, at - 2):at + 1]}`")
            else:
                repeated = 1
            if char == "{":
                repeat = _REPEAT.match(regex, at)
                counts = [int(n) for n in (repeat.group(1), repeat.group(3)) if n]
                if max(counts) > REPEAT_LIMIT:
                    raise _Refused(f"invalid repeat count: `{repeat.group()}`")
                copies = int(repeat.group(3)) if repeat.group(3) else int(repeat.group(1))
                if last is not None:
                    last = 1 if copies == 0 else copies * last
                    if last > REPEAT_LIMIT:
                        raise _Refused(f"invalid repeat count: `{repeat.group()}` (with the repeats inside it, "
                                       f"more than {REPEAT_LIMIT} copies)")
                rust.append(repeat.group())
                at = repeat.end()
                continue
            rust.append(char)
            at += 1
            continue
        repeated = 0
        opening = _GROUP_OPENING.match(regex, at) if char == "(" else None
        if opening and opening.group(1) is not None:  # (?flags) or (?flags:
            if not set(opening.group(1)) <= _RE2_FLAGS:
                raise _Refused(f"invalid or unsupported Perl syntax: `{opening.group()[:-1]}`")
            if opening.group(2) == ")":  # flags for the rest of the group, no atom: `(?)` sets none (Rust refuses it)
                flags_after += opening.group() if opening.group(1) else ""
                at = opening.end()
                continue
        rust.append(flags_after)
        flags_after = ""
        if char == "(":
            atom()
            groups.append(most)
            most, last = 1, None
            group_open = opening.group() if opening else "("
            rust.append(group_open)
            at += len(group_open)
            continue
        if char == "\\":
            following = regex[at + 1:at + 2]
            if following == "Q":
                end = regex.find("\\E", at + 2)
                literal = regex[at + 2:] if end < 0 else regex[at + 2:end]
                rust.append("".join(f"\\x{{{ord(c):X}}}" for c in literal))
                if literal:
                    atom()
                at = len(regex) if end < 0 else end + 2
                continue
            if following == "C":
                raise _Refused("invalid escape sequence: `\\C`")
            if following in ("p", "P"):
                text, at = _unicode_class(regex, at)
            elif following and following in _GO_ASSERTIONS | _GO_PERL_CLASSES:
                text, at = regex[at:at + 2], at + 2
            else:
                code, at = _go_escape(regex, at)
                text = f"\\x{{{code:X}}}"
            rust.append(text)
            atom()
            continue
        if char == "[":
            text, at = _go_class(regex, at)
            rust.append(text)
            atom()
            continue
        if char == ")":
            if not groups:
                raise _Refused(f"unexpected ): `{regex}`")  # (Prometheus compiles it unanchored too)
            inner = max(most, last or 1)
            most = groups.pop()
            last = inner
            rust.append(char)
            at += 1
            continue
        if char == "|":
            most, last = max(most, last or 1), None
        else:
            atom()
        rust.append("\\" + char if char in "{}" else char)  # a brace Go reads as plain text (no repeat)
        at += 1
    if groups:
        raise _Refused(f"missing closing ): `{regex}`")
    return "".join(rust) + flags_after
