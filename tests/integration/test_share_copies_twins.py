"""The Prometheus twins of tests/unit/test_alarm_share_sets.py: the bundled alarms and a user's of the same fields over
other groupings (a GPU idle per node and GPU, a pod's GPUs or a pod idle by engine activity, a pod's GPUs or a pod hot
at every reading of two periods), the generated rules run by promtool over the fleets' readings as Prometheus stores
them, fire for exactly the GPUs and pods the CloudWatch alarms fire for through the build's agent model (the unit
test's TRUTH): the mixed MIG fleet with its GPU no pod holds hot, and the idle-GPU fleet."""

from __future__ import annotations

import pytest

from tests.support import mixed_fleet
from tests.support.mixed_fleet import Node
from tests.support.promtool_rules import alert_names, expected_alert, promtool_test
from tests.unit.test_alarm_share_sets import ENGINE, FLEETS, TEMP, TRUTH, UTIL, built_beside_bundled

STEP, STEPS = 30, 80  # forty minutes of 30 s scrapes: the idle rule's six periods and more


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("share-twins")
    files = built_beside_bundled(folder)
    (folder / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    return folder


def _series(node: Node) -> list[dict[str, str]]:
    """The node's readings of the alarms' fields as Prometheus stores them from its scrapes (mixed_fleet.stored)."""
    fields = tuple(f"{field}{{" for field in (UTIL, ENGINE, TEMP))
    return [{"series": series, "values": " ".join(readings)}
            for series, readings in mixed_fleet.stored(node, fields, STEPS, STEP).items()]


# the labels of an alert of each rule, from a contributor's key as the unit test writes it
LABELS = {"gpu-idle": ("namespace", "pod", "gpu"), "any-idle": ("node", "gpu"), "engine-idle": ("namespace", "pod", "gpu"),
          "pod-engine-idle": ("namespace", "pod"), "gpu-temp-high": ("node", "gpu"), "pod-hot": ("namespace", "pod"),
          "pod-gpu-hot": ("namespace", "pod", "gpu"), "node-hot": ("node",)}
MIG_LABELS = ("namespace", "pod", "gpu", "GPU_I_ID", "GPU_I_PROFILE")  # the MIG branch of the idle rule, per instance


def _alerts(fleet: str) -> dict[str, list[dict[str, str]]]:
    """{rule: the labels of each alert it fires}: a rule's CloudWatch alarm and its MIG half (`-mig`) are one rule."""
    result: dict[str, list[dict[str, str]]] = {}
    for name, keys in TRUTH[fleet].items():
        rule, mig = name.removesuffix("-mig"), name.endswith("-mig")
        names = MIG_LABELS if mig and rule == "gpu-idle" else LABELS[rule]
        result.setdefault(rule, []).extend(dict(zip(names, key.split("/"))) for key in keys)
    return result


@pytest.mark.parametrize("fleet", sorted(FLEETS))
def test_the_rules_fire_for_what_the_cloudwatch_alarms_fire_for(folder, fleet):
    alerts = alert_names(folder)
    checks = [{"eval_time": f"{STEPS * STEP // 60 - 1}m", "alertname": alerts[rule],
               "exp_alerts": [expected_alert(folder, alerts[rule], **labels) for labels in sorted(fired, key=str)]}
              for rule, fired in _alerts(fleet).items()]
    series = [s for node in FLEETS[fleet] for s in _series(node)]
    promtool_test(folder, f"share_twins_{fleet}.yaml", [{"interval": f"{STEP}s", "input_series": series,
                                                          "alert_rule_test": checks}], evaluation_interval=f"{STEP}s")
