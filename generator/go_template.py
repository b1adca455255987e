"""Alert texts as Prometheus reads them: Go templates (text/template, with Prometheus' functions and variables).

Prometheus expands every annotation and label of an alerting rule as a Go template and refuses to load a rules file
with one that does not parse ("function \"hot\" not defined", "unclosed action"): every rule of the file is lost. An
alarm definition's title and description are written there; a text that is a template Prometheus runs (`{{ $value }}`,
`{{ $labels.pod | toUpper }}`) is kept as written, any other is written as literal text.
"""

from __future__ import annotations

import re

# Go's builtins and keywords, and the functions and variables Prometheus gives an alert's templates
# (prometheus/template/template.go, rules/alerting.go).
FUNCTIONS = frozenset((
    "and or not len index slice print printf println html js urlquery call eq ne lt le gt ge "
    "if else end range with define template block break continue nil true false "
    "query first label value strvalue args reReplaceAll safeHtml match title toUpper toLower graphLink tableLink "
    "sortByLabel humanize humanize1024 humanizeDuration humanizePercentage humanizeTimestamp toTime toDuration "
    "pathPrefix externalURL parseDuration stripPort stripDomain now").split())
VARIABLES = frozenset(("$", "$value", "$labels", "$externalLabels", "$externalURL"))
_OPENS = frozenset(("if", "range", "with", "define", "block"))

_ACTION = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_TOKEN = re.compile(r'\s+|"(?:[^"\\\n]|\\.)*"|`[^`]*`|\'(?:[^\'\\]|\\.)+\'|[-+]?\d[\w.+-]*|:=|=|\||\(|\)|,'
                    r'|\$\w*(?:\.\w+)*|(?:\.\w+)+|\.|\w+(?:\.\w+)*')
_COMMENT = re.compile(r"^-?\s*/\*.*\*/\s*-?$", re.DOTALL)
LITERAL_OPEN = '{{ "{{" }}'
# `$x :=`, `$x =` and range's two variables, `range $i, $e :=`
_DECLARED = re.compile(r"(\$\w+(?:\s*,\s*\$\w+)?)\s*:?=")


def problem(text: str) -> str | None:
    """Why Prometheus would refuse `text` as an alert template, or None when it parses (as far as its function and
    variable names go: a template naming none that Prometheus lacks and leaving no action or block open)."""
    if "{{" not in text:
        return None
    declared = {name for m in _DECLARED.finditer(text) for name in re.findall(r"\$\w+", m.group(1))}
    blocks: list[str] = []
    for action in _ACTION.finditer(text):
        inside = action.group(1)
        if _COMMENT.match(inside):
            continue
        inside = inside[1:] if inside.startswith("-") else inside
        inside = inside[:-1] if inside.endswith("-") else inside
        at, words = 0, []
        for token in _TOKEN.finditer(inside):
            if token.start() != at:
                break
            at = token.end()
            words.append(token.group())
        if at != len(inside):
            return f"{{{{{action.group(1)}}}}}: unexpected {inside[at:at + 10]!r}"
        words = [w for w in words if not w.isspace()]
        if not words:
            return "an empty action {{}}"
        for word in words:
            name = word.split(".")[0]
            if word[0] == "$" and name not in VARIABLES and name not in declared:
                return f"undefined variable {name}"
            if word[0].isalpha() or word[0] == "_":
                if name not in FUNCTIONS:
                    return f"function {name!r} not defined"
        if words[0] in _OPENS:
            blocks.append(words[0])
        elif words[0] == "end":
            if not blocks:
                return "{{ end }} with no block open"
            blocks.pop()
        elif words[0] == "else" and not blocks:
            return "{{ else }} outside a block"
    rest = _ACTION.sub("", text)
    if "{{" in rest:
        return "an action {{ not closed with }}"
    if blocks:
        return f"{{{{ {blocks[-1]} }}}} not closed with {{{{ end }}}}"
    return None


def as_alert_text(text: str) -> str:
    """`text` as an alert's annotation: as written when Prometheus runs it as a template, else literal (each `{{`
    written as the action that prints it, so the text reads as the definition wrote it)."""
    if not text or problem(text) is None:
        return text
    return text.replace("{{", LITERAL_OPEN)
