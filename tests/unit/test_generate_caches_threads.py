"""A panel query's PromQL is the same whether or not another project with another counters CSV is generated in
the same process at the same time (a library user's threads): f89513a kept its answers in one
module-wide table for the catalog last asked about."""
from __future__ import annotations

import threading

from generator import promql
from generator.catalog import MIG_SUBSTITUTES, load_counters
from generator.model import Query
from generator.resources import default_counters
from generator.settings import Labels

LABELS = Labels(pod="pod", namespace="namespace", container="container", node_sources=("node",), cluster="cluster")
QUERY = Query("DCGM_FI_DEV_GPU_UTIL", "avg", by=("node", "gpu"))


def _catalogs():
    """The bundled CSV, and the same CSV without the field that stands in for GPU utilization on MIG instances
    (its PromQL for GPU utilization differs)."""
    full = load_counters(default_counters())
    substitute = MIG_SUBSTITUTES["DCGM_FI_DEV_GPU_UTIL"][0]
    assert substitute in full
    kept = tuple(m for m in full.metrics if m.name != substitute)
    return full, kept


def _paused(full, started: threading.Event, go: threading.Event, **fields):
    """A catalog of `full`'s type whose first look-up waits until `go`, after setting `started`: the second project's,
    held in the middle of its work while the first project asks its query."""
    class Paused(type(full)):
        def get(self, name):
            if not started.is_set():
                started.set()
                go.wait(10)
            return super().get(name)

    return Paused(**fields)


def test_a_query_worked_out_for_one_csv_while_another_project_is_generated_keeps_each_csvs_promql():
    full, kept = _catalogs()
    started, go = threading.Event(), threading.Event()
    other = _paused(full, started, go, source="other.csv", metrics=kept)
    alone_full = promql.expression(QUERY, LABELS, full)
    alone_other = promql.expression(QUERY, LABELS, type(full)(source="other.csv", metrics=kept))
    assert alone_full != alone_other  # the two CSVs' answers differ: the test can tell them apart

    answers = {}
    worker = threading.Thread(target=lambda: answers.setdefault("other", promql.expression(QUERY, LABELS, other)))
    worker.start()
    assert started.wait(10)
    answers["full, meanwhile"] = promql.expression(QUERY, LABELS, full)
    go.set()
    worker.join(10)
    answers["full, after"] = promql.expression(QUERY, LABELS, full)

    assert answers["other"] == alone_other
    assert answers["full, meanwhile"] == alone_full
    # main: the other CSV's PromQL, which reads no MIG GPU's utilization (they show no value)
    assert answers["full, after"] == alone_full


def test_a_cloudwatch_panel_planned_for_one_settings_while_another_project_is_generated_keeps_each_settings_plan(
        tmp_path):
    """The same for render.cloudwatch.panel_plan: its table is held for the (catalog, settings) last asked about."""
    from generator.model import Panel
    from generator.render.cloudwatch import panel_plan
    from generator.settings import parse_settings

    agent = parse_settings("clusters: [{name: a, region: us-east-1}]\n", "agent.yaml", tmp_path)
    addon = parse_settings("clusters: [{name: a, region: us-east-1}]\ncloudwatch: {source: container-insights}\n",
                           "addon.yaml", tmp_path)
    full = load_counters(default_counters())
    panel = Panel("GPU utilization", [Query("DCGM_FI_DEV_GPU_UTIL", "avg", by=("node", "gpu"))])
    started, go = threading.Event(), threading.Event()
    paused = _paused(full, started, go, source=full.source, metrics=full.metrics)
    alone_agent, alone_addon = panel_plan(panel, full, agent), panel_plan(panel, full, addon)
    assert alone_agent != alone_addon

    answers = {}
    worker = threading.Thread(target=lambda: answers.setdefault("addon", panel_plan(panel, paused, addon)))
    worker.start()
    assert started.wait(10)
    answers["agent, meanwhile"] = panel_plan(panel, full, agent)
    go.set()
    worker.join(10)
    answers["agent, after"] = panel_plan(panel, full, agent)

    assert answers["addon"] == alone_addon
    assert answers["agent, meanwhile"] == alone_agent
    assert answers["agent, after"] == alone_agent  # main: the Container Insights add-on's plan
