"""The agent's exporter job reads the path the exporter serves: dcgm-exporter answers at /metrics only, so a job whose
metrics_path is another (the blog's job copies Fluent Bit's /api/v1/metrics/prometheus, bug 4) fails every scrape and
publishes no GPU. Lint said nothing of a job edited so, on either pipeline."""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.lint.feed_rules import RULES
from generator.lint.runner import run
from tests.support.lint_input import exporter_job_edited, lint_input
from tests.support.projects import bundled_project

PIPELINES = {"otel": "", "classic": "agent:\n  pipeline: classic\n"}


def _path_edited(artifacts, path: str):
    return exporter_job_edited(artifacts, lambda job: job.update(metrics_path=path))


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_an_exporter_job_reading_another_path_fails_ag007(pipeline):
    project = bundled_project(PIPELINES[pipeline])
    artifacts = build(project, grafana=False)

    def findings(built):
        return [f"{f.where}: {f.message}" for f in run([r for r in RULES if r.id == "AG007"], lint_input(project, built))]

    assert findings(artifacts) == []
    assert findings(_path_edited(artifacts, "/api/v1/metrics/prometheus")) == [
        "k8s/cwagent-prometheus-config-gpu-cluster.yaml: the exporter job of cluster gpu-cluster reads metrics_path "
        "'/api/v1/metrics/prometheus': the exporter serves its metrics at /metrics only, so every scrape fails and no "
        "GPU is published (write metrics_path: /metrics)"]
