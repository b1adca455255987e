"""Where DCGM metrics live in CloudWatch, from the one declaration in settings.cloudwatch.

The agent config, the dashboards, the alarms and `verify` all ask this module;
none of them spells the namespace or the dimension set themselves.
"""

from __future__ import annotations

import re

from .model import Query
from .promql import label_name
from .settings import Cluster, Settings

MI_FUNCTIONS = {"avg": "AVG", "max": "MAX", "min": "MIN", "sum": "SUM", "count": "COUNT"}
STATISTICS = {"avg": "Average", "max": "Maximum", "min": "Minimum", "sum": "Sum", "count": "SampleCount"}
CLUSTER_DIMENSION = "ClusterName"
DASHBOARD_NAME = re.compile(r"^[A-Za-z0-9_-]{1,255}$")


def dimensions(settings: Settings) -> list[str]:
    return list(settings.cloudwatch["dimensions"])


def dimension_for(key: str, settings: Settings) -> str | None:
    """The CloudWatch dimension that carries a neutral grouping key, if the set has one."""
    # The agent turns scraped labels into dimensions: the same names PromQL uses,
    # except the cluster, which the agent itself adds as ClusterName.
    name = CLUSTER_DIMENSION if key == "cluster" else label_name(key, settings.labels)
    return name if name in dimensions(settings) else None


def grouping(query: Query, settings: Settings) -> list[str]:
    """The dimensions a query groups by in CloudWatch (keys without a dimension are aggregated)."""
    return [d for d in (dimension_for(key, settings) for key in query.by) if d]


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _identifier(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else '"' + name.replace('"', '""') + '"'


def schema_clause(settings: Settings) -> str:
    namespace = settings.cloudwatch["namespace"].replace('"', '""')
    return f'SCHEMA("{namespace}", {", ".join(_identifier(d) for d in dimensions(settings))})'


def metrics_insights(metric: str, aggregation: str, settings: Settings, cluster: Cluster | None,
                     group_by: list[str], limit: int | None = None) -> str:
    """A Metrics Insights query: one series, or one per group (GROUP BY)."""
    function = MI_FUNCTIONS[aggregation]
    text = f"SELECT {function}({_identifier(metric)}) FROM {schema_clause(settings)}"
    if cluster is not None and CLUSTER_DIMENSION in dimensions(settings):
        text += f" WHERE {CLUSTER_DIMENSION} = {_quote(cluster.name)}"
    if group_by:
        text += f" GROUP BY {', '.join(_identifier(d) for d in group_by)}"
        if limit:
            text += f" ORDER BY {function}() DESC LIMIT {limit}"
    return text


def dashboard_name(settings: Settings, cluster: Cluster, dashboard_id: str) -> str:
    return f"{settings.cloudwatch['dashboard_prefix']}-{cluster.name}-{dashboard_id}"[:255]
