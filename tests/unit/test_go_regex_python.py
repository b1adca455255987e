"""A Go regex (RE2 syntax) as Python's re reads it (generator/go_regex_python): it matches exactly what Go's
regexp matches, at the same places with the same groups, or is refused, saying why.

The tables hold Go's answers (Go 1.19's regexp, as promtool runs it): test_the_tables_are_gos asks Go again, so a
table cannot hold what Go does not say; the translation is checked against them, and against Go on a few hundred
regexes and texts drawn at random from the syntax.
"""

from __future__ import annotations

import random
import re
import warnings

import pytest

from generator.go_regex_python import Unreadable, go_compiled, unreadable
from tests.support.go_regexp import go_first_groups, go_searches

# (regex, text, whether Go's regexp.MatchString finds it; None: Go refuses the regex)
SEARCHES = [
    # ASCII classes inside brackets, negated too (Python's re reads `[[:digit:]]` as a class of '[', ':', 'd'...)
    ("^[[:digit:]]+$", "10", True), ("^[[:digit:]]+$", "1a", False), ("[[:digit:]]", "[:dig", False),
    ("[[:^alpha:]]", "a", False), ("[[:^alpha:]]", "1", True), ("^[[:alpha:][:digit:]]+$", "a1", True),
    ("[[:word:]]", "_", True), ("[[:space:]]", "\v", True), ("[[:punct:]]", "`", True), ("[[:xdigit:]]", "g", False),
    ("[[:xdigit:]]", "F", True), ("[[:cntrl:]]", "\x7f", True), ("[[:blank:]]", "\t", True), ("[[:graph:]]", " ", False),
    ("[[:print:]]", " ", True), ("[[:ascii:]]", "é", False), ("[[:upper:]]", "a", False), ("[[:lower:]]", "a", True),
    ("[[:alnum:]]", "_", False), ("[[:foo:]]", "f", None), ("[[a]", "[", True),
    # Perl classes are ASCII (Python's are Unicode)
    (r"\d", "٣", False), (r"\D", "٣", True), (r"\w", "é", False), (r"[\W]", "é", True), (r"\s", "\u00a0", False),
    (r"\s", "\v", False), (r"[^\S]", " ", True), (r"[\d-z]", "-", True),
    # Unicode classes (one letter, braced, negated by \P and by ^)
    (r"^\pN+$", "12", True), (r"^\pN+$", "²", True), (r"^\pN+$", "x", False), (r"\PL", "a", False), (r"\PL", "1", True),
    (r"\pL", "é", True), (r"\p{Lu}", "a", False), (r"\p{Lu}", "A", True), (r"[\p{Nd}]", "٣", True),
    (r"\p{^L}", "1", True), (r"\pZ", "\u00a0", True), (r"\p{Any}", "", False), (r"\p{Any}", "x", True),
    (r"[^\pL\pN]", "é", False), (r"[\P{Ll}]", "a", False), (r"\pC", "\x00", True), (r"\pX", "x", None),
    (r"\p{Latn}", "a", None),
    # the end of the text: `$` without (?m) is \z (Python's `$` also matches before a final newline)
    (r"^[0-9]+\z", "12", True), (r"^[0-9]+\z", "12\n", False), ("a$", "a\n", False), ("a$", "a", True),
    ("(?m)a$", "a\nb", True), (r"a\z", "a\n", False), (r"\Aa", "ba", False), ("(?m)^b", "a\nb", True),
    ("^b", "a\nb", False), ("(?m)^$", "a\n", True), ("(?m:$)x", "a\nx", False), (r"a\Z", "a", None),
    # word boundaries on ASCII word characters
    (r"\bgpu\b", "a gpu", True), (r"\bgpu\b", "gpus", False), (r"\Bpu", "gpu", True), (r"\b", "é", False),
    (r"x\b", "xé", True), (r"\b", "\u212a", False),
    # \Q...\E: its text literal, a repeat after it taking its last character
    (r"\Qa.b\E", "axb", False), (r"\Qa.b\E", "a.b", True), (r"^\Qab\E+$", "abab", False), (r"^\Qab\E+$", "abb", True),
    (r"\Q[[:digit:]]\E", "[[:digit:]]", True),
    # groups: named (Go's names need not be Python's), flags for a group or for the rest of one (across `|` too)
    ("^(?P<gpu>[0-9]+)$", "7", True), ("(?P<n>a)(?P<n>b)", "ab", True), ("(?P<1a>x)", "x", True),
    ("(?i)gpu", "GPU", True), ("(?i)k", "\u212a", True), ("(?i)i", "İ", False), ("(?i)ı", "I", False),
    ("(?i)s", "ſ", True), ("(?i)[^k]", "\u212a", False), (r"(?i)\W", "\u212a", False), ("(?i)é", "É", True),
    ("(?i)σ", "ς", True), ("(?i)ß", "ẞ", True), ("(?i)ﬅ", "ﬆ", False), ("(?i)[a-z]", "ſ", True),
    (r"(?i)\pL", "a", True), (r"(?i)\p{Lu}", "a", True), ("(?i)[[:upper:]]", "a", True),
    ("(?i)[[:^upper:]]", "a", False), ("a(?i)b|c", "C", True), ("a(?i)b|c", "aB", True), ("a(?i)b|c", "A", False),
    ("(?i:A)b", "aB", False), ("(?i:A)b", "ab", True), ("(?i)a(?-i)b", "Ab", True), ("(?i)a(?-i)b", "AB", False),
    ("(?s).", "\n", True), (".", "\n", False), ("(?s:.)", "\n", True), ("(?m-s:^a.$)", "a\n", False),
    ("(?U)a+", "a", True), ("(?i)(?U)(?-U)X", "x", True), ("(?x)a", "a", None), ("(?#c)a", "a", None),
    ("(?ii)a", "A", True), ("(?i-i)a", "A", False), ("(?ii:k)+", "\u212a", True), ("(?i-i:k)", "K", False),
    ("(?U-U:a+)", "a", True), ("(?ii:*)", "", None), ("(?i-i:{2})", "", None), ("(?i-)a", "a", None), ("(?-)a", "a", None),
    ("(?--i)a", "a", None), ("(?)a", "a", True), ("(?P<>x)", "x", None),
    # repeats: at most 1,000 copies; `{,n}`, `{01}` and an unclosed `{` are text
    ("^a{2,3}$", "aaa", True), ("^a{2,3}$", "aaaa", False), ("^a{1000}$", "a" * 1000, True), ("a{1001}", "a", None),
    ("(a{500}){3}", "a", None), ("^a{0}$", "", True), ("a{2,}", "aa", True), ("x{,2}", "x{,2}", True),
    ("x{,2}", "x", False), ("x{01}", "x{01}", True), ("x{2", "x{2", True), ("^(?:ab){2}$", "abab", True),
    ("^ab{2}$", "abb", True), ("a*?b", "b", True), ("a??", "", True), ("^a{1,2}?$", "aa", True), ("x{2}{3}", "x", None),
    ("x**", "x", None), ("x*+", "x", None), ("^*", "", True), ("a{,}", "a{,}", True), (r"\Q\E*", "", None),
    (r"a\Q\E*", "a", True), (r"[\Q]", "Q", None),
    # escapes
    (r"\x{e9}", "é", True), (r"\x41", "A", True), (r"\101", "A", True), (r"\0", "\x00", True),
    (r"\a\f\t\n\r\v", "\a\f\t\n\r\v", True), (r"\.", ".", True), (r"\C", "a", None), (r"\u00e9", "é", None),
    (r"\8", "8", None),
    # bracketed classes as Go reads them (`]` first and `-` where it makes no range are plain; no set operators)
    ("[]a]", "]", True), ("[^]a]", "]", False), ("[a-]", "-", True), (r"[\x{100}-\x{10FFFF}]", "é", False),
    (r"[\x{100}-\x{10FFFF}]", "ā", True), (r"[^\x00-\x{10FFFF}]", "a", False), ("[a-c-e]", "d", False),
    ("[a-c-e]", "-", True), ("[&&a]", "&", True), ("[a--b]", "-", None),
    # what Python takes and Go refuses: lookarounds, backreferences, atomic groups, possessive repeats
    ("(?=a)", "a", None), ("(?!a)", "b", None), ("(?<=a)b", "ab", None), ("(?<!a)b", "b", None),
    (r"(a)\1", "aa", None), ("(?P<n>a)(?P=n)", "aa", None), ("(?>a)", "a", None),
    # empty pieces, and matchers as written for the agent
    ("^$", "", True), ("()", "x", True), ("a|", "b", True), ("|a", "b", True), ("^(|a)+$", "aa", True),
    ("(?:)", "", True), (r"^[^\n]*$", "ab", True), ("GPU-[0-9a-f]{8}", "GPU-0123abcd", True),
    ("^ml;", "ml;train", True), ("^(ml|prod);.+$", "prod;web-1", True),
]

# (regex, text, what its first group holds where it matches the whole text as `^(?:regex)$`; False: no match)
FIRST_GROUPS = [
    ("(a+)(a*)", "aaa", "aaa"), ("(a+?)(a*)", "aaa", "a"), ("(?U)(a+)(a*)", "aaa", "a"), ("(?U)(a+?)(a*)", "aaa", "aaa"),
    ("(a|ab)(c|bcd)(d*)", "abcd", "a"), ("(?P<gpu>[0-9]+)-.*", "12-x", "12"), ("(?i)(K+)", "kK\u212a", "kK\u212a"),
    (r"(\Qa.\E*)b", "a...b", "a..."), ("(.*);(.*)", "a;b;c", "a;b"), ("([[:alpha:]]*)([[:digit:]]*)", "ab12", "ab"),
    ("(x{,2})", "x{,2}", "x{,2}"), ("(a|b)*", "ab", "b"), ("(a*){1,3}", "aa", ""), ("(a+)*", "aa", "aa"),
    ("(?m)(a$)\n.*", "a\nb", "a"), ("(a$)\n.*", "a\nb", False),
]

SCRIPT = r"\p{Greek}"  # Go takes it (a script); Python holds no script table


def _searched(regex: str, text: str) -> bool | None:
    try:
        return go_compiled(regex).search(text) is not None
    except Unreadable as exc:
        assert exc.refused, f"{regex!r}: {exc}"
        return None


def _first_group(regex: str, text: str) -> str | bool | None:
    try:
        found = go_compiled(regex, groups=True).fullmatch(text)
    except Unreadable as exc:
        assert exc.refused, f"{regex!r}: {exc}"
        return None
    return False if found is None else found.group(1) or ""


@pytest.mark.parametrize(("regex", "text", "go"), SEARCHES)
def test_the_translation_finds_what_go_finds(regex, text, go):
    assert _searched(regex, text) is go


@pytest.mark.parametrize(("regex", "text", "go"), FIRST_GROUPS)
def test_the_translation_groups_as_go_does(regex, text, go):
    assert _first_group(regex, text) == go


def test_the_tables_are_gos(tmp_path):
    assert go_searches([(r, t) for r, t, _ in SEARCHES], tmp_path) == [go for _, _, go in SEARCHES]
    assert go_first_groups([(r, t) for r, t, _ in FIRST_GROUPS], tmp_path) == [go for _, _, go in FIRST_GROUPS]


# pieces of Go's syntax a random regex is made of, and the characters of the texts it is matched against
_ATOMS = ["a", "b", "K", "é", "\u212a", ".", "[a-c]", "[^a]", "[[:alpha:]]", "[[:^digit:]]", r"\d", r"\W", r"\pL",
          r"\PN", r"\p{Lu}", r"\b", r"\B", "^", "$", r"\A", r"\z", r"\Qa.\E", r"\x{e9}", r"\n", "-", ";", "{", "x{,2}"]
_FLAGS = ["(?i)", "(?m)", "(?s)", "(?U)", "(?-i)", "(?im)"]
_OPENINGS = ["(", "(?:", "(?i:", "(?P<g>", "(?s-i:", "(?U:"]
_REPEATS = ["*", "+", "?", "*?", "+?", "{1,2}", "{2}", "{0,1}?", "{2,}"]
_ALPHABET = "abAKk\u212a\né1_-.;{},xſ"


def _random_regex(chance: random.Random, depth: int = 0) -> str:
    pieces = []
    for _ in range(chance.randint(1, 4)):
        kind = chance.random()
        if kind < 0.15:
            pieces.append(chance.choice(_FLAGS))
            continue
        if kind < 0.35 and depth < 2:
            inner = "|".join(_random_regex(chance, depth + 1) for _ in range(chance.randint(1, 2)))
            piece = chance.choice(_OPENINGS) + inner + ")"
        else:
            piece = chance.choice(_ATOMS)
        pieces.append(piece + (chance.choice(_REPEATS) if chance.random() < 0.3 else ""))
    return "".join(pieces)


def _random_cases(count: int, seed: int) -> list[tuple[str, str]]:
    chance = random.Random(seed)
    return [(_random_regex(chance), "".join(chance.choice(_ALPHABET) for _ in range(chance.randint(0, 5))))
            for _ in range(count)]


@pytest.mark.parametrize("seed", [2026, 1201])
def test_random_regexes_match_as_in_go(tmp_path, seed):
    """Regexes drawn from Go's syntax (classes, assertions, flags, groups, repeats, \\Q...\\E) over texts of letters
    that fold, newlines and punctuation: the translation finds what Go finds and groups what Go groups."""
    cases = _random_cases(300, seed)
    go = go_searches(cases, tmp_path)
    assert [(r, t, _searched(r, t)) for r, t in cases] == [(r, t, g) for (r, t), g in zip(cases, go)]
    grouped = [(f"({r})" if k % 2 else f"(?s:.)*({r}).*", t) for k, (r, t) in enumerate(cases)]
    grouped = [(r, t) for r, t in grouped if not (unreadable(r, groups=True) and unreadable(r) is None)]
    assert len(grouped) > 200
    go = go_first_groups(grouped, tmp_path)
    assert [(r, t, _first_group(r, t)) for r, t in grouped] == [(r, t, g) for (r, t), g in zip(grouped, go)]


def test_a_script_class_is_refused_saying_so():
    """Go takes \\p{Greek}; Python's re and unicodedata hold no script table: refused, not guessed."""
    problem = unreadable(SCRIPT)
    assert problem is not None and not problem.refused
    assert "\\p{Greek}" in str(problem) and "script" in str(problem)


# a group repeated without bound that can match empty: Go's group holds the last pass that matched something
LOOSE_GROUPS = [("(a*)*", "aa", "aa"), ("(a*)+", "aa", "aa"), ("(|a)*", "aa", "a"), ("(a|)+", "aa", "a"),
                ("(a?)*", "a", "a"),
                ("(\\b)*x", "x", "")]


def test_groups_python_records_otherwise_are_refused(tmp_path):
    """Go's groups of such a loop are not re's: a replacement reading them is refused; whether it matches is not."""
    assert go_first_groups([(r, t) for r, t, _ in LOOSE_GROUPS], tmp_path) == [g for _, _, g in LOOSE_GROUPS]
    for regex, text, _ in LOOSE_GROUPS:
        assert unreadable(regex, groups=True) is not None and go_compiled(regex).fullmatch(text), regex
        assert "can match empty" in str(unreadable(regex, groups=True))


def test_a_nesting_go_takes_and_python_cannot_read_is_refused_saying_so():
    nested = "(" * 900 + "a" + ")" * 900  # Go takes up to 1,000 levels
    problem = unreadable(nested)
    assert problem is not None and not problem.refused and "nest deeper" in str(problem)
    assert go_compiled("(" * 40 + "a" + ")" * 40).fullmatch("a")


def test_a_group_named_as_go_1_22_names_it_is_a_group():
    """(?<name>re) is Go 1.22's spelling of (?P<name>re) (regexp/syntax; promtool's Go 1.19 refuses it, so the tables
    cannot ask it): the same group; lint's PR006 says which agents and Prometheus builds refuse it."""
    assert go_compiled("^(?<gpu>[0-9]+)-(.*)$", groups=True).fullmatch("12-x").groups() == ("12", "x")
    assert go_compiled("(?<gpu>[0-9]+)").pattern == go_compiled("(?P<gpu>[0-9]+)").pattern


def test_go_refusals_are_gos_words():
    problem = unreadable("(?=a)")
    assert problem is not None and problem.refused and "invalid or unsupported Perl syntax" in str(problem)


def test_the_translation_warns_of_nothing():
    """Python's re warns (FutureWarning) of `[[:` as a possible nested set: the translation never gives it Go's text."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for regex, _, _ in SEARCHES:
            try:
                go_compiled(regex + "x")  # (a pattern of its own: not one the cache holds)
            except Unreadable:
                pass


def test_the_translation_is_python_without_flags():
    """No inline flag reaches re (Python refuses a global flag past the start): each piece is written with its own."""
    assert go_compiled("a(?i)b").pattern == "a[Bb]"
    assert go_compiled("(?i)k").pattern == "[Kk\u212a]"
    assert go_compiled("[^a]").pattern == "[^a]"
    assert go_compiled("^a$").pattern == "\\Aa\\Z"
    assert re.compile(go_compiled("(?i)x(?m)$").pattern).search("X\n")
