"""Two panels of one title on a dashboard published to CloudWatch are refused, naming both.

A CloudWatch dashboard's header says what each widget shows that its title does not (a value now, the lines a chart
draws, what it combines past 500 GPUs, the panels left to Grafana), naming the widget by its title: two panels titled
"Power" (a value now and a chart of one line per GPU) had their notes merged under one title, "Power, Power: ...", so
no reader could tell which widget a note was about. A title names one widget there: a second panel of the title is one
error naming the dashboard, the title and where each panel was defined (exit 2); a dashboard for Grafana only keeps
them.
"""

from __future__ import annotations

import json

import pytest

DASHBOARD = """\
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="twins", title="Twins", rows=[
        Row("Now", [Panel("{first}", Query("DCGM_FI_DEV_POWER_USAGE", "sum"), kind="stat")]),
        Row("Per GPU", [Panel("{second}", Query("DCGM_FI_DEV_POWER_USAGE", "avg", ("node", "gpu")))]),
        Row("Grafana", [Panel("{third}", Query("x", raw_promql="vector(1)"))]),
    ]{backends})
"""


def _config(project_dir, first="Power", second="Power", third="Raw", backends=""):
    text = DASHBOARD.format(first=first, second=second, third=third, backends=backends)
    return project_dir(dashboards={"twins.py": text})


@pytest.mark.parametrize("twins", ["a now value and a chart", "a chart and a panel left to Grafana"])
@pytest.mark.parametrize("command", ["generate", "lint"])
def test_two_panels_of_one_title_on_a_cloudwatch_dashboard_are_refused(project_dir, cli, tmp_path, command, twins):
    titles = {"first": "Power", "second": "Power"} if twins == "a now value and a chart" else \
        {"second": "Power", "third": "Power", "first": "Total"}
    config = _config(project_dir, **titles)
    args = ("generate", "--config", str(config), "--out", str(tmp_path / "build")) if command == "generate" else \
        ("lint", "--config", str(config))
    code, _, stderr = cli(*args)
    assert (code, "internal error" in stderr) == (2, False), stderr
    lines = ["dashboards/twins.py:6", "dashboards/twins.py:7", "dashboards/twins.py:8"]
    named = [line for line, title in zip(lines, (titles["first"], titles["second"], titles.get("third", "Raw")))
             if title == "Power"]
    assert "'twins'" in stderr and "'Power'" in stderr and all(line in stderr for line in named), stderr
    assert not (tmp_path / "build").exists()


def test_a_dashboard_for_grafana_only_keeps_two_panels_of_one_title(project_dir, cli, tmp_path):
    config = _config(project_dir, backends=', backends=("grafana",)')
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "build"))
    assert code == 0, stderr
    model = json.loads((tmp_path / "build" / "grafana" / "gpudash-twins.json").read_text())
    assert [p["title"] for p in model["panels"] if p["type"] != "row"] == ["Power", "Power", "Raw"]


def test_each_widgets_notes_name_it_alone(project_dir, cli, tmp_path):
    """With a title each, the header's notes name each widget once: the value now, the chart's lines, the panel
    left to Grafana."""
    config = _config(project_dir, first="Power now", second="Power per GPU", third="Raw")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "build"))
    assert code == 0, stderr
    (path,) = (tmp_path / "build" / "cloudwatch" / "dashboards").glob("*twins*.json")
    header = json.loads(json.loads(path.read_text())["DashboardBody"])["widgets"][0]["properties"]["markdown"]
    from generator.cloudwatch_query import SURGE_WEIGHED

    # (the chart's one note is an exporter surge's, SURGE_WEIGHED, said of each chart of a period's mean)
    assert "; Power now: the latest whole period" in header and \
        header.count("Power per GPU:") == header.count(f"Power per GPU: {SURGE_WEIGHED}") == 1, header
    assert '"Power per GPU": at most 50 GPUs' in header, header
    assert "On Grafana only: Raw (" in header, header
