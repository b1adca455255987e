"""A setting whose CloudWatch artifact CloudWatch would cut short or refuse is refused by `generate` (and by
plan/apply building from definitions): exit 2, one message naming the file, the line and the value that
fits, no traceback, and the previous build left as it was. The value it names does fit."""

from __future__ import annotations

import json

import pytest

TOPIC = "arn:aws:sns:{region}:123456789012:gpu-{index}"


def _files(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _generate(cli, tmp_path, text: str, refused: bool = True):
    """`generate` with `text` as settings over a previous build (of the defaults) in build/; when the
    settings are refused, that build must be left as it was."""
    out = tmp_path / "build"
    if refused:
        assert cli("generate", "--out", str(out))[0] == 0
        before = _files(out)
    config = tmp_path / "gpudash.yaml"
    config.write_text(text)
    code, stdout, stderr = cli("generate", "--config", str(config), "--out", str(out))
    if refused:
        assert code == 2 and _files(out) == before, stderr
    return code, stdout, stderr, config, out


# top_gpus: the overview binds first, its four one-line charts summed or averaged from up to 497 or 498 per-GPU
# lines each (a widget reads at most 500 metrics, its hidden lines included: 1,990 metrics; the hottest GPU's one
# more; the hidden period metric of each of its five now values, five more; the fleet values' readings per cluster
# past 497 or 498 GPUs: the two means' Sum and SampleCount, the count's SampleCount and the total's Sum, six more)
# beside six per-GPU
# and two per-MIG-instance charts; the health dashboard's eleven charts would allow 227 (the message names those
# 2,002: 8 x 500 alone is not the total it gives); by pod, eleven charts and the
# hidden metrics of its two charts whose math takes the period from one (PERIOD: the energy rate, and the table
# of pods now, drawn only at its own period; its sums and counts per pod are the agent's totals per scrape)
# allow 227
@pytest.mark.parametrize("key, dashboard, total, charts, fixed, fits", [("top_pods", "by-pod", "5,502", 11, 2, 227),
                                                                         ("top_gpus", "overview", "6,002", 8, 2002, 62)])
def test_lines_per_chart_beyond_the_dashboards_metric_limit_are_refused_with_the_value_that_fits(
        cli, tmp_path, key, dashboard, total, charts, fixed, fits):
    code, stdout, stderr, config, out = _generate(cli, tmp_path, f"cloudwatch:\n  {key}: 500\n")
    assert code == 2, stderr
    rest = f", and {fixed:,} more that {key} does not change"
    assert f"error: {config}:2: cloudwatch.{key} 500: CloudWatch dashboard gpudash-gpu-cluster-{dashboard} would " \
           f"show up to {total} metrics ({charts} charts of up to 500 lines each{rest}); CloudWatch draws at most 2,500 " \
           f"metrics per dashboard and leaves the rest out" in stderr, stderr
    assert f"fix: set cloudwatch.{key} to {fits} or less" in stderr
    assert "Traceback" not in stderr and stdout == ""

    # the value named fits: the build is written and lint finds no dashboard over the limit
    config.write_text(f"cloudwatch:\n  {key}: {fits}\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(out))
    assert code == 0, stderr
    code, stdout, _ = cli("lint", "--config", str(config), "--from", str(out), "--output", "json")
    assert not [f for f in json.loads(stdout)["findings"] if f["rule"] == "CW011"]
    body = json.loads(json.loads((out / f"cloudwatch/dashboards/gpudash-gpu-cluster-{dashboard}.json").read_text())
                      ["DashboardBody"])
    assert f"LIMIT {fits}" in json.dumps(body)


# One chart of one line per pod whose math takes the period from a hidden metric (an energy rate: q / PERIOD(p1)), the
# only chart of its dashboard: 2,500 per dashboard is far; 500 per widget is not (top_pods lines and the hidden one).
RATE_CHART = """from generator.model import Dashboard, Row
from generator.panels import per_pod


def dashboards(ctx):
    yield Dashboard(id="energy", title="Energy", description="d", rows=[Row("Power", ctx.available([
        per_pod("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Energy use rate", aggregation="sum", description="d")]))])
"""


def test_a_chart_past_the_widget_metric_limit_is_refused_with_the_value_that_fits(cli, tmp_path):
    """top_pods: 500 made the rate chart read 501 metrics (500 pods and its hidden PERIOD() metric): lint erred
    (CW003) on what generate wrote. generate refuses it, naming the setting, the chart, the count and the limit, and
    the value it names builds a chart that reads 500."""
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "dashboards.py").write_text(RATE_CHART)
    code, stdout, stderr, config, out = _generate(
        cli, tmp_path, "cloudwatch:\n  top_pods: 500\ndefinitions:\n  dashboards: [dashboards]\n")
    assert code == 2, stderr
    assert f'error: {config}:2: cloudwatch.top_pods 500: the chart "Energy use rate" of CloudWatch dashboard ' \
           "gpudash-gpu-cluster-energy would read up to 501 metrics (500 lines and 1 more that its math reads); a " \
           "CloudWatch dashboard widget reads at most 500 metrics" in stderr, stderr
    assert "fix: set cloudwatch.top_pods to 499 or less" in stderr
    assert "Traceback" not in stderr and stdout == ""

    config.write_text("cloudwatch:\n  top_pods: 499\ndefinitions:\n  dashboards: [dashboards]\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(out))
    assert code == 0, stderr
    code, stdout, _ = cli("lint", "--config", str(config), "--from", str(out), "--output", "json")
    assert not [f for f in json.loads(stdout)["findings"] if f["rule"] in ("CW003", "CW011")]
    body = json.loads(json.loads((out / "cloudwatch/dashboards/gpudash-gpu-cluster-energy.json").read_text())
                      ["DashboardBody"])
    (chart,) = [w for w in body["widgets"] if w["type"] == "metric"]
    query, hidden, shown = (m[-1].get("expression", "") for m in chart["properties"]["metrics"])
    assert query.endswith("LIMIT 499") and not hidden and shown.endswith("/ PERIOD(p1)")


# A dashboard of more panels than a CloudWatch dashboard holds widgets: each CloudWatch draws is a metric widget, and the
# header and the row's title are text widgets (one line each, 2,500 metrics per dashboard is far).
MANY_CHARTS = """from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="wall", title="Wall", description="d", rows=[Row("Each", [
        Panel(title=f"Hottest GPU {{k}}", queries=[Query("DCGM_FI_DEV_GPU_TEMP", "max", ())], description="d")
        for k in range({count})])])
"""


def test_a_dashboard_past_the_widgets_a_cloudwatch_dashboard_holds_is_refused_naming_its_definition(cli, tmp_path):
    """520 panels made a CloudWatch dashboard of 522 widgets, which PutDashboard refuses (a dashboard holds at most
    500): generate wrote it and exited 0, lint erred on it (CW001). generate refuses it, naming the definition, the
    dashboard, its widgets and the most panels that fit; that many build a dashboard of 500 widgets."""
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "dashboards.py").write_text(MANY_CHARTS.format(count=520))
    code, stdout, stderr, config, out = _generate(cli, tmp_path, "definitions:\n  dashboards: [dashboards]\n")
    assert code == 2, stderr
    assert "error: dashboards/dashboards.py:5: CloudWatch dashboard gpudash-gpu-cluster-wall would hold 522 widgets " \
           "(520 charts and 2 text widgets: its header and row titles); a CloudWatch dashboard holds at most 500, and " \
           "PutDashboard refuses more" in stderr, stderr
    assert "fix: split its panels over two dashboards: 498 charts fit beside its text widgets" in stderr
    assert "Traceback" not in stderr and stdout == ""

    (tmp_path / "dashboards" / "dashboards.py").write_text(MANY_CHARTS.format(count=498))
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(out))
    assert code == 0, stderr
    code, stdout, _ = cli("lint", "--config", str(config), "--from", str(out), "--output", "json")
    assert not [f for f in json.loads(stdout)["findings"] if f["rule"] == "CW001"]
    body = json.loads(json.loads((out / "cloudwatch/dashboards/gpudash-gpu-cluster-wall.json").read_text())
                      ["DashboardBody"])
    assert len(body["widgets"]) == 500


def test_apply_from_definitions_refuses_the_same_setting(cli, tmp_path):
    config = tmp_path / "gpudash.yaml"
    config.write_text("cloudwatch:\n  top_pods: 300\n")
    code, _, stderr = cli("apply", "--config", str(config), "--dry-run", "--skip-verify")
    assert code == 2 and "cloudwatch.top_pods 300:" in stderr and "set cloudwatch.top_pods to 227 or less" in stderr


def test_more_than_five_actions_for_the_alarms_of_one_region_are_refused(cli, tmp_path):
    topics = [TOPIC.format(region="us-east-1", index=i) for i in range(6)]
    code, _, stderr, config, out = _generate(
        cli, tmp_path, "alarms:\n  actions:\n    critical: [" + ", ".join(topics) + "]\n")
    assert code == 2, stderr
    assert f"error: {config}:3: alarms.actions.critical lists 6 actions for alarms in us-east-1; CloudWatch takes " \
           "at most 5 per alarm and refuses the alarm" in stderr, stderr


def test_five_topics_in_each_of_two_regions_fit(cli, tmp_path):
    """An alarm takes only its own Region's topics: five in each Region is five per alarm."""
    topics = [TOPIC.format(region=region, index=i) for region in ("us-east-1", "us-west-2") for i in range(5)]
    code, _, stderr, _, out = _generate(
        cli, tmp_path, "clusters:\n  - {name: east, region: us-east-1}\n  - {name: west, region: us-west-2}\n"
                       "alarms:\n  actions:\n    critical: [" + ", ".join(topics) + "]\n", refused=False)
    assert code == 0, stderr
    alarms = json.loads((out / "cloudwatch/alarms.json").read_text())["alarms"]
    assert {len(a["Request"]["AlarmActions"]) for a in alarms if a["Request"]["AlarmActions"]} == {5}


def test_a_static_pod_whose_alarm_name_is_too_long_is_refused(cli, tmp_path):
    pod = "p" * 250
    code, _, stderr, config, out = _generate(
        cli, tmp_path, f"alarms:\n  per_pod: static\n  static_pods: [ml/{pod}]\n")
    assert code == 2, stderr
    assert f"error: {config}:3: alarm name gpudash-gpu-cluster-" in stderr
    assert "characters; CloudWatch takes at most 255 and refuses the alarm" in stderr
    assert "fix: use alarms.per_pod: group_by" in stderr



def test_an_exporter_daemonset_whose_data_missing_alarm_name_is_too_long_is_refused_naming_it(cli, tmp_path):
    """A DaemonSet name Kubernetes takes (a DNS subdomain up to 253 characters) ends its data-missing alarm's name:
    the error named alarms.name_prefix and told to shorten it or the cluster name, where no prefix could fit it."""
    daemonset = ".".join(["a" * 60, "b" * 60, "c" * 60, "d" * 30])
    code, _, stderr, config, out = _generate(
        cli, tmp_path, f"exporter:\n  more_daemonsets:\n    - {daemonset}\n")
    assert code == 2, stderr
    assert f"error: {config}:2: alarm name gpudash-gpu-cluster-gpu-data-missing-" in stderr, stderr
    # what the name ends in, said as the DaemonSet the alarm watches, on the error's own line
    name = f"gpudash-gpu-cluster-gpu-data-missing-critical-gpu-operator-{daemonset}"
    assert (f"error: {config}:2: alarm name {name[:60]}... is {len(name)} characters; CloudWatch takes at most 255 and "
            f"refuses the alarm: its name ends in the exporter DaemonSet gpu-operator/{daemonset} (226 characters) its "
            f"data-missing alarm watches\n") in stderr, stderr
    assert "fix: name that DaemonSet 17 or more characters shorter" in stderr, stderr
    code, _, stderr, _, _ = _generate(cli, tmp_path, f"exporter:\n  more_daemonsets:\n    - {daemonset[17:]}\n",
                                      refused=False)
    assert code == 0, stderr


def test_the_daemonset_named_is_the_one_whose_alarm_name_is_too_long_not_one_whose_name_begins_it(cli, tmp_path):
    """Two DaemonSets, the second's name the first's and more: the second's alarm name passes 255 characters (273), the
    first's fits (252). The error names the second, not the first its name begins with."""
    first = ".".join(["a" * 60, "b" * 60, "c" * 60, "d" * 10])
    second = f"{first}.{'e' * 20}"
    code, _, stderr, _, _ = _generate(cli, tmp_path, f"exporter:\n  more_daemonsets:\n    - {first}\n    - {second}\n")
    assert code == 2, stderr
    assert f"the exporter DaemonSet gpu-operator/{second} (227 characters)" in stderr, stderr
    assert "fix: name that DaemonSet 18 or more characters shorter" in stderr, stderr

QUERY = 'SELECT AVG("DCGM_FI_DEV_GPU_UTIL") FROM SCHEMA("ContainerInsights/Prometheus", "ClusterName", "pod") '


@pytest.mark.parametrize("expression", [
    QUERY + 'GROUP BY "pod" ORDER BY AVG() DESC LIMIT 50', QUERY + 'GROUP BY "pod" order by avg() desc limit 7  ',
    QUERY + 'GROUP BY "pod" LIMIT 0', QUERY + 'GROUP BY "pod" LIMIT 900', QUERY + 'GROUP BY "pod"',
    QUERY + 'GROUP BY "pod" LIMIT\n12\n', QUERY + "WHERE \"pod\" = 'x LIMIT 3'", QUERY + 'GROUP BY LIMIT 5',
    QUERY + 'GROUP BY "pod", XLIMIT 5', QUERY + 'GROUP BY "pod" LIMIT 5.5', QUERY + 'GROUP BY "pod" "LIMIT 5',
    QUERY + "WHERE \"pod\" = 'it''s' GROUP BY \"pod\" LIMIT 4", QUERY + 'LIMIT 3', 'SELECT nothing LIMIT 2',
    QUERY + 'group\tby "pod" LIMIT 8', QUERY + 'GROUP  BY"pod" LIMIT 9', QUERY + "WHERE \"pod\" = 'GROUP BY' LIMIT 6",
    QUERY + 'GROUP BY_X LIMIT 6', QUERY + '"GROUP" BY "pod" LIMIT 6',
    # characters that grow in upper case (ß is SS) before GROUP BY: the bound read 1 for 500 and 40 metrics
    QUERY + "WHERE \"namespace\" = 'straße-straße-straße' GROUP BY \"pod\"",
    QUERY + "WHERE \"namespace\" = 'ßßßßßßßßßßßßßßßß' GROUP BY \"pod\" LIMIT 40"])
def test_the_bound_that_spares_parsing_is_never_below_the_metrics_counted(expression):
    """generate counts a dashboard's metrics exactly only where a bound read without parsing a query exceeds
    the limit: the bound is never lower than the count, whatever the query's text (else a dashboard over the
    limit would be written)."""
    from generator.dashboard_limit import metrics_shown, metrics_shown_at_most

    body = {"widgets": [{"type": "metric", "properties": {"metrics": [[{"expression": expression}], ["N", "M"]]}}]}
    try:
        exact = metrics_shown(body)
    except ValueError:  # LIMIT 5.5: the exact count gives up; nothing to bound
        return
    assert metrics_shown_at_most(body) >= exact


def test_the_bound_is_the_count_on_the_dashboards_gpudash_renders():
    """On what gpudash renders the bound is exact, so no dashboard of a large fleet is parsed for the check."""
    from pathlib import Path

    from generator.artifacts import build
    from generator.dashboard_limit import metrics_shown, metrics_shown_at_most
    from generator.project import load_project
    from generator.resources import default_config

    artifacts = build(load_project(Path(default_config()), None))
    assert artifacts.cloudwatch_dashboards
    for dashboard in artifacts.cloudwatch_dashboards:
        assert metrics_shown_at_most(dashboard.body) == metrics_shown(dashboard.body) > 1, dashboard.name


def test_clusters_of_a_region_named_like_query_clauses_have_the_bound_of_their_dashboard(tmp_path):
    """generate counts the bound once per dashboard and Region (the clusters' bodies differ in their cluster's name,
    which their queries hold as a string literal's text): on clusters named like the clauses the bound reads, each
    body's own bound and count are that one."""
    from generator.artifacts import build
    from generator.dashboard_limit import metrics_shown, metrics_shown_at_most
    from generator.limits import _at_most
    from generator.project import load_project

    names = ["c0", "GROUP", "BY", "group-by", "LIMIT", "LIMIT-5", "limit_500", "SELECT", "x-GROUP-BY-LIMIT-9"]
    (tmp_path / "gpudash.yaml").write_text("clusters:\n" + "".join(
        f"  - {{name: {name}, region: {('us-east-1', 'eu-west-1')[index % 2]}}}\n" for index, name in enumerate(names)))
    artifacts = build(load_project(tmp_path / "gpudash.yaml"))
    assert len(artifacts.cloudwatch_dashboards) == 3 * len(names)
    bounds: dict = {}
    for dashboard in artifacts.cloudwatch_dashboards:
        assert _at_most(dashboard, bounds) == metrics_shown_at_most(dashboard.body) == metrics_shown(dashboard.body), \
            dashboard.name
    assert len(bounds) == 6  # three dashboards in two Regions


def test_clusters_of_a_region_named_like_query_clauses_have_the_widgets_over_the_limit_of_their_dashboard(tmp_path):
    """generate finds the charts past a widget's 500 metrics once per dashboard and Region too: on clusters named like
    the clauses a widget's count reads, each body's charts over the limit are the ones found for its kind, and the
    refusal names the chart of the first dashboard by name, as each body counted alone named it."""
    from generator.artifacts import build
    from generator.errors import InputError
    from generator.limits import _per_kind, _widgets_over, check_widgets
    from generator.project import load_project

    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "dashboards.py").write_text(RATE_CHART)
    names = ["c0", "GROUP", "BY", "group-by", "LIMIT", "LIMIT-5", "limit_500", "PERIOD", "x-GROUP-BY-LIMIT-9"]
    settings = "cloudwatch:\n  top_pods: 500\ndefinitions:\n  dashboards: [dashboards]\n"
    (tmp_path / "gpudash.yaml").write_text(settings + "clusters:\n" + "".join(
        f"  - {{name: {name}, region: {('us-east-1', 'eu-west-1')[index % 2]}}}\n" for index, name in enumerate(names)))
    project = load_project(tmp_path / "gpudash.yaml")
    artifacts = build(project)
    found: dict = {}
    for dashboard in artifacts.cloudwatch_dashboards:
        assert _per_kind(dashboard, found, _widgets_over) == _widgets_over(dashboard.body) == \
            [(501, 0, "Energy use rate")], dashboard.name
    assert len(found) == 2  # one dashboard in two Regions
    with pytest.raises(InputError) as refused:
        check_widgets(project, artifacts)
    assert "the chart \"Energy use rate\" of CloudWatch dashboard gpudash-BY-energy would read up to 501 metrics" in \
        str(refused.value)


@pytest.mark.parametrize("settings", ["{}\n", "agent:\n  pipeline: classic\n", "cloudwatch:\n  source: container-insights\n"],
                         ids=["otel", "classic", "container-insights"])
def test_every_bundled_widget_reads_at_most_500_metrics_counted_as_the_dashboard_s(settings):
    """CloudWatch's quotas ("Up to 500 metrics per dashboard widget. Up to 2500 metrics per dashboard ... These quotas
    include all metrics retrieved for use in metric math functions") count a widget's metrics as a dashboard's: a
    GROUP BY query as its LIMIT. The fleet values' queries (LIMIT 500) beside their hidden PERIOD() and readings lines
    read 502 and 503 ("GPUs reporting", "Total power draw"; the two means): their LIMIT leaves room for those lines."""
    from generator.dashboard_limit import widget_metrics
    from tests.support.built import files as built_files

    files = built_files(settings)
    counted = {}
    for path, content in files.items():
        if path.startswith("cloudwatch/dashboards/"):
            for widget in json.loads(json.loads(content)["DashboardBody"])["widgets"]:
                if widget["type"] == "metric":
                    counted[(path, widget["properties"]["title"])] = widget_metrics(widget["properties"])
    assert max(counted.values()) <= 500, {k: v for k, v in counted.items() if v > 500}
    if "source" not in settings:
        overview = {title: n for (path, title), n in counted.items() if path.endswith("-overview.json")}
        assert [overview[t] for t in ("GPUs reporting", "Total power draw", "Average GPU utilization",
                                      "Average GPU temperature")] == [500] * 4, overview


def test_a_clusters_own_daemonset_is_named_by_its_own_key_in_the_refusal_and_the_description(cli, tmp_path):
    """The settings key naming a DaemonSet is chosen once (exporter_styles.daemonset_key): a cluster's own
    more_daemonsets, whose alarm name is too long, is refused at clusters[0].exporter.more_daemonsets, and one that
    fits is named by that key in its alarm's description."""
    daemonset = ".".join(["a" * 60, "b" * 60, "c" * 60, "d" * 30])
    settings = ("clusters:\n  - name: gpu-cluster\n    region: us-east-1\n    exporter:\n      more_daemonsets:\n"
                "        - {}\n")
    code, _, stderr, config, out = _generate(cli, tmp_path, settings.format(daemonset))
    assert f"error: {config}:5: alarm name gpudash-gpu-cluster-gpu-data-missing-" in stderr, stderr
    code, _, stderr, _, _ = _generate(cli, tmp_path, settings.format("dcgm-extra"), refused=False)
    assert code == 0, stderr
    alarms = json.loads((out / "cloudwatch" / "alarms.json").read_text())["alarms"]
    (described,) = [a["Request"]["AlarmDescription"] for a in alarms
                    if a["Request"]["AlarmName"].endswith("-gpu-operator-dcgm-extra")]
    assert ("this alarm reads the exporter DaemonSet gpu-operator/dcgm-extra (clusters[].exporter.more_daemonsets), "
            "one of the cluster's 2") in described
