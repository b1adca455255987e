"""The per-pod framebuffer rule over a GPU one pod leaves and the next pod takes at the following scrape.

A batch queue hands a GPU over as soon as it is free: a Job's pod ends and the scheduler binds the next pending pod to
the same GPU, which the exporter names from its next scrape on (the pod's own series; the old pod's series ends with
Prometheus' staleness marker). An inference pod loads its model at once, so its first readings may leave under
`alarms.framebuffer_free_mib` free. The truth: the new pod's memory is nearly full, and the pod that ended held the GPU
while it had 70,000 MiB free: only the new pod alarms (on CloudWatch the ended pod's per-pod set gets no point after
its last scrape). The rule reads a pod on the GPUs a scrape named it on within the per-pod look-back (4 scrape
intervals), which lets pods an exporter names in turn on a time-sliced GPU read every reading of it; after a handover
the look-back also gives the ended pod the new pod's first readings, and the rule names it for as long as those
readings lie in its 5-minute window (minutes 10 to 15 here). The control beside it: two pods named in turn on one
GPU, one full reading named under one of them: both pods alarm (truth: they share the GPU's memory).

Found on a fleet of its own; the handover is pinned as a strict xfail: telling it
from pods named in turn needs more than the series within the look-back (a pod named in turn may go unnamed for
minutes while kubelet's order stays on the other).
"""

from __future__ import annotations

import pytest

from tests.support.promtool_rules import expected_alert, promtool_test, rules  # noqa: F401 (a fixture)

ALERT = "GpudashFramebufferFull"
SCRAPES = 40  # twenty minutes of 30 s scrapes
HANDOVER = 20  # ml/done is named at scrapes 0-19, ml/next from scrape 20 (minute 10) on
FULL = (20, 21, 22)  # ml/next loads its model: 500 MiB free at its first three scrapes, 60,000 after
SHARED_FULL = 21  # the time-sliced GPU reads 500 MiB free once, at a scrape naming ml/b
MINUTES = (11, 12, 13, 14)  # the full readings within the last 5 minutes, ml/done's last naming 1.5 to 4.5 minutes ago
INSTANCE = {"gpu-node-hand1": "10.0.1.7:9400", "gpu-node-slic2": "10.0.2.7:9400"}  # each node's exporter target


def _labels(node: str, pod: str) -> str:
    """A series' labels as the exporter writes them and gpudash's scrape job keeps them (the target's `node`)."""
    return (f'gpu="0",UUID="GPU-{node}-0",device="nvidia0",modelName="NVIDIA A10G",Hostname="{node}",'
            f'DCGM_FI_DRIVER_VERSION="550.90.07",container="main",namespace="ml",pod="{pod}",node="{node}",'
            f'exporter_pod="nvidia-dcgm-exporter-{node[-5:]}",instance="{INSTANCE[node]}",job="dcgm-exporter"')


def _values(named, reading) -> str:
    """promtool's values of one pod's series: `reading(k)` at the scrapes naming it, a staleness marker at the scrape
    after each stretch of them, nothing before it is first named."""
    out, seen = [], False
    for k in range(SCRAPES):
        if named(k):
            out.append(str(reading(k)))
            seen = True
        else:
            out.append("stale" if seen and out[-1] not in ("stale", "_") else "_")
    return " ".join(out)


def _series() -> list[dict[str, str]]:
    up = [{"series": f'up{{exporter_pod="nvidia-dcgm-exporter-{node[-5:]}",instance="{instance}",'
                     f'job="dcgm-exporter",node="{node}"}}', "values": f"1x{SCRAPES - 1}"}
          for node, instance in INSTANCE.items()]
    return [
        *up,
        {"series": f"DCGM_FI_DEV_FB_FREE{{{_labels('gpu-node-hand1', 'done')}}}",
         "values": _values(lambda k: k < HANDOVER, lambda k: 70000)},
        {"series": f"DCGM_FI_DEV_FB_FREE{{{_labels('gpu-node-hand1', 'next')}}}",
         "values": _values(lambda k: k >= HANDOVER, lambda k: 500 if k in FULL else 60000)},
        *({"series": f"DCGM_FI_DEV_FB_FREE{{{_labels('gpu-node-slic2', pod)}}}",
           "values": _values(lambda k, turn=turn: k % 2 == turn, lambda k: 500 if k == SHARED_FULL else 70000)}
          for turn, pod in ((0, "a"), (1, "b"))),
    ]


def _judged(rules, pods: tuple[str, ...]) -> list[dict]:
    return [{"interval": "30s", "input_series": _series(), "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": ALERT,
         "exp_alerts": [expected_alert(rules, ALERT, namespace="ml", pod=pod) for pod in pods]}
        for minute in MINUTES]}]


def test_pods_named_in_turn_on_a_time_sliced_gpu_both_alarm_at_a_full_reading(rules):
    """The control: the full reading named under ml/b alone; ml/a holds the GPU too (named at the scrapes around it)."""
    tests = _judged(rules, ("a", "b", "next"))
    # judged with the handed-over GPU beside it: its new pod alarms (its own full readings), its old one must not
    tests[0]["input_series"] = [s for s in tests[0]["input_series"] if 'pod="done"' not in s["series"]]
    promtool_test(rules, "gpu_handed_over_control.yaml", tests)


@pytest.mark.xfail(strict=True, reason="the per-pod look-back (4 scrape intervals) gives the pod that ended the next "
                   "pod's first readings: ml/done alarms at minutes 11-14 beside ml/next (truth: ml/next alone)")
def test_a_pod_that_handed_its_gpu_over_does_not_alarm_for_the_next_pods_memory(rules):
    promtool_test(rules, "gpu_handed_over.yaml", _judged(rules, ("a", "b", "next")))
