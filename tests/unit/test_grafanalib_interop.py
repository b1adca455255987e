"""A plain grafanalib Dashboard in dashboards/ goes through the same output and lint path."""

from __future__ import annotations

import json

import pytest

GRAFANALIB_FILE = '''
from grafanalib.core import Dashboard, GridPos, Target, TimeSeries

dashboard = Dashboard(
    title="Legacy GPU board",
    uid="legacy-gpu",
    panels=[TimeSeries(
        title="Util", description="GPU utilization", unit="percent",
        dataSource={"type": "prometheus", "uid": "${datasource}"},
        targets=[Target(expr='avg by (pod) (DCGM_FI_DEV_GPU_UTIL)', legendFormat="Pod {{pod}}", refId="A",
                        datasource={"type": "prometheus", "uid": "${datasource}"})],
        gridPos=GridPos(h=8, w=12, x=0, y=0),
    )],
).auto_panel_ids()
'''


def test_grafanalib_dashboard_is_generated_beside_neutral_ones(tmp_path, cli, project_dir):
    config = project_dir(dashboards={"legacy.py": GRAFANALIB_FILE})
    out = tmp_path / "build"
    code, stdout, stderr = cli("generate", "--config", str(config), "--out", str(out))
    assert code == 0, stderr
    model = json.loads((out / "grafana/legacy-gpu.json").read_text())
    assert model["title"] == "Legacy GPU board"
    assert model["panels"][0]["targets"][0]["expr"] == "avg by (pod) (DCGM_FI_DEV_GPU_UTIL)"
    assert "legacy-gpu.json" in (out / "k8s/grafana-dashboards.yaml").read_text()
    assert "grafana/legacy-gpu.json" in json.loads((out / "manifest.json").read_text())["files"]


def test_grafanalib_dashboard_is_linted(cli, project_dir, reference):
    broken = GRAFANALIB_FILE.replace("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER")
    config = project_dir(dashboards={"legacy.py": broken})
    code, stdout, _ = cli("lint", "--config", str(config), "--output", "json",
                          "--grafana-schema", str(reference / "grafana" / "schema"))
    findings = json.loads(stdout)["findings"]
    assert code == 1
    assert any(f["rule"] == "GF006" and "legacy-gpu" in f["where"] for f in findings)
    # grafanalib writes an old schemaVersion: schema differences are warnings, not failures.
    assert all(f["severity"] == "warning" for f in findings if f["rule"] == "GF010")


ROWS_FILE = '''
from grafanalib.core import Dashboard, Row, Target, TimeSeries

dashboard = Dashboard(
    title="Legacy rows board",
    uid="legacy-rows",
    rows=[Row(panels=[TimeSeries(
        title="Util", unit="percent", dataSource={"type": "prometheus", "uid": "${datasource}"},
        targets=[Target(expr='avg by (pod) (DCGM_FI_DEV_PCIE_REPLAY_COUNTER)', legendFormat="Pod {{pod}}", refId="A",
                        datasource={"type": "prometheus", "uid": "${datasource}"})],
    )])],
).auto_panel_ids()
'''


def test_grafanalib_dashboard_of_rows_is_linted_and_previewed(cli, project_dir):
    from generator.artifacts import grafana_dashboards
    from generator.preview.site import visual_panels
    from generator.project import load_project

    config = project_dir(dashboards={"legacy.py": ROWS_FILE})
    (dashboard,) = grafana_dashboards(load_project(config))
    assert [p["title"] for p in visual_panels(dashboard.model)] == ["Util"]
    code, stdout, _ = cli("lint", "--config", str(config), "--output", "json")
    assert code == 1 and any(f["rule"] == "GF006" and "legacy-rows" in f["where"]
                             for f in json.loads(stdout)["findings"])


ROWS_LAYOUT_FILE = '''
from grafanalib.core import Dashboard, Pixels, Row, Stat, Target, TimeSeries

def ts(title, **kw):
    return TimeSeries(title=title, targets=[Target(expr="avg(DCGM_FI_DEV_GPU_UTIL)", refId="A")], **kw)

dashboard = Dashboard(
    title="Legacy rows board",
    uid="legacy-rows",
    rows=[
        Row(panels=[ts("Util"), Stat(title="Count", span=3,
                                     targets=[Target(expr="count(DCGM_FI_DEV_GPU_UTIL)", refId="A")])]),
        Row(title="Memory", height=Pixels(400), panels=[ts("Mem", span=8), ts("Used", span=8),
                                                        ts("Small", span=4, height=100)]),
        Row(title="Detail", collapse=True, panels=[ts("Temp", span=12)]),
    ],
).auto_panel_ids()
'''


def test_grafanalib_rows_are_written_on_grafanas_grid(tmp_path, cli, project_dir):
    """Grafana's schemaVersion 16 migration, worked by hand: a row of 250px takes ceil(250 / 38) = 7 grid units, one of
    400px 11, a panel of 100px 3; a span of 12ths is twice as many of 24 columns; a panel that does not fit beside the
    others goes to the band below; a title on any row makes a row panel (one unit) of every row, one unit high as
    Grafana's grid draws it, with an id of its own (Grafana numbers it after the highest panel id; gpudash gives it one
    from its title, as a panel's); a collapsed row holds its panels and takes no room."""
    config = project_dir(dashboards={"legacy.py": ROWS_LAYOUT_FILE})
    out = tmp_path / "build"
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(out))
    assert code == 0, stderr
    model = json.loads((out / "grafana/legacy-rows.json").read_text())
    assert "rows" not in model and model["schemaVersion"] == 12  # Grafana's later migrations still apply

    def laid(panels):
        return [(p["type"] == "row", p["title"], p["gridPos"], p["id"]) for p in panels]

    rows = {p["title"]: p["id"] for p in model["panels"] if p["type"] == "row"}
    assert len(set(rows.values())) == 3 and not set(rows.values()) & set(range(1, 7))
    assert laid(model["panels"]) == [
        (True, "New row", {"x": 0, "y": 0, "w": 24, "h": 1}, rows["New row"]),
        (False, "Util", {"x": 0, "y": 1, "w": 18, "h": 7}, 1),  # grafanalib gives it the 9 twelfths left
        (False, "Count", {"x": 18, "y": 1, "w": 6, "h": 7}, 2),
        (True, "Memory", {"x": 0, "y": 8, "w": 24, "h": 1}, rows["Memory"]),
        (False, "Mem", {"x": 0, "y": 9, "w": 16, "h": 11}, 3),
        (False, "Used", {"x": 0, "y": 20, "w": 16, "h": 11}, 4),
        (False, "Small", {"x": 16, "y": 20, "w": 8, "h": 3}, 5),
        (True, "Detail", {"x": 0, "y": 31, "w": 24, "h": 1}, rows["Detail"]),
    ]
    detail = model["panels"][-1]
    assert detail["collapsed"] is True and laid(detail["panels"]) == [
        (False, "Temp", {"x": 0, "y": 32, "w": 24, "h": 7}, 6)]
    assert not any("span" in p for p in model["panels"] + detail["panels"])


def test_grafanalib_rows_are_drawn_by_preview(project_dir):
    from generator.artifacts import grafana_dashboards
    from generator.preview.site import visual_panels
    from generator.project import load_project

    (dashboard,) = grafana_dashboards(load_project(project_dir(dashboards={"legacy.py": ROWS_LAYOUT_FILE})))
    assert [p["title"] for p in visual_panels(dashboard.model)] == ["Util", "Count", "Mem", "Used", "Small", "Temp"]


def test_grafanalib_rows_wider_than_a_row_are_refused(tmp_path, cli, project_dir):
    config = project_dir(dashboards={"legacy.py": ROWS_LAYOUT_FILE.replace('ts("Temp", span=12)',
                                                                             'ts("Temp", span=13)')})
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "build"))
    assert code == 2 and "panel 'Temp' in a row has span 13: a row is 12 wide" in stderr, stderr
    assert "Traceback" not in stderr


def test_grafanalib_rows_are_linted_without_overlaps_grafana_does_not_draw(cli, project_dir):
    """A row panel is one grid unit high where Grafana draws it: its panels below it do not overlap it."""
    config = project_dir(dashboards={"legacy.py": ROWS_LAYOUT_FILE})
    _, stdout, _ = cli("lint", "--config", str(config), "--output", "json")
    findings = [f for f in json.loads(stdout)["findings"] if "legacy-rows" in f["where"]]
    assert findings and not [f for f in findings if f["rule"] == "GF009"]


def test_two_grafanalib_dashboards_of_one_uid_are_named_as_every_definition_is(tmp_path, cli, project_dir):
    """The refusal of a uid two dashboards give names each grafanalib file as a neutral definition is named
    (folder/file.py:line), never by where the project is checked out."""
    config = project_dir(dashboards={"a.py": GRAFANALIB_FILE, "b.py": GRAFANALIB_FILE})
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "build"))
    (error,) = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert code == 2 and error == "error: dashboards/b.py:4: Grafana uid 'legacy-gpu' is used twice (also by " \
                                  "dashboards/a.py:4)", stderr


_BARE_IDS = '''
from grafanalib.core import Dashboard, Row, Target, TimeSeries


def ts(title, **kw):
    return TimeSeries(title=title, targets=[Target(expr="avg(DCGM_FI_DEV_GPU_UTIL)", refId="A")], **kw)

dashboard = Dashboard(title="Legacy rows board", uid="legacy-rows", rows=[{above}
    Row(title="Compute", panels=[{first}ts("Util"), ts("Power", id=40)]),
    Row(title="Detail", collapse=True, panels=[ts("Temp", span=12)]),
])
'''


def test_grafanalib_panels_and_rows_without_an_id_get_one_from_their_title_that_a_panel_added_before_leaves(
        project_dir):
    """A grafanalib dashboard whose panels set no id (no auto_panel_ids()) was written with `"id": null`, which Grafana
    fills at load by place (the highest + 1), and its row panels were numbered after the highest id: a panel or row
    added before renumbered them, and what people tied to an id (annotations on a panel, viewPanel links) moved to
    another. Each now gets an id from its title, none the definition sets (40, kept), unchanged by a panel or row
    added before it."""
    from generator.artifacts import grafana_dashboards
    from generator.project import load_project

    def ids(above="", first=""):
        (dashboard,) = grafana_dashboards(load_project(project_dir(dashboards={
            "legacy.py": _BARE_IDS.format(above=above, first=first)})))
        panels = dashboard.model["panels"]
        found = {(p["type"], p["title"]): p["id"] for p in panels + [q for p in panels for q in p.get("panels", [])]}
        assert len(set(found.values())) == len(found)
        return found

    plain = ids()
    assert plain[("timeseries", "Power")] == 40
    assert all(type(n) is int and 1 <= n <= 2**31 - 1 for n in plain.values()) and len(plain) == 5
    for more in (ids(first='ts("Memory"), '), ids(above='Row(title="Memory", panels=[ts("Used")]), ')):
        assert {key: more[key] for key in plain} == plain


def test_grafanalib_panels_sharing_an_id_are_a_lint_warning_naming_both(cli, project_dir):
    """Two panels a grafanalib definition gives one id: Grafana gives one of them another when it loads the dashboard
    (the highest + 1), which a panel added later changes, and what people tied to it follows the number. GF013 warns,
    naming both; the panels the definition gives no id are given distinct ones and pass."""
    config = project_dir(dashboards={"legacy.py": _BARE_IDS.format(above="", first='ts("Memory", id=40), ')})
    _, stdout, _ = cli("lint", "--config", str(config), "--output", "json")
    found = [f for f in json.loads(stdout)["findings"] if f["rule"] == "GF013"]
    assert [(f["severity"], f["where"]) for f in found] == [("warning", "grafana/legacy-rows.json panel 'Power'")]
    assert "id 40 is also that of panel 'Memory'" in found[0]["message"]


_REPEATED_IN_ROWS = '''
from grafanalib.core import Dashboard, Row, Target, TimeSeries


def ts(title, metric):
    return TimeSeries(title=title, targets=[Target(expr=f"avg({{metric}})", refId="A")])

dashboard = Dashboard(title="Legacy rows board", uid="legacy-rows", rows=[
    Row(title="Compute", collapse={collapse}, panels=[ts("Util", "DCGM_FI_DEV_GPU_UTIL")]),
    Row(title="Memory", panels=[ts("Util", "DCGM_FI_DEV_MEM_COPY_UTIL")]),
])
'''


def test_a_grafanalib_panel_keeps_its_id_when_a_row_before_it_is_collapsed(project_dir):
    """Two panels of one title ('Util', one per row) are told apart by their order in the layout. Collapsing the first
    row nests its panel inside the row panel: the ids were given in the order of the top-level panels, then the
    nested ones, so the first row's 'Util' came after the second's, and the two swapped ids (what people tied to one
    moved onto the other). The order is the layout's, a collapsed row's panels where the row is: neither moves."""
    from generator.artifacts import grafana_dashboards
    from generator.project import load_project

    def ids(collapse: bool) -> dict[str, int]:
        (dashboard,) = grafana_dashboards(load_project(project_dir(dashboards={
            "legacy.py": _REPEATED_IN_ROWS.format(collapse=collapse)})))
        panels = dashboard.model["panels"]
        return {p["targets"][0]["expr"]: p["id"] for p in panels + [q for p in panels for q in p.get("panels", [])]
                if p["type"] != "row"}

    opened, collapsed = ids(False), ids(True)
    assert len(opened) == 2 and len(set(opened.values())) == 2
    assert collapsed == opened


def test_an_id_a_grafanalib_definition_sets_is_never_given_to_a_panel_without_one(project_dir):
    """A definition may set the very id another panel's title gives (a dashboard gpudash generated, exported and kept
    as grafanalib code with its ids): the panel that sets it keeps it, the one without an id takes its next choice,
    and the two stay apart."""
    from generator.artifacts import grafana_dashboards
    from generator.project import load_project

    def ids(power_id: int) -> dict[str, int]:
        (dashboard,) = grafana_dashboards(load_project(project_dir(dashboards={
            "legacy.py": _BARE_IDS.format(above="", first="").replace("id=40", f"id={power_id}")})))
        return {p["title"]: p["id"] for p in dashboard.model["panels"] if p["type"] != "row"}

    util = ids(40)["Util"]
    taken = ids(util)
    assert taken["Power"] == util and taken["Util"] != util and 1 <= taken["Util"] <= 2**31 - 1


def test_a_grafanalib_panel_id_past_what_grafana_keeps_is_a_lint_warning(cli, project_dir):
    """Grafana's dashboard kind declares a panel's id a uint32: a definition's id past it (2^32) is one Grafana does
    not keep as it is. GF013 warns, naming the panel."""
    config = project_dir(dashboards={"legacy.py": _BARE_IDS.format(above="", first="").replace("id=40",
                                                                                               f"id={2**32}")})
    _, stdout, _ = cli("lint", "--config", str(config), "--output", "json")
    found = [f for f in json.loads(stdout)["findings"] if f["rule"] == "GF013"]
    assert [(f["severity"], f["where"]) for f in found] == [("warning", "grafana/legacy-rows.json panel 'Power'")]
    assert f"id {2**32} is no whole number from 1 to {2**32 - 1}" in found[0]["message"]
