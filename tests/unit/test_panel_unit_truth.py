"""A panel's `unit=` is the unit its values are in, on both backends, or the panel is refused at generate.

`unit=` relabels: no renderer converts. `Panel("Tensor cores", Query(TENSOR_ACTIVE, "avg"), kind="gauge",
unit="percent")` built with exit 0 and drew a tensor activity of 45 % as "0.45 %" at the foot of a 0-100 dial, on
Grafana (unit percent) and CloudWatch (label %, range 0-100) alike; `unit="milliwatt"` on watts drew 300 W as 300 mW;
a ratio gauge with `max=100` was accepted (no value reaches past 1). Now every panel that builds shows each query's
values in a unit of which they are a value as they are (the field's own, or another spelling of it: a ratio and a share
of time), and any other unit, or a max or level past a bounded unit's top, is exit 2 naming the panel, its file and
line, the field's unit and the unit written.
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.catalog import load_counters
from generator.errors import InputError
from generator.model import Dashboard, Panel, Query, Row, charted_unit
from generator.panel_checks import check_panels
from generator.render.cloudwatch import panel_title
from generator.resources import default_counters
from generator.units import UNITS, converts
from tests.support.projects import defined_project

TENSOR, UTIL, POWER = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"
FB_USED, FB_FREE = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"
REPLAYS = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"


@pytest.fixture(scope="module")
def catalog():
    return load_counters(default_counters())


def _queries(catalog) -> list[Query]:
    """One query of each field of each unit the bundled catalog charts (a reading, a counter's rate and increase), a
    count and a share of two fields."""
    seen, queries = set(), []
    for metric in catalog:
        if metric.kind not in ("gauge", "counter"):
            continue
        for increase in ((False, True) if metric.is_counter else (False,)):
            query = Query(metric.name, "avg" if not metric.is_counter else "sum", as_increase=increase)
            if charted_unit(query, catalog).key not in seen:
                seen.add(charted_unit(query, catalog).key)
                queries.append(query)
    return [*queries, Query(POWER, "count", ("node",)), Query(FB_USED, "avg", over=(FB_USED, FB_FREE))]


def _loads(panel: Panel, catalog) -> bool:
    try:
        check_panels(Dashboard("d", "D", (Row("All", (panel,)),)), catalog)
    except InputError:
        return False
    return True


def test_a_unit_loads_exactly_where_it_is_the_values_unit(catalog):
    """Every query shape of the catalog x every unit: the panel loads where the unit written is the values' own (or
    another spelling of it, factor 1), and is refused for every other, of another scale (percent on a ratio, mW on W)
    or another quantity (°C on W)."""
    queries = _queries(catalog)
    assert len(queries) >= 10
    wrong = {(q.metric, q.aggregation, q.as_increase, bool(q.over), key): converts(charted_unit(q, catalog), unit)
             for q in queries for key, unit in UNITS.items()
             if _loads(Panel("P", q, unit=key), catalog) != (converts(charted_unit(q, catalog), unit) == 1.0)}
    assert wrong == {}


@pytest.fixture(scope="module")
def built(tmp_path_factory, catalog):
    """Every (query, unit) of the sweep that loads, each a panel of one dashboard published to both backends."""
    panels = []
    for n, query in enumerate(_queries(catalog)):
        for key in UNITS:
            if _loads(Panel("P", query, unit=key), catalog):
                text = f"Query({query.metric!r}, {query.aggregation!r}, {query.by!r}, over={query.over!r}, " \
                       f"as_increase={query.as_increase!r})"
                panels.append((f"q{n} {key}", text, key, charted_unit(query, catalog)))
    source = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
              "    yield Dashboard(id='units', title='Units', rows=[Row('All', [\n"
              + "".join(f"        Panel({title!r}, {text}, unit={key!r}),\n" for title, text, key, _ in panels)
              + "    ])], backends=('grafana', 'cloudwatch'))\n")
    project = defined_project(tmp_path_factory.mktemp("units"), dashboards=source)
    return build(project), {title: values for title, _, _, values in panels}


def test_each_built_panel_labels_its_values_in_their_own_unit_on_both_backends(built):
    """Grafana's unit id and CloudWatch's axis label of each panel that built name a unit its values are a value of
    unconverted: a number read off either is the truth in the unit it says."""
    artifacts, values = built
    panels = [p for grafana in artifacts.grafana for p in grafana.model["panels"]]  # (the parts it was cut into)
    by_id = {}
    for unit in UNITS.values():
        by_id.setdefault(unit.grafana, []).append(unit)
    by_label = {unit.label: unit for unit in UNITS.values()}
    ids = {p["title"]: p["fieldConfig"]["defaults"]["unit"] for p in panels if "fieldConfig" in p}
    drawn = [w["properties"] for w in artifacts.cloudwatch_dashboards[0].body["widgets"] if w["type"] == "metric"]
    labels = {panel_title(p["title"]): p["yAxis"]["left"]["label"] for p in drawn}
    assert set(ids) == set(values) and set(labels) <= set(values) and len(labels) >= len(values) // 2
    assert {t: ids[t] for t in ids if not all(converts(values[t], u) == 1.0 for u in by_id[ids[t]])} == {}
    assert {t: labels[t] for t in labels if converts(values[t], by_label[labels[t]]) != 1.0} == {}


REFUSED = {  # panel, the values' unit named, the unit written named
    "percent on a 0-1 ratio": (f'Panel("Tensor cores", Query("{TENSOR}", "avg"), kind="gauge", unit="percent")',
                               "ratio", "'percent'"),
    "milliwatt on watts": (f'Panel("Power", Query("{POWER}", "sum", ("node",)), unit="milliwatt")', "watt",
                           "'milliwatt'"),
    "ratio on a percentage": (f'Panel("Utilization", Query("{UTIL}", "avg"), unit="ratio")', "percent", "'ratio'"),
    "percent on a count": (f'Panel("GPUs", Query("{UTIL}", "count"), kind="stat", unit="percent")', "count",
                           "'percent'"),
    "celsius on watts": (f'Panel("Power", Query("{POWER}", "max"), unit="celsius")', "watt", "'celsius'"),
    "percent on a share of two fields": (f'Panel("Memory", Query("{FB_USED}", "avg", over=("{FB_USED}", '
                                         f'"{FB_FREE}")), unit="percent")', "ratio", "'percent'"),
    "max=100 on a ratio gauge": (f'Panel("Tensor cores", Query("{TENSOR}", "avg"), kind="gauge", max=100)',
                                 "max 100", "ratio 0-1"),
    "levels of 80 and 90 on a ratio": (f'Panel("Tensor cores", Query("{TENSOR}", "max"), thresholds=(80, 90))',
                                       "threshold 80", "ratio 0-1"),
}

DASHBOARD = """\
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="said", title="Said", rows=[Row("All", [
        {panel},
    ])])
"""


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_unit_or_bound_of_another_scale_is_exit_2_naming_the_panel(project_dir, cli, tmp_path, case):
    panel, values_unit, written = REFUSED[case]
    config = project_dir(dashboards={"said.py": DASHBOARD.format(panel=panel)})
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "build"))
    assert (code, "Traceback" in stderr) == (2, False), stderr
    title = panel.split('"')[1]
    assert f"'{title}'" in stderr and "dashboards/said.py:6" in stderr, stderr
    assert values_unit in stderr and written in stderr, stderr


BUILT = {  # the unit written is the values' own, or another spelling of it; a sum passes a percentage's top
    "share of time on a ratio": f'Panel("Tensor cores", Query("{TENSOR}", "avg"), unit="time_ratio")',
    "a pod's GPUs summed past 100 %": f'Panel("Pod load", Query("{UTIL}", "sum", ("pod",)), unit="percent", '
                                      f'thresholds=(150, 200))',
    "a ratio gauge to 1": f'Panel("Tensor cores", Query("{TENSOR}", "avg"), kind="gauge", max=1)',
    "raw PromQL, whose unit is the definition's": 'Panel("Racks", Query("DCGM_FI_DEV_GPU_UTIL", raw_promql='
                                                   '"avg(DCGM_FI_DEV_GPU_UTIL)"), unit="percent")',
}




ALARMS = """\
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("a", "A", Condition({condition}), description="d", runbook="r")
"""

# An alarm takes no unit: its threshold is in its query's unit. A percentage written for a 0-1 ratio never fires
# (`> 80`) or always does (`< 10`); a reading, mean, max or min of a bounded unit past its range likewise.
ALARM_REFUSED = {
    "a percentage for a ratio, above": (f'Query("{TENSOR}", "avg", ("pod",)), ">", 80', "never"),
    "a percentage for a ratio, below": (f'Query("{TENSOR}", "avg", ("pod",)), "<", 10', "always"),
    "past a percentage's top": (f'Query("{UTIL}", "max"), ">", 150', "never"),
    "a percentage for a share of two fields": (f'Query("{FB_USED}", "max", ("pod",), over=("{FB_USED}", '
                                               f'"{FB_FREE}")), ">", 90', "never"),
    # at a bound itself: generate wrote these (exit 0), alarms billed that could not fire or fire always
    "above the top itself": (f'Query("{FB_USED}", "max", ("pod",), over=("{FB_USED}", "{FB_FREE}")), ">", 1.0',
                             "never"),
    "below the bottom itself": (f'Query("{UTIL}", "avg", ("pod",)), "<", 0', "never"),
    "at least the bottom": (f'Query("{UTIL}", "min"), ">=", 0', "always"),
    "at most the top": (f'Query("{TENSOR}", "max", ("pod",)), "<=", 1', "always"),
    # a counter's increase and a count of readings are never below 0 (Prometheus' increase() and CloudWatch's count
    # alike): generate wrote these (exit 0), alarms billed that fire always or never
    "an increase at least 0": (f'Query("{REPLAYS}", "max", ("node", "gpu"), as_increase=True), ">=", 0', "always"),
    "an increase below 0": (f'Query("{REPLAYS}", "sum", ("node", "gpu"), as_increase=True), "<", 0', "never"),
    "an increase above a negative": (f'Query("{REPLAYS}", "max", as_increase=True), ">", -1', "always"),
    "a count at least 0": ('Query("DCGM_FI_DEV_GPU_TEMP", "count"), ">=", 0', "always"),
}
ALARM_BUILT = {
    "a ratio's level": f'Query("{TENSOR}", "avg", ("pod",)), "<", 0.1',
    "a full framebuffer, reached": f'Query("{FB_USED}", "max", ("pod",), over=("{FB_USED}", "{FB_FREE}")), ">=", 1',
    "no use at all": f'Query("{UTIL}", "max", ("pod",)), "<=", 0',
    "a pod's GPUs summed past 100 %": f'Query("{UTIL}", "sum", ("pod",)), ">", 150',
    "a unit without a range": 'Query("DCGM_FI_DEV_GPU_TEMP", "max"), ">", 150',
    "any increase": f'Query("{REPLAYS}", "max", ("node", "gpu"), as_increase=True), ">", 0',
    "no increase": f'Query("{REPLAYS}", "max", ("node", "gpu"), as_increase=True), "<=", 0',
    "no reading": 'Query("DCGM_FI_DEV_GPU_TEMP", "count"), "<", 1',
}


@pytest.mark.parametrize("case", list(ALARM_REFUSED))
def test_an_alarm_threshold_outside_its_values_range_is_exit_2_naming_the_alarm(tmp_path, cli, case):
    condition, holds = ALARM_REFUSED[case]
    (tmp_path / "alarms").mkdir()
    (tmp_path / "alarms" / "said.py").write_text(ALARMS.format(condition=condition))
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  alarms: [alarms]\n")
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "build"))
    assert (code, "Traceback" in stderr) == (2, False), stderr
    assert "alarm 'a'" in stderr and "alarms/said.py:5" in stderr and f"{holds} holds" in stderr, stderr


DEFINED = {**{f"panel: {case}": {"dashboards": DASHBOARD.format(panel=text)} for case, text in BUILT.items()},
           **{f"alarm: {case}": {"alarms": ALARMS.format(condition=text)} for case, text in ALARM_BUILT.items()},
           # a period without data breaches: it fires then, as an absence alarm
           "alarm: an increase below 0, missing data breaching": {"alarms": ALARMS.format(
               condition=f'Query("{REPLAYS}", "max", as_increase=True), "<", 0').replace(
               ', description=', ', missing_data="breaching", description=')}}


@pytest.mark.parametrize("case", list(DEFINED))
def test_a_unit_or_threshold_of_the_values_own_builds(tmp_path, case):
    try:
        defined_project(tmp_path, **DEFINED[case])
    except InputError as error:
        pytest.fail(f"refused: {error}")
