"""A DaemonSet that lives a few minutes and is gone (a rename rolled back) is not a period of missing data.

04e5949 (reverted) read kube_daemonset_labels over each period, so a DaemonSet whose whole
life (under a period) straddled the boundary between the two periods the rule joins breached case 3 in both
(the counts of its few minutes: desired 2, available 0), though no period was short of pods all through.
"""

from __future__ import annotations

from tests.integration.test_data_missing import (
    FINAL, NODES, STEP, _data_missing_rule, _labels, _promtool_values, _story_target, _up_values, generated,  # noqa: F401
)
from tests.support import kube_state
from tests.support.promtool_rules import promtool_test

STEPS = FINAL // STEP
KSM = 'job="kube-state-metrics",instance="10.0.2.9:8080",namespace="gpu-operator"'


def _values(value) -> str:
    """promtool values per 30 s step of value(minute) (None: no sample, stale where the series stops)."""
    out, last = [], False
    for k in range(STEPS):
        v = value(k * STEP / 60)
        out.append(str(v) if v is not None else "stale" if last else "_")
        last = v is not None
    return " ".join(out)


def _daemonset(name: str, desired, available) -> list[dict]:
    where = f'{KSM},daemonset="{name}"'
    return [{"series": f"{kube_state.DESIRED}{{{where}}}", "values": _values(desired)},
            {"series": f"{kube_state.AVAILABLE}{{{where}}}", "values": _values(available)},
            {"series": f"{kube_state.LABELS}{{{where},{_labels(kube_state.OPERATOR_LABELS)}}}",
             "values": _values(lambda m: 1 if desired(m) is not None else None)}]


def test_a_rename_rolled_back_after_three_minutes_fires_no_rule(generated, tmp_path):  # noqa: F811
    """The operator's exporter DaemonSet replaced at minute 20 by nvidia-dcgm-exporter-v2, whose pods never become
    available (a bad image); at 23 the change is rolled back: v2 deleted, the original recreated, its pods available
    at 24. Four minutes without GPU data, no period short of pods all through: the CloudWatch alarm (it reads
    nvidia-dcgm-exporter's counts: present in every period, the most available 2 in each) stays OK, and so did the
    rule before 04e5949. Seen with 04e5949: `fewer exporter pods available than desired` for nvidia-dcgm-exporter-v2
    at minutes 25, 26 and 27."""
    _, files = generated
    rule = _data_missing_rule(files, tmp_path)
    original = lambda m: 2 if m < 20 or m >= 23 else None  # noqa: E731
    series = [*_daemonset("nvidia-dcgm-exporter", original,
                          lambda m: None if original(m) is None else 2 if m < 20 or m >= 24 else 0),
              *_daemonset("nvidia-dcgm-exporter-v2", lambda m: 2 if 20 <= m < 23 else None,
                          lambda m: 0 if 20 <= m < 23 else None)]
    answering = "".join("1" if k * STEP < 1200 or k * STEP >= 1440 else "0" for k in range(STEPS))
    for node in NODES:
        target = _story_target(node)
        series.append({"series": f"up{{{_labels(target)}}}", "values": _up_values(answering)})
        series.append({"series": f'DCGM_FI_DEV_GPU_TEMP{{{_labels(target)},gpu="0"}}',
                       "values": _promtool_values(answering, "60")})
    promtool_test(tmp_path, "renamed_test.yaml", [
        {"name": "a rename rolled back", "interval": "30s", "input_series": series,
         "alert_rule_test": [{"eval_time": f"{m}m", "alertname": rule["alert"], "exp_alerts": []}
                             for m in range(1, FINAL // 60)]}], evaluation_interval="30s")
