"""gpudash verify on a Prometheus holding several clusters: the rule group that records the clusters gpudash watches
(which the dashboards' cluster variable lists) must be loaded, else a cluster it does not record is in no panel."""

from __future__ import annotations

from generator.checks import prometheus as checks
from generator.checks.result import FAIL, OK
from generator.project import load_project


class _Recorded:
    """A Prometheus answering the count of gpudash:cluster:watched per cluster with the clusters given."""

    def __init__(self, *clusters: str):
        self.clusters, self.asked = clusters, []

    def query(self, expr: str):
        self.asked.append(expr)
        return [({"cluster": value}, 1.0) for value in self.clusters]


def _project(project_dir):
    return load_project(project_dir("clusters:\n  - {name: a, region: us-east-1, prometheus_label: a}\n"
                                    "  - {name: b, region: us-east-1, prometheus_label: b}\n"))


def test_a_cluster_the_prometheus_does_not_record_as_watched_fails_naming_it(project_dir):
    prometheus = _Recorded("a")
    check = checks.watched_clusters(prometheus, _project(project_dir))
    assert check.status == FAIL and "cluster 'b'" in check.detail and "gpudash-clusters" in check.detail
    assert prometheus.asked == ["count by (cluster) (gpudash:cluster:watched)"]


def test_every_cluster_recorded_is_ok(project_dir):
    check = checks.watched_clusters(_Recorded("a", "b", "another-teams"), _project(project_dir))
    assert check.status == OK and "2 clusters" in check.detail
