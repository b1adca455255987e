"""A fleet-scope rule judged in two alarms in a Region mixing exporter.mig (render/alarms._kinds_apart) leaves the
other kind's clusters out of each alarm's query with one `"ClusterName" != '<name>'` per cluster (Metrics Insights'
WHERE has no IN or OR). PutMetricAlarm takes a query of at most 2,048 characters (botocore: MetricDataQuery.Expression
max 2048): a Region holding one split cluster and 60 saying exporter.mig: none was one alarm whose query is 223
characters before f1a42081, and is now a split clusters' alarm whose query is 2,925 characters, which CloudWatch
refuses (lint AL001 said so after generate had written it). Generate makes only alarms CloudWatch takes, or refuses
the settings with one clear message (it refuses them now, naming the rule, its alarm and scope='cluster')."""

from __future__ import annotations

import json

import botocore.session

from generator.artifacts import build
from generator.errors import InputError
from generator.output import encode
from generator.render.alarms import EXPRESSION_LENGTH
from tests.support.projects import defined_project
# the rule: FB_USED max per GPU over 15,000 MiB, fleet scope, its `cloudwatch=` condition per MIG instance
from tests.unit.test_fleet_rule_per_mig_instance_condition_in_mixed_region import ALARM, NO_DASHBOARDS

PLAIN = 60


def _expression_max() -> int:
    model = botocore.session.get_session().get_service_model("cloudwatch")
    return model.shape_for("MetricDataQuery").members["Expression"].metadata["max"]


def _settings(plain: int) -> str:
    return "clusters:\n  - {name: training-split, region: us-east-1}\n" + "".join(
        f"  - {{name: inference-cluster-{i:03d}, region: us-east-1, exporter: {{mig: none}}}}\n" for i in range(plain))


def _queries(folder, plain: int) -> dict[str, int]:
    """{alarm name: its longest query's length} of the rule's alarms."""
    project = defined_project(folder, _settings(plain), alarms=ALARM, dashboards=NO_DASHBOARDS)
    files = encode(build(project, grafana=False))
    return {a["Request"]["AlarmName"]: max(len(m.get("Expression", "")) for m in a["Request"]["Metrics"])
            for a in json.loads(files["cloudwatch/alarms.json"])["alarms"] if "gpu-fb-high" in a["Request"]["AlarmName"]}


def test_a_region_of_few_clusters_judged_apart_fits(tmp_path):
    lengths = _queries(tmp_path, 2)
    assert sorted(lengths) == ["gpudash-fleet-gpu-fb-high-warning", "gpudash-fleet-gpu-fb-high-whole-warning"]
    assert max(lengths.values()) <= _expression_max() == EXPRESSION_LENGTH == 2048


def test_a_region_of_many_plain_clusters_makes_alarms_cloudwatch_takes_or_is_refused(tmp_path):
    try:
        lengths = _queries(tmp_path, PLAIN)
    except InputError as refused:  # refused with one message, naming the rule and the limit: as good as fitting
        assert "alarm 'gpu-fb-high'" in refused.what and "2,048" in refused.what, refused.what
        return
    assert max(lengths.values()) <= _expression_max(), lengths
