"""`gpudash cost` of a fleet whose clusters differ in exporter.mig prices what each cluster's agent publishes
(not mended by 735e7221).

Since 735e7221 each cluster's agent declares what its own exporter.mig group's widgets and alarms read
(artifacts.agents). `gpudash cost` still prices render.cloudwatch.queried_sets over every cluster together
(cost._what_is_published): every GPU and pod of the fleet is priced with both groups' sets. A rule per namespace reads
the namespace_gpu set where GPUs may be split and the per-pod set where none is: two clusters, one saying none, 100
pods, 100 GPUs: 3,218 custom metrics, where the same fleet all split prices 3,118 and all whole 3,118 (each cluster
publishes one group's sets, never both: the fleet of the two can cost no more than the dearer of them). Before
735e7221 every cluster published both groups' sets, and 3,218 was what they published.
"""

from __future__ import annotations

import json

import pytest

from click.testing import CliRunner

from generator.cli import main

ALARM = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("ns-fb", "Namespace GPU memory high",
                Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("namespace",)), ">", 15000))
'''
FLEETS = {"mixed": ("", ", exporter: {mig: none}"), "split": ("", ""),
          "whole": (", exporter: {mig: none}", ", exporter: {mig: none}")}


def _custom_metrics(folder, first: str, second: str) -> float:
    folder.mkdir()
    (folder / "alarms").mkdir()
    (folder / "alarms" / "alarms.py").write_text(ALARM)
    (folder / "gpudash.yaml").write_text(f"clusters:\n  - {{name: a, region: us-east-1{first}}}\n"
                                         f"  - {{name: b, region: us-east-1{second}}}\n"
                                         "definitions:\n  alarms: [alarms]\n")
    result = CliRunner().invoke(main, ["cost", "--config", str(folder / "gpudash.yaml"), "--pods", "100",
                                       "--output", "json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    (line,) = [line for line in answer["group_by"]["lines"] if line["item"] == "custom metrics"]
    return line["quantity"]


def test_a_fleet_of_clusters_differing_in_mig_costs_no_more_custom_metrics_than_the_dearer_alike_fleet(tmp_path):
    quantity = {name: _custom_metrics(tmp_path / name, *clusters) for name, clusters in FLEETS.items()}
    assert quantity["mixed"] <= max(quantity["split"], quantity["whole"]), quantity


def test_each_kind_of_cluster_is_priced_on_its_share_of_the_fleet(tmp_path):
    """Two clusters, one of each kind: half the fleet's clusters publish the split kind's sets, half the whole kind's."""
    quantity = {name: _custom_metrics(tmp_path / name, *clusters) for name, clusters in FLEETS.items()}
    assert quantity["mixed"] == pytest.approx((quantity["split"] + quantity["whole"]) / 2), quantity
