"""Go's regexp itself, asked through promtool (a Go program: Prometheus 2.42 is built with Go 1.19): whether a regex
matches a text as the agent's label matchers do (regexp.MatchString, unanchored), and what its first group holds when
it matches the whole text as a relabel rule does. One `promtool test rules` run answers a whole list.

Each text is a series' label value; label_replace compiles the regex as Prometheus does, `^(?:regex)$`: the unanchored
search is asked as `(?s:.)*(?:regex)(?s:.)*` (for a regex without an unterminated \\Q), the first group as `[$1]` written
into a label of its own. A regex Go refuses is answered None ("invalid regular expression").
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
from pathlib import Path

from tests.support.prometheus_server import binary

_LABEL_SETS = re.compile(r'\{((?:[^"{}]|"(?:[^"\\]|\\.)*")*)\}')  # a value may hold braces
_CASE = re.compile(r'case=\\?"(\d+)')  # (in an expression promtool quotes: case=\"0\")


def go_searches(cases: list[tuple[str, str]], folder: Path) -> list[bool | None]:
    """For each (regex, text): whether Go's regexp finds the regex in the text (None: Go refuses the regex)."""
    answers = _asked([("(?s:.)*(?:" + regex + ")(?s:.)*", text) for regex, text in cases], "yes", folder)
    return [None if answer is _REFUSED else answer is not None for answer in answers]


def go_first_groups(cases: list[tuple[str, str]], folder: Path) -> list[str | bool | None]:
    """For each (regex, text): what the first group holds where the regex matches the whole text (False: it does not
    match; None: Go refuses the regex)."""
    answers = _asked(cases, "[$1]", folder)
    return [None if answer is _REFUSED else False if answer is None else answer[1:-1] for answer in answers]


_REFUSED = object()


def _asked(cases: list[tuple[str, str]], replacement: str, folder: Path) -> list:
    """For each (regex, text): the `hit` label label_replace writes (None: none; _REFUSED: Go refuses the regex)."""
    series = [{"series": f"s{{case={_quoted(str(k))}, v={_quoted(text)}}}", "values": "1"}
              for k, (_, text) in enumerate(cases)]
    tests = [{"expr": f"label_replace(s{{case={_quoted(str(k))}}}, \"hit\", {_quoted(replacement)}, \"v\", "
                      f"{_quoted(regex)})", "eval_time": "0m", "exp_samples": []} for k, (regex, _) in enumerate(cases)]
    (folder / "rules.yaml").write_text("groups: []\n")
    document = {"rule_files": ["rules.yaml"],
                "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": tests}]}
    (folder / "tests.yaml").write_text(_printable(json.dumps(document, ensure_ascii=False)))
    run = subprocess.run([binary("promtool"), "test", "rules", "tests.yaml"], cwd=folder, capture_output=True,
                         text=True, timeout=600)
    answers: list = [None] * len(cases)
    for line in (run.stdout + run.stderr).splitlines():
        if "err: invalid regular expression" in line:
            answers[int(_CASE.search(line).group(1))] = _REFUSED
        elif "got:" in line:
            for labels in _LABEL_SETS.findall(line.split("got:", 1)[1]):
                hit = re.search(r'hit="((?:[^"\\]|\\.)*)"', labels)
                if hit:
                    answers[int(_CASE.search(labels).group(1))] = ast.literal_eval(f'"{hit.group(1)}"')  # Go's quoting
    if not any("got:" in line or "err:" in line for line in (run.stdout + run.stderr).splitlines()):
        raise AssertionError(f"promtool answered nothing of {len(cases)} cases:\n{run.stdout}{run.stderr}")
    return answers


def _quoted(text: str) -> str:
    """A PromQL double-quoted string."""
    return _printable(json.dumps(text, ensure_ascii=False))


def _printable(text: str) -> str:
    """JSON text the YAML reader takes: DEL and the C1 controls escaped (JSON escapes those below a space)."""
    return "".join(f"\\u{ord(c):04x}" if 0x7F <= ord(c) <= 0x9F or c in "\u2028\u2029\ufeff" else c for c in text)
