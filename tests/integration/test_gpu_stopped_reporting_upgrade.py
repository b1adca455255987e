"""gpu-stopped-reporting across the upgrade of gpudash that added the lost GPU's UUID to its recording and alert
(3a57ec48).

node-a's GPU 2 is lost at minute 10 (its series end; the node's other GPUs read on, 30 s scrapes). The rules before
the upgrade recorded it as `gpudash:gpu_stopped_reporting:lost` by its identity and node alone (no UUID label), up to
the upgrade at minute 50 (Prometheus then marks that series stale: the new rules write it with the UUID); the upgraded
rules carry a GPU past the hour of its readings by reading what the recording held within the last 45 minutes
(stopped_gpus.HOLD), whatever labels it held it under. Truth: one alert for the GPU at every minute, node-a GPU 2
with its UUID (the alert's labels change once, at the upgrade: another alert for Alertmanager, which resolves the old).
The carry reads a GPU's series without a UUID only where none with one holds it (stopped_gpus._judged)."""

from __future__ import annotations

from tests.integration.test_gpu_stopped_reporting import ALERT, LOST, STEP, _ended, _labels, _lost, _target, built  # noqa: F401
from tests.support.promtool_rules import expected_alert, promtool_test

UPGRADE = 50  # minute
SCRAPES = 260  # 130 minutes of 30 s scrapes


def _series() -> list[dict[str, str]]:
    values: dict[str, list[str]] = {}
    for gpu in range(4):
        for k in range(SCRAPES):
            if gpu == 2 and k >= LOST:
                continue
            labels = {"gpu": str(gpu), "UUID": f"GPU-node-a-{gpu}", "Hostname": "node-a", **_target("node-a", 0)}
            values.setdefault(f"DCGM_FI_DEV_GPU_TEMP{{{_labels(dict(sorted(labels.items())))}}}", ["_"] * SCRAPES)[k] \
                = "40"
    # what the rules before the upgrade recorded (the GPU's last reading time, 9:30), from the minute it was judged
    # stopped (20) to the upgrade, one sample per scrape; then Prometheus' staleness marker
    old = {"gpudash_gpu": "GPU-node-a-2", "gpu": "2", "node": "node-a", "gpudash_rule": "gpu-stopped-reporting"}
    recorded = ["_"] * SCRAPES
    for k in range(20 * 60 // STEP, UPGRADE * 60 // STEP):
        recorded[k] = str((LOST - 1) * STEP)
    values[f"gpudash:gpu_stopped_reporting:lost{{{_labels(old)}}}"] = recorded
    return _ended(values)


def test_a_gpu_lost_before_the_upgrade_that_added_its_uuid_fires_once_past_the_hour(built):  # noqa: F811
    """From the hour of its readings (70) on the GPU fired twice, with its UUID and without, to the end (129): the carry
    read the recording's series from before the upgrade beside the upgraded rules' one, and the recording wrote both
    again at each evaluation. Judged at every minute from the upgrade to 129."""
    promtool_test(built, "upgrade.yaml", [{"interval": f"{STEP}s", "input_series": _series(), "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": ALERT,
         "exp_alerts": [expected_alert(built, ALERT, **_lost("node-a", 2))]}
        for minute in range(UPGRADE, SCRAPES * STEP // 60)]}])
