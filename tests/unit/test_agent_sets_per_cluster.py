"""With agent.metric_selection: used each cluster's agent publishes the dimension sets that cluster's widgets and alarms
read, and no other (issue 10: "the agent config publishes exactly the dimension sets the dashboards and alarms
query").

Found by s46's audit, not mended: two clusters, one saying `exporter: {mig: none}`. The plain cluster's agent still
declares the MIG idle alarm's set of engine activity ([ClusterName, namespace, pod, gpu, GPU_I_ID, GPU_I_PROFILE,
share]), which only the other cluster's alarm reads (render.cloudwatch.queried_sets joins every cluster's MIG group),
and lint's AG001 warning compares a cluster's declarations with every cluster's queries together, so it says nothing.
It publishes no metric while the plain cluster has no MIG instance (GPU_I_PROFILE absent): a dead declaration, no
bill. Strict xfail until queried_sets and the warning are per cluster.
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.lint.feed_rules import _declarations, _every_job, _published, _queried
from generator.lint.subject import LintInput
from generator.project import load_project

SETTINGS = """clusters:
  - {name: gpu-cluster, region: us-east-1}
  - {name: plain, region: us-east-1, exporter: {mig: none}}
agent:
  metric_selection: used
"""


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="a cluster without MIG declares the MIG idle alarm's set another cluster reads")
def test_each_clusters_agent_declares_only_what_its_own_widgets_and_alarms_read(tmp_path):
    (tmp_path / "gpudash.yaml").write_text(SETTINGS)
    project = load_project(tmp_path / "gpudash.yaml")
    subject = LintInput(build(project, grafana=False), project.settings, project.catalog, None)
    read: dict[str | None, set] = {}
    for _, metric, _, dims, cluster in _queried(subject):
        read.setdefault(cluster, set()).add((metric, dims))
    for cluster in subject.clusters():
        declared = {(field.name, dims) for patterns, dims in _published(
            _declarations(subject, cluster), project.settings.scrape.job_name, _every_job(subject, cluster))
            for field in project.catalog if any(p.search(field.name) for p in patterns)}
        unread = declared - read.get(cluster.name, set()) - read.get(None, set())
        assert not unread, (cluster.name, sorted((m, sorted(d)) for m, d in unread))
