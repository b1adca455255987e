"""DCGM's health status on CloudWatch: a GPU's value is its worst watched system, whatever the statistic a chart asks.

The exporter writes DCGM_EXP_GPU_HEALTH_STATUS as one series per watched system of each GPU (gpu_health_collector.go:
ten watches, PCIE to DRIVER, each labelled `health_watch` and `health_error_code`, 0 pass, 10 warn, 20 fail), the error
code changing with the incident (DCGM_FR_OK, then DCGM_FR_PCI_REPLAY_RATE): a new series. gpudash takes the GPU's
value as the largest of them (catalog.FIELD_LABELS), as Grafana's panels do. The agent publishes each series as an
observation under the GPU's dimensions, so a statistic over the observations takes every watch: a fleet's mean health
read 1.5 where two GPUs of four failed (each 20: 10), a GPU's mean 3 for its 20, and a node of two GPUs counted 20.

Now a line per GPU is the GPU's largest, a mean, least or total over the cluster combines each GPU's largest by metric
math, and a mean, least, total or count per node, namespace or pod, which no query reads from each GPU's largest, is
left out of CloudWatch (the header says why; Grafana draws it) and refused in an alarm. Through the agent model of the
build's OTel pipeline (the exporter's CSV types the field `counter`, which the pipeline turns back into a gauge).
DCGM_EXP_P2P_STATUS, one series per peer GPU (`peer_gpu`, `link_status`), is read the same way: a GPU's worst link.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.errors import InputError
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.agent_points import AGENT_FILE
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import header, said
from tests.support.dcgm_fleet import target_labels
from tests.support.projects import counters_with

HEALTH = "DCGM_EXP_GPU_HEALTH_STATUS"
WATCHES = ("PCIE", "NVLINK", "PMU", "MCU", "MEM", "SM", "INFOROM", "THERMAL", "POWER", "DRIVER")
NODES = ("ip-10-0-0-1", "ip-10-0-0-2")
STEP, END, SICK = 30, 1800, (600, 1200)  # GPU 1 of each node: PCIe failing and heat warning from 600 s to 1200 s
CHARTS = {  # title: (aggregation, grouping)
    "mean": ("avg", ()), "least": ("min", ()), "total": ("sum", ()), "worst": ("max", ()), "GPUs": ("count", ()),
    "per GPU": ("avg", ("node", "gpu")), "worst per node": ("max", ("node",)),
    "GPUs per node": ("count", ("node",)), "mean per pod": ("avg", ("pod",)), "least per namespace": ("min", ("namespace",)),
}
DASHBOARD = "from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n" \
            "    yield Dashboard(id=\"health-states\", title=\"Health\", rows=[Row(\"states\", [\n" + "".join(
                f"        Panel({title!r}, Query({HEALTH!r}, {how!r}, {by!r})),\n" for title, (how, by) in CHARTS.items()) \
            + "    ])])\n"
LEFT_OUT = {"GPUs per node", "mean per pod", "least per namespace"}


def _status(gpu: int, watch: str, t: int) -> tuple[str, int]:
    """(health_error_code, value) of one watch of one GPU at `t`."""
    if gpu == 1 and SICK[0] <= t < SICK[1]:
        if watch == "PCIE":
            return "DCGM_FR_PCI_REPLAY_RATE", 20
        if watch == "THERMAL":
            return "DCGM_FR_CLOCK_THROTTLE_THERMAL", 10
    return "DCGM_FR_OK", 0


def _payload(node: str, t: int, held: tuple[int, ...] = (0,)) -> str:
    """The node's scrape at `t`; the node's pod holds the GPUs `held` (the others no pod holds)."""
    lines = [f"# TYPE {HEALTH} counter"]
    for gpu in (0, 1):
        pod = f',container="main",namespace="ml",pod="train-{node[-1]}"' if gpu in held else ""
        for watch in WATCHES:
            code, value = _status(gpu, watch, t)
            lines.append(f'{HEALTH}{{gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",modelName="NVIDIA H100",'
                         f'Hostname="{node}",health_watch="{watch}",health_error_code="{code}"{pod}}} {value}')
    return "\n".join(lines) + "\n"


def _project(tmp_path, dashboards: str = DASHBOARD, alarms: str | None = None):
    csv = counters_with(tmp_path, f"{HEALTH}, counter, DCGM reported health status\n")
    definitions = {"dashboards": dashboards, **({"alarms": alarms} if alarms else {})}
    for kind, text in definitions.items():
        (tmp_path / kind).mkdir()
        (tmp_path / kind / f"{kind}.py").write_text(text)
    (tmp_path / "gpudash.yaml").write_text(f"counters: {csv}\ndefinitions:\n" +
                                           "".join(f"  {kind}: [{kind}]\n" for kind in definitions))
    return load_project(tmp_path / "gpudash.yaml")


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """(each chart's {line: {period start: value}}, the dashboard's header)."""
    files = encode(build(_project(tmp_path_factory.mktemp("health")), grafana=False))
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(k * STEP, _payload(node, k * STEP), target_labels(job, node))
                                     for k in range(-2, END // STEP) for node in NODES])
    path = "cloudwatch/dashboards/gpudash-gpu-cluster-health-states.json"
    body = json.loads(json.loads(files[path])["DashboardBody"])
    charts = {w["properties"]["title"]: cloudwatch_eval.widget(w["properties"], points, 0, END)
              for w in body["widgets"] if w["type"] == "metric"}
    return charts, header(files, path)


def _values(lines: dict) -> dict[str, set[float]]:
    """{line: its values in the sick periods} ([SICK) is two whole 5-minute periods)."""
    return {label: {v for t, v in series.items() if SICK[0] <= t < SICK[1]} for label, series in lines.items()}


def test_over_the_cluster_each_gpu_counts_by_its_worst_watch(drawn):
    charts, _ = drawn
    # four GPUs, two of them failing (20): mean 10, least 0, total 40, worst 20, 4 GPUs
    assert _values(charts["mean"]) == {"mean": {10.0}}
    assert _values(charts["least"]) == {"least": {0.0}}
    assert _values(charts["total"]) == {"total": {40.0}}
    assert _values(charts["worst"]) == {"worst": {20.0}}
    assert {v for series in charts["GPUs"].values() for v in series.values()} == {4.0}
    assert said(drawn[1], "mean", "each GPU weighs in by the largest state its period read")
    # healthy before and after: every statistic 0
    assert {v for t, v in charts["mean"]["mean"].items() if not SICK[0] <= t < SICK[1]} == {0.0}


def test_a_line_per_gpu_is_the_gpus_worst_watch(drawn):
    charts, header_text = drawn
    assert _values(charts["per GPU"]) == {f"{node} GPU {gpu}": {20.0 if gpu else 0.0} for node in NODES for gpu in (0, 1)}
    assert _values(charts["worst per node"]) == {node: {20.0} for node in NODES}
    assert said(header_text, "per GPU", "a point is the largest state its period read")


def test_a_statistic_per_group_of_gpus_is_left_out_of_cloudwatch_and_says_why(drawn):
    charts, header_text = drawn
    assert LEFT_OUT.isdisjoint(charts)
    grafana_only = header_text.split("On Grafana only: ", 1)[1]
    for title in LEFT_OUT:
        assert f"{title} ({HEALTH} is written as several series per GPU (by health_watch, health_error_code)" \
            in grafana_only, title


@pytest.mark.parametrize("by, where", [(("node",), "per node"), ((), "over the cluster")])
def test_an_alarm_of_a_mean_is_refused(tmp_path, by, where):
    """A mean per node, and over the cluster (an alarm has no metric math over an array of GPUs), is refused."""
    alarms = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
              f"    return [Alarm('health', 'Health', Condition(Query({HEALTH!r}, 'avg', {by!r}), '>=', 10))]\n")
    with pytest.raises(InputError) as refused:
        build(_project(tmp_path, alarms=alarms), grafana=False)
    assert f"its avg {where} would take every series, not each GPU's value" in str(refused.value)
    assert "fix: take its max (each GPU's largest series), or give the Alarm a `cloudwatch=` condition" \
        in str(refused.value)


def test_alarms_of_the_worst_watch_fire_for_the_failing_gpus_and_clear(tmp_path):
    """Alarms of the largest per GPU, node and pod's GPU (each pod here holds both GPUs of its node) fire for the
    failing GPUs while they fail, whichever watch fails, and are OK once the incident's series is gone."""
    alarms = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n    return [\n" + "".join(
        f"        Alarm({rule!r}, {rule!r}, Condition(Query({HEALTH!r}, 'max', {by!r}), '>=', 20)),\n"
        for rule, by in (("per-gpu", ("node", "gpu")), ("per-node", ("node",)), ("per-pod-gpu", ("pod", "gpu"))))
        + "    ]\n")
    files = encode(build(_project(tmp_path, alarms=alarms), grafana=False))
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(k * STEP, _payload(node, k * STEP, held=(0, 1)), target_labels(job, node))
                                     for k in range(-2, END // STEP) for node in NODES])
    fired = {}
    for alarm in json.loads(files["cloudwatch/alarms.json"])["alarms"]:
        request = alarm["Request"]
        for at in (900, 1500):
            fired[request["AlarmName"].split("-gpu-cluster-")[1], at] = sorted(
                tuple(value for name, value in key if name != "ClusterName")
                for key, state in cloudwatch_eval.alarm(request, points, at).items() if state == "ALARM")
    assert fired == {("per-gpu-warning", 900): [(NODES[0], "1"), (NODES[1], "1")], ("per-gpu-warning", 1500): [],
                     ("per-node-warning", 900): [(NODES[0],), (NODES[1],)], ("per-node-warning", 1500): [],
                     ("per-pod-gpu-warning", 900): [("ml", "train-1", "1"), ("ml", "train-2", "1")],
                     ("per-pod-gpu-warning", 1500): []}


P2P = "DCGM_EXP_P2P_STATUS"
P2P_DASHBOARD = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
                 "    yield Dashboard(id=\"p2p\", title=\"P2P\", rows=[Row(\"links\", [\n" + "".join(
                     f"        Panel({title!r}, Query({P2P!r}, {how!r}, {by!r})),\n" for title, (how, by) in (
                         ("worst link per GPU", ("max", ("node", "gpu"))), ("mean", ("avg", ())), ("GPUs", ("count", ())),
                         ("GPUs per node", ("count", ("node",))))) + "    ])])\n")


def _p2p_payload(node: str) -> str:
    """Three GPUs, each with a series per peer (p2p_status_collector.go: `peer_gpu`, `link_status`): GPU 2's link to
    GPU 0 is not supported by the topology (3), every other link OK (0)."""
    lines = [f"# TYPE {P2P} counter"]
    for gpu in range(3):
        for peer in range(3):
            if peer != gpu:
                status, name = (3, "TopologyNotSupported") if (gpu, peer) == (2, 0) else (0, "OK")
                lines.append(f'{P2P}{{gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",modelName="NVIDIA H100",'
                             f'Hostname="{node}",peer_gpu="{peer}",link_status="{name}"}} {status}')
    return "\n".join(lines) + "\n"


def test_the_p2p_status_counts_each_gpu_by_its_worst_link(tmp_path):
    """DCGM_EXP_P2P_STATUS is one series per peer GPU: a GPU's value is its worst link, a mean over the cluster the
    mean of the GPUs' worst (1 for 3, 0, 0: it read 0.5 over the links), and a count per node, which counted each
    link (6 for 3 GPUs), is left out of CloudWatch."""
    csv = counters_with(tmp_path, f"{P2P}, counter, P2P NvLink status\n")
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "dashboards.py").write_text(P2P_DASHBOARD)
    (tmp_path / "gpudash.yaml").write_text(f"counters: {csv}\ndefinitions:\n  dashboards: [dashboards]\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml"), grafana=False))
    config, job = agent_config(files[AGENT_FILE])
    node = NODES[0]
    points = Agent(config, job).run([Scrape(k * STEP, _p2p_payload(node), target_labels(job, node))
                                     for k in range(-2, END // STEP)])
    path = "cloudwatch/dashboards/gpudash-gpu-cluster-p2p.json"
    body = json.loads(json.loads(files[path])["DashboardBody"])
    charts = {w["properties"]["title"]: {label: set(series.values()) for label, series in
                                         cloudwatch_eval.widget(w["properties"], points, 0, END).items()}
              for w in body["widgets"] if w["type"] == "metric"}
    assert charts == {"worst link per GPU": {f"{node} GPU 0": {0.0}, f"{node} GPU 1": {0.0}, f"{node} GPU 2": {3.0}},
                      "mean": {"mean": {1.0}}, "GPUs": {"GPUs": {3.0}}}
    assert "GPUs per node (DCGM_EXP_P2P_STATUS is written as several series per GPU (by peer_gpu, link_status)" \
        in header(files, path)


def _retype_edited(otel: dict, how: str) -> None:
    """A person's edit of the collector configuration's processor that makes the health status a gauge."""
    processors, listed = otel["processors"], otel["service"]["pipelines"]["metrics/gpudash"]["processors"]
    if how == "emptied":
        processors["transform/gpudash-gauges"]["metric_statements"][0]["statements"] = []
    elif how == "another name":
        statements = processors["transform/gpudash-gauges"]["metric_statements"][0]["statements"]
        statements[0] = statements[0].replace(HEALTH, "DCGM_EXP_HEALTH_STATUS")
    else:  # deleted, and out of the pipeline
        del processors["transform/gpudash-gauges"]
        listed.remove("transform/gpudash-gauges")


@pytest.mark.parametrize("how", ["as built", "emptied", "another name", "deleted"])
def test_a_pipeline_that_no_longer_makes_the_health_status_a_gauge_fails_ag005(tmp_path, how):
    """The exporter serves the health status as a counter (the CSV's type); the pipeline makes it a gauge first, else
    awsemf publishes the differences between readings: the failing GPUs' line per GPU reads 0, not 20 (the agent
    model). Lint said nothing of a processor emptied, renamed or deleted by hand."""
    from generator.lint.feed_rules import RULES
    from generator.lint.runner import run
    from tests.support.lint_input import lint_input, otel_edited

    project = _project(tmp_path)
    artifacts = build(project, grafana=False)
    if how != "as built":
        artifacts = otel_edited(artifacts, lambda otel: _retype_edited(otel, how))
    files = encode(artifacts)
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(k * STEP, _payload(node, k * STEP), target_labels(job, node))
                                     for k in range(-2, END // STEP) for node in NODES])
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-health-states.json"])["DashboardBody"])
    (per_gpu,) = [w["properties"] for w in body["widgets"] if w["properties"].get("title") == "per GPU"]
    failing = {v for label, values in _values(cloudwatch_eval.widget(per_gpu, points, 0, END)).items()
               if label.endswith("GPU 1") for v in values}
    findings = [f.message for f in run([r for r in RULES if r.id == "AG005"], lint_input(project, artifacts))]
    if how == "as built":
        assert (failing, findings) == ({20.0}, [])
    else:
        assert failing == {0.0}
        assert findings == [f"the pipeline does not give {HEALTH} the type of their meaning as gpudash writes it (a "
                            "state or a count over the exporter's window served as a counter, a running total served "
                            "as a gauge): awsemf would publish the differences between a state's readings, so a GPU "
                            "failing all along reads 0, and a running total whole where its growth is read; write the "
                            "processor as `gpudash generate` does and list it first in metrics/gpudash's processors"]
