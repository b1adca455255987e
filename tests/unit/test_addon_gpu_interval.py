"""cloudwatch.source: container-insights with cloudwatch.addon_gpu_interval other than 60 s: the widgets that add
observations per GPU count a GPU once per collection.

gpudash writes `addon_gpu_interval` into the add-on's configuration
(`accelerated_compute_gpu_metrics_collection_interval`), and its data-missing alarms count collections at it
(test_container_insights_intervals). The add-on then publishes each GPU's DCGM fields every `addon_gpu_interval`
seconds: below 60 s as one distribution a minute whose SampleCount is the collections (the model,
tests/support/container_insights_addon.datapoints(every=...), stores one datapoint per collection). A widget that
adds a GPU's observations ("GPUs reporting", "Total power draw", "Pods on GPUs", the per-pod totals) divides by the
collections a GPU gives in its period; the layout read them at a fixed 60 s whatever the setting said, so at 30 s
each GPU counted twice. Now one fact says how often a GPU is observed on each source (container_insights
.observed_every: the add-on's addon_gpu_interval, the agent's scrape.interval), and every widget, alarm check, price
and header that counts observations reads it; the cases below check each widget's value against the truth at
intervals below, at and above a minute.

The fleet (tests/support/dcgm_fleet.FLEET): six GPUs on two nodes, four held by pods (ml/train-0 on two).
"""

from __future__ import annotations

import re

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from generator.render.cloudwatch import panel_title
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_widgets import widgets
from tests.support.container_insights_addon import datapoints
from tests.support.dcgm_fleet import FLEET, STEP

START, END, CLUSTER = 0, 2100, "gpu-cluster"
INTERVAL = 30  # seconds between the add-on's DCGM collections (cloudwatch.addon_gpu_interval)


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    folder = tmp_path_factory.mktemp("addon30")
    (folder / "gpudash.yaml").write_text(f"cloudwatch:\n  source: container-insights\n"
                                         f"  addon_gpu_interval: {INTERVAL}\n")
    files = encode(build(load_project(folder / "gpudash.yaml")))
    points = datapoints(CLUSTER, START, END - INTERVAL, every=INTERVAL)
    found = {panel_title(p["title"]): p for _, p in widgets(files)}

    def latest(title: str) -> dict[str, float]:
        lines = cloudwatch_eval.widget(found[title], points, START, END)
        return {label: series[max(series)] for label, series in lines.items() if series}

    return latest


def test_the_add_on_collects_at_the_interval_written():
    """The fact the pins rest on: the setting reaches the add-on's configuration."""
    import json
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "gpudash.yaml").write_text(f"cloudwatch:\n  source: container-insights\n"
                                                   f"  addon_gpu_interval: {INTERVAL}\n")
        files = encode(build(load_project(Path(folder) / "gpudash.yaml")))
    kubernetes = json.loads(files["cloudwatch/container-insights-addon.json"])["agent"]["config"]["logs"][
        "metrics_collected"]["kubernetes"]
    assert kubernetes["accelerated_compute_gpu_metrics_collection_interval"] == INTERVAL


def test_gpus_reporting_counts_each_gpu_once(shown):
    assert shown("GPUs reporting") == {"GPUs reporting": float(len(FLEET))}


def test_pods_on_gpus_counts_each_pods_gpus_once(shown):
    held = {}
    for gpu in FLEET:
        if gpu.held:
            key = f"Pod {gpu.namespace}/{gpu.pod}"
            held[key] = held.get(key, 0.0) + 1.0
    assert shown("Pods on GPUs") == held  # ml/train-0: 2, research/train-0: 1, ml/infer-1: 1


def _ratio_truth(by, aggregation, start, end, period, every):
    """used / (used + free) per GPU over the GPU's collections in each period, then across the line's GPUs."""
    from tests.support.container_insights_addon import reading

    lines: dict[str, dict[int, list[tuple[float, float]]]] = {}
    for bucket in range(int(start), end, period):
        for gpu in FLEET:
            if "pod" in by and not gpu.held:
                continue
            label = f"Pod {gpu.namespace}/{gpu.pod}" if "pod" in by else ""
            values = [reading("DCGM_FI_DEV_FB_USED_PERCENT", gpu, t // STEP) for t in range(bucket, bucket + period, every)]
            lines.setdefault(label, {}).setdefault(bucket, []).append((sum(values) / len(values), max(values)))
    pick = {"avg": lambda v: sum(m for m, _ in v) / len(v), "max": lambda v: max(h for _, h in v)}
    return {label: {b: pick[aggregation](v) for b, v in buckets.items()} for label, buckets in lines.items()}


# Collections below a minute (distributions of 6 and 2 a minute), at it, and above it (one every 2.5 minutes: the
# dashboards' 5-minute period holds two). The fleet's readings change every 30 s (dcgm_fleet.STEP): at 10 s each
# reading is collected three times, which the truth's 30 s readings weigh alike.
INTERVALS = (10, 30, 60, 150)


@pytest.mark.parametrize("every", INTERVALS, ids=lambda every: f"dcgm every {every} s")
def test_every_widget_shows_the_truth_at_the_add_on_s_interval(tmp_path, every):
    """Each widget of the add-on's dashboards against the DCGM readings' meaning, as test_container_insights judges
    them at 60 s: counts of GPUs and pods, totals, means, extremes, per GPU, per pod and fleet-wide."""
    from tests.support.cloudwatch_widgets import close, panel
    from tests.support.dcgm_fleet import truth

    (tmp_path / "gpudash.yaml").write_text(f"cloudwatch:\n  source: container-insights\n  addon_gpu_interval: {every}\n")
    project = load_project(tmp_path / "gpudash.yaml")
    files = encode(build(project))
    end = 3000  # a whole number of every interval's collections and of the 5-minute period
    points = datapoints(CLUSTER, START, end - every, every=every)
    checked = set()
    for path, properties in widgets(files):
        title = panel_title(properties["title"])
        query = panel(project, path, title, CLUSTER).queries[0]
        # the table of pods now is drawn at `end`: its period still filling is not drawn (live data off)
        now = end if title == "Pods on GPUs" else None
        shown = cloudwatch_eval.widget(properties, points, START, end, now=now)
        start, period = cloudwatch_eval.widget_range(properties, START, end)
        if query.over:
            expected = _ratio_truth(query.by, query.aggregation, start, end, period, every)
        else:
            expected = truth(query, project.catalog.get(query.metric), start, end, period, every=max(every, STEP))
        if now is not None:
            expected = {label: {bucket: value for bucket, value in series.items()
                                if bucket + period <= now - cloudwatch_eval.LIVE_DATA_SECONDS}
                        for label, series in expected.items()}
        expected = {re.sub(r" GPU (\d+)$", r" nvidia\1", label) or title: series for label, series in expected.items()}
        assert set(shown) == set(expected), (path, title)
        wrong = [(label, bucket, shown[label].get(bucket), value) for label, series in expected.items()
                 for bucket, value in series.items() if not close(shown[label].get(bucket, float("nan")), value)]
        assert not wrong, (title, wrong[:3])
        checked.add(title)
    assert {"GPUs reporting", "Pods on GPUs", "Total power draw"} <= checked and len(checked) >= 15, checked


@pytest.mark.parametrize("every", (30, 150))
def test_the_headers_name_the_add_on_s_interval_not_the_scrape(tmp_path, every):
    """The dashboards' prose says what the add-on's widgets divide by: its collections, which
    cloudwatch.addon_gpu_interval gives; never the scrape interval, which the add-on does not read."""
    from tests.support.cloudwatch_widgets import header

    (tmp_path / "gpudash.yaml").write_text(f"cloudwatch:\n  source: container-insights\n  addon_gpu_interval: {every}\n"
                                           f"scrape:\n  interval: 15s\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    headers = {path: header(files, path) for path in files if path.startswith("cloudwatch/dashboards/")}
    assert headers
    assert not [path for path, text in headers.items() if "scrape.interval" in text or "per scrape" in text]
    assert any("collections cloudwatch.addon_gpu_interval gives it" in text for text in headers.values())
    assert any("values per collection, stay true" in text for text in headers.values())
    # a value now is drawn at the least whole minutes holding whole collections (150 s: 5 minutes), not the scrape's
    now = [re.search(r"own period of (\d+) s", text) for text in headers.values()]
    assert {int(m[1]) for m in now if m} == {60 if every == 30 else 300}


def test_a_dashboard_period_that_is_not_whole_collections_is_refused(tmp_path):
    """cloudwatch.period 300 s with DCGM every 120 s: 2.5 collections a period, each GPU counted 0.8 or 1.2 times."""
    from generator.errors import InputError

    (tmp_path / "gpudash.yaml").write_text("cloudwatch:\n  source: container-insights\n  addon_gpu_interval: 120\n")
    with pytest.raises(InputError) as raised:
        load_project(tmp_path / "gpudash.yaml")
    assert "cloudwatch.period 300 s is not a whole number of the add-on's DCGM collections" in str(raised.value)
    assert "addon_gpu_interval 120 s" in str(raised.value)


@pytest.mark.parametrize("every", (30, 60))
def test_cost_prices_one_observation_per_collection(tmp_path, every):
    from generator.cost import Fleet, estimates, load_prices

    (tmp_path / "gpudash.yaml").write_text(f"cloudwatch:\n  source: container-insights\n  addon_gpu_interval: {every}\n")
    result = estimates(load_project(tmp_path / "gpudash.yaml"), Fleet(clusters=1, pods=100, churn=0, gpus=200),
                       load_prices())
    (line,) = [line for line in result["group_by"]["lines"] if "observations" in line["item"]]
    # a month's collections x 7 metrics x (3 node sets per GPU + 9 pod and container sets per GPU a pod holds)
    assert line["quantity"] == pytest.approx(730 * 3600 / every * 7 * (200 * 3 + 100 * 9) / 1e6)
    assert f"every {every} s" in line["basis"]


COUNTING_ALARMS = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    return [Alarm("few-gpus", "Fewer GPUs reporting", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "count", ()), "<", 6),
                  description="fewer than six GPUs report", runbook="look at the exporter"),
            Alarm("power-high", "Fleet power high", Condition(Query("DCGM_FI_DEV_POWER_USAGE", "sum", ()), ">", LEVEL),
                  description="the fleet draws much", runbook="look at the jobs")]
'''


@pytest.mark.parametrize("every", (30, 60, 150))
def test_alarms_that_add_observations_count_each_gpu_once(tmp_path, every):
    """A cluster-wide count or total in an alarm (no metric math: its threshold is scaled by the collections a
    period holds) fires on the GPUs, whatever the add-on's interval: six GPUs reporting are not fewer than six,
    five are; the fleet's power over a level just below its total fires, just above it does not."""
    from tests.support.dcgm_fleet import value
    from tests.support.projects import defined_project

    end = 3000
    points = datapoints(CLUSTER, START, end - every, every=every)
    # the fleet's mean power over the alarm's last period (the readings the add-on collected in it)
    last = [t for t in range(end - 300, end, every)]
    total = sum(sum(value("DCGM_FI_DEV_POWER_USAGE", gpu, t // STEP, "gauge") for t in last) / len(last)
                for gpu in FLEET)
    fired = {}
    for name, level in (("below", total - 1), ("above", total + 1)):
        folder = tmp_path / name
        folder.mkdir()
        project = defined_project(folder, f"cloudwatch:\n  source: container-insights\n  addon_gpu_interval: {every}\n",
                                  alarms=COUNTING_ALARMS.replace("LEVEL", repr(level)))
        requests = {a.request["AlarmName"]: a.request for a in build(project).alarms}
        few = requests["gpudash-gpu-cluster-few-gpus-warning"]
        power = requests["gpudash-gpu-cluster-power-high-warning"]
        fired[name] = cloudwatch_eval.alarm(power, points, end)
        assert set(cloudwatch_eval.alarm(few, points, end).values()) == {"OK"}
        five = datapoints(CLUSTER, START, end - every, gpus=FLEET[1:], every=every)
        assert set(cloudwatch_eval.alarm(few, five, end).values()) == {"ALARM"}
    assert set(fired["below"].values()) == {"ALARM"} and set(fired["above"].values()) == {"OK"}, fired
