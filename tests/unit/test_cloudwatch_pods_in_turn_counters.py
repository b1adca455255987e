"""A pod's counter on the OTel pipeline where the exporter names a shared GPU under its pods in turn: what holds.

Without KUBERNETES_VIRTUAL_GPUS the exporter writes a GPU that pods share by time-slicing once, under one of them,
and which one changes from scrape to scrape (dcgm-exporter #340; kubelet's order, not a fixed rotation). awsemf keeps
a pod's previous reading across the scrapes that leave its series out, so at each scrape naming the pod it sends the
GPU's growth since the last scrape that did. With two pods strictly alternating, a 300 s period of ten 30 s scrapes
gives each pod five 60 s deltas (exact: test_cloudwatch_shared_gpu_power.py), which hid the rest: with three pods in
turn each naming carries 90 s of growth, a 300 s period holds three or four namings (0.9 or 1.2 times the GPU's
rate) and a 60 s period one naming (1.5 times) or none. The agent keeps no record of which pods a GPU had, so no
processor can hand a pod the growth of a scrape that does not name it: the header, the alarm's description and the
README say what a period reads, and the tests here check exactly that through the agent model:

* each period's value is the GPU's growth from the pod's last naming before the period to its last naming inside
  it, over the period (so off the GPU's rate by at most one gap between the pod's namings, and empty in a period
  holding no naming);
* over consecutive periods a pod's values add up to the GPU's growth from the first scrape naming it to its last;
* with KUBERNETES_VIRTUAL_GPUS (every pod named at every scrape) each period reads the GPU's rate exactly, unsaid.
"""

from __future__ import annotations

import json
import random

import pytest

from generator.artifacts import build
from generator.cloudwatch_query import NAMED_LOSS, NAMED_TURNS, NAMED_TURNS_ALARM, WHOLE_COPIES_COUNTED
from generator.render.alarm_text import ELIDED
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval, dcgm_fleet as F
from tests.support.agent_points import alarm_values
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import said as header_says
from tests.support.projects import defined_project

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
BY_POD = "cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"
NODE, END, STEP = "ip-10-0-1-1", 1800, F.STEP
ENERGY, TITLE = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Energy use rate of each pod's GPUs"
WATTS = 200.0  # the shared GPU's steady draw: its energy grows 200,000 mJ a second
PODS = (("eps", "ts-a"), ("eps", "ts-b"), ("eps", "ts-c"))
RATE = WATTS * 1000  # mJ/s, the truth for each pod holding the GPU (the title: each GPU counted once and whole)


def rotation(k: int) -> tuple[str, str]:
    """Three pods named in turn, one per scrape."""
    return PODS[k % 3]


_SHUFFLED = random.Random(27)
KUBELET = [_SHUFFLED.choice(PODS) for _ in range(END // STEP)]


def kubelet(k: int) -> tuple[str, str]:
    """The pod kubelet happens to list first at scrape k: no fixed order (#340)."""
    return KUBELET[k]


def reading(k: int) -> float:
    return 10**9 + WATTS * 1000 * STEP * k


def _payload(k: int, named, virtual: bool) -> str:
    lines = [f"# TYPE {ENERGY} counter"]
    device = f'gpu="0",UUID="GPU-{NODE}-0",device="nvidia0",modelName="NVIDIA A10G",Hostname="{NODE}"'
    for uid, (namespace, pod) in enumerate(PODS if virtual else (named(k),)):
        extra = f',pod_uid="uid-{pod}",vgpu="{uid}"' if virtual else ""
        lines.append(f'{ENERGY}{{{device},namespace="{namespace}",pod="{pod}",container="main"{extra}}} '
                     f'{reading(k):.0f}')
    return "\n".join(lines) + "\n"


def _built(tmp_path, settings: str) -> dict[str, bytes]:
    (tmp_path / "gpudash.yaml").write_text(settings)
    return encode(build(load_project(tmp_path / "gpudash.yaml")))


def _points(files: dict[str, bytes], named, virtual: bool = False) -> list:
    config, job = agent_config(files[AGENT_FILE])
    return Agent(config, job).run([Scrape(float(k * STEP), _payload(k, named, virtual), F.target_labels(job, NODE))
                                   for k in range(END // STEP)])


def _widget(files: dict[str, bytes]) -> tuple[dict, str]:
    body = json.loads(json.loads(files[BY_POD])["DashboardBody"])
    (widget,) = [w["properties"] for w in body["widgets"] if w["type"] == "metric" and w["properties"]["title"] == TITLE]
    return widget, body["widgets"][0]["properties"]["markdown"]


def said(pod: tuple[str, str], named, period: int) -> dict[int, float]:
    """What the header says a period reads: the GPU's growth from the pod's last naming before the period to its last
    naming inside it, over the period; no value for a period without a naming, nor for the first naming (no reading
    before it to take a delta from)."""
    namings = [k for k in range(END // STEP) if named(k) == pod]
    values = {}
    for start in range(0, END, period):
        inside = [k for k in namings if start <= k * STEP < start + period]
        before = [k for k in namings if k * STEP < start]
        if inside and (before or len(inside) > 1):
            first = before[-1] if before else inside[0]
            values[start] = (reading(inside[-1]) - reading(first)) / period
    return values


@pytest.mark.parametrize("named", [rotation, kubelet], ids=["three pods in turn", "kubelet's order"])
@pytest.mark.parametrize("period", [300, 60])
def test_each_period_reads_the_growth_between_the_pods_namings_as_the_header_says(tmp_path, named, period):
    files = _built(tmp_path, "agent:\n  pipeline: otel\n")
    widget, header = _widget(files)
    points = _points(files, named)
    shown = {label: {t: round(v, 3) for t, v in series.items()}
             for label, series in cloudwatch_eval.widget({**widget, "period": period}, points, 0, END).items()}
    expected = {f"Pod {ns}/{pod}": {t: round(v, 3) for t, v in said((ns, pod), named, period).items()}
                for ns, pod in PODS}
    assert shown == expected
    # not the GPU's rate in every period: three pods in turn read 0.9 / 1.2 of it at 300 s, 1.5 or nothing at 60 s
    values = {v for series in shown.values() for t, v in series.items() if t > 0}  # the first: no earlier reading
    assert values != {RATE}
    if named is rotation:
        assert values == ({0.9 * RATE, 1.2 * RATE} if period == 300 else {1.5 * RATE})
        assert all(len(series) < END // period - 1 for series in shown.values()) == (period == 60)
    # off by at most one gap between the pod's namings (the longest here), and the periods add up to the GPU's
    # growth from the pod's first naming to its last
    for (namespace, pod) in PODS:
        namings = [k for k in range(END // STEP) if named(k) == (namespace, pod)]
        gap = max(b - a for a, b in zip(namings, namings[1:])) * STEP
        series = shown[f"Pod {namespace}/{pod}"]
        assert all(abs(v - RATE) <= RATE * gap / period + 1e-6 for t, v in series.items() if t > 0)
        assert sum(series.values()) * period == pytest.approx(reading(namings[-1]) - reading(namings[0]))
    assert header_says(header, TITLE, NAMED_TURNS)  # the note whole, of this chart


def test_every_pod_named_at_every_scrape_reads_the_gpus_rate_in_every_period(tmp_path):
    """With KUBERNETES_VIRTUAL_GPUS every pod reads the GPU's rate. The header still says what a pod named in turn
    reads: exporter.virtual_gpus says some exporters run with the variable, and another of the fleet may name a GPU's
    pods in turn (seen on main 8fbc7f2e: said nowhere with the setting)."""
    files = _built(tmp_path, "agent:\n  pipeline: otel\nexporter:\n  virtual_gpus: true\n")
    widget, header = _widget(files)
    shown = cloudwatch_eval.widget({**widget, "period": 60}, _points(files, rotation, virtual=True), 0, END)
    assert {label: {round(v, 3) for t, v in series.items() if t >= 60} for label, series in shown.items()} == \
        {f"Pod {ns}/{pod}": {RATE} for ns, pod in PODS}
    assert header_says(header, TITLE, NAMED_TURNS)


def test_on_classic_the_header_says_its_own_loss_not_the_otel_pipelines_turns(tmp_path):
    _, header = _widget(_built(tmp_path, "agent:\n  pipeline: classic\n"))
    assert header_says(header, TITLE, NAMED_LOSS) and NAMED_TURNS not in header


ALARMS = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
          f"    yield Alarm('pod-energy', 'T', Condition(Query({ENERGY!r}, 'sum', ('pod',)), '>', 1), "
          "description='d', runbook='r')\n")


@pytest.mark.parametrize("virtual", [False, True], ids=["named in turn", "KUBERNETES_VIRTUAL_GPUS"])
def test_a_per_pod_counter_alarm_reads_what_its_description_says(tmp_path, virtual):
    settings = "agent:\n  pipeline: otel\n" + ("exporter:\n  virtual_gpus: true\n" if virtual else "")
    project = defined_project(tmp_path, settings, alarms=ALARMS)
    files = encode(build(project))
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if "pod-energy" in a["Request"]["AlarmName"]]
    description = request["AlarmDescription"]
    assert NAMED_TURNS_ALARM in description and ELIDED not in description  # with the setting too (see above)
    assert description.endswith(".")  # its last note whole
    points = _points(files, rotation, virtual)
    for end in range(600, END + 1, 300):
        values = {dict(key)["pod"]: value for key, value in alarm_values(request, points, end, 300).items()}
        # the alarm's value per unit of its threshold: the pod's rate over the widget's, 1.0 for the GPU's rate
        truth = {pod: (said((ns, pod), rotation, 300)[end - 300] if not virtual else RATE) for ns, pod in PODS}
        scale = values["ts-a"] / truth["ts-a"]
        assert values == pytest.approx({pod: v * scale for pod, v in truth.items()})
        if not virtual:  # a pod reads 1.2 times the GPU's rate in some period: past a threshold 10 % above it
            assert max(values.values()) > 1.1 * RATE * scale or end == 600


NAMESPACE_ALARMS = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
                    f"    yield Alarm('ns-energy', 'T', Condition(Query({ENERGY!r}, 'sum', ('namespace',)), '>', 1), "
                    "description='d', runbook='r')\n"
                    f"    yield Alarm('ns-energy-inc', 'T', Condition(Query({ENERGY!r}, 'sum', ('namespace',), "
                    "as_increase=True), '>', 1), description='d', runbook='r')\n")


@pytest.mark.parametrize("pipeline, virtual", [("otel", False), ("otel", True), ("classic", True)])
def test_a_namespaces_counter_adds_a_gpu_its_pods_share_once_per_pod_and_says_so(tmp_path, pipeline, virtual):
    """Namespace eps's three pods share one 200 W GPU: its energy grows 200,000 mJ a second, 60,000,000 a 300 s period,
    which the Prometheus rule reads (a GPU once per namespace: max by GPU and namespace). Each pod's copy on CloudWatch
    is the GPU's whole counter, so their sum per namespace reads three times it, named in turn or copied per pod; the
    description says so and lint AL019 names the alarm."""
    from generator.render.alarms import copies_counted
    settings = f"agent:\n  pipeline: {pipeline}\n" + ("exporter:\n  virtual_gpus: true\n" if virtual else "")
    project = defined_project(tmp_path, settings, alarms=NAMESPACE_ALARMS)
    files = encode(build(project))
    requests = {a["Request"]["AlarmName"].split("-cluster-")[1]: a["Request"]
                for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    points = _points(files, rotation, virtual)
    for name, truth in (("ns-energy-warning", RATE), ("ns-energy-inc-warning", RATE * 300)):
        request = requests[name]
        for end in range(600, END + 1, 300):
            (value,) = alarm_values(request, points, end, 300).values()
            assert value == pytest.approx(3 * truth)  # mJ/s, mJ
        assert WHOLE_COPIES_COUNTED in request["AlarmDescription"] and ELIDED not in request["AlarmDescription"]
    assert sorted(message.split("'")[1] for _, message in copies_counted(project)) == ["ns-energy", "ns-energy-inc"]
