"""gpudash preview reads a query variable at All that sets no allValue (a shared Prometheus' cluster variable: the
clusters gpudash watches) as Grafana sends it, the alternation of the values its query lists, not `.*`: a cluster
no settings file names, on the same Prometheus, was counted in the preview's panels."""

from __future__ import annotations

from generator.artifacts import grafana_dashboards
from generator.clients.prometheus import Result, Series
from generator.preview.site import plan, run_queries
from generator.project import load_project
from generator.promql_text import packed


class _Clusters:
    """A Prometheus whose variable queries list clusters a and b (one of them with a backslash); every query asked."""

    def __init__(self):
        self.asked = []

    def run(self, expr, instant, start, end, step):
        self.asked.append(expr)
        if expr.startswith(packed("count by (cluster) (")):
            return Result(expr, instant, [Series({"cluster": "a\\b"}, ((end, 1.0),)), Series({"cluster": "c"}, ((end, 1.0),))])
        return Result(expr, instant)


def test_the_cluster_variable_at_all_reads_the_clusters_it_lists(project_dir):
    project = load_project(project_dir("clusters:\n  - {name: one, region: us-east-1, prometheus_label: 'a\\\\b'}\n"
                                       "  - {name: two, region: us-east-1, prometheus_label: c}\n"))
    dashboard = next(d for d in grafana_dashboards(project) if d.uid.endswith("overview"))
    client = _Clusters()
    run_queries([plan(dashboard.uid, dashboard.model, "1h", 30, 1_800_000_000)], client, workers=1)
    variable = next(v for v in dashboard.model["templating"]["list"] if v["name"] == "cluster")
    assert client.asked[0].startswith(packed("count by (cluster) (")) and "gpudash:cluster:watched" in client.asked[0]
    panels = client.asked[1:]
    assert panels and all(packed('cluster=~".*"') not in expr for expr in panels)
    assert all(packed('cluster=~"(a\\\\\\\\b|c)"') in expr for expr in panels if "cluster=~" in expr), panels[0][:400]
    assert "allValue" not in variable
