"""A fleet-scope rule's Prometheus twin, on one Prometheus holding two clusters, judges each cluster's pods and GPUs
apart, as its CloudWatch alarm does (tests/unit/test_fleet_pods_apart.py).

Clusters a and b run the crafted fleet (tests/support/dcgm_fleet.FLEET) into one Prometheus, each series labelled
with its cluster: `ml/infer-1` idles at 2 % in a and works at 90 % in b; GPU 1 of node ip-10-0-1-2 reads 85 C in a
and 75-77 C in b (EKS names nodes by private IP: clusters in VPCs of one CIDR share node names). Grouped by
namespace and pod (node and GPU) alone, the rule read the two namesakes as one: 46 % (a minimum of 75 C), no alert.
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.output import encode
from tests.support import dcgm_fleet
from tests.support.payload_edits import busy_payload, hot_payload
from tests.support.projects import defined_project
from tests.support.promtool_rules import alert_names, expected_alert, promtool_test
from tests.unit.test_fleet_pods_apart import ALARMS, SETTINGS

STEP = dcgm_fleet.STEP
STEPS = 70  # 35 minutes: the idle rule's six periods of 5 minutes and more
FIELDS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fleet-twins")
    project = defined_project(folder, SETTINGS, alarms=ALARMS)
    files = encode(build(project))
    (folder / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    return project, folder


def _series(project) -> list[dict[str, str]]:
    """Both clusters' gauges of FIELDS as one Prometheus stores them, each series with its cluster and node."""
    return dcgm_fleet.stored_series(project.catalog, {"a": hot_payload, "b": busy_payload}, FIELDS, STEPS)


# the one contributor each rule names: cluster a's (its namesake in b reads otherwise)
FIRING = {"fleet-idle": {"cluster": "a", "namespace": "ml", "pod": "infer-1"},
          "fleet-warm": {"cluster": "a", "node": "ip-10-0-1-2", "gpu": "1"}}


def test_the_fleet_rules_fire_for_cluster_a_s_pod_and_gpu_whatever_their_namesakes_in_b_read(built):
    project, folder = built
    alerts = alert_names(folder)
    checks = [{"eval_time": f"{STEPS * STEP // 60 - 1}m", "alertname": alerts[rule],
               "exp_alerts": [expected_alert(folder, alerts[rule], **labels)]} for rule, labels in FIRING.items()]
    promtool_test(folder, "fleet_twins.yaml", [{"interval": f"{STEP}s", "input_series": _series(project),
                                                 "alert_rule_test": checks}], evaluation_interval=f"{STEP}s")
