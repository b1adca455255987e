"""Anchor for the generate benchmark: a plain grafana-foundation-sdk script.

Builds DASHBOARDS dashboards of PANELS per-pod time series (a data source variable,
namespace and pod variables, one PromQL target with a legend per panel) and writes
each as sorted, indented JSON: what gpudash does for Grafana, written by hand. With `distinct`, each panel's
title names its number and dashboard ("<metric> <i> of <dashboard>"), as benchmarks/generate.py's distinct-panels
definitions title theirs.

    python benchmarks/sdk_dashboards.py OUT_DIR [DASHBOARDS] [PANELS] [distinct]
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

from grafana_foundation_sdk.builders import common as cb, dashboard as db, prometheus, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common, dashboard as dm

METRICS = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP",
           "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
           "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP"]
DATASOURCE = common.DataSourceRef(type_val="prometheus", uid="${datasource}")


def variable(name: str, query: str):
    return (db.QueryVariable(name).label(name.title()).datasource(DATASOURCE).query(query).definition(query)
            .multi(True).include_all(True).all_value(".*")
            .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED))


def panel(metric: str, index: int, title: str):
    expr = f'avg by (pod) ({metric}{{namespace=~"$namespace", pod=~"$pod"}})'
    target = prometheus.Dataquery().datasource(DATASOURCE).ref_id("A").expr(expr).legend_format("Pod {{pod}}").range()
    legend = (cb.VizLegendOptions().show_legend(True).display_mode(common.LegendDisplayMode.TABLE)
              .placement(common.LegendPlacement.BOTTOM).calcs(["mean", "max", "lastNotNull"]))
    return (timeseries.Panel().title(title).description(metric).datasource(DATASOURCE)
            .targets([target]).unit("short").legend(legend).fill_opacity(10).line_width(1)
            .id(index + 1).grid_pos(dm.GridPos(h=8, w=12, x=12 * (index % 2), y=8 * (index // 2))))


def dashboard(number: int, panels: int, distinct: bool = False):
    builder = (db.Dashboard(f"Dashboard {number}").uid(f"sdk-{number}").tags(["gpu"]).refresh("1m")
               .time("now-6h", "now").with_variable(db.DatasourceVariable("datasource").type("prometheus"))
               .with_variable(variable("namespace", "label_values(DCGM_FI_DEV_GPU_UTIL, namespace)"))
               .with_variable(variable("pod", 'label_values(DCGM_FI_DEV_GPU_UTIL{namespace=~"$namespace"}, pod)')))
    for index in range(panels):
        metric = METRICS[index % len(METRICS)]
        builder = builder.with_panel(panel(metric, index, f"{metric} {index} of {number}" if distinct else
                                           f"{metric} by pod"))
    return builder.build()


def main() -> None:
    out = Path(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    panels = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    distinct = sys.argv[4:5] == ["distinct"]
    out.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for number in range(count):
            text = json.dumps(dashboard(number, panels, distinct), cls=JSONEncoder, indent=2, sort_keys=True) + "\n"
            (out / f"sdk-{number}.json").write_text(text)


if __name__ == "__main__":
    main()
