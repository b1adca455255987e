"""A GPU that stops reporting while its exporter keeps serving the node's other GPUs fires "GPU stopped reporting"; a
node scaled down, an exporter restarted or upgraded, a MIG reconfiguration and a pod leaving do not.

DCGM that lost a GPU (fallen off the bus, XID 79, a driver error) answers blank for its fields, and dcgm-exporter
leaves out a blank value (gpu-monitoring-tools PR #92, still the skip in its collector), so the GPU's series end while
the node's other GPUs go on; an older exporter writing DCGM's blank instead is the same GPU. An hour and a half of
30 s scrapes, each node's story from minute 30 (the payloads as dcgm-exporter writes them, with the labels each scrape
path gives them; a series that ends gets Prometheus' staleness marker):

- node-a: GPU 2 of four stops (its series end). Truth: the alert for node-a GPU 2 from minute 40 (10 minutes without a
  reading) on, past the hour after its last reading (29:30) while its node's other GPUs read.
- node-b: GPU 1 of four reads DCGM's blank from minute 30 on. Truth: the same, for node-b GPU 1.
- node-i: GPU 1 of two stops, and the node is removed at minute 50. Truth: node-i GPU 1 from minute 40 while its other
  GPU reads in each of the two 5-minute periods: to minute 54, none from 55.
- node-c scaled down (every series ends); node-d's exporter restarted (4 scrapes missed, a new pod); node-e and node-f
  upgraded from an exporter that wrote its own pod's name into `Hostname` to one writing the node into `hostname`
  (scraped by a job that attaches no `node`; node-f's exporter writes no UUID); node-g's MIG GPU 0 reconfigured from two
  3g.40gb instances to one 7g.80gb (2 minutes without a series of it, its other GPU whole); node-h's pod leaving its
  GPU; node-j's exporter in a crash loop (answering a minute of every five); node-k stopped and started on other
  hardware (an EC2 instance stop and start: four minutes without data, then GPUs of other UUIDs under the same node
  name and indexes). Truth: none of them, at any minute judged. kube-state-metrics made each Node object before.

promtool judges the rule at every minute from 26 to 92; a GPU lost an hour and a half before its node's story (the
rule's recording keeps it past the hour) at every minute from 15 to 164. No CloudWatch alarm names the GPU: on
agent.pipeline: otel its alarm names the node of a GPU lost below its highest index
(test_gpu_stopped_reporting_cloudwatch.py), on classic there is none (lint AL027), pinned as a strict xfail with the
truth. On the Container Insights add-on the data-missing rule's per-GPU alarm, counting GPUs against the kubelet's
count, pages for a lost GPU past the hour (naming none).
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.agent_points import AGENT_FILE
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cluster_stories import story_failure
from tests.support.dcgm_fleet import target_labels
from tests.support.promtool_rules import expected_alert, promtool_test, rule_groups

STEP, STEPS = 30, 190  # 95 minutes of 30 s scrapes
CHANGE = 60  # the scrape at minute 30, where each story happens
REMOVED = 100  # node-i's last scrape is the one before minute 50
BLANK = 9223372036854775794  # DCGM's "not supported" blank, as an exporter that writes it serves it
ALERT = "GpudashGpuStoppedReporting"
OWN_JOB = ("node-e", "node-f")  # scraped by a user's own job: no `node` target label


def _gpus(node: str, k: int) -> list[dict[str, str]]:
    """The exporter's series labels of each GPU (MIG instance) `node` serves at scrape `k` (none: not scraped)."""
    count = 4 if node in ("node-a", "node-b") else 2
    if node == "node-c" and k >= CHANGE or node == "node-d" and CHANGE <= k < CHANGE + 4 or \
            node == "node-i" and k >= REMOVED or node in OWN_JOB and k == CHANGE or \
            node == "node-j" and k >= CHANGE and (k - CHANGE) % 10 >= 2 or \
            node == "node-k" and CHANGE <= k < CHANGE + 8:  # node-j: a crash loop, up 1 minute of every 5
        return []
    gpus = []
    for gpu in range(count):
        if node == "node-a" and gpu == 2 and k >= CHANGE or node == "node-i" and gpu == 1 and k >= CHANGE:
            continue  # DCGM lost it: the exporter leaves it out
        labels = {"gpu": str(gpu), "UUID": f"GPU-{node}-{gpu}", "device": f"nvidia{gpu}",
                  "modelName": "NVIDIA A100-SXM4-80GB", "Hostname": node}
        if node == "node-f":
            del labels["UUID"]
        if node == "node-k" and k >= CHANGE:  # stopped and started on other hardware: other GPUs, one node name
            labels["UUID"] = f"GPU-{node}-{gpu}-moved"
        if node in OWN_JOB:
            del labels["Hostname"]
            if k < CHANGE:  # the old exporter, given no NODE_NAME, writes its own pod's name
                labels["Hostname"] = f"nvidia-dcgm-exporter-{'7xk2p' if node == 'node-e' else '4bq9z'}"
            else:
                labels["hostname"] = node
        if node == "node-h" and gpu == 0 and k < CHANGE or node != "node-h" and gpu == 0:
            labels |= {"namespace": "ml", "pod": f"train-{node}", "container": "main"}
        if node == "node-g" and gpu == 0:
            if CHANGE <= k < CHANGE + 4:
                continue  # the MIG manager remaking its instances
            profiles = [("1", "3g.40gb"), ("2", "3g.40gb")] if k < CHANGE else [("0", "7g.80gb")]
            gpus += [{**labels, "GPU_I_ID": i, "GPU_I_PROFILE": p} for i, p in profiles]
            continue
        gpus.append(labels)
    return gpus


def _temperature(node: str, labels: dict[str, str], k: int) -> float:
    if node == "node-b" and labels["gpu"] == "1" and k >= CHANGE:
        return BLANK
    return 40.0 + int(labels["gpu"]) + k % 3


def _target(node: str, k: int) -> dict[str, str]:
    """The labels Prometheus' scrape path adds: gpudash's job the node and exporter pod; a restart a new pod."""
    revision = "2" if node == "node-d" and k >= CHANGE else "1"
    if node in OWN_JOB:
        return {"instance": f"10.0.{revision}.{node[-1]}:9400", "job": "dcgm"}
    return {"instance": f"10.0.{revision}.{ord(node[-1])}:9400", "job": "gpudash-dcgm-exporter", "node": node,
            "exporter_pod": f"nvidia-dcgm-exporter-{node[-1]}{revision}"}


NODES = tuple(f"node-{c}" for c in "abcdefghijk")


def _series() -> list[dict[str, str]]:
    """promtool's input series: each series' sample at every scrape that serves it, a staleness marker at the first
    scrape after it ends (Prometheus writes one when a scrape no longer holds a series), none elsewhere."""
    values: dict[str, list[str]] = {}
    for k in range(STEPS):
        for node in NODES:
            for labels in _gpus(node, k):
                text = ",".join(f'{key}="{value}"' for key, value in sorted({**labels, **_target(node, k)}.items()))
                values.setdefault(f"DCGM_FI_DEV_GPU_TEMP{{{text}}}", ["_"] * STEPS)[k] = \
                    f"{_temperature(node, labels, k):.0f}"
    # kube-state-metrics' Node objects, each made before the history (an exporter restart, a stop and start on other
    # hardware keep theirs): no GPU read before its node was made
    made = [{"series": f'kube_node_created{{node="{node}",instance="10.0.9.9:8080",job="kube-state-metrics"}}',
             "values": f"0x{STEPS - 1}"} for node in NODES]
    return _ended(values) + made


def _ended(values: dict[str, list[str]]) -> list[dict[str, str]]:
    """promtool's input series of `values` ({series: a sample or "_" at each scrape}), a staleness marker at the first
    scrape after each series' last sample (Prometheus writes one when a scrape no longer holds a series)."""
    for samples in values.values():
        last = max(k for k, value in enumerate(samples) if value != "_")
        if last + 1 < STEPS:
            samples[last + 1] = "stale"
    return [{"series": series, "values": " ".join(samples)} for series, samples in values.items()]


def _truth(minute: int) -> list[dict[str, str]]:
    """The GPUs that stopped reporting at `minute`, by hand: 10 minutes without a reading, one within the hour, the
    node's other GPU reading in each of the two 5-minute periods."""
    fired = []
    if 40 <= minute:
        fired += [_lost("node-a", 2), _lost("node-b", 1)]
    if 40 <= minute <= 54:
        fired.append(_lost("node-i", 1))
    return fired


def _lost(node: str, gpu: int, uuid: str | None = None) -> dict[str, str]:
    """The labels the alert names a lost GPU by: its node and index, and its UUID (by default as _gpus writes it)."""
    return {"node": node, "gpu": str(gpu), "UUID": uuid or f"GPU-{node}-{gpu}"}


RANGE = 3  # the CloudWatch evaluation range's length in periods (its length is not published; none alarms for it)
MINUTES = tuple(range(26, 93))  # every minute from before the stories to after the hour


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("stopped")
    files = encode(build(load_project(), grafana=False))
    (folder / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    return folder


def test_the_rule_fires_for_a_gpu_that_stopped_while_its_node_reports_and_for_no_other_story(built):
    assert _truth(40) and not _truth(39) and _truth(90) == _truth(60)[:2]
    checks = [{"eval_time": f"{minute}m", "alertname": ALERT,
               "exp_alerts": [expected_alert(built, ALERT, **labels) for labels in _truth(minute)]}
              for minute in MINUTES]
    promtool_test(built, "stopped.yaml", [{"interval": f"{STEP}s", "input_series": _series(),
                                           "alert_rule_test": checks}], evaluation_interval="1m")


def _payload(node: str, k: int) -> str:
    lines = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    for labels in _gpus(node, k):
        text = ",".join(f'{key}="{value}"' for key, value in labels.items())
        lines.append(f"DCGM_FI_DEV_GPU_TEMP{{{text}}} {_temperature(node, labels, k):.0f}")
    return "\n".join(lines) + "\n"


@pytest.mark.xfail(strict=True, reason="no CloudWatch alarm names a GPU that stopped reporting while its node's other "
                                       "GPUs report: on agent.pipeline: otel the alarm names node-a and node-b, "
                                       "not their GPUs 2 and 1; on classic there is none (lint AL027)")
@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_cloudwatch_alarms_name_the_gpus_that_stopped_minute_by_minute(tmp_path, pipeline):
    """The truth on CloudWatch: from minute 40 to 89 some alarm of the build is in ALARM naming each GPU that stopped,
    judged each minute over the agent model's datapoints of node-a and node-b."""
    (tmp_path / "gpudash.yaml").write_text(f"agent:\n  pipeline: {pipeline}\n"
                                           + ("thresholds:\n  pcie_replays_per_minute: 0\n" if pipeline == "classic"
                                              else ""))
    files = encode(build(load_project(tmp_path / "gpudash.yaml"), grafana=False))
    config, job = agent_config(files[AGENT_FILE])
    scrapes = [Scrape(float(k * STEP), _payload(node, k), target_labels(job, node))
               for k in range(STEPS) for node in ("node-a", "node-b") if _gpus(node, k)]
    points = Agent(config, job).run(scrapes)
    # the agent published the GPU's readings until it stopped: CloudWatch held its series
    assert any(p.dims().get("node") == "node-a" and p.dims().get("gpu") == "2" and p.timestamp < 30 * 60
               for p in points)
    requests = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]]
    for minute in range(40, 90):
        named = set()
        for request in requests:
            states = cloudwatch_eval.alarm(request, points, minute * 60, evaluation_range=RANGE)
            named |= {(dict(key).get("node"), dict(key).get("gpu")) for key, state in states.items()
                      if state == "ALARM"}
        assert {("node-a", "2"), ("node-b", "1")} <= named, minute


SHARED = """clusters:
  - {name: east, region: us-east-1, prometheus_label: east}
  - {name: west, region: us-east-1, prometheus_label: west}
"""


def test_on_a_prometheus_of_several_clusters_each_clusters_node_is_judged_apart(tmp_path):
    """Two clusters with a node of one name (EKS names nodes by their IP: VPCs of one CIDR) on one Prometheus, and a
    cluster the settings do not name: east's node-a GPU 2 stops at minute 30, west's node-a (the same GPU UUIDs) and
    the other cluster's node-a GPU 1, which stops too, go on. Truth: east's node-a GPU 2 alone, at minute 45."""
    (tmp_path / "gpudash.yaml").write_text(SHARED)
    files = encode(build(load_project(tmp_path / "gpudash.yaml"), grafana=False))
    (tmp_path / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    series = []
    for cluster, stops in (("east", 2), ("west", None), ("other", 1)):
        for gpu in range(4):
            samples = [f"{40 + gpu}" if gpu != stops or k < CHANGE else "_" for k in range(STEPS)]
            if gpu == stops:
                samples[CHANGE] = "stale"
            series.append({"series": f'DCGM_FI_DEV_GPU_TEMP{{cluster="{cluster}",gpu="{gpu}",UUID="GPU-{gpu}",'
                                     f'Hostname="node-a",node="node-a",instance="10.0.1.1:9400"}}',
                           "values": " ".join(samples)})
    east = {"cluster": "east", **_lost("node-a", 2, "GPU-2")}
    promtool_test(tmp_path, "shared.yaml", [{"interval": f"{STEP}s", "input_series": series, "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": ALERT,
         "exp_alerts": [expected_alert(tmp_path, ALERT, **east)] if minute == 45 else []} for minute in (35, 45)]}])


VIRTUAL = "exporter:\n  virtual_gpus: true\n"


def _virtual_series() -> list[dict[str, str]]:
    """Nodes whose exporter runs with KUBERNETES_VIRTUAL_GPUS (tests/support/virtual_gpus.py), 95 minutes of 30 s
    scrapes from the gpudash job, GPU 0 of each held by a pod all along:
    - node-v, dcgm-exporter 4.5.2: every field of a held GPU is one copy per pod, with pod_uid, and a GPU no pod holds
      has no series while another GPU of the node is held; GPU 1's pod leaves at minute 30 (the GPU idle, healthy).
    - node-w, 4.5.3: a held GPU's temperature is one copy per pod without pod_uid, an idle GPU keeps its own series;
      GPU 2, held, is lost at minute 30 (DCGM answers blank: no copy).
    - node-x, 4.5.2 with no pod on it (every GPU's own series), GPU 1 lost at minute 30.
    - node-y, 4.5.2 with no pod on it until minute 30, when a pod takes GPU 0: GPUs 1 to 3 (idle, healthy) lose their
      series."""
    values: dict[str, list[str]] = {}
    for k in range(STEPS):
        for node in ("node-v", "node-w", "node-x", "node-y"):
            held = {0: "a", 1: "b"} if node in ("node-v", "node-w") else {0: "c"} if node == "node-y" and k >= CHANGE \
                else {}
            if node == "node-v" and k >= CHANGE:
                del held[1]
            for gpu in range(4):
                if node in ("node-w", "node-x") and gpu == 2 - (node == "node-x") and k >= CHANGE:
                    continue  # DCGM lost it
                labels = {"gpu": str(gpu), "UUID": f"GPU-{node}-{gpu}", "Hostname": node, **_target(node, k)}
                if gpu in held:
                    labels |= {"namespace": "ml", "pod": f"train-{held[gpu]}", "container": "main"}
                    if node != "node-w":
                        labels["pod_uid"] = f"uid-{node}-{held[gpu]}"
                elif held and node != "node-w":
                    continue  # 4.5.2: the copies of the held GPUs replace the field's whole list
                text = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
                values.setdefault(f"DCGM_FI_DEV_GPU_TEMP{{{text}}}", ["_"] * STEPS)[k] = "40"
    return _ended(values)


def test_with_virtual_gpus_a_pod_leaving_its_gpu_on_a_4_5_2_exporter_fires_nothing(tmp_path):
    """exporter.virtual_gpus: dcgm-exporter 4.5.2 ends an idle GPU's series while another GPU of its node is held,
    as DCGM losing it does: a GPU with a reading within the hour from a pod's copy with pod_uid is not judged.
    Truth: node-v and node-y nothing; node-w GPU 2 and node-x GPU 1 (their last readings 29:30) from minute 40 on."""
    (tmp_path / "gpudash.yaml").write_text(VIRTUAL)
    files = encode(build(load_project(tmp_path / "gpudash.yaml"), grafana=False))
    (tmp_path / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    lost = [_lost("node-w", 2), _lost("node-x", 1)]
    promtool_test(tmp_path, "virtual.yaml", [{"interval": f"{STEP}s", "input_series": _virtual_series(),
                                            "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": ALERT,
         "exp_alerts": [expected_alert(tmp_path, ALERT, **gpu) for gpu in lost] if 40 <= minute else []}
        for minute in (35, 39, 40, 45, 60, 89, 90)]}])


def _renamed_series(restart_only: bool) -> list[dict[str, str]]:
    """node-e scraped by a user's own job (no `node` target label); its exporter, given no NODE_NAME, writes its own
    pod's name into Hostname. At minute 30 GPU 3 of four is lost and the exporter is replaced: upgraded to one writing
    hostname=node-e, or (restart_only) restarted as a new pod of another name. The new exporter never serves GPU 3."""
    values: dict[str, list[str]] = {}
    for k in range(STEPS):
        for gpu in range(4):
            if gpu == 3 and k >= CHANGE:
                continue
            labels = {"gpu": str(gpu), "UUID": f"GPU-node-e-{gpu}", "job": "dcgm",
                      "instance": f"10.0.{1 + (k >= CHANGE)}.5:9400"}
            if k < CHANGE:
                labels["Hostname"] = "nvidia-dcgm-exporter-7xk2p"
            elif restart_only:
                labels["Hostname"] = "nvidia-dcgm-exporter-9qz4m"
            else:
                labels["hostname"] = "node-e"
            text = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
            values.setdefault(f"DCGM_FI_DEV_GPU_TEMP{{{text}}}", ["_"] * STEPS)[k] = "40"
    return _ended(values)


def _renamed_truth(restart_only: bool):
    node = "nvidia-dcgm-exporter-9qz4m" if restart_only else "node-e"
    return lambda minute: [_lost(node, 3, "GPU-node-e-3")] if 40 <= minute else []


# the renamed exporter's stories, judged together (tests/support/cluster_stories): one promtool run for both
RENAMED_STORIES = {restart_only: (_renamed_series(restart_only), _renamed_truth(restart_only)) for restart_only in (False, True)}


@pytest.mark.parametrize("restart_only", [False, True], ids=["upgraded", "restarted"])
def test_a_gpu_lost_before_its_exporter_is_renamed_fires(built, restart_only):
    """Truth: node-e GPU 3 (its last reading at 29:30) from minute 40 on, named as the node's other GPUs are named
    after the change (node-e; the new pod's name where the exporter still writes its own). Its copies keep the old
    pod's name, which the node's other GPUs no longer go by: it was silent (a strict xfail) until the rule took a lost
    GPU's node from the GPUs whose copies carried its spelling."""
    failure = story_failure(built, ALERT, RENAMED_STORIES, restart_only, (35, 40, 45, 60, 89, 90), "renamed")
    assert failure is None, failure


def _ended_values(series: list[dict[str, str]]) -> list[dict[str, str]]:
    """`series` (promtool's, of explicit values) with a staleness marker at the first scrape after each one's last."""
    return _ended({entry["series"]: entry["values"].split() for entry in series if "x" not in entry["values"]}) + \
        [entry for entry in series if "x" in entry["values"]]


def _reused_series(told: bool) -> list[dict[str, str]]:
    """ip-10-0-1-9 of four GPUs removed at minute 30, another node of two GPUs (other UUIDs) given its name at minute
    33, with kube-state-metrics' Node objects where `told`."""
    series = []
    if told:  # one series per node name: the old Node object's time, none while no node has it, the new one's
        made = ["0" if k < CHANGE else "_" if k < CHANGE + 6 else f"{(CHANGE + 6) * STEP}" for k in range(STEPS)]
        made[CHANGE] = "stale"
        series.append({"series": 'kube_node_created{node="ip-10-0-1-9",instance="10.0.9.9:8080",'
                                 'job="kube-state-metrics"}', "values": " ".join(made)})
    for gpu in range(4):
        old = [f"{40 + gpu}" if k < CHANGE else "_" for k in range(STEPS)]
        old[CHANGE] = "stale"
        series.append({"series": f'DCGM_FI_DEV_GPU_TEMP{{gpu="{gpu}",UUID="GPU-old-{gpu}",Hostname="ip-10-0-1-9",'
                                 f'node="ip-10-0-1-9",instance="10.0.1.20:9400"}}', "values": " ".join(old)})
    for gpu in range(2):
        new = [f"{50 + gpu}" if k >= CHANGE + 6 else "_" for k in range(STEPS)]
        series.append({"series": f'DCGM_FI_DEV_GPU_TEMP{{gpu="{gpu}",UUID="GPU-new-{gpu}",Hostname="ip-10-0-1-9",'
                                 f'node="ip-10-0-1-9",instance="10.0.1.21:9400"}}', "values": " ".join(new)})
    return series


def _address_series() -> list[dict[str, str]]:
    """The node at 10.0.1.9 (its exporter writing no node spelling, scraped by a user's own job) of four GPUs removed
    at minute 30, another of two GPUs (other UUIDs) given its private IP at minute 33."""
    series = [{"series": f'kube_node_created{{node="ip-10-0-1-9.ec2.internal",instance="10.0.9.9:8080",'
                         f'job="kube-state-metrics"}}', "values": f"0x{CHANGE - 1} stale"}]
    for generation, count, scrapes in (("old", 4, range(CHANGE)), ("new", 2, range(CHANGE + 6, STEPS))):
        for gpu in range(count):
            values = [f"{40 + gpu}" if k in scrapes else "_" for k in range(STEPS)]
            series.append({"series": f'DCGM_FI_DEV_GPU_TEMP{{gpu="{gpu}",UUID="GPU-{generation}-{gpu}",'
                                     f'modelName="NVIDIA A100-SXM4-80GB",job="dcgm",instance="10.0.1.9:9400"}}',
                           "values": " ".join(values)})
    return _ended_values(series)


# a node's name or address taken by a smaller node: no GPU stopped reporting at any minute from 40 to 90; the three
# stories judged together (tests/support/cluster_stories): one promtool run
TAKEN = {"name told": (_reused_series(True), lambda minute: []), "name": (_reused_series(False), lambda minute: []),
         "address": (_address_series(), lambda minute: [])}


@pytest.mark.parametrize("told", [True, False],
                         ids=["kube-state-metrics", "no kube-state-metrics"])
def test_a_node_name_taken_by_a_smaller_node_within_the_hour_is_no_gpu_stopped(built, told):
    """EKS names a node by its private IP, which a later node may be given: ip-10-0-1-9 of four GPUs removed at minute
    30, another node of two GPUs (other UUIDs) given its name at minute 33. Truth: no GPU stopped reporting, at every
    minute from 40 to 90. kube-state-metrics' kube_node_created tells the new Node object from the old (made at 33,
    after the old GPUs' last reading); without it, the new node's GPUs read first (33:00) after the old ones read last
    (29:30): they never stood beside them (it named the old GPUs 2 and 3 on the new node from minute 40 to 89)."""
    failure = story_failure(built, ALERT, TAKEN, "name told" if told else "name", range(40, 91), "taken")
    assert failure is None, failure


def test_an_address_taken_by_a_smaller_node_within_the_hour_is_no_gpu_stopped(built):
    """An exporter writing no node spelling (no Hostname nor hostname), scraped by a user's own job (no `node` label):
    its GPUs' node is their target's address. The node at 10.0.1.9 of four GPUs removed at minute 30, another node of
    two GPUs (other UUIDs) given its private IP at minute 33; kube-state-metrics names both nodes by name, which no
    address matches. Truth: no GPU stopped reporting, at every minute from 40 to 90: the new node's GPUs read first
    (33:00) after the old ones read last (29:30)."""
    failure = story_failure(built, ALERT, TAKEN, "address", range(40, 91), "taken")
    assert failure is None, failure


NOTHING_MIG_REPORTS = pytest.mark.xfail(strict=True, reason="a counters CSV whose first presence field is GPU "
                                        "utilization, with no gauge a MIG instance reports (engine activity, free "
                                        "framebuffer, memory clock or temperature): a GPU split into MIG instances "
                                        "ends its GPU utilization series and fires from 10 minutes after the split on")
MIG_GAUGES = ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_MEM_CLOCK",
              "DCGM_FI_DEV_MEMORY_TEMP")


@pytest.mark.parametrize("collected", [MIG_GAUGES, MIG_GAUGES[1:], pytest.param((), marks=NOTHING_MIG_REPORTS)],
                         ids=["engine activity collected", "free framebuffer collected", "nothing MIG reports"])
def test_a_gpu_split_into_mig_instances_is_no_gpu_stopped_when_gpu_utilization_is_the_presence_field(tmp_path,
                                                                                                  collected):
    """A counters CSV without temperature, power, framebuffer used and SM clock: the rule reads GPU utilization,
    which DCGM does not report for MIG instances (dcgm-exporter #50, #430: graphics engine activity stands in).
    node-m's GPU 1 of four is split into two 3g.40gb instances at minute 30: its GPU utilization series ends, its
    instances' graphics engine activity and free framebuffer go on; its GPU 3 is lost then (every series ends).
    Truth: node-m GPU 3 from minute 40 on, never GPU 1. The rule reads beside GPU utilization the first gauge of
    MIG_GAUGES the CSV collects (it fired for GPU 1 from minute 40 without engine activity); a CSV with none of them
    leaves the rule blind to MIG instances (a strict xfail)."""
    from generator.resources import default_counters
    dropped = ("DCGM_FI_DEV_GPU_TEMP,", "DCGM_FI_DEV_POWER_USAGE,", "DCGM_FI_DEV_FB_USED,", "DCGM_FI_DEV_SM_CLOCK,",
               *(f"{field}," for field in MIG_GAUGES if field not in collected))
    kept = [row for row in default_counters().read_text().splitlines() if not row.startswith(dropped)]
    (tmp_path / "counters.csv").write_text("\n".join(kept) + "\n")
    (tmp_path / "gpudash.yaml").write_text("counters: counters.csv\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml"), grafana=False))
    (tmp_path / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    assert "DCGM_FI_DEV_GPU_UTIL[" in _recorded(tmp_path)
    series = []
    for gpu in range(4):
        labels = f'gpu="{gpu}",UUID="GPU-m-{gpu}",Hostname="node-m",{_labels(_target("node-m", 0))}'
        util = ["30" if gpu not in (1, 3) or k < CHANGE else "_" for k in range(STEPS)]
        series.append({"series": f"DCGM_FI_DEV_GPU_UTIL{{{labels}}}", "values": " ".join(util)})
        instances = [("1", "3g.40gb"), ("2", "3g.40gb")] if gpu == 1 else [(None, None)]
        for instance, profile in instances:
            mig = f',GPU_I_ID="{instance}",GPU_I_PROFILE="{profile}"' if instance else ""
            for field, value in (("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0.3"), ("DCGM_FI_DEV_FB_FREE", "40000")):
                read = ["_" if gpu == 3 and k >= CHANGE or gpu == 1 and (instance is None) == (k >= CHANGE) else value
                        for k in range(STEPS)]
                series.append({"series": f"{field}{{{labels}{mig}}}", "values": " ".join(read)})
    lost = [expected_alert(tmp_path, ALERT, **_lost("node-m", 3, "GPU-m-3"))]
    promtool_test(tmp_path, "mig-util.yaml", [{"interval": f"{STEP}s", "input_series": _ended_values(series),
                                               "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": ALERT, "exp_alerts": lost if minute >= 40 else []}
        for minute in (35, 40, 45, 60, 89, 90)]}])


def _recorded(folder) -> str:
    """The expression of the rule's recording rule in folder/rules.yaml (the GPUs judged stopped: its alert reads
    it)."""
    return next(r["expr"] for g in rule_groups((folder / "rules.yaml").read_text()) for r in g["rules"]
                if r.get("record") and r["labels"]["gpudash_rule"] == "gpu-stopped-reporting")


def _labels(labels: dict[str, str]) -> str:
    return ",".join(f'{key}="{value}"' for key, value in labels.items())


LOST, LATER = 20, 200  # the scrape (minute 10) each GPU below is lost at, and the scrape (minute 100) of each story
LONG = 330  # 165 minutes of 30 s scrapes
OLD_POD = "nvidia-dcgm-exporter-7xk2p"  # node-e's exporter, given no NODE_NAME, writes its own pod's name in Hostname


def _kept_series() -> list[dict[str, str]]:
    """Nodes of four GPUs whose GPU 2 is lost at minute 10 (its series end), the others reading all along but where
    a story ends them, each story at minute 100 (an hour and a half after the loss):
    - node-a: nothing more; node-r: GPU 2 reads again; node-g: the node removed (every series ends);
    - node-x: its exporter away 6 minutes (a node rebooted, a new exporter pod), back with GPU 2 still lost;
    - node-k: stopped and started on other hardware (4 minutes without data, then other UUIDs at every index);
    - node-n and node-m: removed, their names given 3 minutes later to nodes of two GPUs (other UUIDs; node-n's
      Node object made anew, as kube-state-metrics' kube_node_created says; node-m's without kube-state-metrics);
    - node-e (a user's own job: no `node` label): its exporter, writing its own pod's name into Hostname, upgraded
      to one writing the node into hostname (one scrape missed)."""
    values: dict[str, list[str]] = {}
    for node in ("node-a", "node-r", "node-g", "node-x", "node-k", "node-n", "node-m", "node-e"):
        for gpu in range(4):
            for k in range(LONG):
                after = k >= LATER
                if gpu == 2 and k >= LOST and not (node == "node-r" and after) or \
                        node in ("node-g", "node-n", "node-m") and after and (k < LATER + 6 or gpu >= 2) or \
                        node == "node-x" and LATER <= k < LATER + 12 or node == "node-k" and LATER <= k < LATER + 8 or \
                        node == "node-e" and k == LATER:
                    continue
                if node == "node-g" and after:
                    continue
                other = "-new" if after and node in ("node-k", "node-n", "node-m") else ""  # another machine's GPUs
                labels = {"gpu": str(gpu), "UUID": f"GPU-{node}-{gpu}{other}", "Hostname": node, **_target(node, 0)}
                if node == "node-x" and after:
                    labels |= {"instance": "10.0.2.120:9400", "exporter_pod": "nvidia-dcgm-exporter-x2"}
                if node == "node-e":
                    labels = {"gpu": str(gpu), "UUID": f"GPU-{node}-{gpu}", "job": "dcgm", "instance": "10.0.1.5:9400",
                              **({"hostname": node} if after else {"Hostname": OLD_POD})}
                text = _labels(dict(sorted(labels.items())))
                values.setdefault(f"DCGM_FI_DEV_GPU_TEMP{{{text}}}", ["_"] * LONG)[k] = "40"
    made = ["0"] * LATER + ["stale"] + ["_"] * 5 + [f"{(LATER + 6) * STEP}"] * (LONG - LATER - 6)
    return _ended(values) + [{"series": 'kube_node_created{node="node-n",instance="10.0.9.9:8080",job="kube-state-'
                                        'metrics"}', "values": " ".join(made)}]


def _kept(minute: int) -> list[dict[str, str]]:
    """The truth by hand: each GPU lost, from 10 minutes after its last reading (9:30) while another GPU of its node
    had a reading in each of the two 5-minute periods before the minute (their last reading before minute 100 is at
    99:30: to minute 104; node-x's, back at 106:00, again from 106 but at 110, whose older period holds none), named
    as they are named (node-e's by the new exporter's hostname once its copies are read, 100:30); none where GPU 2
    reads again (node-r, from 100) or another machine took the node's name (node-k, node-m: their GPUs of other UUIDs
    first read after the lost GPU's last reading; node-n's Node object, made at 103, younger than it)."""
    if minute < 20:
        return []
    fired = ["node-a", "node-x" if minute not in (105, 110) else None, OLD_POD if minute <= 100 else "node-e",
             *(["node-r"] if minute < 100 else []), *(["node-g", "node-k", "node-m"] if minute <= 104 else []),
             *(["node-n"] if minute < 103 else [])]
    return [_lost(node, 2, f"GPU-{'node-e' if node == OLD_POD else node}-2") for node in fired if node]


def test_a_gpu_lost_fires_past_the_hour_until_it_reads_again_or_its_node_goes(built):
    """A GPU still lost an hour after its last reading still fires while its node's other GPUs read (it resolved at
    the hour: a strict xfail); it ends when it reads again, when its node is removed or its exporter away (and fires
    again once the node reads in each period), when another machine takes the node's name, and it follows the node's
    new name. Judged at every minute from 15 to 164."""
    assert len(_kept(60)) == len(_kept(99)) == 8 and len(_kept(104)) == 6 and len(_kept(105)) == 2
    promtool_test(built, "kept.yaml", [{"interval": f"{STEP}s", "input_series": _kept_series(), "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": ALERT,
         "exp_alerts": [expected_alert(built, ALERT, **labels) for labels in _kept(minute)]}
        for minute in range(15, LONG * STEP // 60)]}])


ADDON_END = 100 * 60  # judged to minute 100: the GPU lost over an hour


def test_on_the_container_insights_add_on_a_lost_gpu_pages_past_the_hour_as_a_gpu_missing(tmp_path):
    """cloudwatch.source: container-insights. The add-on's per-GPU data-missing alarm counts each node's GPUs as the
    kubelet counts them (node_gpu_limit) against the GPUs its DCGM collections bring: a GPU DCGM lost while its node's
    other GPUs report (ip-10-0-1-1's last GPU, from minute 20) is a GPU missing, and the alarm holds while the kubelet
    counts it. Truth: the rule pages at every minute from 30 (when the Prometheus rule fires: 10 minutes without a
    reading) to 100, past the hour, and at none up to 20; between, the add-on's own onset (it pages about 8 minutes
    after data stops, docs/alarms.md). It names no GPU (one count per cluster): the GPU is the node's GPU without data
    in the dashboards. Where the device plugin takes a lost GPU out of the node's count, it would be silent."""
    from tests.support.container_insights_addon import capacity, datapoints
    from tests.support.container_insights_story import CLUSTER, GPUS, NODES, SYSTEM_NODES, paged_at, read_points
    from tests.support.dcgm_fleet import FLEET

    (tmp_path / "gpudash.yaml").write_text("cloudwatch:\n  source: container-insights\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml"), grafana=False))
    requests = tuple(alarm["Request"] for alarm in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                     if "gpu-data-missing" in alarm["Request"]["AlarmName"])
    lost = [gpu for gpu in FLEET if gpu.node == NODES[0]][-1]
    points = datapoints(CLUSTER, 0, 20 * 60 - 60, FLEET) + \
        datapoints(CLUSTER, 20 * 60, ADDON_END - 60, tuple(gpu for gpu in FLEET if gpu != lost)) + \
        capacity(CLUSTER, 0, ADDON_END - 60, GPUS, len(GPUS) + SYSTEM_NODES, exporter=(2, 0))
    story = read_points(points, requests)
    wrong = [minute for minute in (*range(10, 21), *range(30, ADDON_END // 60 + 1))
             if paged_at(requests, story, minute * 60) != (minute >= 30)]
    assert not wrong, f"minutes whose page is not the truth (none to 20, from 30 on): {wrong}"
