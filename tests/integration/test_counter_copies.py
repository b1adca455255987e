"""A GPU's counter read from more than one series: the health dashboard's "Rows remapped (uncorrectable)" panel (the
rows remapped per GPU during the selected time range) on a real Prometheus holding three hours of 30 s scrapes (15 s
past each half minute), judged against the GPU's own readings summed as the CloudWatch agent's deltas.

* `node-upgrade`: the exporter is upgraded with the new pod up before the old one leaves (minutes 80 to 100 both
  are scraped): the old one spells the node `Hostname`, the new one `hostname`, and the new one's DCGM reports the
  field as not supported (the int64 sentinel) until minute 95. GPU 0 remaps a row at minute 85 (2 -> 3), while only
  the old exporter reads it, and one at minute 150. The blank of the new copy is no reading: the old copy's
  readings are the GPU's.
* `node-replaced`: the node is replaced by one of the same name (or its GPU 0 swapped): GPU 0 is another physical GPU,
  another UUID, from minute 92. The old one reads 4 rows and remaps one at minute 40; the new one comes with 2 rows
  remapped in its past and remaps one at minute 150. The new GPU's first reading is not a remap: the CloudWatch agent
  keeps a counter's previous reading per series (every label, the UUID too), so a new UUID's first reading sends
  nothing, and the health widget sums the two GPUs' deltas under the node and GPU index, as the panel's one bar.
"""

from __future__ import annotations

import pytest


from generator.artifacts import build, grafana_dashboards
from generator.output import encode
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import widgets
from tests.support.dcgm_fleet import target_labels
from tests.support.mixed_fleet import NOT_SUPPORTED
from tests.support.prometheus_server import backfilled_fixture

STEP, SCRAPES, OFFSET = 30, 360, 15
ROWS = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
TITLE = "Rows remapped (uncorrectable)"
VARIABLES = ("namespace", "pod", "node", "gpu", "cluster")
BLANK = float(NOT_SUPPORTED)


def _time(k: int) -> int:
    return OFFSET + k * STEP


def upgrade_rows(minute: float) -> int:
    return 2 + (minute >= 85) + (minute >= 150)


def replaced_rows(minute: float) -> tuple[str, int] | None:
    """(UUID, rows) of GPU 0 of node-replaced at `minute`; None while the node is away."""
    if minute < 90:
        return "GPU-0ld", 4 + (minute >= 40)
    return ("GPU-n3w", 2 + (minute >= 150)) if minute >= 92 else None


def _gpu(uuid: str) -> str:
    return f'gpu="0",UUID="{uuid}",device="nvidia0",modelName="NVIDIA H100",job="dcgm-exporter"'


# node -> [(labels of one series, [(seconds, reading)])]: what the exporters served
def _series() -> dict[str, list[tuple[str, list[tuple[int, float]]]]]:
    gpu = _gpu("GPU-7f3a")
    old = [(_time(k), float(upgrade_rows(_time(k) / 60))) for k in range(SCRAPES) if _time(k) < 100 * 60]
    new = [(_time(k), BLANK if _time(k) < 95 * 60 else float(upgrade_rows(_time(k) / 60)))
           for k in range(SCRAPES) if _time(k) >= 80 * 60]
    replaced: dict[str, list[tuple[int, float]]] = {}
    for k in range(SCRAPES):
        if (read := replaced_rows(_time(k) / 60)) is not None:
            replaced.setdefault(read[0], []).append((_time(k), float(read[1])))
    return {"node-upgrade": [(f'{gpu},Hostname="node-upgrade",instance="10.0.0.1:9400"', old),
                             (f'{gpu},hostname="node-upgrade",instance="10.0.0.2:9400"', new)],
            "node-replaced": [(f'{_gpu(uuid)},Hostname="node-replaced",instance="10.0.0.3:9400"', samples)
                              for uuid, samples in replaced.items()]}


def _openmetrics(start: int) -> str:
    lines = [f"# TYPE {ROWS} gauge"]  # stored under its own name (an OpenMetrics counter's samples end in _total)
    for series in _series().values():
        for labels, samples in series:
            lines += [f"{ROWS}{{{labels}}} {value:.0f} {start + t}" for t, value in samples]
    return "\n".join(lines) + "\n# EOF\n"


def _readings(node: str) -> dict[str, list[tuple[int, float]]]:
    """Each physical GPU's (UUID's) readings: at each scrape, what its exporters read that is not a blank (the copies
    agree)."""
    taken: dict[str, dict[int, float]] = {}
    for labels, samples in _series()[node]:
        uuid = labels.split('UUID="', 1)[1].split('"', 1)[0]
        for t, value in samples:
            if value < 9e18:
                taken.setdefault(uuid, {})[t] = max(taken.get(uuid, {}).get(t, value), value)
    return {uuid: sorted(readings.items()) for uuid, readings in taken.items()}


def _truth(node: str, first: int, last: int) -> float:
    """The sum over the node's GPU 0s of the deltas of their readings taken in [first, last) minutes (a fall's reading
    counts as it is; a GPU's first reading adds nothing)."""
    return float(sum(b - a if b >= a else b for readings in _readings(node).values()
                     for (_, a), (t, b) in zip(readings, readings[1:]) if first * 60 <= t < last * 60))


RANGES = ((60, 120), (0, 180), (120, 180))


def test_the_truth_is_what_the_story_says():
    assert [_truth("node-upgrade", *r) for r in RANGES] == [1.0, 2.0, 1.0]
    assert [_truth("node-replaced", *r) for r in RANGES] == [0.0, 2.0, 1.0]


backfilled = backfilled_fixture("counter-copies", _openmetrics, SCRAPES * STEP, STEP)


@pytest.fixture(scope="module")
def panel():
    dashboard = next(d for d in grafana_dashboards(load_project()) if d.uid == "gpudash-health")
    return next(p for p in dashboard.model["panels"] if p.get("title") == TITLE)


def shown(prometheus, panel: dict, start: int, first: int, last: int) -> dict[str, float]:
    """{bar: value} as Grafana shows the panel over [first, last) minutes: an instant query at the range's end."""
    (target,) = panel["targets"]
    assert target["instant"] is True
    expr = interpolate(target["expr"], {"__range": f"{(last - first) * 60}s", "__range_ms": str((last - first) * 60_000),
                                        **variables({}, VARIABLES)})
    result = prometheus.query(expr, at=start + last * 60)
    bars = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
    assert len(bars) == len(result)
    return bars


@pytest.mark.parametrize("first, last", RANGES)
def test_a_blank_on_one_exporters_copy_is_no_reading(backfilled, panel, first, last):
    """Before: the copies' largest reading was taken before the blank filter, so from minute 80 to 95 the GPU's
    reading was the blank and dropped; at minute 95 the reading before it was more than 5 minutes old, so the remap at
    minute 85 counted nowhere (0 for 60-120 minutes, 1 for the three hours)."""
    prometheus, start = backfilled
    bars = shown(prometheus, panel, start, first, last)
    assert bars["node-upgrade GPU 0"] == _truth("node-upgrade", first, last), bars
    assert set(bars) == {"node-upgrade GPU 0", "node-replaced GPU 0"}


@pytest.mark.parametrize("first, last", RANGES)
def test_a_new_gpu_under_the_same_node_and_index_is_no_counter_reset(backfilled, panel, first, last):
    """Before: the GPU's copies were merged by (cluster, node, gpu) alone, so the new GPU's 2 rows after the old one's
    5 read as a reset and counted 2 (2 for 60-120 minutes, 4 for the three hours). The bar keeps its legend."""
    prometheus, start = backfilled
    bars = shown(prometheus, panel, start, first, last)
    assert bars["node-replaced GPU 0"] == _truth("node-replaced", first, last), bars
    assert set(bars) == {"node-upgrade GPU 0", "node-replaced GPU 0"}


AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"


@pytest.fixture(scope="module")
def published():
    """The CloudWatch twin: node-replaced's exporter payloads through the agent model, and the health widget."""
    files = encode(build(load_project()))
    config, job = agent_config(files[AGENT_FILE])
    target = target_labels(job, "node-replaced")
    scrapes = []
    for k in range(SCRAPES):
        if (read := replaced_rows(_time(k) / 60)) is not None:
            labels = f'gpu="0",UUID="{read[0]}",device="nvidia0",modelName="NVIDIA H100",Hostname="node-replaced"'
            scrapes.append(Scrape(float(_time(k)), f"# TYPE {ROWS} counter\n{ROWS}{{{labels}}} {read[1]}\n", target))
    (properties,) = [p for path, p in widgets(files) if path.endswith("-health.json") and p["title"] == TITLE]
    return properties, Agent(config, job).run(scrapes)


@pytest.mark.parametrize("first, last", RANGES)
def test_the_cloudwatch_twin_counts_the_same_for_a_new_gpu(published, first, last):
    properties, points = published
    lines = cloudwatch_eval.widget(properties, points, first * 60, last * 60)
    assert {label: sum(series.values()) for label, series in lines.items() if series} == \
        {"node-replaced GPU 0": _truth("node-replaced", first, last)}
