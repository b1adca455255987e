"""Cost's Metrics Insights limits (fleet_limits.notes) of a fleet rule judged in two alarms in a Region mixing
exporter.mig (render/alarms._kinds_apart), whatever the order the settings list the clusters in.

Clusters a (GPUs may be split) and b (exporter.mig: none) in us-east-1, w (none) in us-west-2; the rule per GPU over
FB_USED with a `cloudwatch=` condition per MIG instance. 30 clusters, 3,000 GPUs each split in 7 (--mig-instances 7):
15 clusters a Region, 100 GPUs a cluster; us-east-1's split alarm reads its split half, 7.5 x 100 x 7 = 5,250 GPU
instances, and its `-whole` alarm the other half, 750 GPUs. Listed a, b, w the notes say so; listed w, a, b the share of
us-east-1 each reads was taken in us-west-2 (the first cluster's Region), where no cluster is left out: 10,500 and
1,500, a 'past 10,000 metrics' note with them. And a fleet alarm's query was named after the kind of cluster whose
first cluster's Region holds it (the whole GPUs' alarm said to be cluster a's): a fleet alarm is now named by
itself.

With g (split, us-west-2) beside a and b, us-west-2's alarm reads every cluster of its Region, 15 x 100 x 7 = 10,500
GPU instances, more than any of us-east-1's: the limits must say it wherever g is listed."""

from __future__ import annotations

import re

import pytest

from generator.artifacts import build
from generator.cost import Fleet
from generator.fleet_limits import notes
from tests.support.projects import defined_project
# the rule: FB_USED max per GPU over 15,000 MiB, fleet scope, its `cloudwatch=` condition per MIG instance
from tests.unit.test_fleet_rule_per_mig_instance_condition_in_mixed_region import ALARM, NO_DASHBOARDS

CLUSTERS = {"a": "{name: a, region: us-east-1}",
            "b": "{name: b, region: us-east-1, exporter: {mig: none}}",
            "w": "{name: w, region: us-west-2, exporter: {mig: none}}"}
FLEET = Fleet(clusters=30, pods=3000, churn=0, gpus=3000, mig_instances=7)
SPLIT, WHOLE = "gpudash-fleet-gpu-fb-high-warning-us-east-1", "gpudash-fleet-gpu-fb-high-whole-warning-us-east-1"


def _notes(folder, order: str) -> str:
    settings = "clusters:\n" + "".join(f"  - {CLUSTERS[name]}\n" for name in order)
    project = defined_project(folder, settings, alarms=ALARM, dashboards=NO_DASHBOARDS)
    return "\n".join(notes(project, build(project, grafana=False), FLEET))


def _series(text: str, alarm: str) -> str:
    """The count the 500-series note gives `alarm`."""
    found = re.search(rf"{re.escape(alarm)}(?: \([^)]*\))? ([\d,]+) ", text)
    assert found, text
    return found.group(1)


@pytest.mark.parametrize("order", ["abw", "wab"])
def test_each_of_the_two_alarms_counts_its_share_of_its_region(tmp_path, order):
    text = _notes(tmp_path, order)
    assert (_series(text, SPLIT), _series(text, WHOLE)) == ("5,250", "750"), text
    assert "past 10,000 metrics" not in text, text


def test_the_fleet_alarms_are_not_said_to_be_clusters_they_do_not_judge(tmp_path):
    text = _notes(tmp_path, "wab")
    assert f"{WHOLE} (cluster a)" not in text, text
    assert "gpudash-fleet-gpu-fb-high-warning-us-west-2 (clusters w, b)" not in text, text
    # a fleet alarm is named by itself, its Region in its name
    assert f"{SPLIT} 5,250 GPU instances" in text and f"{WHOLE} 750 GPUs" in text, text


SPLIT_WEST = "{name: g, region: us-west-2}"  # a Region of split clusters alone: its alarm reads every one of them
WEST = "gpudash-fleet-gpu-fb-high-warning-us-west-2"


def _notes_with_west(folder, west_first: bool) -> str:
    listed = [CLUSTERS["a"], CLUSTERS["b"]]
    settings = "clusters:\n" + "".join(f"  - {c}\n" for c in ([SPLIT_WEST] + listed if west_first else
                                                             listed + [SPLIT_WEST]))
    project = defined_project(folder, settings, alarms=ALARM, dashboards=NO_DASHBOARDS)
    return "\n".join(notes(project, build(project, grafana=False), FLEET))


def test_listed_first_the_split_regions_alarm_is_said_past_500_and_10000(tmp_path):
    """15 clusters a Region, all split in us-west-2: its alarm reads 15 x 100 x 7 = 10,500 GPU instances."""
    text = _notes_with_west(tmp_path, True)
    assert _series(text, WEST) == "10,500" and re.search(rf"10,500 GPU instances[^(]* over 5 min \({WEST}\)", text), text


def test_listed_last_the_split_regions_alarm_is_still_said(tmp_path):
    """Listed a, b, g, every kind's first cluster is in us-east-1: us-west-2's alarm was not read (the fleet alarms of
    every Region are read now), and neither past-500 nor past-10,000 note named it."""
    text = _notes_with_west(tmp_path, False)
    assert _series(text, WEST) == "10,500", text
    assert re.search(rf"10,500 GPU instances[^(]* over 5 min \({WEST}\)", text), text
