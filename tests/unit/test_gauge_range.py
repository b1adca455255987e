"""A gauge's dial runs over the range its unit and definition give, on CloudWatch and on Grafana alike.

A CloudWatch gauge widget needs yAxis.left min and max (lint CW009); gpudash wrote 0-100 for every gauge whose
definition gave none, whatever its unit: a 0-1 ratio (tensor core activity at 0.8) sat at the dial's foot, 350 W
pinned it past the top, and `min=150` alone on a percent gauge wrote min 150 and max 100. The range now follows the
unit (percent 0-100, a ratio or share of time 0-1), the definition's min and max replace either end, a unit with no
range of its own (W, °C, MiB) takes the definition's, and a range that cannot be drawn is one error naming the panel,
its file and line (exit 2).
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.errors import InputError
from tests.support.projects import defined_project

UTIL, TENSOR, POWER, TEMP = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_DEV_POWER_USAGE",
                             "DCGM_FI_DEV_GPU_TEMP")
FB_USED, FB_FREE = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"

DASHBOARD = """\
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="dials", title="Dials", rows=[Row("All", [
{panels}
    ])]{backends})
"""

# (title, query, bounds the definition writes, the range a dial must run over)
DRAWN = [
    ("Utilization", f'Query("{UTIL}", "avg")', "", (0, 100)),
    ("Utilization from 20", f'Query("{UTIL}", "avg")', "min=20", (20, 100)),
    ("Utilization to 80", f'Query("{UTIL}", "avg")', "max=80", (0, 80)),
    ("Tensor cores", f'Query("{TENSOR}", "avg")', "", (0, 1)),
    ("Tensor cores from a half", f'Query("{TENSOR}", "avg")', "min=0.5", (0.5, 1)),
    ("Tensor cores to 0.8", f'Query("{TENSOR}", "avg")', "max=0.8", (0, 0.8)),
    ("GPUs busy", f'Query("{UTIL}", "count")', "max=64", (0, 64)),
    ("Power", f'Query("{POWER}", "sum")', "max=5600", (0, 5600)),
    ("Power above idle", f'Query("{POWER}", "max")', "min=60, max=700", (60, 700)),
    ("Temperature", f'Query("{TEMP}", "avg")', "min=0, max=110", (0, 110)),
    ("Tensor cores as a share of time", f'Query("{TENSOR}", "avg")', 'unit="time_ratio"', (0, 1)),
]


def _panel(title: str, query: str, bounds: str) -> str:
    return f'        Panel("{title}", {query}, kind="gauge"{", " + bounds if bounds else ""}),'


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    text = DASHBOARD.format(panels="\n".join(_panel(*case[:3]) for case in DRAWN), backends="")
    return build(defined_project(tmp_path_factory.mktemp("dials"), dashboards=text))


def test_each_cloudwatch_gauge_runs_over_its_units_and_definitions_range(built):
    (dashboard, *_) = built.cloudwatch_dashboards
    ranges = {w["properties"]["title"]: (w["properties"]["yAxis"]["left"].get("min"),
                                         w["properties"]["yAxis"]["left"].get("max"))
              for w in dashboard.body["widgets"] if w["type"] == "metric"}
    assert ranges == {title: expected for title, _, _, expected in DRAWN}
    assert all(low < high for low, high in ranges.values())


def test_each_grafana_gauge_runs_over_the_same_range(built):
    """One range for both backends: Grafana's gauge with no min or max scales to the values it reads."""
    (dashboard,) = built.grafana
    ranges = {p["title"]: (p["fieldConfig"]["defaults"].get("min"), p["fieldConfig"]["defaults"].get("max"))
              for p in dashboard.model["panels"] if p["type"] == "gauge"}
    assert ranges == {title: expected for title, _, _, expected in DRAWN}


REFUSED = {
    "min above a percent's top": (f'Query("{UTIL}", "avg")', "min=150", "min 150", "100"),
    "max below a ratio's foot": (f'Query("{TENSOR}", "avg")', "max=-0.5", "max -0.5", "0"),
    "min above a ratio's top": (f'Query("{TENSOR}", "avg")', "min=1", "min 1", "1"),
    "max at zero": (f'Query("{POWER}", "sum")', "max=0", "max 0", "0"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_gauge_range_that_cannot_be_drawn_is_refused_naming_the_panel(tmp_path, case):
    query, bounds, said, other_end = REFUSED[case]
    text = DASHBOARD.format(panels=_panel("Dial", query, bounds), backends=', backends=("grafana",)')
    with pytest.raises(InputError) as raised:
        defined_project(tmp_path, dashboards=text)
    message = str(raised.value)
    assert "'Dial'" in message and said in message and other_end in message, message
    assert raised.value.where == "dashboards/dashboards.py:6", raised.value.where


NO_RANGE = {"power": f'Query("{POWER}", "sum")', "temperature from 20": f'Query("{TEMP}", "max")',
            "a count": f'Query("{TEMP}", "count")'}


@pytest.mark.parametrize("case", list(NO_RANGE))
def test_a_cloudwatch_gauge_whose_unit_has_no_range_needs_the_definitions(project_dir, cli, tmp_path, case):
    """W, °C or a count has no top of its own: CloudWatch's gauge cannot be drawn without one (generate, exit 2);
    Grafana's alone scales to what it reads."""
    bounds = "min=20" if "from" in case else ""
    panel = _panel("Dial", NO_RANGE[case], bounds)
    config = project_dir(dashboards={"dials.py": DASHBOARD.format(panels=panel, backends="")})
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "build"))
    assert (code, "internal error" in stderr) == (2, False), stderr
    assert "dashboards/dials.py:6" in stderr and "'Dial'" in stderr and "max" in stderr, stderr
    grafana_only = DASHBOARD.format(panels=panel, backends=', backends=("grafana",)')
    config = project_dir(dashboards={"dials.py": grafana_only})
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "build2"))
    assert code == 0, stderr
