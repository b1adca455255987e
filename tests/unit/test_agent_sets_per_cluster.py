"""With agent.metric_selection: used each cluster's agent publishes the dimension sets that cluster's widgets and alarms
read, and no other (issue 10: "the agent config publishes exactly the dimension sets the dashboards and alarms
query").

Found on a fleet of its own: two clusters, one saying `exporter: {mig: none}`. The plain cluster's agent declared the
MIG idle alarm's set of engine activity ([ClusterName, namespace, pod, gpu, GPU_I_ID, GPU_I_PROFILE, share]), which only
the other cluster's alarm reads (render.cloudwatch.queried_sets joined every cluster's MIG group), and lint's AG001
warning compared a cluster's declarations with every cluster's queries together, so it said nothing. Each cluster's
agent is now made from what its exporter.mig group's widgets and alarms read (artifacts.agents), and the warning
compares each cluster's declarations with its own queries.
"""

from __future__ import annotations

from dataclasses import replace

from generator.artifacts import build
from generator.lint.feed_rules import _declarations, _every_job, _published, _queried, used_metrics_selected
from generator.lint.subject import LintInput
from generator.project import load_project

SETTINGS = """clusters:
  - {name: gpu-cluster, region: us-east-1}
  - {name: plain, region: us-east-1, exporter: {mig: none}}
agent:
  metric_selection: used
"""


def test_each_clusters_agent_declares_only_what_its_own_widgets_and_alarms_read(tmp_path):
    (tmp_path / "gpudash.yaml").write_text(SETTINGS)
    project = load_project(tmp_path / "gpudash.yaml")
    subject = LintInput(build(project, grafana=False), project.settings, project.catalog, None)
    read: dict[str, set] = {}
    for _, metric, _, dims, clusters in _queried(subject):
        for cluster in clusters:
            read.setdefault(cluster.name, set()).add((metric, dims))
    for cluster in subject.clusters():
        declared = {(field.name, dims) for patterns, dims in _published(
            _declarations(subject, cluster), project.settings.scrape.job_name, _every_job(subject, cluster))
            for field in project.catalog if any(p.search(field.name) for p in patterns)}
        unread = declared - read.get(cluster.name, set())
        assert not unread, (cluster.name, sorted((m, sorted(d)) for m, d in unread))


def test_a_cluster_declaring_a_set_only_another_clusters_alarm_reads_is_warned_of(tmp_path):
    """A build whose plain cluster's agent is the one every cluster had before (made as if both clusters split GPUs,
    the old fleet-wide declarations): AG001 warns, on that cluster's agent file, of the MIG idle alarm's set its own
    alarms never read; the other cluster's agent, the same declarations, is not warned of."""
    (tmp_path / "gpudash.yaml").write_text(SETTINGS)
    project = load_project(tmp_path / "gpudash.yaml")
    both = tmp_path / "both"
    both.mkdir()
    (both / "gpudash.yaml").write_text(SETTINGS.replace(", exporter: {mig: none}", ""))
    artifacts = build(project, grafana=False)
    fleet_wide = build(load_project(both / "gpudash.yaml"), grafana=False).agents
    clean = [f for f in used_metrics_selected(LintInput(artifacts, project.settings, project.catalog, None))
             if f.severity in ("warning", "error")]
    assert not clean, [(f.where, f.message) for f in clean]
    edited = replace(artifacts, agents=fleet_wide)
    found = [f for f in used_metrics_selected(LintInput(edited, project.settings, project.catalog, None))
             if f.severity in ("warning", "error")]
    assert found and all(f.severity == "warning" and "plain" in f.where for f in found), \
        [(f.severity, f.where, f.message) for f in found]
    assert any("GPU_I_PROFILE" in f.message and "share" in f.message for f in found), [f.message for f in found]
