"""AG001 reads a hand-edited label matcher's regex as the agent does: awsemf compiles it with Go's regexp (RE2
syntax), whose documented syntax (regexp/syntax) holds an ASCII class `[[:digit:]]`, the end of the text `\\z` and a
Unicode class `\\pN`, which Python's re reads otherwise or refuses. A per-GPU matcher on `gpu` written with any of them
passes every GPU's index (0, 1, 2...), as `[0-9]+$` does, so the set loses no GPU and lint must say nothing of it.

On the OTel pipeline the per-GPU set's one matcher also keeps out the points the agent makes under a mark (its marks'
values all empty): the matcher edited keeps that and adds `gpu` to its names (awsemf takes a point one matcher passes,
so a matcher of its own on `gpu` would let the marked points in).
"""

from __future__ import annotations

import pytest

from generator.lint import run
from generator.lint.feed_rules import RULES
from tests.support.lint_input import lint_input
from tests.unit.test_lint_label_matchers import (GPU_SET, _ag001, _edited, _gpu_declaration, _published,  # noqa: F401
                                                projects)


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
@pytest.mark.parametrize("gpu", [r"[0-9]+$", r"[[:digit:]]+$", r"[0-9]+\z", r"\pN+$"],
                         ids=["python-alike", "posix-class", "z", "unicode"])
def test_a_go_regex_passing_every_gpu_is_not_flagged(projects, pipeline, gpu):  # noqa: F811
    def edit(declarations):
        declaration = _gpu_declaration(declarations)
        if "source_labels" in declaration:
            declaration.update(source_labels=["gpu"], label_matcher="^" + gpu)
        else:
            [matcher] = declaration["label_matchers"]
            assert matcher["regex"] == "^" + ";" * (len(matcher["label_names"]) - 1) + "$"  # every mark empty
            matcher.update(label_names=[*matcher["label_names"], "gpu"],
                           regex="^" + ";" * len(matcher["label_names"]) + gpu)

    findings = _ag001(projects[pipeline], _edited(projects[pipeline], edit))
    assert findings == [], findings


def _matching(regex: str):
    """An edit: the per-GPU declaration's one label matcher's regex is `regex` (on the JSON path, over `gpu`)."""
    def edit(declarations):
        declaration = _gpu_declaration(declarations)
        if "source_labels" in declaration:
            declaration.update(source_labels=["gpu"], label_matcher=regex)
        else:
            declaration["label_matchers"][0]["regex"] = regex
    return edit


def _pr005(project, artifacts) -> list[str]:
    return [f"{f.severity} {f.where}: {f.message}" for f in run([r for r in RULES if r.id == "PR005"],
                                                                  lint_input(project, artifacts))]


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
@pytest.mark.parametrize("regex", ["^(?=0)", r"^(0)\1", "^(?<!x)0"], ids=["lookahead", "backreference", "lookbehind"])
def test_a_matcher_python_takes_and_go_refuses_is_an_error_saying_the_agent_drops_the_declaration(
        projects, pipeline, regex):  # noqa: F811
    """Python's re compiles these; Go's regexp refuses them (awsemf's LabelMatcher.init: regexp.Compile), so the agent
    drops the declaration: PR005 says so, and AG001 reads the matcher as passing nothing."""
    artifacts = _edited(projects[pipeline], _matching(regex))
    findings = _pr005(projects[pipeline], artifacts)
    assert len(findings) == 1 and findings[0].startswith("error ") and repr(regex) in findings[0], findings
    assert "does not compile" in findings[0] and "awsemf drops the declaration" in findings[0], findings
    if pipeline == "classic":  # older agents compile it with their own EMF processor's regexp.MustCompile
        assert "an older one, with its own EMF processor (regexp.MustCompile), stops as it starts" in findings[0]
    assert any("pass only some, or none" in f for f in _ag001(projects[pipeline], artifacts))


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_a_metric_selector_go_refuses_is_an_error_saying_the_agent_stops(projects, pipeline):  # noqa: F811
    """awsemf compiles metric selectors with regexp.MustCompile: one Go refuses (a lookahead) stops the agent."""
    def edit(declarations):
        declaration = _gpu_declaration(declarations)
        key = "metric_selectors" if "source_labels" in declaration else "metric_name_selectors"
        declaration[key] = ["^DCGM_(?!FI_PROF)", *declaration[key][1:]]

    findings = _pr005(projects[pipeline], _edited(projects[pipeline], edit))
    assert len(findings) == 1 and findings[0].startswith("error "), findings
    assert "'^DCGM_(?!FI_PROF)'" in findings[0] and "the agent stops as it starts" in findings[0], findings


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_a_script_class_go_takes_is_a_warning_naming_what_lint_cannot_read(projects, pipeline):  # noqa: F811
    """\\p{Greek} compiles in Go; lint cannot tell which values it passes (Python holds no script table): a warning
    naming the matcher and the class, not a false verdict on the agent."""
    regex = r"^\P{Greek}+$"
    findings = _pr005(projects[pipeline], _edited(projects[pipeline], _matching(regex)))
    assert len(findings) == 1 and findings[0].startswith("warning "), findings
    assert repr(regex) in findings[0] and "\\p{Greek}" in findings[0] and "script" in findings[0], findings


@pytest.mark.parametrize("matcher", [{"regex": ""}, {"label_names": []}], ids=["no regex", "no label names"])
def test_a_label_matcher_awsemf_cannot_init_drops_the_declaration_and_lint_says_so(projects, matcher):  # noqa: F811
    """awsemf's LabelMatcher.init refuses a matcher without a regex or without label names, and Config.Validate drops
    the declaration ("Dropped metric declaration."): the per-GPU set is published for no GPU. AG003 names the matcher;
    AG001 reads the set as published for none (it read the empty regex as passing every point)."""
    def edit(declarations):
        _gpu_declaration(declarations)["label_matchers"][0].update(matcher)

    artifacts = _edited(projects["otel"], edit)
    assert _published(artifacts, "DCGM_FI_DEV_GPU_TEMP", GPU_SET) == []
    said = [f"{f.severity} {f.where}: {f.message}" for f in run([r for r in RULES if r.id == "AG003"],
                                                                 lint_input(projects["otel"], artifacts))]
    assert len(said) == 1 and "label_matchers[0]" in said[0] and "awsemf drops" in said[0], said
    assert any("pass only some, or none" in f for f in _ag001(projects["otel"], artifacts))


@pytest.mark.parametrize("order", [1, -1], ids=["unread first", "unread last"])
def test_a_matcher_lint_cannot_read_passes_nothing_wherever_it_stands(order):
    """awsemf takes a point that one of a declaration's label matchers passes, in whatever order they stand: beside a
    matcher every GPU index passes, one lint cannot read as Go does (a script class) leaves every GPU taken. Lint read
    the declaration as taking no GPU where that matcher stood first (it stopped there), every GPU where it stood last."""
    from generator.lint.label_matchers import judged

    unread = {"label_names": ["gpu"], "regex": r"^\p{Greek}"}
    digits = {"label_names": ["gpu"], "regex": "^[0-9]+$"}
    assert judged({"label_matchers": [unread, digits][::order]}, {}, ["gpu"]) == (True, True)


@pytest.mark.parametrize("refused", [{"regex": ""}, {"regex": "(?=0)"}, {"label_names": []}],
                         ids=["no regex", "regex Go refuses", "no label names"])
def test_lint_and_the_agent_rendering_drop_a_declaration_with_a_matcher_awsemf_refuses(refused):
    """awsemf's Config.Validate drops a declaration with one label matcher its LabelMatcher.init refuses, whatever
    the others pass: lint's judgement and render/agent_otel.matched_by (which generate's node means read) take no
    point into it. matched_by took the points the other matcher passes."""
    from generator.lint.label_matchers import judged
    from generator.render.agent_otel import matched_by

    declaration = {"label_matchers": [{"label_names": ["gpu"], "regex": "^[0-9]+$"},
                                      {"label_names": ["gpu"], "regex": "^0$", **refused}]}
    assert judged(declaration, {}, ["gpu"]) == (False, False)
    assert not any(matched_by(declaration, {"gpu": gpu}) for gpu in ("0", "1", "15"))


@pytest.mark.parametrize("written", ["", None])
def test_an_empty_label_matcher_on_the_json_path_is_an_error_saying_awsemf_drops_the_declaration(
        projects, written):  # noqa: F811
    """The agent's translator (translator/translate/otel/exporter/awsemf/prometheus.go) makes source_labels and a
    label_matcher written empty one awsemf label matcher of an empty regex, which LabelMatcher.init refuses ("regex not
    specified for label matcher"): the declaration is dropped, and the agent model publishes the per-GPU set for no GPU.
    AG003 says so; left out, label_matcher is no matcher: every GPU is published."""
    def empty(declarations):
        _gpu_declaration(declarations)["label_matcher"] = written

    def left_out(declarations):
        del _gpu_declaration(declarations)["label_matcher"]

    def ag003(edit):
        return [f"{f.severity} {f.where}: {f.message}" for f in run([r for r in RULES if r.id == "AG003"],
                                                                    lint_input(projects["classic"],
                                                                               _edited(projects["classic"], edit)))]

    assert _published(_edited(projects["classic"], empty), "DCGM_FI_DEV_GPU_TEMP", GPU_SET) == []
    assert len(_published(_edited(projects["classic"], left_out), "DCGM_FI_DEV_GPU_TEMP", GPU_SET)) == 3
    said = ag003(empty)
    assert len(said) == 1 and said[0].startswith("error ") and "label_matcher is empty" in said[0], said
    assert "drops the declaration" in said[0] and "regex not specified for label matcher" in said[0], said
    assert ag003(left_out) == []


def test_ag001_reads_an_empty_label_matcher_as_awsemf_does_publishing_nothing(projects):  # noqa: F811
    """One reading of a JSON-path label_matcher written empty, AG003's and the agent's: awsemf drops the declaration, so
    the per-GPU set it declared is published for no GPU, and AG001 names the widgets reading that set (it took the empty
    matcher for none, every point passing, and said nothing)."""
    def empty(declarations):
        _gpu_declaration(declarations)["label_matcher"] = ""

    artifacts = _edited(projects["classic"], empty)
    assert _published(artifacts, "DCGM_FI_DEV_GPU_TEMP", GPU_SET) == []
    findings = _ag001(projects["classic"], artifacts)
    assert any("'GPU temperature'" in f and "DCGM_FI_DEV_GPU_TEMP with dimensions [ClusterName, gpu, node]" in f
               for f in findings), findings
