"""AG001 reads a hand-edited label matcher's regex as the agent does: awsemf compiles it with Go's regexp (RE2
syntax), whose documented syntax (regexp/syntax) holds an ASCII class `[[:digit:]]`, the end of the text `\\z` and a
Unicode class `\\pN`. A per-GPU matcher on `gpu` written with any of them passes every GPU's index (0, 1, 2...), as
`^[0-9]+$` does, so the set loses no GPU and lint must say nothing of it.
"""

from __future__ import annotations

import pytest

from tests.unit.test_lint_label_matchers import _ag001, _edited, _gpu_declaration, projects  # noqa: F401

GO_ONLY = ("Lint runs the agent's label matchers with Python's re, which reads Go's `[[:digit:]]` as a class of "
           "'[', ':', 'd', 'i', 'g', 't' and refuses `\\z` and `\\pN`: a matcher the agent passes every GPU through "
           "is reported as publishing only some or none (about 20 false AG001 errors)")


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=GO_ONLY)
@pytest.mark.parametrize("pipeline", ["otel", "classic"])
@pytest.mark.parametrize("regex", [r"^[[:digit:]]+$", r"^[0-9]+\z", r"^\pN+$"], ids=["posix-class", "z", "unicode"])
def test_a_go_regex_passing_every_gpu_is_not_flagged(projects, pipeline, regex):  # noqa: F811
    def edit(declarations):
        declaration = _gpu_declaration(declarations)
        if "source_labels" in declaration:
            declaration.update(source_labels=["gpu"], label_matcher=regex)
        else:
            declaration["label_matchers"] = [{"label_names": ["gpu"], "separator": ";", "regex": regex}]

    findings = _ag001(projects[pipeline], _edited(projects[pipeline], edit))
    assert findings == [], findings
