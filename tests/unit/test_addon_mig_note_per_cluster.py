"""On the Container Insights add-on, lint CW021 (a GPU split into MIG instances reads as one of its instances) is said
of the widgets and alarms of the clusters whose GPUs may be split, not of those saying exporter.mig: none.

The add-on's agent keeps one instance of a MIG GPU (container_insights.MIG_ONE_INSTANCE): a note of what a widget or
alarm reads where GPUs are split. A cluster saying no GPU is split has whole GPUs alone, each one reading, and its
alarms' descriptions say nothing of it (render/alarms: reads_one_instance on the cluster's settings); yet lint said
CW021 of every widget and alarm reading such a field, by the artifact alone (10 findings on a fleet of one cluster
saying none with one alarm per GPU on framebuffer used, the same 10 for plain beside split's in a mixed fleet). A query
names its cluster (ClusterName); a fleet-scope alarm's names none and reads its Region's clusters: noted where one of
them may be split.
"""

from __future__ import annotations

from generator.artifacts import build
from generator.container_insights import MIG_ONE_INSTANCE
from generator.lint.runner import lint
from generator.output import encode
from tests.support.cloudwatch_widgets import header
from tests.support.projects import defined_project

ALARMS = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("gpu-fb-high", "GPU memory high",
                Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu")), ">", 15000))
    yield Alarm("fleet-fb-high", "Fleet GPU memory high",
                Condition(Query("DCGM_FI_DEV_FB_USED", "max", ()), ">", 30000), scope="fleet")
'''
ADDON = "cloudwatch:\n  source: container-insights\n"
MIXED = ADDON + """clusters:
  - {name: split, region: us-east-1}
  - {name: plain, region: us-east-1, exporter: {mig: none}}
  - {name: calm, region: eu-west-1, exporter: {mig: none}}
"""


def _noted(tmp_path, settings: str) -> set[str]:
    project = defined_project(tmp_path, settings, alarms=ALARMS)
    return {finding.where for finding in lint(project, build(project, grafana=False)) if finding.rule == "CW021"}


def test_only_the_split_clusters_widgets_and_alarms_are_noted(tmp_path):
    noted = _noted(tmp_path, MIXED)
    alarms = {where.split()[-1] for where in noted if where.startswith("cloudwatch/alarms.json")}
    # split's own alarm and its Region's fleet alarm (split among its clusters); not plain's, not eu-west-1's
    assert alarms == {"gpudash-split-gpu-fb-high-warning", "gpudash-fleet-fleet-fb-high-warning-us-east-1"}, alarms
    dashboards = {where.split()[0] for where in noted if where.startswith("cloudwatch/dashboards/")}
    assert dashboards == {"cloudwatch/dashboards/gpudash-split-by-pod.json",
                          "cloudwatch/dashboards/gpudash-split-overview.json"}, dashboards


def test_a_fleet_saying_none_gets_no_note(tmp_path):
    assert _noted(tmp_path, ADDON + "exporter:\n  mig: none\n") == set()


def test_a_fleet_that_may_be_split_is_noted_as_ever(tmp_path):
    noted = _noted(tmp_path, ADDON)
    alarms = {where.split()[-1] for where in noted if where.startswith("cloudwatch/alarms.json")}
    assert alarms == {"gpudash-gpu-cluster-gpu-fb-high-warning", "gpudash-fleet-fleet-fb-high-warning"}, alarms
    assert len(noted) == 11, sorted(noted)


def test_the_dashboard_header_says_what_the_addon_does_with_a_mig_gpu_where_gpus_may_be_split(tmp_path):
    """The add-on dashboards' header says how the add-on publishes a GPU split into MIG instances (MIG_ONE_INSTANCE)
    in the clusters whose GPUs may be split; in one saying exporter.mig: none, which has none, it said it too."""
    project = defined_project(tmp_path, MIXED, alarms=ALARMS)
    files = encode(build(project, grafana=False))
    said = {name: MIG_ONE_INSTANCE in header(files, f"cloudwatch/dashboards/gpudash-{name}-overview.json")
            for name in ("split", "plain", "calm")}
    assert said == {"split": True, "plain": False, "calm": False}
    # the fleet values' notes: a MIG GPU read as its first instance, where GPUs may be split alone
    first = {name: header(files, f"cloudwatch/dashboards/gpudash-{name}-overview.json").count(
        "a GPU split into MIG instances weighs once, as its first instance (the add-on keeps one)")
        for name in ("split", "plain")}
    assert first["split"] > 0 and first["plain"] == 0, first
    # the rest of the header's first paragraphs alike (but the cluster's name)
    plain, split = (header(files, f"cloudwatch/dashboards/gpudash-{name}-overview.json").split("\n\nOn CloudWatch")[0]
                    for name in ("plain", "split"))
    assert split.replace(" — split\n", " — plain\n") == plain.replace(
        "never does.", "never does.\n\n" + MIG_ONE_INSTANCE, 1)
