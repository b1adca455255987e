"""The compiled regular expressions of a gpudash command kept between runs (generator/regex_code.py): a run that finds
a pattern in the cache compiles none and gets the same pattern; anything it cannot trust is compiled as before. Each
check runs in a fresh interpreter (the cache hooks the process's `re` once)."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

from generator import kept_code, regex_code

ROOT = Path(__file__).resolve().parents[2]

# Patterns of every kind the engine takes (groups, names, flags, bytes, classes beyond the Basic Multilingual Plane,
# look-arounds, back references), each compiled and used; the run prints what they found and what the cache did.
PROGRAM = '''
import json, re, sys
from generator import regex_code

cache = regex_code.install(sys.argv[1])
patterns = [
    (r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})", 0, "on 2026-12 and 2027-01"),
    (r"^(above|at or above) (-?[0-9]+(?:\\\\.[0-9]+)?)$", re.MULTILINE, "x\\\\nat or above -1.5\\\\nabove 3"),
    ("[^\\\\t\\\\n\\\\r -~\\\\x85\\\\xa0-\\\\ud7ff\\\\ue000-\\\\ufffd\\\\U00010000-\\\\U0010ffff]", 0, "ok\\\\x01\\\\x7f\\\\ufffe"),
    (r"(?i)gpu(?=-)|(\\\\w)\\\\1", 0, "GPU-a xx yy"),
    (r"(?x) a  b # spaced", 0, "ab ab"),
]
found = [[m.group(0) for m in re.compile(p, f).finditer(s)] for p, f, s in patterns]
found.append(re.compile(rb"(?P<b>[0-9]+)").match(b"42").groupdict()["b"].decode())
found.append(sorted(re.compile(patterns[0][0]).groupindex.items()))
print(json.dumps({"found": found, "compiled": cache.compiled if cache else None, "flags": re.compile("a", re.I).flags}))
'''


def _run(tmp_path: Path, cache: Path, hooked: bool = True) -> dict:
    program = PROGRAM if hooked else PROGRAM.replace("cache = regex_code.install(sys.argv[1])", "cache = None")
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    environment.pop("PYTHONDONTWRITEBYTECODE", None)  # this machine's shells set it; the cache is written as bytecode
    result = subprocess.run([sys.executable, "-c", program, str(cache)], capture_output=True, text=True,
                            env=environment, cwd=tmp_path, check=True)
    return json.loads(result.stdout)


def test_a_run_takes_the_patterns_the_run_before_compiled_and_they_find_the_same(tmp_path):
    cache = tmp_path / "regex-code.marshal"
    plain = _run(tmp_path, cache, hooked=False)
    first = _run(tmp_path, cache)
    assert first["compiled"] > 0 and cache.exists()
    again = _run(tmp_path, cache)
    assert again["compiled"] == 0
    assert plain["found"] == first["found"] == again["found"]
    assert plain["flags"] == first["flags"] == again["flags"]


def test_the_code_kept_is_the_code_re_compiles(tmp_path):
    """Each entry is what re's own compiler gives the engine for its pattern and flags."""
    from re import _compiler, _parser

    cache = tmp_path / "regex-code.marshal"
    _run(tmp_path, cache)
    _, codes, _ = marshal.loads(cache.read_bytes())
    assert codes
    for (pattern, flags), (all_flags, code, groups, groupindex, indexgroup) in codes.items():
        parsed = _parser.parse(pattern, flags)
        assert code == list(_compiler._code(parsed, flags))
        assert (all_flags, groups, groupindex) == (flags | parsed.state.flags, parsed.state.groups - 1,
                                                  dict(parsed.state.groupdict))


def test_a_damaged_cache_or_one_of_another_interpreter_is_compiled_as_before(tmp_path):
    cache = tmp_path / "regex-code.marshal"
    expected = _run(tmp_path, cache, hooked=False)["found"]
    _run(tmp_path, cache)
    version, codes, ages = marshal.loads(cache.read_bytes())
    damaged = {key: (entry[0], [255] * len(entry[1]), *entry[2:]) for key, entry in codes.items()}
    for text in (kept_code.sealed(marshal.dumps((version, damaged, ages))),
                 kept_code.sealed(marshal.dumps(((0, b""), codes, ages))), b"not marshal"):
        cache.write_bytes(text)
        run = _run(tmp_path, cache)
        assert run["found"] == expected and run["compiled"] > 0


def test_over_many_runs_each_with_a_pattern_of_its_own_the_file_holds_what_is_in_use(tmp_path, monkeypatch):
    """A pattern made from a setting (the build folder's name in the staging folders' pattern) is another at each run
    that changes the setting: the file holds those of the runs that wrote it lately, not every one ever compiled; a
    run that compiles nothing writes nothing."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # this machine's shells set it; written as bytecode is
    from re import _compiler

    path = tmp_path / "regex-code.marshal"
    common = [(r"\A(?:sum|count)\Z", 0), (r"[A-Za-z0-9_|-]+", 0), (r"(?i)S(u)M", 0)]
    held = []
    for run in range(40):
        cache = regex_code._Cache(str(path), _compiler)
        for pattern, flags in common:
            assert cache.compile(pattern, flags).match("sum")
        own = cache.compile(rf"\.build{run}\.new\-([0-9a-f]{{12}})\.lock")
        assert own.fullmatch(f".build{run}.new-{'a' * 12}.lock")
        cache.save()
        held.append(marshal.loads(path.read_bytes())[1])
    assert len(held[39]) == len(held[19]) < len(common) + 20  # before: one more at every run
    assert {key for key in held[39] if "build" not in key[0]} == set(common)
    assert rf"\.build39\.new\-([0-9a-f]{{12}})\.lock" in {key[0] for key in held[39]}
    assert rf"\.build0\.new\-([0-9a-f]{{12}})\.lock" not in {key[0] for key in held[39]}
    written = path.stat().st_mtime_ns, path.read_bytes()
    again = regex_code._Cache(str(path), _compiler)
    for pattern, flags in common:
        again.compile(pattern, flags)
    again.save()
    assert (path.stat().st_mtime_ns, path.read_bytes()) == written and again.compiled == 0


def test_a_pattern_compiled_with_the_debug_flag_prints_its_tree_at_every_compile(tmp_path, capsys):
    """re.DEBUG prints the parsed pattern as `re` compiles it, and `re` keeps no such pattern in its own cache: the
    kept code, which skips the parse, must not take it (nor keep it)."""
    import re
    from re import _compiler

    cache = regex_code._Cache(str(tmp_path / "regex-code.marshal"), _compiler)
    printed = []
    for _ in range(2):
        assert cache.compile("ab+", re.DEBUG.value).match("abb")  # re.compile gives its compiler the int
        printed.append(capsys.readouterr().out)
    assert all("MAX_REPEAT 1 MAXREPEAT" in out for out in printed) and not cache.codes, printed
