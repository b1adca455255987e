"""Rules over a GPU two exporters read at once (a DaemonSet rollout with maxSurge: the new exporter pod is up before
the old one leaves), and over an upgrade that renames the node: the old exporter (without NODE_NAME) writes its own
pod's name into `Hostname`, the new one the node into `hostname`; each is its own scrape target (`instance`). Both
read the same GPU (its UUID), so a rule judges the GPU once, named by its node, on `promtool test rules` with the
generated rules file.

- n6's GPU: both exporters throughout; its PCIe replay counter climbs 20 a minute (100 in 5 minutes: above 50);
- n7's GPU: both exporters throughout, 6 replays a minute (30 in 5 minutes: below 50, and below if read twice);
- n8's GPU: the old exporter until minute 6, the new one from minute 6 (an upgrade without overlap), 12 replays a
  minute: 60 in every 5 minutes, across the switch too;
- GpudashGpuIdle: pod ml/idle-0 holds n6's GPU at 1 % and ml/busy-0 n7's at 90 %, each read by both exporters.
"""

from __future__ import annotations

from tests.support.promtool_rules import expected_alert, promtool_test, rules  # noqa: F401 (a fixture)

OLD_POD = "nvidia-dcgm-exporter"  # the old exporter's pod: nvidia-dcgm-exporter-<node> here


def _labels(uuid: str, node: str, old: bool, pod: str | None = None) -> str:
    """A series' labels as the old exporter (its pod's name in Hostname) or the new one (the node in hostname) writes
    them, with the scrape target's `instance`."""
    host = node.removeprefix("n")
    spelling = f'Hostname="{OLD_POD}-{node}",instance="10.0.{host}.1:9400"' if old else \
        f'hostname="{node}",instance="10.0.{host}.2:9400"'
    held = f',namespace="ml",container="main",pod="{pod}"' if pod else ""
    return f'gpu="0",UUID="{uuid}",device="nvidia0",modelName="NVIDIA H100",{spelling}{held}'


def _both(metric: str, uuid: str, node: str, values: str, pod: str | None = None) -> list[dict[str, str]]:
    return [{"series": f"{metric}{{{_labels(uuid, node, old, pod)}}}", "values": values} for old in (True, False)]


REPLAYS = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"


def test_a_counter_rule_judges_a_gpu_two_exporters_read_once_named_by_its_node(rules):
    """Before: n6's GPU fired twice (as `n6` and as the old exporter's pod name); n8's did not fire at minutes 8 and
    10 (each exporter's readings apart: 36 and 24 in the window ending at minute 8, 60 together)."""
    old_until, new_from = "0+12x6 _x14", "_x6 72+12x14"  # n8: minute 0 to 6, then minute 6 on (72 at minute 6)
    series = [*_both(REPLAYS, "GPU-n6-0", "n6", "0+20x20"), *_both(REPLAYS, "GPU-n7-0", "n7", "0+6x20"),
              {"series": f"{REPLAYS}{{{_labels('GPU-n8-0', 'n8', True)}}}", "values": old_until},
              {"series": f"{REPLAYS}{{{_labels('GPU-n8-0', 'n8', False)}}}", "values": new_from}]
    firing = [expected_alert(rules, "GpudashPcieReplays", node=node, gpu="0") for node in ("n6", "n8")]
    tests = [{"interval": "1m", "input_series": series, "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": "GpudashPcieReplays", "exp_alerts": firing}
        for minute in (8, 10, 14)]}]
    promtool_test(rules, "two_exporters_replays.yaml", tests)


def test_the_idle_rule_judges_a_pods_gpu_two_exporters_read_once(rules):
    series = [*_both("DCGM_FI_DEV_GPU_UTIL", "GPU-n6-0", "n6", "1x60", pod="idle-0"),
              *_both("DCGM_FI_DEV_GPU_UTIL", "GPU-n7-0", "n7", "90x60", pod="busy-0")]
    tests = [{"interval": "1m", "input_series": series, "alert_rule_test": [
        {"eval_time": "10m", "alertname": "GpudashGpuIdle", "exp_alerts": []},
        {"eval_time": "40m", "alertname": "GpudashGpuIdle",
         "exp_alerts": [expected_alert(rules, "GpudashGpuIdle", namespace="ml", pod="idle-0", gpu="0")]}]}]
    promtool_test(rules, "two_exporters_idle.yaml", tests)
