"""Every CloudWatch widget and alarm reads the truth of fleets no test wrote by hand (tests/support/random_fleet.py).

Seeded random mixed fleets (MIG GPUs of mixed profiles beside whole GPUs, idle GPUs and instances, a pod on several
GPUs or instances, one pod name in two namespaces, `Hostname`/`hostname`/none, old exporters without NODE_NAME,
"not supported" readings; with KUBERNETES_VIRTUAL_GPUS, GPUs two pods share) go through the agent model of the build's
own configuration on both pipelines; each widget's every period is compared with mixed_fleet.truth, and each bundled
rule's alarms with what its Prometheus twin names (random_fleet.firing). Where a dashboard's header says a line reads
otherwise (a pod holding several MIG instances of one GPU weighs it once per instance; GPU utilization leaves MIG GPUs
out), the line is held to what it says. On main f0c65fc7 the fleets with KUBERNETES_VIRTUAL_GPUS read a MIG GPU of two
profiles' device counters twice on the OTel pipeline ("NVLink bandwidth counter rate" 80,000,000,000 for
40,000,000,000 B/s).
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.render.cloudwatch import panel_title
from tests.support import cloudwatch_eval, random_fleet
from tests.support.cloudwatch_widgets import close, header, panel, said, widgets
from tests.support.mig_variant import END, START, firing_contributors, variant_datapoints, variant_project
from tests.support.mixed_fleet import FIELDS, reads_own, truth

STAND_IN = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
SEVERAL = "a pod holding several MIG instances of one GPU weighs that GPU once per instance"
# (seed, pipeline, shared: True, False or "per-process": random_fleet.fleet's per_process too)
CASES = [(0, "otel", True), (1, "otel", True), (2, "otel", True), (4, "otel", True), (0, "otel", False),
         (3, "otel", False), (0, "classic", False), (1, "classic", False), (2, "classic", True),
         (0, "otel", "per-process"), (2, "otel", "per-process"), (4, "otel", "per-process"), (7, "otel", "per-process")]


def _expected(project, files, path, title, query, fleet):
    """{line: value} the widget must draw at every period, from the fleet's facts (None: no truth to hold it to)."""
    text = header(files, path)
    if query.metric == "DCGM_FI_DEV_FB_USED" and "mig_instance" not in query.by and "pod" not in query.by \
            and "gpu" in query.by:  # one line per GPU instance (the header says so)
        assert said(text, title, "one line per GPU instance")
        return {f"{node.name} GPU {gpu.index} MIG {i.id or 'none'}": i.fb_used
                for node in fleet for gpu in node.gpus for i in gpu.instances if reads_own(node, i, query.metric)}
    if query.metric in ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL") \
            and project.settings.agent.pipeline == "classic":
        return None  # per GPU instance and per pod's copy on the JSON path (lint AL013/CW016 say it)
    collected = frozenset(FIELDS)
    if query.metric == "DCGM_FI_DEV_GPU_UTIL" and said(text, title, "GPUs split into MIG instances do not report it"):
        collected -= {STAND_IN}
    expected = {(label or title): value for label, value in
                truth(query, {n.name: n.name for n in fleet}, collected=collected, fleet=fleet).items()}
    if said(text, title, SEVERAL):
        expected = {label: value for label, value in expected.items()
                    if label not in random_fleet.several_instances(fleet)}
    return expected


@pytest.mark.parametrize("seed, pipeline, shared", CASES)
def test_every_widget_and_alarm_reads_the_truth_of_a_random_fleet(tmp_path, seed, pipeline, shared):
    reads_the_truth(tmp_path, seed, pipeline, shared)


def reads_the_truth(tmp_path, seed, pipeline, shared, more: str = "", firing=random_fleet.firing):
    """The check of each widget and alarm against the fleet of `seed`; `more`: settings beside the pipeline's and
    exporter.virtual_gpus's (other top-level keys); `firing`: what each rule's twin names on the fleet."""
    fleet = random_fleet.fleet(seed, bool(shared), per_process=shared == "per-process")
    settings = ("agent:\n  pipeline: classic\n" if pipeline == "classic" else "") + \
        ("exporter:\n  virtual_gpus: true\n" if shared else "") + more
    project = variant_project(tmp_path, settings)
    files = encode(build(project, grafana=False))
    points = variant_datapoints(files, fleet)
    checked = 0
    for path, properties in widgets(files):
        title = panel_title(properties["title"])
        if title == "Pods on GPUs":
            continue  # a table of now: below
        query = panel(project, path, title, "gpu-cluster").queries[0]
        expected = _expected(project, files, path, title, query, fleet)
        if expected is None:
            continue
        shown = {label: series for label, series in cloudwatch_eval.widget(properties, points, START, END).items()
                 if series}
        if pipeline == "classic":  # the JSON path publishes DCGM's blank: a line shows it where the header says so
            shown = {label: series for label, series in shown.items()
                     if label in expected or max(series.values()) < 1e13}
        several = random_fleet.several_instances(fleet) if said(header(files, path), title, SEVERAL) else set()
        assert set(shown) - several == set(expected), (title, sorted(shown), sorted(expected))
        for label, value in expected.items():
            wrong = {period: v for period, v in shown[label].items() if not close(v, value)}
            assert not wrong, (title, label, value, wrong)
        checked += 1
    assert checked >= 20
    # the pods on GPUs now: each pod's GPUs (a GPU shared by two pods counts for each)
    from generator.model import Query

    (properties,) = [p for _, p in widgets(files) if panel_title(p["title"]) == "Pods on GPUs"]
    pods = {label: series[max(series)] for label, series in
            cloudwatch_eval.widget(properties, points, START, END, now=END).items() if series}
    several = random_fleet.several_instances(fleet) if pipeline == "classic" else set()
    counted = truth(Query("DCGM_FI_DEV_GPU_TEMP", "count", ("namespace", "pod")), {}, fleet=fleet)
    assert {k: v for k, v in pods.items() if k not in several} == \
        {k: v for k, v in counted.items() if k not in several}
    # each rule's alarms name what its Prometheus twin names
    requests = json.loads(files["cloudwatch/alarms.json"])["alarms"]
    expected = firing(fleet)
    for alarm in project.alarms:
        if alarm.absent or alarm.id not in expected or (pipeline == "classic" and shared and
                                                        alarm.id == "pcie-replays"):  # lint AL013's error
            continue
        mine = [r["Request"] for r in requests if {"Key": "gpudash:rule", "Value": alarm.id} in r["Request"]["Tags"]]
        assert firing_contributors(mine, points) == expected[alarm.id], alarm.id
