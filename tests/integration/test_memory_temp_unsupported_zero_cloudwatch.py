"""Memory temperature of GPUs that cannot read it, through the CloudWatch agent: widgets and alarms.

The scene of test_memory_temp_unsupported_zero.py (two L4s writing DCGM's 0 for "not supported" beside three H100s at
45, 30 and 97 °C, each node served by two exporter pods mid-upgrade, idle GPUs without a pod), scraped every 30 s by
the build's own agent configuration (tests/support: the agent model reads the generated ConfigMaps, the OTel
pipeline's filter among them), then read as CloudWatch reads its datapoints (widgets' Metrics Insights and math, the
alarms' evaluation).

Truth: as on Prometheus, the L4s have no memory temperature. The default pipeline (agent.pipeline: otel) drops their 0
in the agent's filter, as it drops DCGM's blank. The JSON path (agent.pipeline: classic) publishes every scraped value:
its metric_declaration matches labels (label_matcher is a regex over label values, never the value), so no
declaration can drop a reading of 0, and a widget's metric math cannot tell a GPU's 0 from a reading inside a mean.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from tests.support import cloudwatch_eval
from tests.support.agent_points import AGENT_FILE
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import latest_values, widgets_read
from tests.support.dcgm_fleet import EXPORTER_NAMESPACE, discovered
from tests.support.projects import defined_project
from tests.integration.test_memory_temp_unsupported_zero import ALARMS, DASHBOARD, FIELD, GPUS

STEP, END = 30, 30 * 40
NODES = {"n-l4": "10.0.1", "n-h100": "10.0.2"}
# the exporter's two pods of a node mid-upgrade: (pod suffix, revision, how the exporter names the node)
COPIES = (("x7kq2", "5d8f7c9b6d", 'Hostname="nvidia-dcgm-exporter-{suffix}"'),
          ("b9zr4", "7f6c5b4d3e", 'hostname="{node}"'))


def _target(job: dict, node: str, k: int) -> dict[str, str]:
    suffix, revision, _ = COPIES[k]
    meta = {"__address__": f"{NODES[node]}.{k + 1}:9400", "__meta_kubernetes_namespace": EXPORTER_NAMESPACE,
            "__meta_kubernetes_pod_name": f"nvidia-dcgm-exporter-{suffix}",
            "__meta_kubernetes_pod_node_name": node, "__meta_kubernetes_pod_container_port_number": "9400",
            "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter",
            "__meta_kubernetes_pod_controller_kind": "DaemonSet",
            "__meta_kubernetes_pod_label_controller_revision_hash": revision,
            "__meta_kubernetes_pod_label_app_kubernetes_io_name": "dcgm-exporter"}
    return discovered(job, meta)


def _payload(node: str, k: int) -> str:
    suffix, _, named = COPIES[k]
    lines = [f"# HELP {FIELD} Memory temperature (in C).", f"# TYPE {FIELD} gauge"]
    for where, gpu, model, value, pod in GPUS:
        if where == node:
            workload = f',container="main",namespace="{pod[0]}",pod="{pod[1]}"' if pod else ""
            lines.append(f'{FIELD}{{gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",modelName="{model}",'
                         f'{named.format(suffix=suffix, node=node)}{workload}}} {value}')
    return "\n".join(lines) + "\n"


def _scrapes(job: dict) -> list[Scrape]:
    return [Scrape(t, _payload(node, k), _target(job, node, k)) for t in range(-2 * STEP, END + 1, STEP)
            for node in NODES for k in range(len(COPIES))]


def _seen(tmp_path, pipeline: str):
    files = encode(build(defined_project(tmp_path, f"agent:\n  pipeline: {pipeline}\n", dashboards=DASHBOARD,
                                         alarms=ALARMS)))
    config, job = agent_config(files[AGENT_FILE])
    reads = cloudwatch_eval.reads(*(a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]))
    points = Agent(config, job, only=widgets_read(files) | reads).run(_scrapes(job))
    return files, points


def _alarmed(files, points) -> dict[str, list[dict[str, str]]]:
    """Per rule, the contributors (node and GPU, where the alarm names them) in ALARM at END."""
    found: dict[str, list[dict[str, str]]] = {}
    for item in json.loads(files["cloudwatch/alarms.json"])["alarms"]:
        request = item["Request"]
        rule = next(r for r in ("fleet-memory-cold", "memory-cold", "memory-hot") if f"-{r}-" in request["AlarmName"]
                    or request["AlarmName"].endswith(f"-{r}"))
        for key, state in cloudwatch_eval.alarm(request, points, END).items():
            if state == "ALARM":
                found.setdefault(rule, []).append({k: v for k, v in dict(key).items() if k in ("node", "gpu")})
    return found


CLASSIC = pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "agent.pipeline: classic publishes the 0 DCGM writes for memory temperature on GPUs without the sensor: the "
    "JSON path's declarations match labels, not values (the agent's documented metric_declaration), and metric math "
    "cannot tell a 0 from a reading inside a mean and alarms take none, so the L4s' 0 is averaged into means and "
    "minima and fires a 'below' alarm (each widget's header and each such alarm's description say so)"))


@pytest.mark.parametrize("pipeline", ["otel", pytest.param("classic", marks=CLASSIC)])
def test_widgets_leave_out_the_gpus_writing_0(tmp_path, pipeline):
    files, points = _seen(tmp_path, pipeline)
    shown = latest_values(files, points, END)
    mean = round((45 + 30 + 97) / 3, 6)
    assert {title: {label: round(v, 6) for label, v in lines.items()} for title, lines in shown.items()} == {
        "Fleet mean": {"Fleet mean": mean}, "Fleet least": {"Fleet least": 30}, "Node mean": {"n-h100": mean},
        "Pod hottest": {"Pod ml/train-0": 45, "Pod ml/train-1": 97}, "GPUs reporting": {"GPUs reporting": 3}}


@pytest.mark.parametrize("pipeline", ["otel", pytest.param("classic", marks=CLASSIC)])
def test_alarms_judge_the_readings_alone(tmp_path, pipeline):
    files, points = _seen(tmp_path, pipeline)
    assert _alarmed(files, points) == {"memory-hot": [{"node": "n-h100", "gpu": "2"}]}


def test_classic_says_a_gpu_without_the_sensor_reads_0_where_it_does(tmp_path):
    """On agent.pipeline: classic the L4s' 0 is published, and every widget of the field and every alarm it moves say
    so (it was said by lint alone, AL010): the values the agent model gives, as the words say, the 0 on its line and
    in a mean, minimum or count over GPUs (the pinned truths above), and the alarms below a level firing for it; the
    alarm above a level, which the 0 does not move, says nothing of it."""
    from generator.cloudwatch_query import UNREAD_ZERO_NOTE, UNREAD_ZERO_OPENING
    from tests.support.cloudwatch_widgets import header, notes

    files, points = _seen(tmp_path, "classic")
    shown = latest_values(files, points, END)
    assert {title: {label: round(v, 6) for label, v in lines.items()} for title, lines in shown.items()} == {
        "Fleet mean": {"Fleet mean": round((0 + 0 + 45 + 30 + 97) / 5, 6)}, "Fleet least": {"Fleet least": 0},
        "Node mean": {"n-h100": round((45 + 30 + 97) / 3, 6), "n-l4": 0}, "GPUs reporting": {"GPUs reporting": 5},
        "Pod hottest": {"Pod ml/train-0": 45, "Pod ml/train-1": 97, **{
            f"Pod {pod[0]}/{pod[1]}": 0 for where, _, _, _, pod in GPUS if where == "n-l4" and pod}}}
    said = notes(header(files, "cloudwatch/dashboards/gpudash-gpu-cluster-memory.json"))
    assert all(UNREAD_ZERO_NOTE in said[title] for title in shown), said
    alarmed = _alarmed(files, points)
    l4s = sorted(str(gpu) for where, gpu, *_ in GPUS if where == "n-l4")
    assert sorted(g["gpu"] for g in alarmed["memory-cold"]) == l4s, alarmed
    assert alarmed["fleet-memory-cold"] and alarmed["memory-hot"] == [{"node": "n-h100", "gpu": "2"}]
    for item in json.loads(files["cloudwatch/alarms.json"])["alarms"]:
        description = item["Request"]["AlarmDescription"]
        below = "-memory-cold" in item["Request"]["AlarmName"]
        assert (f"{UNREAD_ZERO_OPENING}: this alarm fires for it" in description) == below, description


WARM = ALARMS + f'''
    yield Alarm("fleet-memory-warm", "Fleet memory warm", Condition(Query("{FIELD}", "avg", ()), ">", 50))
    yield Alarm("pod-memory-warm", "Pod memory warm", Condition(Query("{FIELD}", "avg", ("pod", "gpu")), ">", 50))
'''


def test_classic_says_a_mean_above_a_level_is_pulled_down_by_a_gpu_without_the_sensor(tmp_path):
    """A mean over GPUs firing above a level is moved by the L4s' 0 as a 'below' alarm is: the fleet's memory reads
    57.3 C on its three sensors (the Prometheus rule and the default pipeline fire above 50), and on classic the two
    L4s' 0 pull it to 34.4, so the alarm stays quiet. Its description says so, as a 'below' alarm's does; a mean per GPU
    of a pod, which no other GPU's 0 moves, says nothing."""
    from generator.cloudwatch_query import UNREAD_ZERO_OPENING

    files = encode(build(defined_project(tmp_path, "agent:\n  pipeline: classic\n", dashboards=DASHBOARD,
                                         alarms=WARM)))
    config, job = agent_config(files[AGENT_FILE])
    requests = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]]
    points = Agent(config, job, only=widgets_read(files) | cloudwatch_eval.reads(*requests)).run(_scrapes(job))
    (warm,) = [r for r in requests if "-fleet-memory-warm-" in r["AlarmName"]]
    assert set(cloudwatch_eval.alarm(warm, points, END).values()) == {"OK"}  # (57.3 C on the sensors: quiet)
    assert UNREAD_ZERO_OPENING in warm["AlarmDescription"], warm["AlarmDescription"]
    # a mean per GPU of a pod: each line one GPU, which the other's 0 does not move (nothing said)
    (per_gpu,) = [r for r in requests if "-pod-memory-warm-" in r["AlarmName"]]
    assert UNREAD_ZERO_OPENING not in per_gpu["AlarmDescription"], per_gpu["AlarmDescription"]
