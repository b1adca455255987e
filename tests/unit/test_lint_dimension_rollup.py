"""AG001: the OTel pipeline's awsemf exporter publishes the declared dimension sets alone only with
`dimension_rollup_option: NoDimensionRollup`.

awsemf's default is ZeroAndSingleDimensionRollup (exporter/awsemfexporter config.go); with it, or with
SingleDimensionRollupOnly, metric_translator.go's groupedMetricToCWMeasurementsWithFilters appends dimensionRollup's
sets to every matched declaration's: one of no dimension (zero) and one per label of the point ([ClusterName], [gpu],
[pod], [UUID], ...). Each is one more custom metric per field and label value, and [ClusterName] then holds every
point the declarations take, the agent's marked copies among them (a GPU's flag past a level, 0 or 1, a pod's count of
GPUs), which the widgets and alarms reading a field over the cluster ([ClusterName]: the data-missing alarm's count of
observations, "Hottest GPU") read as more readings. A build edited so is not what lint proves.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from generator.artifacts import build
from generator.project import load_project
from generator.lint import run
from generator.lint.feed_rules import RULES
from tests.support.lint_input import lint_input


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rollup")
    (folder / "gpudash.yaml").write_text("")
    return load_project(folder / "gpudash.yaml")


def _ag001(project, option) -> list[str]:
    artifacts = build(project, grafana=False)
    agent = artifacts.agents[0]
    otel = copy.deepcopy(agent.otel)
    exporter = otel["exporters"]["awsemf/gpudash"]
    if option is None:
        exporter.pop("dimension_rollup_option")
    else:
        exporter["dimension_rollup_option"] = option
    artifacts = replace(artifacts, agents=(replace(agent, otel=otel), *artifacts.agents[1:]))
    return [f.message for f in run([r for r in RULES if r.id == "AG001"], lint_input(project, artifacts))]


@pytest.mark.parametrize("option", [None, "ZeroAndSingleDimensionRollup", "SingleDimensionRollupOnly"])
def test_a_rollup_of_the_declared_sets_fails_ag001(project, option):
    findings = _ag001(project, option)
    assert any("dimension_rollup_option" in f and "[ClusterName]" in f for f in findings), findings


def test_no_rollup_is_quiet(project):
    assert _ag001(project, "NoDimensionRollup") == []
