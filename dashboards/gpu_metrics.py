"""Every collected DCGM series, one panel each, a row per family.

Built from the counters CSV alone: a field added to the CSV shows up here with
no code change, with its unit from the help text.
"""

from generator.model import Dashboard, Row
from generator.panels import per_gpu


def dashboards(ctx):
    rows = []
    for family, metrics in ctx.catalog.by_family().items():
        panels = [per_gpu(metric.name, metric.name.removeprefix("DCGM_FI_").removeprefix("DCGM_"), width=8,
                          aggregation="max" if metric.unit_key == "state" else "avg")  # a state: the worst, no mean
                  for metric in metrics]
        rows.append(Row(family.capitalize(), panels))
    yield Dashboard(
        id="all-metrics",
        title="GPU metrics (all collected fields)",
        description="One panel per DCGM field in the counters CSV, grouped by family, per node and GPU.",
        rows=rows,
        # Grafana only: on CloudWatch every field would be a custom metric and a paid widget.
        backends=("grafana",),
    )
