"""The GPU stopped reporting rule's CloudWatch alarm (agent.pipeline: otel) on stories its twin's tests do not tell.

Each story is a node's exporter pages (30 s scrapes) fed to the agent model on the generated collector configuration
(tests/support/cloudwatch_otel.py) and judged by CloudWatch's documented semantics (tests/support/cloudwatch_eval.py)
at every minute from 1 to 92, the evaluation range three periods as the twin's CloudWatch test judges it:

- node-n: GPU 1 of four never reports (an exporter run with a --devices subset, a GPU DCGM does not support, or one
  lost before the node booted): the alarm names the node from minute 6 for as long as the node runs; the Prometheus
  twin never fires (the GPU had no reading within its hour). A strict xfail with the twin's truth.
- node-o: an exporter rollout, the old and the new exporter pod both scraped for two minutes, the new one's DCGM
  answering GPUs 1 and 2 blank at its first four scrapes: never.
- node-p: GPU 0 of eight stops at minute 30: from minute 40, as the twin.
- node-q: GPU 0 of four stops at minute 31 (not on a period's edge): from minute 41, as the twin.
- node-r: the only GPU of its node stops: neither (no other GPU vouches for the exporter).
- node-s: every GPU idle (no pod label on any series), one with DCGM's blank at one scrape in every five: never.
- node-m (the twin's CloudWatch story: GPU 1 of four stops at 30, the node removed at 50), judged at every plausible
  evaluation range: in ALARM to minute 59 to 79 (64 with the user guide's example range), the twin's alert to 54. A
  strict xfail with the twin's truth.
"""

from __future__ import annotations

import pytest

from generator.stopped_gpus import UNREAD
from tests.integration.test_gpu_stopped_reporting import BLANK, STEP
from tests.support import cloudwatch_eval
from tests.support.agent_points import AGENT_FILE
from tests.support.alarm_requests import alarm_request
from tests.support.built import files as built_files
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import discovered, target_labels

RANGE = 3
STEPS = 186  # 93 minutes of 30 s scrapes
MINUTES = tuple(range(1, 93))
ALL_ALONG = set(MINUTES)


def _line(node: str, gpu: int, value: float, pod: bool = True) -> str:
    labels = {"gpu": str(gpu), "UUID": f"GPU-{node}-{gpu}", "device": f"nvidia{gpu}",
              "modelName": "NVIDIA A100-SXM4-80GB", "Hostname": node}
    if pod and gpu == 0:
        labels |= {"namespace": "ml", "pod": f"train-{node}", "container": "main"}
    text = ",".join(f'{key}="{value}"' for key, value in labels.items())
    return f"DCGM_FI_DEV_GPU_TEMP{{{text}}} {value:.0f}"


def _page(node: str, gpus: dict[int, float], pod: bool = True) -> str:
    return "\n".join(["# TYPE DCGM_FI_DEV_GPU_TEMP gauge", *(_line(node, g, v, pod) for g, v in gpus.items())]) + "\n"


def _pages(k: int) -> list[tuple[str, str, str]]:
    """(node, exporter pod suffix or "", page) of each target scraped at scrape `k`."""
    pages = [("node-n", "", _page("node-n", {0: 40, 2: 42, 3: 43}))]
    old, new = k < 64, k >= 60  # node-o: the new exporter pod from minute 30, the old one's last scrape at 31.5
    if old:
        pages.append(("node-o", "", _page("node-o", {g: 40 + g for g in range(4)})))
    if new:
        warm = k < 64
        pages.append(("node-o", "x2", _page("node-o", {g: BLANK if warm and g in (1, 2) else 40 + g
                                                       for g in range(4)})))
    pages.append(("node-p", "", _page("node-p", {g: 40 + g for g in range(8) if not (g == 0 and k >= 60)})))
    pages.append(("node-q", "", _page("node-q", {g: 40 + g for g in range(4) if not (g == 0 and k >= 62)})))
    if k < 60:
        pages.append(("node-r", "", _page("node-r", {0: 40})))
    else:  # its only GPU lost: the exporter serves a page without DCGM series
        pages.append(("node-r", "", "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"))
    pages.append(("node-s", "", _page("node-s", {g: BLANK if g == 1 and k % 5 == 0 else 40 + g for g in range(4)},
                                      pod=False)))
    return pages


def _target(job: dict, node: str, pod: str) -> dict[str, str]:
    labels = target_labels(job, node)
    if not pod:
        return labels
    meta = {"__address__": f"10.9.0.{len(node)}:9400", "__meta_kubernetes_namespace": "gpu-operator",
            "__meta_kubernetes_pod_name": f"nvidia-dcgm-exporter-{pod}", "__meta_kubernetes_pod_node_name": node,
            "__meta_kubernetes_pod_container_port_number": "9400",
            "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter",
            "__meta_kubernetes_pod_controller_kind": "DaemonSet",
            "__meta_kubernetes_pod_label_controller_revision_hash": "6f9b8c7d5e",
            "__meta_kubernetes_pod_label_app_kubernetes_io_name": "dcgm-exporter"}
    other = discovered(job, meta)
    assert other.get("node") == labels.get("node") == node and other["instance"] != labels["instance"]
    return other


@pytest.fixture(scope="module")
def judged():
    """({node: the minutes the alarm names it}, the agent's datapoints, the alarm's PutMetricAlarm request)."""
    files = built_files("")
    config, job = agent_config(files[AGENT_FILE])
    scrapes = [Scrape(float(k * STEP), page, _target(job, node, pod))
               for k in range(STEPS) for node, pod, page in _pages(k)]
    points = Agent(config, job).run(scrapes)
    request = alarm_request(files, "gpu-stopped-reporting")
    fired = cloudwatch_eval.fired_at(request, points, [minute * 60 for minute in MINUTES], "node",
                                     evaluation_range=RANGE)
    return {node: {int(end) // 60 for end in ends} for node, ends in fired.items()}, points, request


def _unread(points, node: str) -> set[float]:
    return {p.value for p in points if p.metric == UNREAD and p.dims()["node"] == node}


def test_a_lost_gpu_of_eight_and_one_lost_off_a_periods_edge_fire_and_when(judged):
    """GPU 0 of eight lost at minute 30: the alarm from minute 40, as the twin (10 minutes without a reading). GPU 0
    of four lost at 31: the alarm from 41 too (its periods end at each evaluation), as the twin."""
    fired, points, _ = judged
    assert _unread(points, "node-p") == {0.0, 1.0}
    assert min(fired["node-p"]) == 40 and fired["node-p"] == set(range(40, 93))
    assert min(fired["node-q"]) == 41 and fired["node-q"] == set(range(41, 93))


def test_an_exporter_rollout_a_node_with_one_gpu_and_idle_gpus_with_blanks_do_not_fire(judged):
    fired, points, _ = judged
    assert _unread(points, "node-o") == {0.0, 2.0}  # the new exporter's first scrapes: GPUs 1 and 2 blank
    # GPU 1's blank at one scrape in five: a hole at those scrapes alone, never at every scrape of a period
    assert _unread(points, "node-s") == {0.0, 1.0}
    assert _unread(points, "node-r") == {0.0}  # its only GPU lost: no index read, no point
    assert not fired.get("node-o") and not fired.get("node-r") and not fired.get("node-s"), fired


def test_a_gpu_no_one_saw_report_fires_the_alarm_all_along(judged):
    """What the alarm does where the twin is silent: the hole of a GPU never read (an exporter run with a --devices
    subset, a GPU DCGM does not support, one lost before boot) names the node from its sixth minute on (the
    first period holding its first scrapes alone), for as long as the node runs. Its description says so: the GPU
    was lost or never read (not "DCGM lost the GPU" alone)."""
    fired, points, request = judged
    assert _unread(points, "node-n") == {1.0}
    assert fired["node-n"] == set(range(6, 93))
    assert "DCGM lost that GPU or never read it." in request["AlarmDescription"]


@pytest.mark.xfail(strict=True, reason="a GPU below the node's highest index that never reported (a --devices subset, "
                                       "a GPU DCGM does not support, one lost before boot) is a hole at every scrape: "
                                       "the alarm names its node from minute 6 for as long as the node runs, where "
                                       "the twin never fires (no reading within its hour)")
def test_a_gpu_no_one_saw_report_fires_as_the_twin(judged):
    fired, _, _ = judged
    assert not fired.get("node-n")


# The twin's story of node-m (GPU 1 of four stops at minute 30, the node removed at 50: the usual remedy), judged at
# every plausible evaluation range (3 to 7 periods: its length is not published): the twin's alert ends at 54.
REMOVED_CLEARS = {3: 59, 4: 64, 5: 69, 6: 74, 7: 79}


@pytest.fixture(scope="module")
def removed():
    """{the evaluation range's length in periods: the last minute node-m is in ALARM}."""
    from tests.integration.test_gpu_stopped_reporting_cloudwatch import _node_m

    files = built_files("")
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(float(k * STEP), _node_m(k), target_labels(job, "node-m"))
                                     for k in range(190) if _node_m(k)])
    request = alarm_request(files, "gpu-stopped-reporting")
    last: dict[int, int] = {}
    for minute in range(40, 95):
        for _, judged in cloudwatch_eval.alarm_ranges(request, points, minute * 60).items():
            last.update({length: minute for length, state in judged.items() if state == "ALARM"})
    return last


def test_a_node_removed_while_in_alarm_stays_in_alarm_while_the_range_holds_its_last_datapoints(removed):
    """Its last datapoints breach: in ALARM to minute 59 (three periods) ... 79 (seven), 64 with the user guide's
    example range (two periods more than the alarm's two)."""
    assert removed == REMOVED_CLEARS


@pytest.mark.xfail(strict=True, reason="a node removed while in ALARM (its last datapoints breaching) stays in ALARM "
                                       "5 to 25 minutes past the twin's alert (to minute 59-79 for 54), as the "
                                       "evaluation range (3 to 7 periods, unpublished) holds its last datapoints")
def test_a_node_removed_while_in_alarm_clears_as_the_twin(removed):
    assert max(removed.values()) == 54
