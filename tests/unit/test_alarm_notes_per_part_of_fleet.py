"""Lint's notes on CloudWatch alarms are worked out for each part of the fleet an alarm is made for, and name the part
where they do not hold for every cluster (render/alarms._said_per_part, render/fleet_parts.said_where).

They planned every alarm on the project's settings, the strictest (GPUs may be split where one cluster's may be): the
bundled idle alarm's second form, per MIG instance, is made only where GPUs may be split, yet its AL017 note said
nothing of where; a fleet-scope rule's alarm in a Region whose clusters all say exporter.mig: none reads the rule's
own condition there, and its notes were those of the `cloudwatch=` condition alone.
"""

from __future__ import annotations

from generator.artifacts import notes
from generator.project import load_project
from tests.support.projects import defined_project

MIXED = """clusters:
  - {name: split, region: us-east-1}
  - {name: plain, region: us-east-1, exporter: {mig: none}}
"""


def _said(project, rule: str, before: str) -> list[str]:
    return [note.message.split(before)[0] for note in notes(project) if note.rule == rule]


def test_the_idle_alarms_mig_form_is_noted_where_it_is_made(tmp_path):
    (tmp_path / "gpudash.yaml").write_text("agent: {pipeline: classic}\n" + MIXED)
    said = _said(load_project(tmp_path / "gpudash.yaml"), "AL017", " ranks its series")
    assert said == ["alarm 'gpu-temp-high'", "alarm 'gpu-idle'", "alarm 'gpu-idle' (MIG instances) in cluster split",
                    "alarm 'gpu-data-missing' (per GPU)"], said


def test_a_fleet_alike_names_no_cluster(tmp_path):
    (tmp_path / "gpudash.yaml").write_text("agent: {pipeline: classic}\n" + MIXED.replace(
        ", exporter: {mig: none}", ""))
    said = _said(load_project(tmp_path / "gpudash.yaml"), "AL017", " ranks its series")
    assert said == ["alarm 'gpu-temp-high'", "alarm 'gpu-idle'", "alarm 'gpu-idle' (MIG instances)",
                    "alarm 'gpu-data-missing' (per GPU)"], said


NODE_MEAN = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("node-fb", "Node memory high",
                Condition(Query("DCGM_FI_DEV_FB_USED", "avg", ("node",)), ">", 15000),
                cloudwatch=Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu", "mig_instance")), ">",
                                     15000), scope="fleet")
'''


def test_a_fleet_rules_note_names_the_region_whose_alarm_reads_its_own_condition(tmp_path):
    """us-east-1 holds split alone, eu-west-1 calm (exporter.mig: none): eu-west-1's alarm reads the rule's node mean,
    which weighs each GPU by its readings (AL024); us-east-1's reads MIG instances, of which AL024 says nothing."""
    project = defined_project(tmp_path, """clusters:
  - {name: split, region: us-east-1}
  - {name: calm, region: eu-west-1, exporter: {mig: none}}
""", alarms=NODE_MEAN, dashboards="def dashboards(ctx):\n    return []\n")
    said = _said(project, "AL024", ": a mean over")
    assert said == ["alarm 'node-fb' takes the avg of DCGM_FI_DEV_FB_USED over [ClusterName, node, gpu, readings] on "
                    "CloudWatch in Region eu-west-1"], said


def test_a_part_of_many_clusters_is_named_by_its_first_ten_and_how_many_more(tmp_path):
    """Sixteen clusters split, one saying exporter.mig: none: the idle alarm's MIG form is made in the sixteen, and its
    note names the first ten and 'and 6 more' (a note naming 750 clusters of a fleet of 1,000 ran 10,850 characters)."""
    split = "".join(f"  - {{name: s{i:02}, region: us-east-1}}\n" for i in range(16))
    (tmp_path / "gpudash.yaml").write_text("agent: {pipeline: classic}\nclusters:\n" + split +
                                           "  - {name: plain, region: us-east-1, exporter: {mig: none}}\n")
    said = _said(load_project(tmp_path / "gpudash.yaml"), "AL017", " ranks its series")
    first = ", ".join(f"s{i:02}" for i in range(10))
    assert f"alarm 'gpu-idle' (MIG instances) in clusters {first} and 6 more" in said, said
