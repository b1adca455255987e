"""`gpudash verify` looks, in each cluster, for the metrics that cluster's own agent publishes (as 0ad71706 and
08e8e306 left it).

Since 735e7221 each cluster's agent declares what its own widgets and alarms read (0ad71706:
render/cloudwatch.reads_by_cluster), and since 08e8e306 a cluster whose CloudWatch reads are nothing declares one
declaration selecting no metric: it publishes nothing, by design. verify's CloudWatch group still samples the
project's used metrics fleet-wide (checks.cloudwatch.SAMPLE among project.used_metrics()) and asks each cluster for
all of them. The story: two clusters in one Region, `split` and `plain` (exporter.mig: none), each running its own
generated agent config.

* A CloudWatch dashboard whose one panel is per MIG instance (b995e685's story): `plain` reads nothing and publishes
  no point; verify fails it: "no DCGM metrics in ContainerInsights/Prometheus for plain in the last 3 h", fix "apply
  the generated agent ConfigMap and check the cwagent-prometheus logs" -- which is applied, and healthy.
* Beside it a per-GPU utilization panel: `plain` publishes DCGM_FI_DEV_GPU_UTIL alone, as its config declares; verify
  fails it: "missing in ContainerInsights/Prometheus: DCGM_FI_DEV_FB_USED".
Now verify looks in each cluster for a sample of what its own agent publishes (checks.cloudwatch.sampled_metrics), and
says a cluster reading no DCGM metric on CloudWatch has nothing to look for. The control (both clusters alike, no exporter.mig, `plain` with MIG GPUs too): `plain` is ok.
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
from tests.unit.test_verify_sets_per_cluster import _Listed  # ListMetrics over datapoints

WHOLE = mixed_fleet.WHOLE
PER_INSTANCE = ('Panel("Framebuffer per GPU instance", '
                '(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu", "mig_instance")),))')
PER_GPU = 'Panel("Utilization per GPU", (Query("DCGM_FI_DEV_GPU_UTIL", "avg", ("node", "gpu")),))'
DASHBOARD = '''
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="mig", title="MIG", backends=("cloudwatch",), rows=[Row("r", [{panels}])])
'''
NO_ALARMS = "def alarms(ctx):\n    return []\n"
SETTINGS = """clusters:
  - {name: split, region: us-east-1}
  - {name: plain, region: us-east-1, exporter: {mig: none}}
definitions:
  dashboards: [dashboards]
  alarms: [alarms]
"""


def _project(folder: Path, settings: str, panels: str):
    folder.mkdir()
    for kind, text in (("dashboards", DASHBOARD.replace("{panels}", panels)), ("alarms", NO_ALARMS)):
        (folder / kind).mkdir()
        (folder / kind / f"{kind}.py").write_text(text)
    (folder / "gpudash.yaml").write_text(settings)
    return load_project(folder / "gpudash.yaml")


def _points(files, cluster: str, fleet):
    config, job = agent_config(files[f"k8s/cwagent-prometheus-config-{cluster}.yaml"])
    return Agent(config, job).run(scrapes(job, 30, 300, fleet))


def _plain(tmp_path, monkeypatch, settings: str, panels: str, fleet=WHOLE):
    """The plain cluster's published metrics (its own generated config, on `fleet`: its whole GPUs) and verify's check
    of it."""
    project = _project(tmp_path / "p", settings, panels)
    files = encode(build(project, grafana=False))
    plain = _points(files, "plain", fleet)
    monkeypatch.setattr(checks_cloudwatch, "for_verify",
                        lambda options: _Listed(_points(files, "split", mixed_fleet.FLEET) + plain))
    options = Options(timeout=30)
    options.start()
    (check,) = [c for c in checks_cloudwatch.checks(project, options) if c.name == "plain metrics"]
    return {p.metric for p in plain}, check


def test_verify_passes_the_plain_cluster_where_both_read_alike(tmp_path, monkeypatch):
    published, check = _plain(tmp_path, monkeypatch, SETTINGS.replace(", exporter: {mig: none}", ""),
                              f"{PER_INSTANCE}, {PER_GPU}", mixed_fleet.FLEET)
    assert published == {"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_UTIL"}
    assert check.status == "ok", (check.status, check.detail)


def test_verify_passes_the_plain_cluster_whose_agent_publishes_nothing_by_design(tmp_path, monkeypatch):
    published, check = _plain(tmp_path, monkeypatch, SETTINGS, PER_INSTANCE)
    assert published == set()  # (its config's one declaration selects no metric: render/agent.NOTHING_DECLARED)
    assert check.status == "ok", (check.status, check.detail)


def test_verify_passes_the_plain_cluster_publishing_the_one_field_it_reads(tmp_path, monkeypatch):
    published, check = _plain(tmp_path, monkeypatch, SETTINGS, f"{PER_INSTANCE}, {PER_GPU}")
    assert published == {"DCGM_FI_DEV_GPU_UTIL"}
    assert check.status == "ok", (check.status, check.detail)
