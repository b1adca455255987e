"""Go's regexp syntax (RE2, as Prometheus compiles a matcher's or relabel rule's regex) read as Go reads it: why Go
refuses a regex (regex_problem), and the same regex written for Rust's regex crate, which promql_parser compiles
(re2_judged). Go and Rust differ in escapes, classes, flags, repeat counts and \\Q...\\E; what Go's reading leaves
to judge, Rust's compiler judges."""

from __future__ import annotations

import re
from functools import lru_cache

from .promql_text import double_quoted

_RE2_FLAGS = set("imsU-")
REPEAT = re.compile(r"\{(0|[1-9]\d*)(,(0|[1-9]\d*)?)?\}")  # Go reads `{01}` (a leading zero) as plain text
REPEAT_LIMIT = 1000  # Go's regexp: the most copies of one thing a repeat, or repeats nested, may ask for
MAX_HEIGHT = 1000  # Go's regexp: the deepest parse tree it takes (checked in Go 1.19 as in Prometheus 2.42)
RUST_NESTING = 100  # groups nested, or a parse tree, this deep or deeper may pass Rust's nesting limit (250 groups,
# repeats, alternations, concatenations, classes)
# Go's escapes outside a class that are not one character: assertions, Perl classes (\p, \P and \Q apart)
_GO_ASSERTIONS = set("AbBz")
_GO_PERL_CLASSES = set("dDsSwW")
GO_POSIX_CLASSES = {"alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space",
                     "upper", "word", "xdigit"}
# A group's opening other than `(`: flags (for the rest of the group, `)`, or for its own, `:`), or a name
GROUP_OPENING = re.compile(r"\(\?(?:([^:)<]*)([:)])|P?<([^>]*)>)")
_GO_C_ESCAPES = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
UNICODE_CLASS = re.compile(r"\\[pP](?:\{(\^?)([^}]*)\}|(.))", re.DOTALL)
# The Unicode classes Go's regexp names (\\p{Greek}, \\pL): its unicode package's categories and scripts, as Go 1.19
# (Unicode 13: Prometheus 2.42) has them, and Any; the scripts of Unicode 14 and 15, which Go 1.21 added (so a
# Prometheus built with an older Go, such as 2.42, refuses them). Rust's regex crate takes more names (Latn, Letter,
# Alphabetic, gc=L), which Go refuses.
GO_CATEGORIES = frozenset("""
    C Cc Cf Co Cs L Ll Lm Lo Lt Lu M Mc Me Mn N Nd Nl No P Pc Pd Pe Pf Pi Po Ps S Sc Sk Sm So Z Zl Zp Zs Any""".split())
_GO_SCRIPTS = frozenset("""
    Adlam Ahom Anatolian_Hieroglyphs Arabic Armenian Avestan Balinese Bamum Bassa_Vah Batak Bengali Bhaiksuki
    Bopomofo Brahmi Braille Buginese Buhid Canadian_Aboriginal Carian Caucasian_Albanian Chakma Cham Cherokee
    Chorasmian Common Coptic Cuneiform Cypriot Cyrillic Deseret Devanagari Dives_Akuru Dogra Duployan
    Egyptian_Hieroglyphs Elbasan Elymaic Ethiopic Georgian Glagolitic Gothic Grantha Greek Gujarati Gunjala_Gondi
    Gurmukhi Han Hangul Hanifi_Rohingya Hanunoo Hatran Hebrew Hiragana Imperial_Aramaic Inherited
    Inscriptional_Pahlavi Inscriptional_Parthian Javanese Kaithi Kannada Katakana Kayah_Li Kharoshthi
    Khitan_Small_Script Khmer Khojki Khudawadi Lao Latin Lepcha Limbu Linear_A Linear_B Lisu Lycian Lydian Mahajani
    Makasar Malayalam Mandaic Manichaean Marchen Masaram_Gondi Medefaidrin Meetei_Mayek Mende_Kikakui
    Meroitic_Cursive Meroitic_Hieroglyphs Miao Modi Mongolian Mro Multani Myanmar Nabataean Nandinagari New_Tai_Lue
    Newa Nko Nushu Nyiakeng_Puachue_Hmong Ogham Ol_Chiki Old_Hungarian Old_Italic Old_North_Arabian Old_Permic
    Old_Persian Old_Sogdian Old_South_Arabian Old_Turkic Oriya Osage Osmanya Pahawh_Hmong Palmyrene Pau_Cin_Hau
    Phags_Pa Phoenician Psalter_Pahlavi Rejang Runic Samaritan Saurashtra Sharada Shavian Siddham SignWriting
    Sinhala Sogdian Sora_Sompeng Soyombo Sundanese Syloti_Nagri Syriac Tagalog Tagbanwa Tai_Le Tai_Tham Tai_Viet
    Takri Tamil Tangut Telugu Thaana Thai Tibetan Tifinagh Tirhuta Ugaritic Vai Wancho Warang_Citi Yezidi Yi
    Zanabazar_Square""".split())
NEWER_SCRIPTS = frozenset("Cypro_Minoan Kawi Nag_Mundari Old_Uyghur Tangsa Toto Vithkuqi".split())
# Go's Perl classes are ASCII (Rust's are Unicode, and its \\w{999} passes its size limit): written for Rust as the
# ASCII ranges Go reads, inside a class (a negated one as a class nested in it)
_PERL_RANGES = {"d": "0-9", "s": "\\x{9}\\x{A}\\x{C}\\x{D}\\x{20}", "w": "0-9A-Za-z_"}
# A Unicode class stands for Rust as a class of two characters: Go's reading has judged its name, and Rust compiles
# a repeat of a Unicode class past its size limit (\\pL{1000}) where Go takes it
_UNICODE_STAND_IN = "\\x{80}-\\x{81}"
_CAPTURE_NAME = re.compile(r"[A-Za-z0-9_]+")  # Go's isValidCaptureName


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


def _rust_flags(opening: str) -> str:
    """A group of flags, `(?flags)` or `(?flags:`, as Rust reads what Go does: Go takes a flag written twice, set
    and cleared too (`(?ii)`, `(?i-i)`: the last says), which Rust refuses; each flag is written once, as Go leaves it.
    What Go refuses (a second `-`, nothing after `-`) is left as written, for Rust to refuse too. A name is as is."""
    text = opening[2:-1]
    if not opening.startswith("(?") or "<" in opening or text.count("-") > 1 or text.endswith("-"):
        return opening
    setting, _, clearing = text.partition("-")
    cleared = set(clearing)
    written = "".join(sorted(set(setting) - cleared)) + ("-" + "".join(sorted(cleared)) if cleared else "")
    return f"(?{written}{opening[-1]}"


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


def go_escape(regex: str, at: int) -> tuple[int, int]:
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


def _unicode_class(regex: str, at: int, inside: bool = False, newer: list | None = None) -> tuple[str, int] | None:
    """A \\p or \\P class at `at` (`inside` a class) written for Rust as its stand-in (_UNICODE_STAND_IN), and where
    it ends; None when none stands there. A name Go does not know is refused; one of NEWER_SCRIPTS is told in
    `newer`."""
    found = UNICODE_CLASS.match(regex, at)
    if not found:
        if regex.startswith(("\\p", "\\P"), at):
            raise _Refused(f"invalid character class range: `{regex[at:at + 3]}`")
        return None
    negated = (regex[at + 1] == "P") != bool(found.group(1))
    name = found.group(2) if found.group(3) is None else found.group(3)
    if name in NEWER_SCRIPTS and newer is not None:
        newer.append(f"the Unicode script {name} (\\p{{{name}}})")
    elif name not in GO_CATEGORIES and name not in _GO_SCRIPTS and name not in NEWER_SCRIPTS:
        raise _Refused(f"invalid character class range: `{found.group()}`")
    return _class_for_rust(_UNICODE_STAND_IN, negated, inside), found.end()


def _class_for_rust(ranges: str, negated: bool, inside: bool) -> str:
    """Ranges written for Rust as a class (`inside` a class: bare, or a nested class where negated)."""
    if inside and not negated:
        return ranges
    return f"[^{ranges}]" if negated else f"[{ranges}]"


def _go_class(regex: str, at: int, newer: list | None = None) -> tuple[str, int]:
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
            if name not in GO_POSIX_CLASSES:
                raise _Refused(f"invalid character class range: `{regex[at:close + 2]}`")
            out.append(regex[at:close + 2])
            at = close + 2
            continue
        if regex.startswith(("\\p", "\\P"), at):
            text, at = _unicode_class(regex, at, True, newer)
            out.append(text)
            continue
        if regex[at] == "\\" and regex[at + 1:at + 2] in _GO_PERL_CLASSES:
            letter = regex[at + 1]
            out.append(_class_for_rust(_PERL_RANGES[letter.lower()], letter.isupper(), True))
            at += 2
            continue
        start = at
        low, at = go_escape(regex, at) if regex[at] == "\\" else (ord(regex[at]), at + 1)
        high = low
        if regex[at:at + 1] == "-" and at + 1 < len(regex) and regex[at + 1] != "]":
            high, at = go_escape(regex, at + 1) if regex[at + 1] == "\\" else (ord(regex[at + 1]), at + 2)
            if high < low:
                raise _Refused(f"invalid character class range: `{regex[start:at]}`")
        out.append(f"\\x{{{low:X}}}" + (f"-\\x{{{high:X}}}" if high != low else ""))
    if at >= len(regex):
        raise _Refused(f"missing closing ]: `{regex[regex.rfind('[', 0, at):]}`")
    return "".join(out) + "]", at + 1


def re2_judged(regex: str) -> tuple[str | None, str]:
    """(regex_problem's answer, the same regex as Rust's regex crate reads it: each character Go reads from an
    escape or a class written as \\x{...}, \\Q...\\E as escapes, Perl and Unicode classes as ASCII ranges and
    stand-ins, named groups as (?:) but for the anchoring's, which regex_problem adds."""
    return _judged(regex)[:2]


def newer_syntax(regex: str) -> tuple[str, ...]:
    """What of `regex` (one Go's regexp takes) only a Prometheus built with Go 1.21 or later takes (Prometheus 3;
    2.42, built with Go 1.19, refuses it): a named group written (?<name>) (Go 1.22), a script of Unicode 14 or 15."""
    return _judged(regex)[2]


@lru_cache(maxsize=4096)
def _judged(regex: str) -> tuple[str | None, str, tuple[str, ...]]:
    newer: list[str] = []
    try:
        rust, deepest = _go_read(regex, newer)
    except _Refused as exc:
        return f"illegal regex for {regex}: {exc}", regex, ()
    import promql_parser

    try:
        promql_parser.parse("up{a=~" + double_quoted(rust) + "}")
    except ValueError as exc:
        if deepest < RUST_NESTING:
            return str(exc), regex, ()
        # maybe past Rust's nesting limit, which Go's (MAX_HEIGHT) is far above: Go's reading above is the verdict
        rust = "gpudash_nested"  # (a stand-in that does not match the empty value)
    return None, rust, tuple(dict.fromkeys(newer))


class _Tree:
    """The height of the parse tree Go's regexp builds, followed as the regex is read: Go refuses a tree more than
    MAX_HEIGHT deep (regexp/syntax's checkHeight: ErrNestingDepth). Each node a level: a capture group, a repeat, a
    concatenation of two or more pieces, an alternation of two or more branches, and the atom. A non-capturing group is
    no node of its own; adjacent literal characters are one node (a repeat takes the last of them alone); a
    concatenation inside a concatenation, or an alternation inside an alternation, adds no level (Go's collapse); a run
    of single characters or classes among an alternation's branches is one class. Not followed: Go's factoring of
    branches that begin alike (`a|ab(...)|b` is a(|b(...))|b: two levels more, so lint passes such a nesting from
    half Go's depth on: 250 to 499 deep); the `^(?:...)$` anchoring's concatenation is counted (a regex compiled as
    written, as the agent's declarations are, is allowed one level more than said). Checked against promtool (Go
    1.19.8) over 1,600 random nestings: 10 disagree, each such a factoring (the count of capture groups: 682)."""

    def __init__(self) -> None:
        # per open group (the outermost: the regex): whether it captures, its finished branches, its current pieces
        # (height, kind, literal characters); kind: lit, class, concat, alt, empty or other
        self.frames: list[tuple[bool, list, list]] = [(False, [], [])]

    def piece(self, kind: str, runes: int = 1) -> None:
        pieces = self.frames[-1][2]
        if kind == "lit" and pieces and pieces[-1][1] == "lit":
            pieces[-1] = (1, "lit", pieces[-1][2] + runes)
        else:
            pieces.append((1, kind, runes))

    def repeat(self) -> None:
        pieces = self.frames[-1][2]
        if not pieces:  # (a repeat of nothing: refused as such)
            return
        height, kind, runes = pieces.pop()
        if kind == "lit" and runes > 1:  # the repeat takes the last character alone
            pieces += [(1, "lit", runes - 1), (2, "other", 1)]
        else:
            pieces.append((height + 1, "other", 1))
        self._check(pieces[-1][0])

    def open(self, capture: bool) -> None:
        self.frames.append((capture, [], []))

    def bar(self) -> None:
        self.frames[-1][1].append(self._concatenation(self.frames[-1][2]))
        self.frames[-1][2].clear()

    def close(self) -> None:
        capture, branches, pieces = self.frames.pop()
        node = self._alternation([*branches, self._concatenation(pieces)])
        if capture:
            node = (node[0] + 1, "other", 1)
        self.frames[-1][2].append(node)
        self._check(node[0] + 1)  # (the concatenation around it at the least: the anchoring's)

    def height(self) -> int:
        """The height of the whole tree, the regex anchored as Prometheus compiles it (`^(?:regex)$`)."""
        _, branches, pieces = self.frames[0]
        inner = self._alternation([*branches, self._concatenation(pieces)])
        return 1 + max(1, inner[0] - (inner[1] == "concat"))

    @staticmethod
    def _concatenation(pieces: list) -> tuple[int, str, int]:
        if not pieces:
            return 1, "empty", 0
        if len(pieces) == 1:
            return pieces[0]
        return 1 + max(height - (kind == "concat") for height, kind, _ in pieces), "concat", 0

    @staticmethod
    def _alternation(branches: list) -> tuple[int, str, int]:
        kept: list = []
        for branch in branches:
            single = branch[1] == "class" or branch[1] == "lit" and branch[2] == 1
            if single and kept and kept[-1][1] == "class":  # a run of single characters and classes: one class
                continue
            if branch[1] == "empty" and kept and kept[-1][1] == "empty":
                continue
            kept.append((1, "class", 1) if single else branch)
        if len(kept) == 1:
            return kept[0]
        return 1 + max(height - (kind == "alt") for height, kind, _ in kept), "alt", 0

    @staticmethod
    def _check(height: int) -> None:
        if height > MAX_HEIGHT:
            raise _Refused("expression nests too deeply")


def _go_read(regex: str, newer: list | None = None) -> tuple[str, int]:
    """`regex` as Go reads it, written for Rust (re2_judged), and how deep its groups nest; _Refused where Go refuses
    what Rust would take. The syntax only a Prometheus built with a newer Go takes is told in `newer`."""
    rust, at = [], 0
    repeated = 0  # 1 right after a repetition operator, 2 after its lazy `?`: RE2 refuses one more (`a**`, `a{2}{3}`)
    # Go refuses a repeat that, with the repeats nested in it, asks for more than REPEAT_LIMIT copies of one thing:
    # `most` is the largest such count inside the innermost open group, `groups` the enclosing groups' (a stack),
    # `last` the count of the last atom (None: none yet; a repeat applies to it).
    groups: list[int] = []
    most, last = 1, None
    tree = _Tree()  # Go refuses a parse tree more than MAX_HEIGHT deep
    deepest = 0  # how deep groups nest
    flags_after = ""  # a group of flags alone, written after the repeat that follows it (Go repeats the atom before)

    def atom(count: int = 1, kind: str = "", runes: int = 1) -> None:
        nonlocal most, last
        most = max(most, last or 1)
        last = count
        if kind:
            tree.piece(kind, runes)

    while at < len(regex):
        char = regex[at]
        if char in "*+?" or char == "{" and REPEAT.match(regex, at):
            if last is None and not repeated:  # at the start, after `(` or `|` (a group of flags is no argument)
                raise _Refused(f"missing argument to repetition operator: `{regex[at:at + 1]}`")
            if repeated == 1 and char == "?":
                repeated = 2
            elif repeated:
                raise _Refused(f"invalid nested repetition operator: `{regex[max(0, at - 2):at + 1]}`")
            else:
                repeated = 1
                tree.repeat()
            if char == "{":
                repeat = REPEAT.match(regex, at)
                counts = [int(n) for n in (repeat.group(1), repeat.group(3)) if n]
                if max(counts) > REPEAT_LIMIT or len(counts) == 2 and counts[1] < counts[0]:
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
        opening = GROUP_OPENING.match(regex, at) if char == "(" else None
        if opening and opening.group(1) is not None:  # (?flags) or (?flags:
            if not set(opening.group(1)) <= _RE2_FLAGS:
                raise _Refused(f"invalid or unsupported Perl syntax: `{opening.group()[:-1]}`")
            if opening.group(2) == ")":  # flags for the rest of the group, no atom: `(?)` sets none (Rust refuses it)
                flags_after += _rust_flags(opening.group()) if opening.group(1) else ""
                at = opening.end()
                continue
        rust.append(flags_after)
        flags_after = ""
        if char == "(":
            atom()
            groups.append(most)
            most, last = 1, None
            group_open = _rust_flags(opening.group()) if opening else "("
            tree.open(opening is None or opening.group(1) is None)
            deepest = max(deepest, len(groups))
            at += len(group_open)
            if opening and opening.group(1) is None:  # a named group: Go's rule for its name, Rust's (?:
                name = opening.group(3)
                if not _CAPTURE_NAME.fullmatch(name):
                    raise _Refused(f"invalid named capture: `{group_open}`")
                if not group_open.startswith("(?P") and newer is not None:
                    newer.append(f"a named group written {group_open}) (every Prometheus takes (?P<{name}>))")
                group_open = "(?:"
            rust.append(group_open)
            continue
        if char == "\\":
            following = regex[at + 1:at + 2]
            if following == "Q":
                end = regex.find("\\E", at + 2)
                literal = regex[at + 2:] if end < 0 else regex[at + 2:end]
                rust.append("".join(f"\\x{{{ord(c):X}}}" for c in literal))
                if literal:
                    atom(kind="lit", runes=len(literal))
                at = len(regex) if end < 0 else end + 2
                continue
            if following == "C":
                raise _Refused("invalid escape sequence: `\\C`")
            kind = "class"
            if following in ("p", "P"):
                text, at = _unicode_class(regex, at, False, newer)
            elif following and following in _GO_PERL_CLASSES:
                text, at = _class_for_rust(_PERL_RANGES[following.lower()], following.isupper(), False), at + 2
            elif following and following in _GO_ASSERTIONS:
                text, at, kind = regex[at:at + 2], at + 2, "other"
            else:
                code, at = go_escape(regex, at)
                text, kind = f"\\x{{{code:X}}}", "lit"
            rust.append(text)
            atom(kind=kind)
            continue
        if char == "[":
            text, at = _go_class(regex, at, newer)
            rust.append(text)
            atom(kind="class")
            continue
        if char == ")":
            if not groups:
                raise _Refused(f"unexpected ): `{regex}`")  # (Prometheus compiles it unanchored too)
            inner = max(most, last or 1)
            most = groups.pop()
            tree.close()
            last = inner
            rust.append(char)
            at += 1
            continue
        if char == "|":
            most, last = max(most, last or 1), None
            tree.bar()
        else:
            atom(kind="class" if char == "." else "other" if char in "^$" else "lit")
        rust.append("\\" + char if char in "{}" else char)  # a brace Go reads as plain text (no repeat)
        at += 1
    if groups:
        raise _Refused(f"missing closing ): `{regex}`")
    height = tree.height()
    if height > MAX_HEIGHT:
        raise _Refused(f"expression nests too deeply: `{regex[:40]}...`")
    return "".join(rust) + flags_after, max(deepest, height)
