"""cloudwatch.source: container-insights in clusters saying exporter.mig: none: what gpudash adds to the alarms'
descriptions says nothing of GPUs split into MIG instances, as on the agent pipelines
(tests/unit/test_mig_per_cluster.py). The per-GPU data-missing alarm says what MIG does to it where GPUs may be split
(tests/unit/test_container_insights_data_missing.py), not in a cluster whose settings say none is."""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.markers import ALARM_DESCRIPTION_NOTE
from generator.output import encode
from tests.support.projects import defined_project

ADDON = "cloudwatch: {source: container-insights}\n"
MIXED = ADDON + ("clusters:\n  - {name: split, region: us-east-1}\n"
                 "  - {name: whole, region: us-east-1, exporter: {mig: none}}\n")


def _added(folder, settings: str) -> dict[str, str]:
    """{alarm name: what gpudash adds to its description}."""
    files = encode(build(defined_project(folder, settings), grafana=False))
    return {item["Request"]["AlarmName"]: item["Request"]["AlarmDescription"].split(ALARM_DESCRIPTION_NOTE, 1)[1]
            for item in json.loads(files["cloudwatch/alarms.json"])["alarms"]}


@pytest.mark.parametrize("settings", [ADDON + "exporter: {mig: none}\n", MIXED], ids=["fleet", "mixed"])
def test_a_cluster_saying_no_gpu_is_split_gets_no_mig_words(tmp_path, settings):
    added = _added(tmp_path, settings)
    whole = {name: text for name, text in added.items() if "-split-" not in name}
    assert "gpudash-" + ("whole" if "split" in settings else "gpu-cluster") + \
        "-gpu-data-missing-per-gpu-critical" in whole, sorted(added)
    assert {name: text for name, text in whole.items() if "MIG" in text} == {}


def test_a_cluster_whose_gpus_may_be_split_is_still_told(tmp_path):
    added = _added(tmp_path, MIXED)
    assert "A GPU split into MIG instances" in added["gpudash-split-gpu-data-missing-per-gpu-critical"]
