"""With exporter.virtual_gpus (an exporter run with KUBERNETES_VIRTUAL_GPUS: a GPU pods share has its own series and
one copy per pod), the fields the exporter splits per process read per namespace keep the namespace: the device's
value lost every label but the GPU's in the per-GPU branch, so "framebuffer used, max by namespace" was one series
`{} 40000` for the whole cluster (team-a reads 19,600 MiB, team-b 40,000). Evaluated by promtool on the stored series
of the tests' shared-GPU fleet: a namespace's max is the max of its pods', its GPUs count once (two pods of team-d
share one GPU)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from generator.model import Query
from generator.promql import expression
from tests.support import mixed_fleet
from tests.support.agent_points import SHARED
from tests.support.projects import bundled_project
from tests.support.prometheus_server import binary

STEP, STEPS = 30, 40
FIELDS = ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_UTIL")
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
