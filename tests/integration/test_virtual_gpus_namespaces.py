"""With exporter.virtual_gpus (an exporter run with KUBERNETES_VIRTUAL_GPUS: a GPU pods share has its own series and
one copy per pod), the fields the exporter splits per process read per namespace keep the namespace: the device's
value lost every label but the GPU's in the per-GPU branch, so "framebuffer used, max by namespace" was one series
`{} 40000` for the whole cluster (team-a reads 19,600 MiB, team-b 40,000). Evaluated by promtool on the stored series
of the tests' shared-GPU fleet: a namespace's max is the max of its pods', its GPUs count once (two pods of team-d
share one GPU). The CloudWatch twin of a namespace's count of GPUs, through the build's agent model on the same fleet,
reads what promtool reads (it counted each pod's copy of GPU utilization: team-d 2 for 1)."""

from __future__ import annotations

import json
import re
import subprocess

from generator.model import Query
from generator.promql import expression
from tests.support import mixed_fleet
from tests.support.agent_points import SHARED, alarm_values, alarms_through_agent
from tests.support.projects import bundled_project, defined_project
from tests.support.prometheus_server import binary

STEP, STEPS = 30, 40
# (graphics engine activity: a MIG GPU's stand-in for utilization on both sides)
FIELDS = ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
_SAMPLE = re.compile(r"\{([^}]*)\} ([0-9.E+-]+)")


def _evaluated(tmp_path, queries: dict[str, Query]) -> dict[str, dict[tuple, float]]:
    """Each query's series at 15 minutes, by their label pairs, as promtool evaluates it (read from its report of
    the samples it got where none were expected)."""
    project = bundled_project("exporter:\n  virtual_gpus: true\n")
    series = [{"series": s, "values": " ".join(v)} for node in SHARED
              for s, v in mixed_fleet.stored(node, tuple(f"{f}{{" for f in FIELDS), STEPS, STEP).items()]
    found = {}
    for name, query in queries.items():
        expr = expression(query, project.settings.labels, project.catalog, rate_window="1m", increase_window="5m")
        test = {"rule_files": [], "evaluation_interval": "30s", "tests": [{
            "interval": "30s", "input_series": series,
            "promql_expr_test": [{"expr": expr, "eval_time": "15m", "exp_samples": []}]}]}
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(test))
        out = subprocess.run([binary("promtool"), "test", "rules", str(path)], capture_output=True, text=True)
        report = (out.stdout + out.stderr).split("got:")[-1]
        found[name] = {tuple(sorted(re.findall(r'(\w+)="([^"]*)"', labels))): float(value)
                       for labels, value in _SAMPLE.findall(report)}
    return found


def test_a_namespace_of_shared_gpus_keeps_its_name_and_counts_each_gpu_once(tmp_path):
    found = _evaluated(tmp_path, {
        "fb_ns": Query("DCGM_FI_DEV_FB_USED", "max", ("namespace",)),
        "fb_pod": Query("DCGM_FI_DEV_FB_USED", "max", ("pod",)),
        "util_ns": Query("DCGM_FI_DEV_GPU_UTIL", "count", ("namespace",)),
    })
    per_namespace: dict[str, float] = {}
    for labels, value in found["fb_pod"].items():
        namespace = dict(labels)["namespace"]
        per_namespace[namespace] = max(per_namespace.get(namespace, 0.0), value)
    assert len(per_namespace) > 3 and all(labels for labels in found["fb_ns"]), found["fb_ns"]
    assert {dict(labels)["namespace"]: value for labels, value in found["fb_ns"].items()} == per_namespace
    counts = {dict(labels)["namespace"]: value for labels, value in found["util_ns"].items()}
    assert counts["team-d"] == 1, counts  # ts-0 and ts-1 share one GPU: counted once


COUNTED = {"util": "DCGM_FI_DEV_GPU_UTIL", "fb": "DCGM_FI_DEV_FB_USED", "temp": "DCGM_FI_DEV_GPU_TEMP"}


def test_the_cloudwatch_twin_of_a_namespace_count_reads_what_the_rule_reads(tmp_path):
    found = _evaluated(tmp_path, {short: Query(field, "count", ("namespace",)) for short, field in COUNTED.items()})
    alarms = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
        f"    yield Alarm('ns-{short}', 'X', Condition(Query({field!r}, 'count', ('namespace',)), '>', 1))\n"
        for short, field in COUNTED.items())
    (tmp_path / "cw").mkdir()
    requests, points = alarms_through_agent(
        defined_project(tmp_path / "cw", "exporter:\n  virtual_gpus: true\n", alarms=alarms), STEP, STEPS * STEP, SHARED)
    for short in COUNTED:
        rule = {dict(labels)["namespace"]: value for labels, value in found[short].items()}
        twin = {dict(key)["namespace"]: value for key, value in alarm_values(
            requests[f"gpudash-gpu-cluster-ns-{short}-warning"], points, STEPS * STEP, 300).items()}
        assert rule["team-d"] == 1 and twin == rule, (short, twin, rule)
