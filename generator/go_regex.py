"""Go's regexp syntax (RE2, as Prometheus compiles a matcher's or relabel rule's regex) read as Go reads it, in one
place: go_syntax reads a regex once into tokens (escapes, classes, flags, groups, repeats, \\Q...\\E), saying why Go
refuses it (its limits on repeats and nesting too). Two writers read the tokens: here, the same regex for Rust's regex
crate, which promql_parser compiles (re2_judged; regex_problem: why Prometheus refuses it, Rust's compiler judging
what Go's reading leaves), and go_regex_python, the same regex for Python's re."""

from __future__ import annotations

import re
from functools import lru_cache

from .promql_text import double_quoted

_RE2_FLAGS = set("imsU-")
_REPEAT = re.compile(r"\{(0|[1-9]\d*)(,(0|[1-9]\d*)?)?\}")  # Go reads `{01}` (a leading zero) as plain text
REPEAT_LIMIT = 1000  # Go's regexp: the most copies of one thing a repeat, or repeats nested, may ask for
MAX_HEIGHT = 1000  # Go's regexp: the deepest parse tree it takes (checked in Go 1.19 as in Prometheus 2.42)
RUST_NESTING = 100  # groups nested, or a parse tree, this deep or deeper may pass Rust's nesting limit (250 groups,
# repeats, alternations, concatenations, classes)
# Go's escapes outside a class that are not one character: assertions, Perl classes (\p, \P and \Q apart)
_GO_ASSERTIONS = set("AbBz")
_GO_PERL_CLASSES = set("dDsSwW")
# Go's Perl classes (\\d, \\s, \\w and their negations) and POSIX classes ([[:alpha:]]), ASCII, as the code point
# ranges they hold (regexp/syntax perl_groups.go): sorted, apart, inclusive
_DIGIT, _WORD = ((0x30, 0x39),), ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
PERL_CLASSES = {"d": _DIGIT, "s": ((0x9, 0xA), (0xC, 0xD), (0x20, 0x20)), "w": _WORD}
POSIX_CLASSES = {
    "alnum": ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)), "alpha": ((0x41, 0x5A), (0x61, 0x7A)), "ascii": ((0, 0x7F),),
    "blank": ((0x9, 0x9), (0x20, 0x20)), "cntrl": ((0, 0x1F), (0x7F, 0x7F)), "digit": _DIGIT, "graph": ((0x21, 0x7E),),
    "lower": ((0x61, 0x7A),), "print": ((0x20, 0x7E),), "space": ((0x9, 0xD), (0x20, 0x20)), "upper": ((0x41, 0x5A),),
    "punct": ((0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)), "word": _WORD,
    "xdigit": ((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)),
}
# A group's opening other than `(`: flags (for the rest of the group, `)`, or for its own, `:`), or a name
_GROUP_OPENING = re.compile(r"\(\?(?:([^:)<]*)([:)])|P?<([^>]*)>)")
_GO_C_ESCAPES = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
_UNICODE_CLASS = re.compile(r"\\[pP](?:\{(\^?)([^}]*)\}|(.))", re.DOTALL)
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


def _rust_range(low: int, high: int) -> str:
    """A class's range (or one character) written for Rust, each end as an escape."""
    return f"\\x{{{low:X}}}" + (f"-\\x{{{high:X}}}" if high != low else "")


# Go's Perl classes are ASCII (Rust's are Unicode, and its \\w{999} passes its size limit): PERL_CLASSES written for
# Rust, inside a class (a negated one as a class nested in it)
_PERL_RANGES = {letter: "".join(_rust_range(*pair) for pair in ranges) for letter, ranges in PERL_CLASSES.items()}
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
    problem, _, _, unterminated = _judged(regex)
    if problem is None and anchored and unterminated:
        return f"missing closing ): `^(?:{regex})$` (an unterminated \\Q quotes the anchoring's close)"
    return problem


def go_flags(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The flags a group `(?text)` or `(?text:` sets and clears, as Go reads them: those before `-` set, those after
    cleared; a flag written twice, or set and cleared (`(?ii)`, `(?i-i)`), is taken, the last saying."""
    setting, _, clearing = text.partition("-")
    return frozenset(setting) - frozenset(clearing), frozenset(clearing)


def _rust_flags(text: str, closer: str) -> str:
    """A group of flags, `(?text)` or `(?text:`, as Rust reads what Go does: Rust refuses a flag written twice, so each
    is written once, as Go leaves it (go_flags). What Go refuses (a second `-`, nothing after `-`) is left as written,
    for Rust to refuse too."""
    if text.count("-") > 1 or text.endswith("-"):
        return f"(?{text}{closer}"
    setting, cleared = go_flags(text)
    return f"(?{''.join(sorted(setting))}{'-' + ''.join(sorted(cleared)) if cleared else ''}{closer}"


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


# Go's syntax read once (go_syntax) into tokens, tuples whose first item says what they are; each writer (Rust's
# below, Python's in go_regex_python) writes them:
#   ("lit", code, escaped)      a character (escaped: written as an escape, `\\.`, `\\x41`)
#   ("quote", text, closed)     \\Q...\\E's text (closed: its \\E is written)
#   ("meta", char)              `.`, `^` or `$`
#   ("assert", letter)          \\A, \\b, \\B, \\z
#   ("perl", letter)            \\d, \\D, \\s, \\S, \\w, \\W (ASCII)
#   ("unicode", name, negated)  \\pN, \\p{Greek}, \\P{^L}...
#   ("class", negated, items)   [...]; its items ("range", low, high), ("posix", name, negated), perl and unicode
#   ("repeat", op, lazy, end, unbounded)  `*`, `+`, `?` or `{n,m}` as written, whether a `?` follows, where the op
#                               ends, whether it has no upper bound (`*`, `+`, `{n,}`)
#   ("flags", text)             (?text): the flags for the rest of the group
#   ("open", flags, name)       `(` (None, None), `(?flags:` (flags, None), `(?P<name>` or `(?<name>` (None, name)
#   ("close",), ("bar",)


def _unicode_class(regex: str, at: int, newer: list) -> tuple[tuple, int]:
    """The \\p or \\P class at `at` (a token) and where it ends. A name Go does not know is refused; one of
    NEWER_SCRIPTS is told in `newer`."""
    found = _UNICODE_CLASS.match(regex, at)
    if not found:
        raise _Refused(f"invalid character class range: `{regex[at:at + 3]}`")
    negated = (regex[at + 1] == "P") != bool(found.group(1))
    name = found.group(2) if found.group(3) is None else found.group(3)
    if name in NEWER_SCRIPTS:
        newer.append(f"the Unicode script {name} (\\p{{{name}}})")
    elif name not in GO_CATEGORIES and name not in _GO_SCRIPTS:
        raise _Refused(f"invalid character class range: `{found.group()}`")
    return ("unicode", name, negated), found.end()


def _go_class(regex: str, at: int, newer: list) -> tuple[tuple, int]:
    """The class opening at `at` as Go reads it (Perl's syntax: `]` first and `-` where it makes no range are plain,
    `[`, `&` and `~` plain characters, POSIX, Perl and Unicode classes inside) as a token, and where it ends."""
    items: list[tuple] = []
    at += 1
    negated = regex[at:at + 1] == "^"
    at += negated
    first = True
    while first or at < len(regex) and regex[at] != "]":
        first = False
        if at >= len(regex):
            raise _Refused(f"missing closing ]: `{regex[regex.rfind('[', 0, at):]}`")
        if regex.startswith("[:", at) and regex.find(":]", at + 2) >= 0:
            close = regex.find(":]", at + 2)
            name = regex[at + 2:close]
            if name.removeprefix("^") not in POSIX_CLASSES:
                raise _Refused(f"invalid character class range: `{regex[at:close + 2]}`")
            items.append(("posix", name.removeprefix("^"), name.startswith("^")))
            at = close + 2
            continue
        if regex.startswith(("\\p", "\\P"), at):
            token, at = _unicode_class(regex, at, newer)
            items.append(token)
            continue
        if regex[at] == "\\" and regex[at + 1:at + 2] in _GO_PERL_CLASSES:
            items.append(("perl", regex[at + 1]))
            at += 2
            continue
        start = at
        low, at = _go_escape(regex, at) if regex[at] == "\\" else (ord(regex[at]), at + 1)
        high = low
        if regex[at:at + 1] == "-" and at + 1 < len(regex) and regex[at + 1] != "]":
            high, at = _go_escape(regex, at + 1) if regex[at + 1] == "\\" else (ord(regex[at + 1]), at + 2)
            if high < low:
                raise _Refused(f"invalid character class range: `{regex[start:at]}`")
        items.append(("range", low, high))
    if at >= len(regex):
        raise _Refused(f"missing closing ]: `{regex[regex.rfind('[', 0, at):]}`")
    return ("class", negated, tuple(items)), at + 1


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
def _judged(regex: str) -> tuple[str | None, str, tuple[str, ...], bool]:
    """(re2_judged's answer, newer_syntax's, whether a \\Q outside a class is left open: no \\E after it)."""
    tokens, deepest, newer, refusal = go_syntax(regex)
    if refusal is not None:
        return f"illegal regex for {regex}: {refusal}", regex, (), False
    unterminated = any(token[0] == "quote" and not token[2] for token in tokens)
    rust = _rust(tokens)
    import promql_parser

    try:
        promql_parser.parse("up{a=~" + double_quoted(rust) + "}")
    except ValueError as exc:
        if deepest < RUST_NESTING:
            return str(exc), regex, (), unterminated
        # maybe past Rust's nesting limit, which Go's (MAX_HEIGHT) is far above: Go's reading above is the verdict
        rust = "gpudash_nested"  # (a stand-in that does not match the empty value)
    return None, rust, newer, unterminated


def _rust(tokens: tuple) -> str:
    """Go's tokens written for Rust's regex crate (re2_judged)."""
    rust: list[str] = []
    flags_after = ""  # a group of flags alone, written after the repeat that follows it (Go repeats the atom before)
    for token in tokens:
        kind = token[0]
        if kind == "repeat":
            rust.append(token[1] + "?" * token[2])
            continue
        if kind == "flags":  # `(?)` sets none (Rust refuses it)
            flags_after += _rust_flags(token[1], ")") if token[1] else ""
            continue
        rust.append(flags_after)
        flags_after = ""
        if kind == "lit":
            char = chr(token[1])
            rust.append(f"\\x{{{token[1]:X}}}" if token[2] else "\\" + char if char in "{}" else char)
        elif kind == "quote":
            rust.append("".join(f"\\x{{{ord(c):X}}}" for c in token[1]))
        elif kind == "class":
            rust.append(("[^" if token[1] else "[") + "".join(map(_rust_class_item, token[2])) + "]")
        elif kind in ("perl", "unicode"):
            rust.append(_rust_class(token, False))
        elif kind == "assert":
            rust.append("\\" + token[1])
        elif kind == "open":
            rust.append("(" if token[1] is None and token[2] is None else "(?:" if token[2] is not None else
                        _rust_flags(token[1], ":"))
        else:
            rust.append(")" if kind == "close" else "|" if kind == "bar" else token[1])
    return "".join(rust) + flags_after


def _rust_class_item(item: tuple) -> str:
    if item[0] == "range":
        return _rust_range(item[1], item[2])
    if item[0] == "posix":
        return f"[:{'^' * item[2]}{item[1]}:]"
    return _rust_class(item, True)


def _rust_class(token: tuple, inside: bool) -> str:
    """A Perl or Unicode class written for Rust as a class (`inside` a class: bare, or a nested class where negated):
    a Perl class as the ASCII ranges Go reads (_PERL_RANGES), a Unicode one as its stand-in (_UNICODE_STAND_IN)."""
    if token[0] == "perl":
        ranges, negated = _PERL_RANGES[token[1].lower()], token[1].isupper()
    else:
        ranges, negated = _UNICODE_STAND_IN, token[2]
    if inside and not negated:
        return ranges
    return f"[^{ranges}]" if negated else f"[{ranges}]"


def go_syntax(regex: str) -> tuple[tuple, int, tuple[str, ...], str | None]:
    """`regex` read as Go's regexp/syntax reads it: (its tokens, how deep its groups and parse tree nest, what of it
    only a newer Go takes, why Go refuses it or None). Where Go refuses it the tokens are (). Not kept: each writer's
    answer is (tokens kept for thousands of regexes cost the garbage collector more than a second reading)."""
    newer: list[str] = []
    try:
        tokens, deepest = _go_read(regex, newer)
    except _Refused as exc:
        return (), 0, (), str(exc)
    return tokens, deepest, tuple(dict.fromkeys(newer)), None


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


def _go_read(regex: str, newer: list) -> tuple[tuple, int]:
    """`regex` as Go reads it, as tokens (go_syntax), and how deep its groups and parse tree nest; _Refused where Go
    refuses it. The syntax only a Prometheus built with a newer Go takes is told in `newer`."""
    tokens: list[tuple] = []
    at = 0
    repeated = 0  # 1 right after a repetition operator, 2 after its lazy `?`: RE2 refuses one more (`a**`, `a{2}{3}`)
    # Go refuses a repeat that, with the repeats nested in it, asks for more than REPEAT_LIMIT copies of one thing:
    # `most` is the largest such count inside the innermost open group, `groups` the enclosing groups' (a stack),
    # `last` the count of the last atom (None: none yet; a repeat applies to it).
    groups: list[int] = []
    most, last = 1, None
    tree = _Tree()  # Go refuses a parse tree more than MAX_HEIGHT deep
    deepest = 0  # how deep groups nest

    def atom(token: tuple, count: int = 1, kind: str = "", runes: int = 1) -> None:
        nonlocal most, last
        most = max(most, last or 1)
        last = count
        if kind:
            tree.piece(kind, runes)
        tokens.append(token)

    while at < len(regex):
        char = regex[at]
        if char in "*+?" or char == "{" and _REPEAT.match(regex, at):
            if last is None and not repeated:  # at the start, after `(` or `|` (a group of flags is no argument)
                raise _Refused(f"missing argument to repetition operator: `{regex[at:at + 1]}`")
            if repeated == 1 and char == "?":
                repeated = 2
                tokens[-1] = (*tokens[-1][:2], True, *tokens[-1][3:])
                at += 1
                continue
            if repeated:
                raise _Refused(f"invalid nested repetition operator: `{regex[max(0, at - 2):at + 1]}`")
            repeated = 1
            tree.repeat()
            if char == "{":
                repeat = _REPEAT.match(regex, at)
                counts = [int(n) for n in (repeat.group(1), repeat.group(3)) if n]
                if max(counts) > REPEAT_LIMIT or len(counts) == 2 and counts[1] < counts[0]:
                    raise _Refused(f"invalid repeat count: `{repeat.group()}`")
                copies = int(repeat.group(3)) if repeat.group(3) else int(repeat.group(1))
                if last is not None:
                    last = 1 if copies == 0 else copies * last
                    if last > REPEAT_LIMIT:
                        raise _Refused(f"invalid repeat count: `{repeat.group()}` (with the repeats inside it, "
                                       f"more than {REPEAT_LIMIT} copies)")
                at = repeat.end()
                tokens.append(("repeat", repeat.group(), False, at, bool(repeat.group(2)) and not repeat.group(3)))
                continue
            at += 1
            tokens.append(("repeat", char, False, at, char != "?"))
            continue
        repeated = 0
        opening = _GROUP_OPENING.match(regex, at) if char == "(" else None
        if opening and opening.group(1) is not None:  # (?flags) or (?flags:
            if not set(opening.group(1)) <= _RE2_FLAGS:
                raise _Refused(f"invalid or unsupported Perl syntax: `{opening.group()[:-1]}`")
            if opening.group(2) == ")":  # flags for the rest of the group, no atom
                tokens.append(("flags", opening.group(1)))
                at = opening.end()
                continue
        if char == "(":
            if opening is None:
                token = ("open", None, None)
            elif opening.group(1) is not None:
                token = ("open", opening.group(1), None)
            else:  # a named group: Go's rule for its name
                name = opening.group(3)
                if not _CAPTURE_NAME.fullmatch(name):
                    raise _Refused(f"invalid named capture: `{opening.group()}`")
                if not opening.group().startswith("(?P"):
                    newer.append(f"a named group written {opening.group()}) (every Prometheus takes (?P<{name}>))")
                token = ("open", None, name)
            atom(token)
            groups.append(most)
            most, last = 1, None
            tree.open(opening is None or opening.group(1) is None)
            deepest = max(deepest, len(groups))
            at = opening.end() if opening else at + 1
            continue
        if char == "\\":
            following = regex[at + 1:at + 2]
            if following == "Q":
                end = regex.find("\\E", at + 2)
                literal = regex[at + 2:] if end < 0 else regex[at + 2:end]
                token = ("quote", literal, end >= 0)
                if literal:
                    atom(token, kind="lit", runes=len(literal))
                else:
                    tokens.append(token)
                at = len(regex) if end < 0 else end + 2
                continue
            if following == "C":
                raise _Refused("invalid escape sequence: `\\C`")
            kind = "class"
            if following in ("p", "P"):
                token, at = _unicode_class(regex, at, newer)
            elif following and following in _GO_PERL_CLASSES:
                token, at = ("perl", following), at + 2
            elif following and following in _GO_ASSERTIONS:
                token, at, kind = ("assert", following), at + 2, "other"
            else:
                code, at = _go_escape(regex, at)
                token, kind = ("lit", code, True), "lit"
            atom(token, kind=kind)
            continue
        if char == "[":
            token, at = _go_class(regex, at, newer)
            atom(token, kind="class")
            continue
        if char == ")":
            if not groups:
                raise _Refused(f"unexpected ): `{regex}`")  # (Prometheus compiles it unanchored too)
            inner = max(most, last or 1)
            most = groups.pop()
            tree.close()
            last = inner
            tokens.append(("close",))
        elif char == "|":
            most, last = max(most, last or 1), None
            tree.bar()
            tokens.append(("bar",))
        elif char in ".^$":
            atom(("meta", char), kind="class" if char == "." else "other")
        else:
            atom(("lit", ord(char), False), kind="lit")
        at += 1
    if groups:
        raise _Refused(f"missing closing ): `{regex}`")
    height = tree.height()
    if height > MAX_HEIGHT:
        raise _Refused(f"expression nests too deeply: `{regex[:40]}...`")
    return tuple(tokens), max(deepest, height)
