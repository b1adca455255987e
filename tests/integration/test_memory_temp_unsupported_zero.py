"""Memory temperature of GPUs that cannot read it, on a real Prometheus, in a messy fleet.

DCGM reports a field it cannot read as a blank sentinel near 2**63, but not for HBM/GDDR temperature on every GPU:
on L4 (and likely other GPUs without NVML_FI_DEV_MEMORY_TEMP) it reports 0, because nvmlDeviceGetFieldValues
succeeds as a call while the field's own status says unsupported (NVIDIA/DCGM #311); dcgm-exporter 3.3.5 wrote 0
on such GPUs too (NVIDIA/dcgm-exporter #460). Half an hour of 30 s scrapes is backfilled from two nodes, each
scraped from two exporter copies mid-upgrade (the old one writing its own pod's name into `Hostname`, the new one
the node into `hostname`; gpudash's job labels both with `node`):

* n-l4: two L4s writing `DCGM_FI_DEV_MEMORY_TEMP` 0 at every scrape, GPU 0 held by ml/infer-0, GPU 1 idle (no pod);
* n-h100: three H100s reading 45 °C (ml/train-0), 30 °C (idle) and 97 °C (ml/train-1, above the 95 °C level).

Truth: the L4s have no memory temperature (a running GPU's memory is never at 0 °C): no line, no place in a mean,
a minimum or a count of GPUs reporting, no alert; the H100s are shown and alerted on as they read. Taking 0 as a
reading drew two 0 °C lines, a fleet mean of 34.4 for 57.33, a least of 0 for 30, and fired a "too cold" alert.
"""

from __future__ import annotations

import pytest

from generator.artifacts import build, grafana_dashboards
from generator.output import encode
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from tests.support.messy_history import openmetrics
from tests.support.projects import defined_project
from tests.support.prometheus_server import SCENE_RANGE, backfilled_fixture
from tests.support.promtool_rules import alert_names, rule_groups
from tests.support.range_panels import bundled_at

STEP, SCRAPES, OFFSET = 30, 60, 15
FIELD = "DCGM_FI_DEV_MEMORY_TEMP"
L4, H100 = "NVIDIA L4", "NVIDIA H100 80GB HBM3"
# (node, gpu, model, value, pod (namespace, name) or None)
GPUS = (("n-l4", 0, L4, 0, ("ml", "infer-0")), ("n-l4", 1, L4, 0, None),
        ("n-h100", 0, H100, 45, ("ml", "train-0")), ("n-h100", 1, H100, 30, None),
        ("n-h100", 2, H100, 97, ("ml", "train-1")))
# the two exporter copies of each node: (instance, its node label as written)
COPIES = (("10.0.{n}.1:9400", 'Hostname="nvidia-dcgm-exporter-{h}"'), ("10.0.{n}.2:9400", 'hostname="{node}"'))
AT = OFFSET + 40 * STEP + 1  # seconds after the start: well inside the half hour


def _series(node: str, gpu: int, model: str, pod, k: int) -> str:
    number, h = ("1", "x7kq2") if node == "n-l4" else ("2", "b9zr4")
    instance, named = COPIES[k]
    workload = f',container="main",namespace="{pod[0]}",pod="{pod[1]}"' if pod else ""
    return (f'gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",modelName="{model}",'
            f'{named.format(h=h, node=node)}{workload},node="{node}",instance="{instance.format(n=number)}",'
            f'job="dcgm-exporter"')


def _openmetrics(start: int) -> str:
    return openmetrics({(FIELD, _series(node, gpu, model, pod, k)):
                        [(start + OFFSET + j * STEP, str(value)) for j in range(SCRAPES)]
                        for node, gpu, model, value, pod in GPUS for k in range(len(COPIES))})


prometheus = backfilled_fixture("memory-temp-zero", _openmetrics, SCRAPES * STEP, STEP)

DASHBOARD = f'''
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="memory", title="Memory", rows=[Row("Memory", [
        Panel("Fleet mean", Query("{FIELD}", "avg", ())),
        Panel("Fleet least", Query("{FIELD}", "min", ())),
        Panel("Node mean", Query("{FIELD}", "avg", ("node",))),
        Panel("Pod hottest", Query("{FIELD}", "max", ("pod",))),
        Panel("GPUs reporting", Query("{FIELD}", "count", ())),
    ])])
'''
ALARMS = f'''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("memory-hot", "Memory hot", Condition(Query("{FIELD}", "max", ("node", "gpu")), ">", 95))
    yield Alarm("memory-cold", "Memory cold", Condition(Query("{FIELD}", "min", ("node", "gpu")), "<", 20))
    yield Alarm("fleet-memory-cold", "Fleet memory cold", Condition(Query("{FIELD}", "min", ()), "<", 20))
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return defined_project(tmp_path_factory.mktemp("memory-temp"), dashboards=DASHBOARD, alarms=ALARMS)


def _shown(prometheus, panel: dict, at: float) -> dict[str, float]:
    """{legend: value} of `panel`'s query at `at`, the variables at All, over a range holding the scene."""
    (target,) = panel["targets"]
    expr = interpolate(target["expr"], {**SCENE_RANGE, **variables({}, ("namespace", "pod", "node", "gpu", "cluster"))})
    return {render_legend(target["legendFormat"], s["metric"]): round(float(s["value"][1]), 9)
            for s in prometheus.query(expr, at=at)}


@pytest.mark.parametrize("title", ["Memory temperature", "DEV_MEMORY_TEMP"])
def test_a_gpu_writing_0_for_memory_temperature_has_no_line(prometheus, title):
    server, start = prometheus
    assert bundled_at(server, title, start + AT) == {"n-h100 GPU 0": 45, "n-h100 GPU 1": 30, "n-h100 GPU 2": 97}


def test_means_minima_counts_and_pods_leave_out_the_gpus_writing_0(prometheus, project):
    server, start = prometheus
    (dashboard,) = list(grafana_dashboards(project))
    shown = {panel["title"]: _shown(server, panel, start + AT) for panel in dashboard.model["panels"]
             if panel.get("targets")}
    assert shown == {"Fleet mean": {FIELD: round((45 + 30 + 97) / 3, 9)}, "Fleet least": {FIELD: 30},
                     "Node mean": {"n-h100": round((45 + 30 + 97) / 3, 9)},
                     "Pod hottest": {"Pod ml/train-0": 45, "Pod ml/train-1": 97},
                     "GPUs reporting": {FIELD: 3}}


def test_alerts_fire_on_the_hot_reading_and_not_on_the_gpus_writing_0(prometheus, project, tmp_path):
    server, start = prometheus
    (tmp_path / "rules.yaml").write_bytes(encode(build(project, grafana=False))["prometheus/rules.yaml"])
    names = alert_names(tmp_path)
    rules = {r["alert"]: r for g in rule_groups((tmp_path / "rules.yaml").read_text()) for r in g["rules"]
             if "alert" in r}
    firing = {rule: sorted((s["metric"].get("node"), s["metric"].get("gpu"))
                           for s in server.query(rules[names[rule]]["expr"], at=start + AT))
              for rule in ("memory-hot", "memory-cold", "fleet-memory-cold")}
    assert firing == {"memory-hot": [("n-h100", "2")], "memory-cold": [], "fleet-memory-cold": []}


# Every aggregation of a user's panel and rule, per grouping: the L4s (writing 0) count nowhere.
GROUPINGS = {"fleet": (), "node": ("node",), "gpu": ("node", "gpu"), "pod": ("pod",), "namespace": ("namespace",),
             "pod and gpu": ("pod", "gpu")}
AGGREGATIONS = {"avg": lambda v: round(sum(v) / len(v), 9), "sum": sum, "max": max, "min": min, "count": len}


def _truth(aggregation: str, grouping: str) -> list[float]:
    """The values of each line of `aggregation` per `grouping` over the GPUs that read (a workload's groups: those
    that hold a pod), sorted."""
    keys = GROUPINGS[grouping]
    groups: dict[tuple, list[float]] = {}
    for node, gpu, _, value, pod in GPUS:
        if value == 0 or pod is None and any(key in ("pod", "namespace") for key in keys):
            continue
        named = {"node": node, "gpu": gpu, "pod": pod and pod[1], "namespace": pod and pod[0]}
        groups.setdefault(tuple(named[key] for key in keys), []).append(value)
    return sorted(float(AGGREGATIONS[aggregation](values)) for values in groups.values())


GRID = f'''
from generator.model import Alarm, Condition, Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="grid", title="Grid", rows=[Row("grid", [
        Panel(f"{{how}} per {{name}}", Query("{FIELD}", how, keys))
        for name, keys in {GROUPINGS!r}.items() for how in {tuple(AGGREGATIONS)!r}])])
'''
# rule -> (aggregation, grouping, comparison, threshold): each fires for no group but where a GPU writing 0 counts
# (its groups alone, a least or mean pulled under the truth's, a count above it); "any" fires for every group
GRID_RULES = {f"{kind} {how} per {name}": (how, name, op, threshold(how, name))
              for name in GROUPINGS for kind, how, op, threshold in (
                  ("any", "count", ">", lambda how, name: 0), ("cold", "min", "<", lambda how, name: 20),
                  ("low", "avg", "<", lambda how, name: min(_truth("avg", name)) - 0.5),
                  ("many", "count", ">", lambda how, name: max(_truth("count", name))))}
GRID_ALARMS = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
    f"    yield Alarm({rule.replace(' ', '-')!r}, {rule!r}, Condition(Query({FIELD!r}, {how!r}, {GROUPINGS[name]!r}), "
    f"{op!r}, {threshold!r}))\n" for rule, (how, name, op, threshold) in GRID_RULES.items())


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    return defined_project(tmp_path_factory.mktemp("memory-temp-grid"), dashboards=GRID, alarms=GRID_ALARMS)


@pytest.mark.parametrize("grouping", list(GROUPINGS))
@pytest.mark.parametrize("aggregation", list(AGGREGATIONS))
def test_every_aggregation_per_grouping_reads_the_gpus_that_read(prometheus, grid, aggregation, grouping):
    server, start = prometheus
    (panel,) = [p for d in grafana_dashboards(grid) for p in d.model["panels"]
                if p.get("title") == f"{aggregation} per {grouping}"]
    assert sorted(_shown(server, panel, start + AT).values()) == _truth(aggregation, grouping)


@pytest.fixture(scope="module")
def grid_rules(grid, tmp_path_factory):
    folder = tmp_path_factory.mktemp("memory-temp-grid-rules")
    (folder / "rules.yaml").write_bytes(encode(build(grid, grafana=False))["prometheus/rules.yaml"])
    rules = {r["alert"]: r for g in rule_groups((folder / "rules.yaml").read_text()) for r in g["rules"] if "alert" in r}
    return {rule: rules[name] for rule, name in alert_names(folder).items()}


@pytest.mark.parametrize("rule", list(GRID_RULES))
def test_every_rule_per_grouping_judges_the_gpus_that_read(prometheus, grid_rules, rule):
    server, start = prometheus
    how, grouping, _, _ = GRID_RULES[rule]
    firing = server.query(grid_rules[rule.replace(" ", "-")]["expr"], at=start + AT)
    assert len(firing) == (len(_truth(how, grouping)) if rule.startswith("any") else 0), [s["metric"] for s in firing]
