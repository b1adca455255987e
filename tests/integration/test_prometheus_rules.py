"""The alarms as Prometheus rules: accepted by `promtool check rules`, and `promtool test rules`
shows which alerts fire on series shaped like the exporter's."""

from __future__ import annotations

import copy
import json
import re
import subprocess

import pytest
import yaml

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support.prometheus_server import binary
from generator.markers import PROMETHEUS_RULE_LABEL
from tests.support.promtool_rules import (SAMPLES, alert_rule, evaluation_plans, expected_alert, holding_state,
                                          promtool_test, rules)  # noqa: F401 (a fixture)

LABELS = 'gpu="{gpu}",UUID="GPU-{gpu}",device="nvidia{gpu}",modelName="NVIDIA A10G",Hostname="node-1",' \
         'namespace="ml",container="main",pod="{pod}"'
SENTINEL = "9223372036854775794"


def _series(metric: str, values: str, pod: str = "train-0", gpu: int = 0) -> dict[str, str]:
    return {"series": f"{metric}{{{LABELS.format(gpu=gpu, pod=pod)}}}", "values": values}


GPU0 = {"node": "node-1", "gpu": "0"}
# kube-state-metrics' view of the exporter DaemonSet (one node): the data-missing rule's expected signal.
EXPORTER_DS = {"namespace": "gpu-operator", "daemonset": "nvidia-dcgm-exporter"}
KSM = [{"series": 'kube_daemonset_status_desired_number_scheduled{namespace="gpu-operator",'
                  'daemonset="nvidia-dcgm-exporter"}', "values": "1x60"},
       {"series": 'kube_daemonset_status_number_available{namespace="gpu-operator",'
                  'daemonset="nvidia-dcgm-exporter"}', "values": "1x60"},
       {"series": 'kube_daemonset_labels{namespace="gpu-operator",daemonset="nvidia-dcgm-exporter",'
                  'label_app="nvidia-dcgm-exporter"}', "values": "1x60"}]
TARGET_DOWN = "a node's exporter brought no GPU data most of the time"
UP = 'up{{job="dcgm-exporter",instance="10.0.1.1:9400",node="node-1",exporter_pod="{pod}"}}'


def test_promtool_check_rules(rules):
    result = subprocess.run([binary("promtool"), "check", "rules", str(rules / "rules.yaml")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    # 11 alerting rules, 2 recording rules per rate panel counter (energy, PCIe replays, correctable and uncorrectable
    # remapped rows: NVLink bandwidth is charted as the throughput DCGM serves, no counter), the stopped GPUs recorded
    # (stopped_gpus)
    assert "SUCCESS: 20 rules found" in result.stdout


def test_promtool_unit_tests_show_which_alerts_fire(rules):
    healthy_util = _series("DCGM_FI_DEV_GPU_UTIL", "90x60", pod="busy-0", gpu=1)
    tests = [
        {   # an XID appears at minute 3 on one GPU
            "interval": "1m",
            "input_series": [_series("DCGM_FI_DEV_XID_ERRORS", "0 0 0 43x10"), healthy_util],
            "alert_rule_test": [
                {"eval_time": "2m", "alertname": "GpudashXidError", "exp_alerts": []},
                {"eval_time": "5m", "alertname": "GpudashXidError", "exp_alerts": [expected_alert(rules, "GpudashXidError", **GPU0)]},
            ],
        },
        {   # one pod holds a GPU and does nothing; another is busy
            "interval": "1m",
            "input_series": [_series("DCGM_FI_DEV_GPU_UTIL", "1x60", pod="idle-0"), healthy_util],
            "alert_rule_test": [
                {"eval_time": "10m", "alertname": "GpudashGpuIdle", "exp_alerts": []},
                {"eval_time": "40m", "alertname": "GpudashGpuIdle",
                 "exp_alerts": [expected_alert(rules, "GpudashGpuIdle", namespace="ml", pod="idle-0", gpu="0")]},
            ],
        },
        {   # a pod fills its framebuffer: 23000 of 23500 MiB
            "interval": "1m",
            "input_series": [_series("DCGM_FI_DEV_FB_USED", "23000x20", pod="big-0"),
                             _series("DCGM_FI_DEV_FB_FREE", "500x20", pod="big-0"),
                             _series("DCGM_FI_DEV_FB_USED", "2000x20", pod="small-0", gpu=1),
                             _series("DCGM_FI_DEV_FB_FREE", "21500x20", pod="small-0", gpu=1), healthy_util],
            "alert_rule_test": [
                {"eval_time": "10m", "alertname": "GpudashFramebufferFull",
                 "exp_alerts": [expected_alert(rules, "GpudashFramebufferFull", namespace="ml", pod="big-0")]},
            ],
        },
        {   # 84 °C: warning, not critical; a blank sentinel on another GPU is ignored
            "interval": "1m",
            "input_series": [_series("DCGM_FI_DEV_GPU_TEMP", "84x20"),
                             _series("DCGM_FI_DEV_GPU_TEMP", f"{SENTINEL}x20", gpu=1), healthy_util],
            "alert_rule_test": [
                {"eval_time": "10m", "alertname": "GpudashGpuTempHigh",
                 "exp_alerts": [expected_alert(rules, "GpudashGpuTempHigh", **GPU0)]},
                {"eval_time": "10m", "alertname": "GpudashGpuTempCritical", "exp_alerts": []},
            ],
        },
        {   # PCIe replays climb by 20 a minute
            "interval": "1m",
            "input_series": [_series("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "0+20x20"),
                             _series("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "0x20", gpu=1), healthy_util],
            "alert_rule_test": [
                {"eval_time": "10m", "alertname": "GpudashPcieReplays", "exp_alerts": [expected_alert(rules, "GpudashPcieReplays", **GPU0)]},
            ],
        },
        {   # one GPU's replay counter reads the blank for one scrape, the other's climbs: the jump into and
            # out of the blank is no replay, and the real climb still fires
            "interval": "1m",
            "input_series": [_series("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "0+20x20"),
                             _series("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", f"5 5 5 {SENTINEL} 5x16", gpu=1), healthy_util],
            "alert_rule_test": [
                {"eval_time": "5m", "alertname": "GpudashPcieReplays", "exp_alerts": [expected_alert(rules, "GpudashPcieReplays", **GPU0)]},
            ],
        },
        {   # a row remap fails; uncorrectable rows get remapped
            "interval": "1m",
            "input_series": [_series("DCGM_FI_DEV_ROW_REMAP_FAILURE", "0 0 1x10"),
                             _series("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "0 0 0 2x10"), healthy_util],
            "alert_rule_test": [
                {"eval_time": "5m", "alertname": "GpudashRowRemapFailure",
                 "exp_alerts": [expected_alert(rules, "GpudashRowRemapFailure", **GPU0)]},
                {"eval_time": "5m", "alertname": "GpudashUncorrectableRows",
                 "exp_alerts": [expected_alert(rules, "GpudashUncorrectableRows", **GPU0)]},
            ],
        },
        {   # the exporter stops: no GPU series at all
            "interval": "1m",
            "input_series": [_series("DCGM_FI_DEV_XID_ERRORS", "0x20"), *KSM],
            "alert_rule_test": [
                {"eval_time": "10m", "alertname": "GpudashGpuDataMissing",
                 "exp_alerts": [expected_alert(rules, "GpudashGpuDataMissing", **EXPORTER_DS,
                                          reason="exporters are expected but no GPU reported")]},
                {"eval_time": "10m", "alertname": "GpudashXidError", "exp_alerts": []},
            ],
        },
        {   # one node's exporter stops answering at minute 2 while the others report: its target is down (scraped
            # every 30 s, as the settings say: the rule counts each scrape once)
            "interval": "30s",
            "input_series": [{"series": UP.format(pod="nvidia-dcgm-exporter-a"), "values": "1x3 0x40"},
                             {"series": UP.format(pod="nvidia-dcgm-exporter-b"), "values": "1x40"},
                             _series("DCGM_FI_DEV_GPU_TEMP", "60x40"), *KSM],
            "alert_rule_test": [
                {"eval_time": "3m", "alertname": "GpudashGpuDataMissing", "exp_alerts": []},
                {"eval_time": "10m", "alertname": "GpudashGpuDataMissing", "exp_alerts": [
                    expected_alert(rules, "GpudashGpuDataMissing", reason=TARGET_DOWN,  # the node's, no pod
                              **{k: v for k, v in re.findall(r'(\w+)="([^"]*)"', UP.format(pod="nvidia-dcgm-exporter-a"))
                                 if k not in ("instance", "exporter_pod")})]},
            ],
        },
        {   # no pod holds a GPU: the series carry no pod labels, and nothing is missing
            "interval": "1m",
            "input_series": [{"series": UP.format(pod="nvidia-dcgm-exporter-a"), "values": "1x20"},
                             {"series": 'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="node-1"}', "values": "40x20"},
                             *KSM],
            "alert_rule_test": [{"eval_time": "10m", "alertname": "GpudashGpuDataMissing", "exp_alerts": []}],
        },
    ]
    promtool_test(rules, "rules_test.yaml", tests)


OPERATOR_UP = ('up{{job="nvidia-dcgm-exporter",instance="10.0.1.{n}:9400",namespace="gpu-operator",service="nvidia-dcgm-exporter",'
               'endpoint="gpu-metrics",container="nvidia-dcgm-exporter",pod="nvidia-dcgm-exporter-{n}"}}')


def test_an_exporter_that_stops_is_missing_data_on_the_operators_servicemonitor_too(tmp_path):
    """The GPU operator's ServiceMonitor puts no exporter_pod on its targets: the exporter pod is their
    `pod`, `container` and `namespace`. One exporter stopping among others still fires the alert."""
    config = tmp_path / "gpudash.yaml"
    config.write_text("labels:\n  pod: exported_pod\n  namespace: exported_namespace\n"
                      "  container: exported_container\n")
    (tmp_path / "rules.yaml").write_text(encode(build(load_project(config)))["prometheus/rules.yaml"].decode())
    other_job = 'up{job="kube-state-metrics",namespace="monitoring",container="kube-state-metrics",pod="ksm-0"}'
    tests = [{
        "interval": "30s",  # the settings' scrape interval
        "input_series": [{"series": OPERATOR_UP.format(n=1), "values": "1x3 0x40"},
                         {"series": OPERATOR_UP.format(n=2), "values": "1x40"},
                         {"series": other_job, "values": "0x40"},  # not an exporter: no alert for it
                         {"series": 'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="node-2"}', "values": "60x40"}, *KSM],
        "alert_rule_test": [
            {"eval_time": "1m", "alertname": "GpudashGpuDataMissing", "exp_alerts": []},
            {"eval_time": "10m", "alertname": "GpudashGpuDataMissing", "exp_alerts": [
                expected_alert(tmp_path, "GpudashGpuDataMissing", reason=TARGET_DOWN,
                          **dict(re.findall(r'(\w+)="([^"]*)"', OPERATOR_UP.format(n=1))))]},
        ],
    }]
    promtool_test(tmp_path, "rules_test.yaml", tests)


def test_the_operators_servicemonitor_is_judged_by_its_own_scrapes_not_the_settings_interval(tmp_path):
    """The operator's and the chart's ServiceMonitor scrape every 15 s by default, not at scrape.interval (30 s):
    an exporter answering 2 scrapes in 3 with its GPU data brought data most of the time whatever the interval, one
    answering 1 in 3 did not, and an exporter up but serving no DCGM sample at 60 s scrapes (10 in 10 minutes) is
    missing data too. A target newer than the window is judged once it has a whole window."""
    config = tmp_path / "gpudash.yaml"
    config.write_text("labels:\n  pod: exported_pod\n  namespace: exported_namespace\n"
                      "  container: exported_container\n")
    (tmp_path / "rules.yaml").write_text(encode(build(load_project(config)))["prometheus/rules.yaml"].decode())
    samples = [SAMPLES + OPERATOR_UP.format(n=n)[len("up"):] for n in (1, 2, 3)]
    gpu = {"series": 'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="node-9"}', "values": "60x200"}
    ksm = [{**k, "values": "1x200"} for k in KSM]

    def fired(n: int) -> dict:
        return expected_alert(tmp_path, "GpudashGpuDataMissing", reason=TARGET_DOWN,
                         **dict(re.findall(r'(\w+)="([^"]*)"', samples[n - 1])))
    tests = [
        {"interval": "15s",
         # 1: two scrapes in three brought data; 2: one in three did; 3: a target whose first 20 scrapes (5 minutes)
         # are empty, from minute 10 on: not yet a window old at minute 15, a window old with 12 of 40 empty at 20
         "input_series": [{"series": samples[0], "values": "400 400 0 " * 80},
                          {"series": samples[1], "values": "400 0 0 " * 80},
                          {"series": samples[2], "values": "_x40 0x20 400x180"}, gpu, *ksm],
         "alert_rule_test": [{"eval_time": "15m", "alertname": "GpudashGpuDataMissing", "exp_alerts": [fired(2)]},
                             {"eval_time": "20m", "alertname": "GpudashGpuDataMissing", "exp_alerts": [fired(2)]}]},
        {"interval": "1m",  # up, answering 200 without a DCGM sample, every minute
         "input_series": [{"series": samples[0], "values": "400x20 0x40"}, gpu, *ksm],
         "alert_rule_test": [{"eval_time": "25m", "alertname": "GpudashGpuDataMissing", "exp_alerts": []},
                             {"eval_time": "32m", "alertname": "GpudashGpuDataMissing", "exp_alerts": [fired(1)]}]},
    ]
    promtool_test(tmp_path, "rules_test.yaml", tests)


def test_a_stock_servicemonitor_target_of_a_daemonset_in_another_namespace_is_judged(tmp_path):
    """exporter.more_daemonsets names a node pool's exporter DaemonSet in another namespace, scraped by its own stock
    ServiceMonitor (its targets carry their exporter pod's `container` and `namespace`): a target there answering
    without a DCGM sample fires as one in exporter.namespace does (the rule read stock targets of exporter.namespace
    only); a target of that container in a namespace no setting names is not an exporter of these settings."""
    config = tmp_path / "gpudash.yaml"
    config.write_text("labels:\n  pod: exported_pod\n  namespace: exported_namespace\n"
                      "  container: exported_container\nexporter:\n  more_daemonsets: [gpu-pools/pool-c]\n")
    (tmp_path / "rules.yaml").write_text(encode(build(load_project(config)))["prometheus/rules.yaml"].decode())
    samples = [SAMPLES + OPERATOR_UP.format(n=n)[len("up"):].replace('namespace="gpu-operator"', f'namespace="{ns}"')
               for n, ns in ((1, "gpu-pools"), (2, "elsewhere"))]
    gpu = {"series": 'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="node-9"}', "values": "60x60"}
    # kube-state-metrics counts both named DaemonSets (a named one without counts is missing data of its own)
    ksm = [{**k, "values": "1x60"} for k in KSM] + [
        {**k, "series": k["series"].replace('namespace="gpu-operator"', 'namespace="gpu-pools"')
         .replace('daemonset="nvidia-dcgm-exporter"', 'daemonset="pool-c"'), "values": "1x60"} for k in KSM]
    fired = expected_alert(tmp_path, "GpudashGpuDataMissing", reason=TARGET_DOWN,
                      **dict(re.findall(r'(\w+)="([^"]*)"', samples[0])))
    promtool_test(tmp_path, "rules_test.yaml", [
        {"interval": "1m",  # up, answering 200 without a DCGM sample, every minute from minute 20
         "input_series": [{"series": s, "values": "400x20 0x40"} for s in samples] + [gpu, *ksm],
         "alert_rule_test": [{"eval_time": "25m", "alertname": "GpudashGpuDataMissing", "exp_alerts": []},
                             {"eval_time": "32m", "alertname": "GpudashGpuDataMissing", "exp_alerts": [fired]}]}])


NODE_OPERATOR_SAMPLES = (SAMPLES + '{{job="nvidia-dcgm-exporter",instance="10.0.{node}.{n}:9400",namespace="gpu-operator",'
                         'service="nvidia-dcgm-exporter",endpoint="gpu-metrics",container="nvidia-dcgm-exporter",'
                         'pod="nvidia-dcgm-exporter-{n}",node="node-{node}"}}')


def _operator_rules(folder) -> None:
    config = folder / "gpudash.yaml"
    config.write_text("labels:\n  pod: exported_pod\n  namespace: exported_namespace\n"
                      "  container: exported_container\n")
    (folder / "rules.yaml").write_text(encode(build(load_project(config)))["prometheus/rules.yaml"].decode())


def _replaced(pods: list[tuple[int, int, str]], length: int) -> list[dict]:
    """Series of exporter pods on node 1 scraped every 15 s: (first scrape, scrapes, value) each, its own pod and
    instance, as the DaemonSet replaces them."""
    return [{"series": NODE_OPERATOR_SAMPLES.format(node=1, n=k), "values": f"_x{first} {value}x{count - 1}" if first
             else f"{value}x{count - 1}"} for k, (first, count, value) in enumerate(pods, start=1)
            if first < length]


def test_an_exporter_pod_replaced_on_the_operators_servicemonitor_is_judged_per_node(tmp_path):
    """With the ServiceMonitor's relabelling giving each target its `node` (the operator's
    dcgmExporter.serviceMonitor.relabelings), the rule counts a node's scrapes whatever pod answered them, as the
    CloudWatch twin counts each node's: an exporter pod replaced at minute 20 by one that answers 200 without a DCGM
    sample fires once more than half of the node's 40 scrapes in the window are empty (the 21st empty scrape at 15 s
    is at 25m), not a window after the new pod appeared (30m, judged per target); pods replaced every 4 minutes, each
    answering empty, fire as soon (each target alone never has a window of scrapes). A node added at minute 10 whose
    exporter's first 20 scrapes are empty is judged once the node is a window old, when 12 of its 40 are: no alert."""
    _operator_rules(tmp_path)
    gpu = {"series": 'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="node-9"}', "values": "60x200"}
    ksm = [{**k, "values": "1x200"} for k in KSM]
    node = {"node": "node-1", "job": "nvidia-dcgm-exporter", "namespace": "gpu-operator",
            "service": "nvidia-dcgm-exporter", "endpoint": "gpu-metrics", "container": "nvidia-dcgm-exporter"}
    fired = [expected_alert(tmp_path, "GpudashGpuDataMissing", reason=TARGET_DOWN, **node)]
    churn = [(0, 80, "400"), *((80 + 16 * k, 16, "0") for k in range(8))]  # from 20m a new pod every 4 minutes
    tests = [
        {"interval": "15s",
         "input_series": [*_replaced([(0, 80, "400"), (80, 120, "0")], 200), gpu, *ksm,
                          {"series": NODE_OPERATOR_SAMPLES.format(node=2, n=9), "values": "_x40 0x20 400x140"}],
         "alert_rule_test": [{"eval_time": "15m", "alertname": "GpudashGpuDataMissing", "exp_alerts": []},
                             {"eval_time": "20m", "alertname": "GpudashGpuDataMissing", "exp_alerts": []},
                             {"eval_time": "24m", "alertname": "GpudashGpuDataMissing", "exp_alerts": []},
                             {"eval_time": "25m", "alertname": "GpudashGpuDataMissing", "exp_alerts": fired}]},
        {"interval": "15s",
         "input_series": [*_replaced(churn, 200), gpu, *ksm],
         "alert_rule_test": [{"eval_time": "24m", "alertname": "GpudashGpuDataMissing", "exp_alerts": []},
                             {"eval_time": "25m", "alertname": "GpudashGpuDataMissing", "exp_alerts": fired},
                             {"eval_time": "40m", "alertname": "GpudashGpuDataMissing", "exp_alerts": fired}]},
    ]
    promtool_test(tmp_path, "rules_test.yaml", tests)


def _stock_labels(folder, reference) -> tuple[dict[str, str], dict[str, str]]:
    """The labels a real Prometheus gives an exporter pod's scrapes through the GPU operator's ServiceMonitor as
    shipped (no relabelings: no `node`), and that pod's kube_pod_info as kube-prometheus-stack scrapes
    kube-state-metrics (honorLabels: the described pod's namespace and name stay): one scrape of each."""
    from tests.support.operator_scrape import endpoint_target, scrape_config
    from tests.support.prometheus_server import Prometheus
    from tests.support.replay_exporter import ReplayExporter

    monitor = yaml.safe_load((reference / "k8s" / "gpu-operator" /
                              "assets_state-dcgm-exporter_0500_service_monitor.yaml").read_text())
    monitor["metadata"]["namespace"] = monitor["spec"]["namespaceSelector"]["matchNames"] = "gpu-operator"
    pod = "nvidia-dcgm-exporter-7xk2p"
    info = ('# TYPE kube_pod_info gauge\nkube_pod_info{namespace="gpu-operator",pod="%s",uid="u-1",host_ip="10.0.1.1",'
            'pod_ip="10.0.1.17",node="node-1",created_by_kind="DaemonSet",created_by_name="nvidia-dcgm-exporter",'
            'priority_class="system-node-critical",host_network="false"} 1\n' % pod)
    with ReplayExporter('DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-0",Hostname="node-1"} 60\n') as exporter, \
            ReplayExporter(info) as ksm:
        (folder / "sd.json").write_text(json.dumps([endpoint_target(
            exporter.address, namespace="gpu-operator", service="nvidia-dcgm-exporter",
            service_labels={"app": "nvidia-dcgm-exporter"}, port="gpu-metrics", pod=pod,
            container="nvidia-dcgm-exporter", node="node-1")]))
        config = {"global": {"scrape_interval": "1s"},
                  "scrape_configs": [scrape_config(monitor, str(folder / "sd.json")),
                                     {"job_name": "kube-state-metrics", "honor_labels": True,
                                      "static_configs": [{"targets": [ksm.address]}]}]}
        with Prometheus(folder, config) as prometheus:
            (target,) = prometheus.wait_for(SAMPLES + '{job!="kube-state-metrics"}')
            (pod_info,) = prometheus.wait_for("kube_pod_info")
    return ({k: v for k, v in target["metric"].items() if k != "__name__"},
            {k: v for k, v in pod_info["metric"].items() if k not in ("__name__", "job", "instance")})


def _series_of(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def test_on_the_operators_servicemonitor_as_shipped_kube_state_metrics_gives_each_target_its_node(tmp_path, reference):
    """The GPU operator's ServiceMonitor as shipped gives its targets no `node` (a real Prometheus scraping through
    it shows the labels: the exporter pod's pod, namespace, container, service, endpoint). The rule takes each
    target's node from kube-state-metrics' kube_pod_info of its pod, so the node's scrapes are counted whatever pod
    answered them: an exporter pod replaced at minute 20 by one answering 200 without a DCGM sample fires at 25m
    (more than half the node's 40 scrapes empty), pods replaced every 4 minutes fire as soon, and a healthy node
    beside them does not; a second kube-state-metrics replica, or another pod recreated under one name on another
    node, leaves one node per pod (a join error would silence the whole rule). Without kube_pod_info (kube-state-metrics not scraped) each target is judged alone, as
    before: the replaced pod fires a window after it appeared (30m), the churning pods never."""
    target, pod_info = _stock_labels(tmp_path, reference)
    assert "node" not in target and target["pod"] == pod_info["pod"] and target["namespace"] == pod_info["namespace"]
    _operator_rules(tmp_path)

    def pods(node: int, lives: list[tuple[int, int, str]], with_info: bool = True) -> list[dict]:
        """Exporter pods on node-<node> scraped every 15 s: (first scrape, scrapes, value) each, with its own pod
        name and address, and its kube_pod_info while it lives."""
        result = []
        for k, (first, count, value) in enumerate(lives, start=1):
            name, gap = f"nvidia-dcgm-exporter-{node}{k:03d}", f"_x{first} " if first else ""
            result.append({"series": _series_of(SAMPLES, {**target, "pod": name,
                                                          "instance": f"10.0.{node}.{k}:9400"}),
                           "values": f"{gap}{value}x{count - 1}"})
            if with_info:
                result.append({"series": _series_of("kube_pod_info", {**pod_info, "pod": name,
                                                                       "node": f"node-{node}"}),
                               "values": f"{gap}1x{count - 1}"})
        return result
    gpu = {"series": 'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="node-9"}', "values": "60x200"}
    ksm = [{**k, "values": "1x200"} for k in KSM]
    node = {k: v for k, v in target.items() if k not in ("pod", "instance")}
    fired = [expected_alert(tmp_path, "GpudashGpuDataMissing", reason=TARGET_DOWN, **node, node="node-1")]
    replaced = [(0, 80, "400"), (80, 120, "0")]  # at 20m a new pod answering empty
    churn = [(0, 80, "400"), *((80 + 16 * k, 16, "0") for k in range(8))]  # from 20m a new pod every 4 minutes
    healthy = pods(2, [(0, 200, "400")])
    alone = expected_alert(tmp_path, "GpudashGpuDataMissing", reason=TARGET_DOWN,
                      **{**target, "pod": "nvidia-dcgm-exporter-1002", "instance": "10.0.1.2:9400"})

    # a second kube-state-metrics replica's copy of each pod's series, and a pod of the exporter's namespace recreated
    # under its own name on another node (a StatefulSet's): still one node per pod, the rule evaluates
    copies = [{**i, "series": i["series"].replace("{", '{instance="ksm-2",', 1)}
              for i in pods(1, replaced) + healthy if i["series"].startswith("kube_pod_info")]
    moved = [{"series": _series_of("kube_pod_info", {**pod_info, "pod": "validator-0", "node": f"node-{n}"}),
              "values": values} for n, values in ((5, "1x60"), (6, "_x64 1x130"))]

    def at(*minutes: tuple[int, list]) -> list[dict]:
        return [{"eval_time": f"{m}m", "alertname": "GpudashGpuDataMissing", "exp_alerts": alerts}
                for m, alerts in minutes]
    tests = [
        {"interval": "15s", "input_series": [*pods(1, replaced), *healthy, *copies, *moved, gpu, *ksm],
         "alert_rule_test": at((20, []), (24, []), (25, fired), (40, fired))},
        {"interval": "15s", "input_series": [*pods(1, churn), *healthy, gpu, *ksm],
         "alert_rule_test": at((24, []), (25, fired), (40, fired))},
        {"interval": "15s", "input_series": [*pods(1, replaced, False), *pods(2, [(0, 200, "400")], False), gpu, *ksm],
         "alert_rule_test": at((25, []), (29, []), (30, [alone]))},
        {"interval": "15s", "input_series": [*pods(1, churn, False), gpu, *ksm],
         "alert_rule_test": at((25, []), (40, []))},
    ]
    promtool_test(tmp_path, "rules_test.yaml", tests)


def test_healthy_fleet_fires_nothing(rules):
    series = [_series("DCGM_FI_DEV_GPU_UTIL", "80x60"), _series("DCGM_FI_DEV_GPU_TEMP", "60x60"),
              _series("DCGM_FI_DEV_XID_ERRORS", "0x60"), _series("DCGM_FI_DEV_FB_USED", "1000x60"),
              _series("DCGM_FI_DEV_FB_FREE", "20000x60"), _series("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "5x60"), *KSM]
    groups = yaml.safe_load((rules / "rules.yaml").read_text())["groups"]
    names = [r["alert"] for g in groups for r in g["rules"] if "alert" in r]
    # judged in two groups: the alerts whose alarm's recording reads what it wrote at the evaluations before (every
    # minute up to 50), and the others (their rules evaluated at 50 minutes alone, their verdict the same: each alert
    # depends on its own evaluation alone, promtool_rules.judged_rules): in one, every rule was evaluated 51 times
    rules_of = {}
    for rule in (r for g in groups for r in g["rules"]):
        rules_of.setdefault(rule["labels"][PROMETHEUS_RULE_LABEL], []).append(rule)
    held = {r["alert"] for own in rules_of.values() if holding_state(own) for r in own if "alert" in r}
    assert held and held < set(names), held
    promtool_test(rules, "healthy_test.yaml", [
        {"interval": "1m", "input_series": series, "alert_rule_test": [
            {"eval_time": "50m", "alertname": name, "exp_alerts": []} for name in names if (name in held) == side]}
        for side in (True, False)])


def test_gauge_alerts_take_the_period_as_their_cloudwatch_twins_do(rules):
    """CloudWatch takes a gauge's MIN / AVG over each period's observations. A pod whose utilization swings
    between 2 and 6 % (4 % on average) fires the CloudWatch alarm; the Prometheus rule of the same definition
    fires too (an instant value would be above the threshold every other scrape and never stay pending long
    enough). A GPU whose temperature swings between 79 and 81 °C has not stayed above 80 °C: neither fires."""
    import json

    from tests.support import cloudwatch_eval
    from tests.support.cloudwatch_agent import Datapoint

    files = encode(build(load_project()))
    requests = {a["Request"]["AlarmName"]: a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    temp = [81.0 if k % 2 == 0 else 79.0 for k in range(80)]
    util = [2.0 if k % 2 == 0 else 6.0 for k in range(80)]
    gpu = (("ClusterName", "gpu-cluster"), ("gpu", "0"), ("node", "node-1"))
    pod = (("ClusterName", "gpu-cluster"), ("gpu", "0"), ("namespace", "ml"), ("pod", "idle-0"))
    # as the agent publishes them for the temperature-high alarm: each reading's flag, 1 above 80 and 0 not
    # (agent_otel.level_flags)
    points = [Datapoint("ContainerInsights/Prometheus", "DCGM_FI_DEV_GPU_TEMP",
                        tuple(sorted((*gpu, ("above 80", "1 past the level")))), 30.0 * k, float(v > 80))
              for k, v in enumerate(temp)]
    # as the agent publishes them for the idle alarm: each reading's unused share, 100 less it (agent_otel.unused_shares)
    points += [Datapoint("ContainerInsights/Prometheus", "DCGM_FI_DEV_GPU_UTIL", (*pod, ("share", "unused")),
                         30.0 * k, 100.0 - v) for k, v in enumerate(util)]
    states = cloudwatch_eval.alarm(requests["gpudash-gpu-cluster-gpu-temp-high-warning"], points, 1200)
    assert set(states.values()) == {"OK"}
    states = cloudwatch_eval.alarm(requests["gpudash-gpu-cluster-gpu-idle-warning"], points, 1800)
    assert set(states.values()) == {"ALARM"}

    def series(metric, values, pod_name):
        return _series(metric, " ".join(f"{v:g}" for v in values), pod=pod_name)

    test = {"interval": "30s",
            "input_series": [series("DCGM_FI_DEV_GPU_TEMP", temp, "hot-0"),
                             series("DCGM_FI_DEV_GPU_UTIL", util, "idle-0")],
            "alert_rule_test": [
                {"eval_time": "20m", "alertname": "GpudashGpuTempHigh", "exp_alerts": []},
                {"eval_time": "35m", "alertname": "GpudashGpuIdle",
                 "exp_alerts": [expected_alert(rules, "GpudashGpuIdle", namespace="ml", pod="idle-0", gpu="0")]}]}
    promtool_test(rules, "windows_test.yaml", [test], evaluation_interval="30s")


def test_framebuffer_alarm_and_its_twin_fire_for_the_same_pods(rules):
    """One rule, one situation, whatever the GPU's size: a pod on an 80 GB GPU at 96 % with 3,200 MiB free,
    and a pod on a 16 GB GPU at 94.5 % with 900 MiB free. The CloudWatch alarm and the Prometheus rule must
    name the same pods (a used share in one and free MiB in the other would each name another pod)."""
    import json

    from tests.support import cloudwatch_eval
    from tests.support.cloudwatch_agent import Datapoint

    pods = {"big-0": (78_720.0, 3_200.0), "small-0": (15_484.0, 900.0), "roomy-0": (8_000.0, 8_384.0)}
    files = encode(build(load_project()))
    request = next(a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                   if "framebuffer-full" in a["Request"]["AlarmName"])
    points = [Datapoint("ContainerInsights/Prometheus", metric,
                        (("ClusterName", "gpu-cluster"), ("namespace", "ml"), ("pod", pod)), 30.0 * k, value)
              for pod, (used, free) in pods.items() for k in range(40)
              for metric, value in (("DCGM_FI_DEV_FB_USED", used), ("DCGM_FI_DEV_FB_FREE", free))]
    cloudwatch = {dict(key)["pod"] for key, state in cloudwatch_eval.alarm(request, points, 1200).items()
                  if state == "ALARM"}
    series = []
    for gpu, (pod, (used, free)) in enumerate(pods.items()):
        series += [_series("DCGM_FI_DEV_FB_USED", f"{used:g}x40", pod=pod, gpu=gpu),
                   _series("DCGM_FI_DEV_FB_FREE", f"{free:g}x40", pod=pod, gpu=gpu)]
    expected = [expected_alert(rules, "GpudashFramebufferFull", namespace="ml", pod=pod) for pod in sorted(cloudwatch)]
    test = {"interval": "30s", "input_series": series,
            "alert_rule_test": [{"eval_time": "19m", "alertname": "GpudashFramebufferFull", "exp_alerts": expected}]}
    assert cloudwatch, "the CloudWatch alarm fires for some pod"
    promtool_test(rules, "framebuffer_test.yaml", [test], evaluation_interval="30s")


def test_the_xid_rule_is_a_state_that_a_later_xid_does_not_renew(rules):
    """What the XID rule's description says of it is what it does: the exporter holds the last code, so the
    alert fires from the first XID for as long as the exporter runs, one alert whatever code follows (43, then
    79 an hour later, then 79 again), and ends only when a restarted exporter reads 0."""
    alert = "GpudashXidError"
    description = alert_rule(rules, alert)["annotations"]["description"]
    assert "until the exporter restarts" in description and "does not notify again" in description
    firing = [expected_alert(rules, alert, **GPU0)]
    promtool_test(rules, "xid_state.yaml", [{
        "interval": "1m",
        "input_series": [_series("DCGM_FI_DEV_XID_ERRORS", "0 0 0 43x60 79x30 79x30 0x20")],
        "alert_rule_test": [
            {"eval_time": "2m", "alertname": alert, "exp_alerts": []},
            *({"eval_time": f"{minute}m", "alertname": alert, "exp_alerts": firing} for minute in (5, 62, 70, 100, 120)),
            {"eval_time": "150m", "alertname": alert, "exp_alerts": []},
        ]}])
    cloudwatch = json.loads(encode(build(load_project()))["cloudwatch/alarms.json"])["alarms"]
    (request,) = [a["Request"] for a in cloudwatch if {"Key": "gpudash:rule", "Value": "xid-error"} in a["Request"]["Tags"]]
    assert "until the exporter restarts" in request["AlarmDescription"]


@pytest.mark.parametrize("instants, evaluations", [
    ({10, 15, 20, 35, 39}, 9),  # 10 and 20 at 10 minutes (3 evaluations), the others alone: 40 at 1 minute
    (set(range(1, 61)), 61),  # minute by minute: one plan
    ({0}, 1), ({0, 40}, 2), ({40, 41}, 4), ({3, 6, 9, 10, 20, 30, 40}, 9),
    (set(range(39, 57)), 36)])  # judged after 38 unjudged minutes: each alone
def test_each_judged_instant_is_evaluated_in_one_plan(instants, evaluations):
    """evaluation_plans: every instant judged exactly once, at an interval that evaluates there; fewer
    evaluations than one plan at the instants' greatest common divisor where that costs more."""
    plans = evaluation_plans(instants)
    assert sorted(n for _, at in plans for n in at) == sorted(instants)
    assert all(n % interval == 0 for interval, at in plans for n in at)
    assert sum(max(at) // interval + 1 for interval, at in plans) == evaluations
