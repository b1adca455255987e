"""`gpudash verify` judges each cluster's published dimension sets by what its own agent configuration declares
(as 96eb7546 left it).

Each cluster's agent declares what its own widgets and alarms read (render/cloudwatch.reads_by_cluster). 96eb7546 made
verify's expected sets the union of every group's reads, so a cluster publishing a set only another group's agent
declares passed; checks.cloudwatch.published_sets now gives each cluster its own. The story: two clusters, one
saying exporter.mig: none, and a rule per namespace (it reads [ClusterName, node, gpu, namespace, namespace_gpu] where
GPUs may be split, [ClusterName, namespace, pod] where none is). The plain cluster still runs the agent config every
cluster had before 735e7221 (the fleet-wide one; after upgrading gpudash, its ConfigMap not yet applied), so it
publishes DCGM_FI_DEV_FB_USED per namespace and GPU, one custom metric per pair billed for nothing. verify must say
that cluster's published sets differ from its generated ConfigMap (as it does for any other set its config does not
declare: "published with dimensions [...], declared ...", fix "apply the generated agent ConfigMap"); it said ok.
Its control, the plain cluster running its own generated config, is ok.
"""

from __future__ import annotations

from pathlib import Path

from generator.artifacts import build
from generator.checks import cloudwatch as checks_cloudwatch
from generator.clients.options import Options
from generator.output import encode
from generator.project import load_project
from tests.support import mixed_fleet
from tests.support.agent_points import scrapes
from tests.support.cloudwatch_agent import Agent, agent_config

WHOLE = mixed_fleet.WHOLE
ALARM = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("ns-fb", "Namespace GPU memory high",
                Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("namespace",)), ">", 15000))
'''
SETTINGS = """clusters:
  - {name: split, region: us-east-1}
  - {name: plain, region: us-east-1, exporter: {mig: none}}
definitions:
  alarms: [alarms]
"""


def _project(folder: Path, settings: str):
    folder.mkdir()
    (folder / "alarms").mkdir()
    (folder / "alarms" / "alarms.py").write_text(ALARM)
    (folder / "gpudash.yaml").write_text(settings)
    return load_project(folder / "gpudash.yaml")


class _Listed:
    """ListMetrics over the given datapoints: the metrics (name, dimensions) of the ClusterName asked."""

    def __init__(self, points):
        self.metrics = sorted({(p.namespace, p.metric, p.dimensions) for p in points})

    def call(self, region, operation, what, **kwargs):
        assert operation == "ListMetrics"
        wanted = {(d["Name"], d["Value"]) for d in kwargs.get("Dimensions", [])}
        return {"Metrics": [{"MetricName": metric, "Dimensions": [{"Name": k, "Value": v} for k, v in dims]}
                            for namespace, metric, dims in self.metrics
                            if namespace == kwargs["Namespace"] and wanted <= set(dims)
                            and kwargs.get("MetricName", metric) == metric]}


def _plain_check(project, points, monkeypatch):
    monkeypatch.setattr(checks_cloudwatch, "for_verify", lambda options: _Listed(points))
    options = Options(timeout=30)
    options.start()
    (check,) = [c for c in checks_cloudwatch.checks(project, options) if c.name == "plain metrics"]
    return check


def _points(files, cluster: str, fleet):
    config, job = agent_config(files[f"k8s/cwagent-prometheus-config-{cluster}.yaml"])
    return Agent(config, job).run(scrapes(job, 30, 300, fleet))


def test_verify_passes_the_plain_cluster_publishing_what_its_own_config_declares(tmp_path, monkeypatch):
    project = _project(tmp_path / "p", SETTINGS)
    files = encode(build(project, grafana=False))
    points = _points(files, "split", mixed_fleet.FLEET) + _points(files, "plain", WHOLE)
    check = _plain_check(project, points, monkeypatch)
    assert check.status == "ok", (check.status, check.detail)


def test_verify_fails_the_plain_cluster_publishing_a_set_only_the_split_clusters_config_declares(tmp_path,
                                                                                                monkeypatch):
    project = _project(tmp_path / "p", SETTINGS)
    files = encode(build(project, grafana=False))
    # the config the plain cluster had before 735e7221: made as if its GPUs, too, may be split
    fleet_wide = encode(build(_project(tmp_path / "old", SETTINGS.replace(", exporter: {mig: none}", "")),
                              grafana=False))
    stale = _points(fleet_wide, "plain", WHOLE)
    extra = {tuple(sorted(dict(p.dimensions))) for p in stale if p.metric == "DCGM_FI_DEV_FB_USED"} - \
        {tuple(sorted(dict(p.dimensions))) for p in _points(files, "plain", WHOLE) if p.metric == "DCGM_FI_DEV_FB_USED"}
    assert ("ClusterName", "gpu", "namespace", "namespace_gpu", "node") in extra, extra
    check = _plain_check(project, _points(files, "split", mixed_fleet.FLEET) + stale, monkeypatch)
    assert check.status == "fail" and "namespace_gpu" in check.detail, (check.status, check.detail)
