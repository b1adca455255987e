"""An alarm on a total of GPU memory per node or over the cluster, and its Prometheus twin, read each GPU instance once
on the mixed fleet (tests/support/mixed_fleet.FLEET: the MIG node's two A100s split into two instances each, whose
framebuffers are disjoint slices: 19,600 + 5,000 + 8,000 + 0 MiB used; a GPU two pods share by time-slicing, named
under each in turn). The CloudWatch side is tests/unit/test_framebuffer_sums.py (the alarms were refused there before);
here promtool runs the generated rules over the same readings: a node's memory over 35,000 MiB fires for the two nodes
of 40,000 MiB and not the MIG node (32,600), over 30,000 MiB for the MIG node too, and the cluster's 142,600 MiB over
142,000 and not over 143,000."""

from __future__ import annotations

import pytest

from tests.integration.test_gpu_count_twins import STEP, STEPS
from tests.integration.test_mig_twins import built_with
from tests.support.mixed_fleet import FLEET, scraped_series
from tests.support.promtool_rules import alert_names, expected_alert, promtool_test

FIELD = "DCGM_FI_DEV_FB_USED"
NODE_LEVELS, CLUSTER_LEVELS = (30_000, 35_000), (142_000, 143_000)
RULES = f'''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    for level in {NODE_LEVELS!r}:
        yield Alarm(f"node-memory-{{level}}", "Node GPU memory high", Condition(Query("{FIELD}", "sum", ("node",)),
                    ">", level), description="A node's GPUs hold much.", runbook="Look at the node.")
    for level in {CLUSTER_LEVELS!r}:
        yield Alarm(f"cluster-memory-{{level}}", "Cluster GPU memory high", Condition(Query("{FIELD}", "sum", ()),
                    ">", level), description="The cluster's GPUs hold much.", runbook="Look at the cluster.")
'''


def _totals() -> dict[str, float]:
    """Each node's framebuffer used, each GPU instance once."""
    return {node.name: sum(i.fb_used for gpu in node.gpus for i in gpu.instances) for node in FLEET}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("framebuffer-twins"), {"memory.py": RULES})



def test_the_rules_add_each_gpu_instance_once(built):
    totals = _totals()
    assert totals["gpu-node-mig"] == 32_600 and sum(totals.values()) == 142_600
    _, folder = built
    alerts = alert_names(folder)
    fired = {f"node-memory-{level}": [{"node": name} for name, total in sorted(totals.items()) if total > level]
             for level in NODE_LEVELS}
    assert [labels["node"] for labels in fired["node-memory-35000"]] == ["gpu-node-b", "ip-10-0-3-7.ec2.internal"]
    assert "gpu-node-mig" in [labels["node"] for labels in fired["node-memory-30000"]]
    fired |= {f"cluster-memory-{level}": [{}] if sum(totals.values()) > level else [] for level in CLUSTER_LEVELS}
    checks = [{"eval_time": f"{STEPS * STEP // 60 - 1}m", "alertname": alerts[rule],
               "exp_alerts": [expected_alert(folder, alerts[rule], **labels) for labels in expected]}
              for rule, expected in fired.items()]
    promtool_test(folder, "framebuffer_twins.yaml", [{"interval": f"{STEP}s", "input_series": scraped_series((FIELD,), STEP, STEPS),
                                                       "alert_rule_test": checks}], evaluation_interval=f"{STEP}s")
