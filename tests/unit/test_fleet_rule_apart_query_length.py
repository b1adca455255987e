"""A fleet-scope rule judged in two alarms in a Region mixing exporter.mig (render/alarms._kinds_apart). PutMetricAlarm
takes a query of at most 2,048 characters (botocore: MetricDataQuery.Expression max 2048).

The split clusters' alarm reads the set of MIG instances alone, in which no cluster saying exporter.mig: none publishes
anything: its query names no cluster, as in a Region of split clusters alone. It left each plain cluster out by name
(`"ClusterName" != '<name>'`, Metrics Insights' WHERE having no IN or OR): one split cluster beside 60 plain ones made
a query of 2,925 characters, and generate refused the settings. The `-whole` alarm (the plain clusters') still leaves
each split cluster out by name, as their agents may publish the per-GPU set too (a MIG GPU's instances in one
series): 60 split clusters beside a plain one are refused, with one message naming the alarm, the clusters it leaves
out and scope='cluster'."""

from __future__ import annotations

import json

import botocore.session
from click.testing import CliRunner

from generator.artifacts import build
from generator.cli import main
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


def _settings(plain: int, split: int = 1) -> str:
    return "clusters:\n" + "".join(f"  - {{name: training-split-{i:03d}, region: us-east-1}}\n" for i in range(split)) \
        + "".join(f"  - {{name: inference-cluster-{i:03d}, region: us-east-1, exporter: {{mig: none}}}}\n"
                  for i in range(plain))


def _queries(folder, plain: int, split: int = 1) -> dict[str, int]:
    """{alarm name: its longest query's length} of the rule's alarms."""
    project = defined_project(folder, _settings(plain, split), alarms=ALARM, dashboards=NO_DASHBOARDS)
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


def test_many_plain_clusters_beside_a_split_one_fit(tmp_path):
    """The split clusters' alarm names no plain cluster: 60 of them make no query longer."""
    (tmp_path / "one").mkdir()
    (tmp_path / "many").mkdir()
    few, lots = _queries(tmp_path / "one", 1), _queries(tmp_path / "many", PLAIN)
    assert lots == few, (few, lots)
    assert max(lots.values()) <= EXPRESSION_LENGTH


def test_many_split_clusters_beside_a_plain_one_are_refused_in_one_message(tmp_path):
    defined_project(tmp_path, _settings(1, split=PLAIN), alarms=ALARM, dashboards=NO_DASHBOARDS)
    result = CliRunner().invoke(main, ["generate", "--config", str(tmp_path / "gpudash.yaml"), "--out",
                                       str(tmp_path / "out")], env={"GPUDASH_CONFIG": None})
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and "Traceback" not in said, said
    assert "alarm 'gpu-fb-high': its CloudWatch alarm gpudash-fleet-gpu-fb-high-whole-warning would run a query of " \
           in said, said
    assert f"leaves out by name, one `!=` each, the {PLAIN} clusters of us-east-1 the rule's other alarm there " \
           f"judges" in said and "at most 2,048" in said and "scope='cluster'" in said, said
