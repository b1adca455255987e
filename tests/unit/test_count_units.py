"""A panel that counts (`Query(field, "count", ...)`) without a unit of its own: its CloudWatch widget's axis says the
counted field's unit.

How many GPUs report, or how many a pod holds, is a count whatever the field counted. Grafana's renderer says so
(render/grafana.panel_unit: `if query.aggregation == "count"` -> count, "short"); the CloudWatch renderer decides the
unit again on its own (render/cloudwatch._axis_label) and has no such case: a count of GPU temperature readings is
labelled "°C" on CloudWatch, "short" on Grafana, for the same panel.
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from tests.support.projects import defined_project
from generator.units import UNITS

DASHBOARD = """\
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="counts", title="Counts", rows=[Row("All", [
        Panel("GPUs per pod", Query("DCGM_FI_DEV_GPU_TEMP", "count", ("pod",)), kind="table", width=12),
        Panel("GPUs per node", Query("DCGM_FI_DEV_GPU_TEMP", "count", ("node",)), width=12),
    ])])
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build(defined_project(tmp_path_factory.mktemp("counts"), dashboards=DASHBOARD))


def test_grafana_counts_in_its_count_unit(built):
    (dashboard,) = built.grafana
    units = {p["title"]: p["fieldConfig"]["defaults"]["unit"] for p in dashboard.model["panels"] if "fieldConfig" in p}
    assert units == {"GPUs per pod": UNITS["count"].grafana, "GPUs per node": UNITS["count"].grafana}


def test_cloudwatch_counts_in_the_count_unit(built):
    (dashboard,) = built.cloudwatch_dashboards
    labels = {w["properties"]["title"]: w["properties"]["yAxis"]["left"]["label"]
              for w in dashboard.body["widgets"] if w["type"] == "metric"}
    assert labels == {"GPUs per pod": UNITS["count"].label, "GPUs per node": UNITS["count"].label}


SHAPES = """\
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="shapes", title="Shapes", rows=[Row("All", [
        Panel("Temperature", Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node", "gpu"))),
        Panel("Hot GPUs", Query("DCGM_FI_DEV_GPU_TEMP", "count", ())),
        Panel("GPUs per pod", Query("DCGM_FI_DEV_POWER_USAGE", "count", ("pod",)), kind="table"),
        Panel("Energy rate", Query("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "sum", ("node",))),
        Panel("Energy used", Query("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "sum", ("node",), as_increase=True)),
        Panel("Replays", Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "max", ("node", "gpu"))),
        Panel("Replays counted", Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "count", ("node",))),
        Panel("Power in W", Query("DCGM_FI_DEV_POWER_USAGE", "avg", ("pod",)), unit="watt"),
        Panel("Power now", Query("DCGM_FI_DEV_POWER_USAGE", "sum", ()), kind="stat"),
    ])])
"""


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    return build(defined_project(tmp_path_factory.mktemp("shapes"), dashboards=SHAPES))


def test_both_renderers_read_one_unit_for_every_panel(shapes):
    """Each panel's Grafana unit id and CloudWatch axis label are the two spellings of one unit of generator.units,
    for every shape of query (a gauge, a count of a gauge or a counter, a counter's rate or increase, a unit of the
    panel's own): one function decides the unit, not one per renderer."""
    from generator.render.cloudwatch import panel_title

    (grafana,) = shapes.grafana
    (cloudwatch,) = shapes.cloudwatch_dashboards
    ids = {p["title"]: p["fieldConfig"]["defaults"]["unit"] for p in grafana.model["panels"] if "fieldConfig" in p}
    labels = {panel_title(w["properties"]["title"]): w["properties"]["yAxis"]["left"]["label"]
              for w in cloudwatch.body["widgets"] if w["type"] == "metric"}
    assert set(labels) == set(ids) and len(ids) == 9
    spellings = {(unit.grafana, unit.label) for unit in UNITS.values()}
    assert {title: (ids[title], labels[title]) for title in ids if (ids[title], labels[title]) not in spellings} == {}
    assert labels["Replays counted"] == labels["Hot GPUs"] == UNITS["count"].label
    assert (ids["Energy used"], labels["Energy used"]) == (UNITS["millijoule"].grafana, UNITS["millijoule"].label)
