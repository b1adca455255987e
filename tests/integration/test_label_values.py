"""A label value from the settings is read by Prometheus as written: the rules match the series that carry it.

PromQL reads a double-quoted string with Go's escapes, so a cluster label value with a backslash (`a\\b`) must be
written `"a\\\\b"`: written raw, `"a\\b"` is `a` and a backspace, which no series carries, and the data-missing rule's
"no exporter DaemonSet" branch fired for a healthy cluster. Judged by promtool over a healthy story of two clusters
on one Prometheus, and one whose kube-state-metrics lost the backslash cluster's DaemonSet.
"""

from __future__ import annotations

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.integration.test_data_missing import SITUATIONS, _series
from tests.support.promtool_rules import promtool_test, rule_groups

CLUSTERS = {"one": "a\\b", "two": "c"}  # cluster name -> its label value on the shared Prometheus
NONE_FOUND = ("kube-state-metrics reports no exporter DaemonSet (deleted, kube-state-metrics not scraped, or its "
              "--metric-labels-allowlist lacks daemonsets=[app,app.kubernetes.io/name])")


def _of_cluster(series: list[dict], value: str) -> list[dict]:
    """The series of one cluster: each with the cluster label (its value a PromQL string, as promtool reads it)."""
    literal = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return [{**s, "series": s["series"].replace("{", f"{{cluster={literal},", 1)} for s in series]


def test_a_backslash_in_a_cluster_label_is_matched_as_written(project_dir, tmp_path):
    clusters = "".join(f"  - {{name: {name}, region: us-east-1, prometheus_label: '{value}'}}\n"
                       for name, value in CLUSTERS.items())
    files = encode(build(load_project(project_dir(f"clusters:\n{clusters}"))))
    text = files["prometheus/rules.yaml"].decode()
    (tmp_path / "rules.yaml").write_text(text)
    rule = next(r for g in rule_groups(text) for r in g["rules"] if r.get("alert") == "GpudashGpuDataMissing")
    healthy = next(s for s in SITUATIONS if s.name == "healthy")
    both = [s for value in CLUSTERS.values() for s in _of_cluster(_series(healthy), value)]
    # kube-state-metrics stops reporting the backslash cluster's DaemonSet at minute 20 (the other cluster's stays)
    lost = [s if 'cluster="a\\\\b"' not in s["series"] or not s["series"].startswith("kube_daemonset_labels")
            else {**s, "values": " ".join(s["values"].split()[:40]) + " stale"} for s in both]
    fired = {"exp_labels": {**rule["labels"], "cluster": CLUSTERS["one"], "reason": NONE_FOUND},
             "exp_annotations": {**rule["annotations"],
                                 "summary": rule["annotations"]["summary"].replace("{{ $labels.reason }}", NONE_FOUND)
                                 .replace("{{ $labels.cluster }}", CLUSTERS["one"])}}
    promtool_test(tmp_path, "label_values_test.yaml", [
        {"name": "both clusters healthy", "interval": "30s", "input_series": both,
         "alert_rule_test": [{"eval_time": t, "alertname": rule["alert"], "exp_alerts": []} for t in ("10m", "30m")]},
        {"name": "the backslash cluster's DaemonSet gone", "interval": "30s", "input_series": lost,
         "alert_rule_test": [{"eval_time": "10m", "alertname": rule["alert"], "exp_alerts": []},
                             {"eval_time": "35m", "alertname": rule["alert"], "exp_alerts": [fired]}]},
    ], evaluation_interval="30s")
