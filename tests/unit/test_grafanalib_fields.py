"""A grafanalib dashboard's fields are checked against Grafana's dashboard model before it is written.

grafanalib validates a few fields when an object is built and most not at all: a panel titled 5, a query whose expr
is 12, a grid position of height "8", thresholds given as the text "80" were written into the build (exit 0), and the
panel failed in Grafana. A neutral definition's fields are checked when built (definition_fields): a grafanalib
dashboard's now are too, against the types the Grafana Foundation SDK's models declare, one error naming the file and
line, the field's place and value (exit 2). What grafanalib writes by itself for a field the definition left alone is
not refused: every grafanalib panel class, a template and a row built with their defaults generate.
"""

from __future__ import annotations

import json

import pytest

HEAD = "from grafanalib.core import *\n\n"
DASHBOARD = HEAD + """dashboard = Dashboard(
    title="Legacy GPU board",
    uid="legacy-gpu",
    panels=[{panel}],
{more}).auto_panel_ids()
"""
TARGET = 'Target(expr="avg(DCGM_FI_DEV_GPU_UTIL)", refId="A")'
WRONG = {
    "a title that is a number": (f'TimeSeries(title=5, targets=[{TARGET}])', "", "panels[0].title", "5"),
    "an expr that is a number": ('TimeSeries(title="Util", targets=[Target(expr=12, refId="A")])', "",
                                 "panels[0].targets[0].expr", "12"),
    "a grid height as text": (f'TimeSeries(title="Util", targets=[{TARGET}], gridPos=GridPos(h="8", w=12, x=0, y=0))',
                              "", "panels[0].gridPos.h", "'8'"),
    "levels as text": (f'Stat(title="Util", targets=[{TARGET}], thresholds="80")', "",
                       "panels[0].fieldConfig.defaults.thresholds.steps", "'80'"),
    "a maximum as text": (f'GaugePanel(title="Util", targets=[{TARGET}], max="100")', "",
                          "panels[0].fieldConfig.defaults.max", "'100'"),
    "a row's panel": (f'RowPanel(title="Row", panels=[Stat(title=7, targets=[{TARGET}])])', "",
                      "panels[0].panels[0].title", "7"),
    "a tag that is a number": (f'TimeSeries(title="Util", targets=[{TARGET}])', "    tags=[1],\n", "tags[0]", "1"),
    "a variable's name": (f'TimeSeries(title="Util", targets=[{TARGET}])',
                          '    templating=Templating([Template(name="n", query="label_values(up, job)")]),\n', "", ""),
}


@pytest.mark.parametrize("case", list(WRONG))
@pytest.mark.parametrize("command", ["generate", "lint"])
def test_a_field_grafanas_model_does_not_take_is_a_usage_error_naming_it(project_dir, cli, tmp_path, command, case):
    panel, more, place, shown = WRONG[case]
    text = DASHBOARD.format(panel=panel, more=more)
    if case == "a variable's name":  # set after the template is built: grafanalib's own check has run
        text += "dashboard.templating.list[0].name = 3\n"
        place, shown = "templating.list[0].name", "3"
    config = project_dir(dashboards={"legacy.py": text})
    args = ("generate", "--config", str(config), "--out", str(tmp_path / "build")) if command == "generate" else \
        ("lint", "--config", str(config))
    code, _, stderr = cli(*args)
    assert (code, "internal error" in stderr) == (2, False), stderr
    assert "error: dashboards/legacy.py:3: " in stderr and "'Legacy GPU board'" in stderr, stderr
    (error,) = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert str(tmp_path) not in error, error  # where the project is checked out never shows
    assert f"{place} is {shown}" in stderr, stderr
    assert not (tmp_path / "build" / "grafana").exists()


EVERY_PANEL = ("Graph", "TimeSeries", "Stat", "GaugePanel", "BarGauge", "Table", "Heatmap", "Text", "SingleStat",
               "PieChartv2", "StateTimeline", "Histogram", "News", "Logs", "DashboardList", "Discrete", "Worldmap",
               "AlertList", "Svg", "Statusmap", "Ae3ePlotly", "BarChart")


def test_what_grafanalib_writes_by_itself_generates(project_dir, cli, tmp_path):
    """Every panel class with its defaults and a query, a row holding one, a query and an interval variable, a
    link, a data source named by text: grafanalib's own output is taken as it is."""
    import attr
    from grafanalib import core

    panels = ", ".join(f'{name}(title="{name}", targets=[{TARGET}])'
                       if "targets" in attr.fields_dict(getattr(core, name)) else f'{name}(title="{name}")'
                       for name in EVERY_PANEL)
    panels += f', RowPanel(title="Row", panels=[Stat(title="In a row", targets=[{TARGET}])])'
    more = ('    templating=Templating([Template(name="n", query="label_values(up, job)", dataSource="Prometheus"), '
            'Template(name="i", query="1m,5m", type="interval")]),\n'
            '    links=[DashboardLink(title="Docs", uri="/docs")],\n')
    config = project_dir(dashboards={"legacy.py": DASHBOARD.format(panel=panels, more=more)})
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "build"))
    assert code == 0, stderr
    model = json.loads((tmp_path / "build" / "grafana" / "legacy-gpu.json").read_text())
    assert [p["title"] for p in model["panels"]] == [*EVERY_PANEL, "Row"]
    assert stderr.count("PieChart") == 0, stderr  # nothing grafanalib says while it is read for its defaults


FEATURES = HEAD + """T = [Target(expr="up", refId="A", legendFormat="{{job}}", instant=True, format="table")]
dashboard = Dashboard(
    title="Features", uid="features", timezone="utc", refresh="30s", time=Time("now-1h", "now"), tags=["gpu"],
    panels=[
        Stat(title="s", targets=T, mappings=[StatValueMappings(StatValueMappingItem("OK", "1", "green"))],
             thresholds=[Threshold("green", 0, 0.0), Threshold("red", 1, 80.0)], reduceCalc="lastNotNull",
             format="percent", decimals=1),
        Stat(title="s2", targets=T, mappings=[StatRangeMappings("Low", startValue=0, endValue=10, color="green")]),
        TimeSeries(title="t", targets=T, unit="watt", legendDisplayMode="table", legendCalcs=["mean", "max"],
                   overrides=[{"matcher": {"id": "byName", "options": "x"},
                               "properties": [{"id": "unit", "value": "celsius"}]}],
                   thresholds=[Threshold("green", 0, 0.0)], stacking={"mode": "normal"}),
        Table(title="tb", targets=T, transformations=[{"id": "organize", "options": {}}]),
        GaugePanel(title="g", targets=T, min=0, max=100, thresholds=[Threshold("green", 0, 0.0)]),
        BarGauge(title="b", targets=T, min=0, max=5),
        Graph(title="gr", targets=T, yAxes=single_y_axis(format="percent"), thresholds=[GraphThreshold(80.0)],
              seriesOverrides=[{"alias": "x", "yaxis": 2}]),
        TimeSeries(title="t2", dataSource="Prometheus", targets=[Target(expr="up", datasource="Prometheus", refId="B")],
                   timeFrom="1h", interval="30s", repeat=Repeat("h", "node")),
        RowPanel(title="r", collapsed=True, panels=[Stat(title="in", targets=T)]),
    ],
    templating=Templating([
        Template(name="n", query="label_values(up, job)", dataSource="Prometheus", includeAll=True, multi=True,
                 default="All", refresh=2, sort=1, regex="/x/"),
        Template(name="c", query="a,b", type="custom", default="a"),
        Template(name="ds", query="prometheus", type="datasource"),
        Template(name="k", query="", type="constant", default="1")]),
    annotations=Annotations([{"datasource": "-- Grafana --", "enable": True, "name": "A", "iconColor": "red",
                              "builtIn": 1, "type": "dashboard", "hide": True}]),
    links=[DashboardLink(title="a", uri="/b", type="link", includeVars=True)],
).auto_panel_ids()
"""


def test_grafanalibs_features_a_definition_writes_generate(project_dir, cli, tmp_path):
    """Levels as grafanalib's Threshold writes them (the first step's value the text "null"), value and range
    mappings, overrides, an old Graph's axes, data sources named by text, a collapsed row, every variable type,
    annotations and links: no value grafanalib writes for what a definition asks is refused."""
    config = project_dir(dashboards={"legacy.py": FEATURES})
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "build"))
    assert code == 0, stderr
