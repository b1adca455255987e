"""Single values that mean "now" and increases over the selected range show what their titles say on CloudWatch.

"GPUs reporting" and "Total power draw" show the latest whole minute the console draws (live data off: a period
a minute after it ended), never the period still filling: at its start + 10 s the latest period held only the
GPUs scraped in those 10 s (4 of 6, 520 of 940 W). The fleet's nodes are scraped 20 s apart, as Prometheus
spreads targets over the interval. A node that stopped before that minute is not counted (a spot node replaced
by one of the same size: reading the last 5 minutes as one period counted both, 17 GPUs for 9), on both agent
pipelines. "Rows remapped" is the increase per GPU over the selected range, as on Grafana (increase over
$__range), not per period: one bar per GPU. Each is checked against the fleet's readings, through the model of
the agent driven by the generated config, at several moments within a minute.
"""

from __future__ import annotations

import json
from statistics import mean

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval, dcgm_fleet as F
from tests.support.built import files as built_files
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
LATE_NODE, LATE = "ip-10-0-1-2", 20  # this node's exporter is scraped 20 s after the other's
PERIOD = 300


@pytest.fixture(scope="module")
def built():
    project = load_project()
    files = encode(build(project))
    config, job = agent_config(files[AGENT_FILE])
    scrapes = [Scrape(s.timestamp + (LATE if s.target_labels.get("node") == LATE_NODE else 0), s.payload,
                      s.target_labels) for s in F.scrapes(job, project.catalog, -1, 90, F.FLEET)]
    return files, Agent(config, job).run(scrapes)


def _widgets(files, dashboard: str) -> dict[str, dict]:
    body = json.loads(json.loads(files[f"cloudwatch/dashboards/gpudash-gpu-cluster-{dashboard}.json"])["DashboardBody"])
    return {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}


def _scraped(gpu: F.Gpu, k: int) -> float:
    return k * F.STEP + (LATE if gpu.node == LATE_NODE else 0)


def _latest(properties: dict, points, now: float) -> float:
    """The number a singleValue widget shows: its latest drawn data point."""
    (series,) = cloudwatch_eval.widget(properties, points, now - 6 * 3600, now, now=now).values()
    return series[max(series)]


def _drawn_minute(now: float) -> tuple[float, float]:
    """The minute the widget shows at `now` (its own range ends now; a period is drawn a minute after its end)."""
    end = now - cloudwatch_eval.LIVE_DATA_SECONDS
    return end - 60, end


@pytest.mark.parametrize("now", [2100 + 10, 2100 + 25, 2100 + 150, 2100 + 290])
def test_now_values_hold_every_gpu_at_any_moment_of_a_period(built, now):
    files, points = built
    widgets = _widgets(files, "overview")
    assert widgets["GPUs reporting"]["period"] == 60 and "setPeriodToTimeRange" not in widgets["GPUs reporting"]
    assert _latest(widgets["GPUs reporting"], points, now) == len(F.FLEET), now
    # Each GPU's mean over the minute drawn, added up
    first, last = _drawn_minute(now)
    truth = sum(mean(F.value("DCGM_FI_DEV_POWER_USAGE", gpu, k, "gauge") for k in range(91)
                     if first <= _scraped(gpu, k) < last) for gpu in F.FLEET)
    assert _latest(widgets["Total power draw"], points, now) == pytest.approx(truth), now
    assert 900 < truth < 1000


def _replaced_node_payload(node: str, gpus: int) -> str:
    lines = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge", "# TYPE DCGM_FI_DEV_POWER_USAGE gauge"]
    for i in range(gpus):
        labels = f'gpu="{i}",UUID="GPU-{node}-{i}",device="nvidia{i}",modelName="NVIDIA H100",Hostname="{node}"'
        lines += [f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} 60", f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} {300 + i}"]
    return "\n".join(lines) + "\n"


REPLACED_END = 3600
# node: (GPUs, first scrape, end): a 1-GPU node; an 8-GPU node whose exporter stopped 3 minutes ago; its 8-GPU
# replacement serving for 2
REPLACED = {"ip-10-0-9-9": (1, 0, REPLACED_END), "ip-10-0-1-1": (8, 0, REPLACED_END - 180),
            "ip-10-0-1-2": (8, REPLACED_END - 120, REPLACED_END)}


def _replaced_node_points(files: dict):
    config, job = agent_config(files[AGENT_FILE])
    return Agent(config, job).run([Scrape(float(t), _replaced_node_payload(node, gpus), F.target_labels(job, node))
                                   for node, (gpus, first, last) in REPLACED.items()
                                   for t in range(first, last, F.STEP)])


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_a_node_replaced_minutes_ago_is_counted_as_the_fleet_is_now(tmp_path, pipeline):
    """A 1-GPU node; an 8-GPU node whose exporter stopped 3 minutes ago; its 8-GPU replacement serving for 2."""
    files = built_files("agent:\n  pipeline: classic\n" if pipeline == "classic" else "{}\n")
    end, fleet, points = REPLACED_END, REPLACED, _replaced_node_points(files)
    widgets = _widgets(files, "overview")
    for now in (end, end + 10, end + 25):
        first, last = _drawn_minute(now)
        serving = [(node, gpus) for node, (gpus, since, until) in fleet.items()
                   if any(first <= t < last for t in range(since, until, F.STEP))]
        assert _latest(widgets["GPUs reporting"], points, now) == sum(g for _, g in serving) == 9, now
        assert _latest(widgets["Total power draw"], points, now) == sum(300 + i for _, g in serving
                                                                       for i in range(g)) == 300 + 2428, now


def test_the_dashboards_grid_period_alone_misses_the_gpus_not_yet_scraped(built):
    """The same widgets without their own range (the latest period of the dashboard's grid) at start + 10 s."""
    files, points = built
    widget = {k: v for k, v in _widgets(files, "overview")["GPUs reporting"].items()
              if k not in ("start", "setPeriodToTimeRange")}
    series = cloudwatch_eval.widget(widget, points, 0, 2110)
    (values,) = series.values()
    assert values[max(values)] == 4  # only ip-10-0-1-1's four GPUs were scraped in the 10 s


def test_rows_remapped_is_the_increase_over_the_selected_range(built):
    files, points = built
    widget = _widgets(files, "health")["Rows remapped (uncorrectable)"]
    assert widget["view"] == "bar" and widget["setPeriodToTimeRange"] is True
    for start, end in ((0, 2700), (1200, 2700), (0, 1200)):
        shown = cloudwatch_eval.widget(widget, points, start, end)
        # ip-10-0-1-1 GPU 3 remaps one row at scrape 50 (1,500 s); no other GPU remaps any
        want = 1.0 if start < 1500 < end else 0.0
        line = next(series for label, series in shown.items() if label.startswith("ip-10-0-1-1 GPU 3"))
        assert list(line.values()) == [want], (start, end)
        assert all(list(s.values()) == [0.0] for label, s in shown.items() if not label.startswith("ip-10-0-1-1 GPU 3"))


def _pods_payload(node: str, held: dict[int, tuple[str, str] | None]) -> str:
    lines = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge", "# TYPE DCGM_FI_DEV_POWER_USAGE gauge"]
    for i, pod in held.items():
        labels = f'gpu="{i}",UUID="GPU-{node}-{i}",device="nvidia{i}",modelName="NVIDIA H100",Hostname="{node}"'
        if pod:
            labels += f',namespace="{pod[0]}",pod="{pod[1]}",container="main"'
        lines += [f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} 60", f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} {300 + i}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_pods_on_gpus_lists_the_pods_holding_gpus_in_the_period_drawn(tmp_path, pipeline):
    """GPU 0 handed over: ml/old held it until a minute before the period the table draws at `end`, ml/new from that
    period's start; ml/steady holds GPUs 1 and 2 throughout; GPU 3 is idle. The table lists the pods holding a GPU in
    its period drawn (the look-back of Grafana's per-pod panels: 2 minutes at 30 s scrapes), with how many GPUs each
    holds: not ml/old, which left before that period (reading the last 5 minutes as one period listed it beside its
    successor)."""
    files = built_files("agent:\n  pipeline: classic\n" if pipeline == "classic" else "{}\n")
    config, job = agent_config(files[AGENT_FILE])
    end, node = 3600, "ip-10-0-1-1"
    steady = ("ml", "steady")
    table = _widgets(files, "by-pod")["Pods on GPUs"]
    period = table["period"]
    assert period == 120  # 4 scrape intervals of 30 s

    def holder(t: int) -> tuple[str, str] | None:
        return ("ml", "old") if t < end - 2 * period - 60 else ("ml", "new") if t >= end - 2 * period else None

    scrapes = [Scrape(float(t), _pods_payload(node, {0: holder(t), 1: steady, 2: steady, 3: None}),
                      F.target_labels(job, node)) for t in range(0, end, F.STEP)]
    points = Agent(config, job).run(scrapes)
    for now in (end, end + 10, end + 25, end + 55):
        first, last = now - 2 * period, now - period  # its own range is two periods, the first drawn
        truth: dict[str, int] = {}
        for t in range(0, end, F.STEP):
            if first <= t < last:
                for pod in {holder(t), steady} - {None}:
                    truth[f"Pod {pod[0]}/{pod[1]}"] = 2 if pod == steady else 1
        shown = cloudwatch_eval.widget(table, points, now - 6 * 3600, now, now=now)
        listed = {label: list(series.values()) for label, series in shown.items() if series}
        assert listed == {label: [float(n)] for label, n in truth.items()}, now
        assert set(truth) == {"Pod ml/new", "Pod ml/steady"}, now
        # A period picked in the console (Actions > Period override): no row has a value, ml/old is not listed
        picked = cloudwatch_eval.widget(table, points, now - 6 * 3600, now, period=300, now=now)
        assert not any(series for series in picked.values()), now


@pytest.mark.parametrize("pipeline", ["otel", "classic", "container-insights"])
def test_a_period_picked_in_the_console_draws_no_now_value_rather_than_a_false_one(tmp_path, pipeline):
    """Actions > Period override replaces every widget's period. At 5 minutes "GPUs reporting" would count the
    stopped 8-GPU node beside its replacement (17 GPUs for 9) and "Pods on GPUs" list the pod that left: a now
    value is drawn only at its own period, and the header says what periods mean and what picking one does."""
    settings = {"classic": "agent:\n  pipeline: classic\n",
                "container-insights": "cloudwatch:\n  source: container-insights\n"}.get(pipeline, "{}\n")
    files = built_files(settings)
    overview, by_pod = _widgets(files, "overview"), _widgets(files, "by-pod")
    now_titles = ("GPUs reporting", "Average GPU utilization", "Average GPU temperature", "Total power draw",
                  "Hottest GPU")
    own = 120 if pipeline == "container-insights" else 60  # (the add-on: two of its 60 s collections, now_period)
    for title in now_titles:
        assert f"PERIOD(p1) == {own}" in overview[title]["metrics"][-1][-1]["expression"], title
    header = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-overview.json"])[
        "DashboardBody"])["widgets"][0]["properties"]["markdown"]
    listed = header.split(f" are drawn only at their own period of {own} s")[0].rsplit("; ", 1)[-1]
    assert all(f'"{title}"' in listed for title in now_titles), listed
    assert "Period override" in header and "each widget loads with its own period" in header
    if pipeline == "container-insights":
        return  # the add-on's own metrics: the story below is the exporter's
    end, points = REPLACED_END, _replaced_node_points(files)
    for now in (end, end + 25):
        for title in ("GPUs reporting", "Average GPU temperature", "Total power draw", "Hottest GPU"):  # the story's
            drawn = cloudwatch_eval.widget(overview[title], points, now - 6 * 3600, now, period=60, now=now)
            assert any(series for series in drawn.values()), (title, now)
            for period in (120, 300, 3600):
                picked = cloudwatch_eval.widget(overview[title], points, now - 6 * 3600, now, period=period, now=now)
                assert not any(series for series in picked.values()), (title, period, now)
        assert _latest(overview["GPUs reporting"], points, now) == 9
    table = by_pod["Pods on GPUs"]
    assert "PERIOD(p1) == 120" in table["metrics"][-1][-1]["expression"]  # its own: the pods' look-back


def _header(files, dashboard: str) -> str:
    body = json.loads(json.loads(files[f"cloudwatch/dashboards/gpudash-gpu-cluster-{dashboard}.json"])["DashboardBody"])
    return body["widgets"][0]["properties"]["markdown"]


def test_the_header_speaks_of_values_over_the_time_range_only_where_a_widget_takes_the_range(built):
    """The overview's single values all mean now: its header must not say a single value covers the time range;
    the health dashboard's "Rows remapped" is the increase over the range, and its header says so."""
    files, _ = built
    for dashboard, whole in (("overview", False), ("by-pod", False), ("health", True)):
        widgets = _widgets(files, dashboard)
        assert any(w.get("setPeriodToTimeRange") for w in widgets.values()) == whole, dashboard
        header = _header(files, dashboard)
        assert ("over the time range" in header) == whole, (dashboard, header)
        assert ("an increase over the time range covers it whole" in header) == whole, dashboard


@pytest.mark.parametrize("interval, period", [("75s", 300), ("150s", 300)])
def test_the_header_words_a_now_value_by_the_period_it_is_drawn_at(interval, period):
    """At 75 s or 150 s scrapes a now value's period is 300 s (the least whole minutes holding whole scrape
    intervals): the overview's header says so where it said "the latest whole minute" and "in the minute" (a minute
    holds 0 or 1 reading there)."""
    files = built_files(f"scrape:\n  interval: {interval}\n")
    header = _header(files, "overview")
    assert "minute" not in header.replace("a minute ago", "").replace("a minute after", "").replace(
        "minutes may be counted", ""), header
    assert f'"Hottest GPU" the latest whole period of {period} s (below)' in header
    assert f"the number of readings of the cluster in the period of {period} s" in header
    assert f"counts as the share of the scrapes of the period of {period} s that read it" in header
