"""Why a GPU stopped reporting rule has no CloudWatch alarm (lint AL027; `gpudash cost`'s prometheus_only), in words
true of each case.

On agent.pipeline: classic and on the Container Insights add-on CloudWatch cannot judge a lost GPU: its own series say
nothing once it ends, and no count of a node's GPUs is published. On the OTel pipeline it can (each node's GPUs unread
below its highest index, the rule's alarm): there the rule goes without a CloudWatch alarm only for what that count
cannot tell (exporter.virtual_gpus: an idle GPU's series end while another of its node is held) or is not made of (a
rule on another field than the one the agent counts GPUs by). Those said "CloudWatch cannot judge a GPU that stopped
reporting ...", untrue where the bundled settings' alarm judges it.
"""

from __future__ import annotations

import json

import pytest

from generator.stopped_gpus import NOT_ON_ADDON, NOT_ON_PIPELINE, NOT_WITH_COPIES

RULE = "alarm 'gpu-stopped-reporting' has no CloudWatch alarm, only its Prometheus rule: "
POWER = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
         "    return [Alarm('gpu-gone', 'GPU gone', Condition(Query('DCGM_FI_DEV_POWER_USAGE', 'count', ('node', 'gpu')), "
         "'<', 1), severity='critical', stopped=True)]\n")
CANNOT = "CloudWatch cannot judge a GPU that stopped reporting"
OTEL = ("on agent.pipeline: otel the agent counts each node's GPUs unread below its highest index at each scrape, which "
        "the rule's CloudWatch alarm judges each node on")


@pytest.mark.parametrize("settings, rule, ending, judged", [
    ("agent:\n  pipeline: classic\nthresholds:\n  pcie_replays_per_minute: 0\n", RULE, NOT_ON_PIPELINE, False),
    ("cloudwatch:\n  source: container-insights\n", RULE, NOT_ON_ADDON, False),
    ("exporter:\n  virtual_gpus: true\n", RULE, NOT_WITH_COPIES, True),
    ("definitions:\n  alarms: [alarms]\n", RULE.replace("gpu-stopped-reporting", "gpu-gone"),
     "by DCGM_FI_DEV_GPU_TEMP alone (the first presence field the counters CSV collects), not DCGM_FI_DEV_POWER_USAGE",
     True),
], ids=["classic", "container-insights", "virtual-gpus", "another-field"])
def test_each_reason_is_true_of_its_case(settings, rule, ending, judged, tmp_path, cli):
    """`judged`: the OTel pipeline's alarm judges lost GPUs in these settings, but not this rule's."""
    (tmp_path / "alarms").mkdir()
    (tmp_path / "alarms" / "mine.py").write_text(POWER)
    (tmp_path / "gpudash.yaml").write_text(settings)
    code, stdout, stderr = cli("cost", "--config", str(tmp_path / "gpudash.yaml"), "--pods", "10", "--output", "json")
    assert code == 0, stderr
    (said,) = json.loads(stdout)["prometheus_only"]
    assert said.startswith(rule) and said.endswith(ending), said
    if judged:  # nothing says CloudWatch cannot: it can, by each node's GPUs unread, but not here
        assert said.startswith(rule + OTEL) and CANNOT not in said, said
    else:
        assert said.startswith(rule + CANNOT) and "on the GPU's own series" in said, said


def test_the_otel_pipeline_judges_the_bundled_rule(cli):
    code, stdout, stderr = cli("cost", "--pods", "10", "--output", "json")
    assert code == 0 and json.loads(stdout)["prometheus_only"] == [], stderr
