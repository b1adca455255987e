"""A panel whose queries chart values of different units shows each query's values in its own unit.

A Grafana panel has one default unit (fieldConfig.defaults.unit); a panel of GPU temperature (°C) and power draw (W)
was written with the first query's unit for both, so 300 W read as "300 °C", with no warning. Each query's series
now carry their own unit (a field override matching the query's frame by its refId, which also gives a chart a second
axis), and what a panel cannot show truthfully in two units is refused naming the panel: levels (thresholds), bounds
(min, max), a heatmap's one y axis, a gauge's one dial range.
"""

from __future__ import annotations

import itertools
from functools import cache

import pytest

from generator.model import Dashboard, Panel, Query, Row
from generator.project import load_project
from generator.render import grafana

TEMP, POWER, UTIL, FB_USED, FB_FREE = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL",
                                       "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE")
REPLAYS, ENERGY = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"


@cache
def _project():
    return load_project()


def shown_units(model: dict) -> dict[str, str]:
    """{refId: the unit Grafana shows that query's values in}: the panel's default, unless an override matching the
    query's frame (byFrameRefID) sets another. Grafana applies overrides in order, the last one winning."""
    field_config = model["fieldConfig"]
    units = {}
    for target in model["targets"]:
        unit = field_config["defaults"].get("unit")
        for override in field_config.get("overrides", []):
            matcher = override["matcher"]
            if matcher["id"] == "byFrameRefID" and matcher.get("options") == target["refId"]:
                unit = next((p["value"] for p in override["properties"] if p["id"] == "unit"), unit)
        units[target["refId"]] = unit
    return units


def _rendered(panel: Panel) -> dict:
    project = _project()
    dashboard = Dashboard("mixed", "Mixed", [Row("All", [panel])])
    model = grafana.render(dashboard, project.catalog, project.settings)
    return next(p for p in model["panels"] if p["type"] != "row")


def _one_field_per_unit() -> list[str]:
    """A gauge field of each unit the default catalog charts (the first of each)."""
    catalog = _project().catalog
    fields: dict[str, str] = {}
    for metric in catalog:
        if metric.is_series and not metric.is_counter:
            fields.setdefault(metric.unit.grafana, metric.name)
    return list(fields.values())


PAIRS = list(itertools.permutations(_one_field_per_unit(), 2))


@pytest.mark.parametrize("kind", ["timeseries", "stat", "bargauge", "table"])
@pytest.mark.parametrize("first,second", PAIRS, ids=[f"{a}+{b}" for a, b in PAIRS])
def test_each_query_of_a_panel_shows_its_own_fields_unit(first, second, kind):
    catalog = _project().catalog
    panel = Panel("Two fields", (Query(first, "avg", ("node", "gpu")), Query(second, "max", ("node", "gpu"))),
                  kind=kind)
    expected = {"A": catalog.get(first).unit.grafana, "B": catalog.get(second).unit.grafana}
    assert shown_units(_rendered(panel)) == expected


def test_temperature_and_power_read_celsius_and_watt():
    """The example of the finding: a chart of each GPU's temperature and power draw."""
    panel = Panel("Heat and power", (Query(TEMP, "max", ("node", "gpu")), Query(POWER, "avg", ("node", "gpu"))))
    assert shown_units(_rendered(panel)) == {"A": "celsius", "B": "watt"}


def test_a_count_a_share_and_a_rate_beside_a_field_each_in_their_own_unit():
    """What a query charts decides its unit, not its field: a count is a count, a share of fields a ratio, a
    counter's rate per second, an increase in the field's own unit."""
    panel = Panel("Mixed", (Query(TEMP, "count"), Query(FB_USED, "avg", over=(FB_USED, FB_FREE)),
                            Query(REPLAYS, "sum", ("node",)), Query(UTIL, "avg")))
    assert shown_units(_rendered(panel)) == {"A": "short", "B": "percentunit", "C": "cps", "D": "percent"}
    increases = Panel("Growth", (Query(REPLAYS, "sum", as_increase=True), Query(ENERGY, "sum", as_increase=True)))
    assert shown_units(_rendered(increases)) == {"A": "short", "B": "si:mJ"}


def test_queries_of_one_unit_are_shown_in_it_with_no_override():
    panel = Panel("Both temperatures", (Query(TEMP, "max"), Query("DCGM_FI_DEV_MEMORY_TEMP", "max")))
    model = _rendered(panel)
    assert shown_units(model) == {"A": "celsius", "B": "celsius"}
    assert model["fieldConfig"]["overrides"] == []


def test_a_unit_the_panel_names_is_every_querys():
    """`unit=` is the definition's word for the panel's values (raw PromQL has no unit of its own)."""
    panel = Panel("Said", (Query(TEMP, "max"), Query(POWER, "max"), Query("x", raw_promql="vector(1)")),
                  unit="watt")
    assert shown_units(_rendered(panel)) == {"A": "watt", "B": "watt", "C": "watt"}


MIXED = 'Panel("Heat and power", (Query("{temp}", "max"), Query("{power}", "max")){extra})'
REFUSED = {
    "levels": (", thresholds=(80, 90)", "thresholds"),
    "a bound": (", min=0", "min"),
    "an upper bound": (", max=100", "max"),
    "a heatmap": (', kind="heatmap"', "heatmap"),
    "a gauge": (', kind="gauge"', "gauge"),
}
DASHBOARD = """\
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="mine", title="Mine", rows=[Row("All", [
        {panel},
    ])])
"""


@pytest.mark.parametrize("case", list(REFUSED))
@pytest.mark.parametrize("command", ["generate", "lint"])
def test_what_cannot_be_shown_in_two_units_is_refused_naming_the_panel(project_dir, cli, tmp_path, command, case):
    extra, named = REFUSED[case]
    panel = MIXED.format(temp=TEMP, power=POWER, extra=extra)
    config = project_dir(dashboards={"mine.py": DASHBOARD.format(panel=panel)})
    args = ("generate", "--config", str(config), "--out", str(tmp_path / "build")) if command == "generate" else \
        ("lint", "--config", str(config))
    code, _, stderr = cli(*args)
    assert (code, "internal error" in stderr) == (2, False), stderr
    assert "dashboards/mine.py:6" in stderr, stderr
    assert "'Heat and power'" in stderr and named in stderr and "°C" in stderr and "W" in stderr, stderr
    assert not (tmp_path / "build" / "grafana").exists()


def test_the_same_panel_in_one_unit_keeps_its_levels_and_bounds(project_dir, cli, tmp_path):
    panel = MIXED.format(temp=TEMP, power="DCGM_FI_DEV_MEMORY_TEMP", extra=", thresholds=(80, 90), min=0, max=110")
    config = project_dir(dashboards={"mine.py": DASHBOARD.format(panel=panel)})
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "build"))
    assert code == 0, stderr


def test_a_panel_of_two_units_validates_against_grafanas_schema(project_dir, cli, reference):
    """An override's matcher options and property value are any value in Grafana's dashboard kind (CUE `_`): the
    refId and the unit id are strings, as the SDK's own override_by_query writes them."""
    import json

    panel = MIXED.format(temp=TEMP, power=POWER, extra="")
    config = project_dir(dashboards={"mine.py": DASHBOARD.format(panel=panel)})
    code, stdout, stderr = cli("lint", "--config", str(config), "--output", "json",
                               "--grafana-schema", str(reference / "grafana" / "schema"))
    findings = json.loads(stdout)["findings"]
    assert [f for f in findings if f["rule"] == "GF010"] == [], findings


@pytest.mark.parametrize("kind", ["stat", "bargauge", "table", "timeseries"])
def test_the_preview_shows_each_querys_values_in_its_unit(kind):
    """`gpudash preview` draws the panel as Grafana does: a stat of 71 °C beside 312 W reads so, not 312 °C."""
    from generator.clients.prometheus import Result, Series
    from generator.preview.panels import body

    panel = Panel("Heat and power", (Query(TEMP, "max"), Query(POWER, "max")), kind=kind)
    model = _rendered(panel)
    values = {"A": 71.0, "B": 312.0}
    results = [(target, Result(target["expr"], True, [Series({}, ((100.0, values[target["refId"]]),))]))
               for target in model["targets"]]
    html = body(model, results, 0.0, 200.0)
    assert "71 °C" in html and "312 W" in html, html
    assert "312 °C" not in html and "71 W" not in html, html
