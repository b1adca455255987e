"""gpudash's CloudWatch validator: the defaults pass, and each broken body or alarm gets a precise finding."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest

from generator.artifacts import AlarmRequest, CloudWatchDashboard
from generator.lint import run
from generator.lint.cloudwatch_rules import RULES
from tests.support.lint_input import lint_input
from generator.project import load_project


@pytest.fixture(scope="module")
def good():
    return lint_input(load_project())


def _only(good, dashboards, alarms):
    """The good input with only these CloudWatch dashboards and alarms."""
    return replace(good, artifacts=replace(good.artifacts, cloudwatch_dashboards=dashboards, alarms=alarms))


def test_generated_dashboards_and_alarms_are_valid(good):
    # AL010 notes what a DCGM blank does to an alarm (tests/unit/test_cloudwatch_blanks.py), CW020 which rows a table
    # of pods now keeps past its LIMIT (tests/unit/test_cloudwatch_lines_cap.py), AL018 what a gap in a GPU's data
    # does to a counter alarm on agent.pipeline: otel (tests/integration/test_counter_gap_twins.py)
    assert [f for f in run(RULES, good) if f.rule not in ("AL010", "CW020", "AL018")] == []


def _with_body(good, mutate):
    dashboard = next(d for d in good.cloudwatch_dashboards if d.name == "gpudash-gpu-cluster-by-pod")
    body = copy.deepcopy(dashboard.body)
    mutate(body)
    return _only(good, (replace(dashboard, body=body),), ())


def _metric_widget(body):
    return next(w for w in body["widgets"] if w["type"] == "metric")


def _first_query(body):
    return _metric_widget(body)["properties"]["metrics"][0][0]


def _in_first_query(old, new):
    """An edit of a body: `old` replaced by `new` in its first Metrics Insights query."""
    def edit(body):
        query = _first_query(body)
        query["expression"] = query["expression"].replace(old, new)
    return edit


def _many_searches(body):
    _metric_widget(body)["properties"]["metrics"] = [
        [{"expression": f"SEARCH('{{ContainerInsights/Prometheus,pod}} MetricName=\"m{i}\"', 'Average', 300)",
          "id": f"s{i}"}] for i in range(101)]


BODY_CASES = {
    "too many widgets": (lambda b: b["widgets"].extend([b["widgets"][0]] * 500), "CW001", "widgets: has 517 items; at most 500 allowed"),
    "widget off the grid": (lambda b: _metric_widget(b).update(x=20, width=12), "CW007", "past the 24-column grid"),
    "width out of range": (lambda b: _metric_widget(b).update(width=30), "CW001", "30 is greater than the maximum of 24"),
    "unknown widget type": (lambda b: b["widgets"][0].update(type="graph"), "CW001", "'graph' is not one of"),
    "text without markdown": (lambda b: b["widgets"][0]["properties"].pop("markdown"), "CW001",
                              "'markdown' is a required property"),
    "metric widget without region": (lambda b: _metric_widget(b)["properties"].pop("region"), "CW001",
                                     "'region' is a required property"),
    "bad view": (lambda b: _metric_widget(b)["properties"].update(view="lineChart"), "CW001", "'lineChart' is not one of"),
    "bad period": (lambda b: _metric_widget(b)["properties"].update(period=45), "CW001", "period"),
    "too many metrics": (lambda b: _metric_widget(b)["properties"].update(
        metrics=[["ContainerInsights/Prometheus", f"m{i}", "pod", "p"] for i in range(501)]), "CW003", "501 metrics"),
    # CloudWatch's quotas count a widget's 500 metrics as the dashboard's 2,500 (CW011): a GROUP BY query as its LIMIT
    "a query's series and a metric line past 500": (lambda b: (_first_query(b).update(
        expression=_first_query(b)["expression"].replace("LIMIT 50", "LIMIT 500")),
        _metric_widget(b)["properties"]["metrics"].append(
            ["ContainerInsights/Prometheus", "DCGM_FI_DEV_GPU_TEMP", "ClusterName", "gpu-cluster", {"id": "m9"}]
        )), "CW003", "up to 501 metrics (a GROUP BY query counts as its LIMIT, 500 without one)"),
    "odd dimension pairs": (lambda b: _metric_widget(b)["properties"].update(
        metrics=[["ContainerInsights/Prometheus", "DCGM_FI_DEV_GPU_UTIL", "pod"]]), "CW004",
        "expected [namespace, metric name, dimension name, value"),
    "expression without id": (lambda b: _metric_widget(b)["properties"]["metrics"][0][0].pop("id"), "CW004",
                              "an expression needs an id"),
    "duplicate ids": (lambda b: _metric_widget(b)["properties"]["metrics"].append(
        copy.deepcopy(_metric_widget(b)["properties"]["metrics"][0])), "CW006", "id 'q1' is used twice"),
    "upper-case id": (lambda b: _metric_widget(b)["properties"]["metrics"][0][0].update(id="Q1"), "CW006",
                      "id 'Q1' must start with a lower-case letter"),
    "long search": (lambda b: _metric_widget(b)["properties"]["metrics"][0][0].update(
        expression="SEARCH('" + "x" * 1100 + "', 'Average', 300)"), "CW005", "1100 characters; the limit is 1024"),
    "too many searches": (_many_searches, "CW005", "101 SEARCH expressions"),
    "undeclared dimension": (_in_first_query('GROUP BY "namespace", "pod"', 'GROUP BY "gpu"'),
        "CW008", "GROUP BY gpu: the agent does not publish that dimension with this set"),
    "unpublished dimension set": (_in_first_query('"namespace", "pod")', '"Namespace", "pod")'),
        "CW008", "SCHEMA(ClusterName, Namespace, pod): the agent publishes no such dimension set"),
    "two queries in a widget": (lambda b: _metric_widget(b)["properties"]["metrics"].append(
        [{**_first_query(b), "id": "q2"}]), "CW010", "2 Metrics Insights queries: a widget may hold one"),
    "too many metrics on a dashboard": (lambda b: [w["properties"]["metrics"][0][0].update(
        expression=w["properties"]["metrics"][0][0]["expression"].replace("LIMIT 50", "LIMIT 300"))
        for w in b["widgets"] if w["type"] == "metric"], "CW011", "a dashboard shows at most 2,500"),
    "doubled quote": (_in_first_query("'gpu-cluster'", "'gpu''s cluster'"), "CW012",
        "escaped with a backslash, not doubled"),
    "fractional limit": (_in_first_query("LIMIT 50", "LIMIT 5.5"), "CW012",
        "LIMIT takes a whole number of series, found '5.5'"),
    "unquoted reserved word": (_in_first_query('GROUP BY "namespace", "pod"', 'GROUP BY namespace, user'),
        "CW012", "user must be double-quoted"),
    # words of the documented list lint's own short list lacked: gpudash's own dimension `share`, and `label`, `type`
    "unquoted reserved word of the documented list": (
        _in_first_query('GROUP BY "namespace", "pod"', 'GROUP BY share, label'), "CW012",
        "share must be double-quoted"),
    "unquoted reserved word after a typo in the documented list": (
        _in_first_query('GROUP BY "namespace", "pod"', 'GROUP BY fallback'), "CW012", "fallback must be double-quoted"),
    "other namespace": (lambda b: _metric_widget(b)["properties"]["metrics"][0][0].update(
        expression="SELECT AVG(DCGM_FI_DEV_GPU_UTIL) FROM SCHEMA(\"Other\", pod)"), "CW008", "does not read SCHEMA("),
    "gauge without bounds": (lambda b: _metric_widget(b)["properties"].update(view="gauge", yAxis={}), "CW009",
                             "a gauge needs yAxis.left min and max"),
}


@pytest.mark.parametrize("case", sorted(BODY_CASES))
def test_broken_body_is_rejected_precisely(good, case):
    mutate, rule, fragment = BODY_CASES[case]
    findings = run(RULES, _with_body(good, mutate))
    assert any(f.rule == rule and fragment in f.message for f in findings), findings


def test_bad_dashboard_name_and_a_body_without_widgets(good):
    subject = _only(good, (CloudWatchDashboard("gpu dash!", "us-east-1", {"widgets": "none"}),), ())
    messages = {(f.rule, f.message) for f in run(RULES, subject)}
    assert ("CW002", "dashboard names are 1-255 characters of A-Z a-z 0-9 - _") in messages
    assert any(rule == "CW001" and message.startswith("widgets: ") for rule, message in messages), messages


def _alarm(good, mutate):
    item = copy.deepcopy(next(a for a in good.alarms if "gpu-idle" in a.request["AlarmName"]))
    mutate(item.request)
    return _only(good, (), (item,))


ALARM_CASES = {
    "no comparison": (lambda r: r.pop("ComparisonOperator"), "AL001", "'ComparisonOperator' is a required property"),
    "bad comparison": (lambda r: r.update(ComparisonOperator="Above"), "AL001", "'Above' is not one of"),
    "zero periods": (lambda r: r.update(EvaluationPeriods=0, DatapointsToAlarm=0), "AL001", "less than the minimum of 1"),
    "metric and metrics": (lambda r: r.update(MetricName="DCGM_FI_DEV_GPU_UTIL"), "AL002",
                           "exactly one of MetricName, Metrics, EvaluationCriteria"),
    "neither": (lambda r: r.pop("Metrics"), "AL002", "found none"),
    "two returned": (lambda r: r["Metrics"].append({"Id": "q2", "Expression": "q1 * 2", "ReturnData": True}),
                     "AL003", "2 queries return data"),
    "datapoints": (lambda r: r.update(DatapointsToAlarm=9), "AL004", "DatapointsToAlarm exceeds EvaluationPeriods"),
    "bad id": (lambda r: r["Metrics"][0].update(Id="1q"), "AL001", "does not match"),
    "bad missing data": (lambda r: r.update(TreatMissingData="zero"), "AL001", "'zero' is not one of"),
    "untagged": (lambda r: r.update(Tags=[]), "AL007", "no ManagedBy=gpudash tag"),
    "long name": (lambda r: r.update(AlarmName="a" * 256), "AL001", "has 256 characters; at most 255 allowed"),
    "high-res period": (lambda r: r["Metrics"][0].update(Period=0), "AL001", "less than the minimum of 1"),
    # the idle alarm reads the unused share above a level, ranked by its sum over the window (unused_plan)
    "group by without order by": (lambda r: r["Metrics"][0].update(
        Expression=r["Metrics"][0]["Expression"].replace(" ORDER BY SUM() DESC", "")), "AL008",
        "GROUP BY without ORDER BY SUM() DESC"),
    "order away from the threshold": (lambda r: r["Metrics"][0].update(
        Expression=r["Metrics"][0]["Expression"].replace("SUM() DESC", "SUM() ASC")), "AL008",
        "with ORDER BY SUM() DESC"),
    "order by another function": (lambda r: r["Metrics"][0].update(
        Expression=r["Metrics"][0]["Expression"].replace("ORDER BY SUM()", "ORDER BY AVG()")), "AL008",
        "ORDER BY AVG DESC"),
    "ranked by the sum of a reading, not of its unused share": (lambda r: r["Metrics"][0].update(
        Expression=r["Metrics"][0]["Expression"].replace(', "share")', ")")), "AL008",
        "ORDER BY SUM DESC: the series nearest the threshold come first with ORDER BY AVG() DESC"),
    "more than 500 series": (lambda r: r["Metrics"][0].update(Expression=r["Metrics"][0]["Expression"] + " LIMIT 600"),
                             "AL008", "LIMIT 600: a multi-time-series alarm evaluates at most 500"),
}


def _math_alarm(good, mutate):
    item = copy.deepcopy(next(a for a in good.alarms if a.request["AlarmName"].endswith("gpu-data-missing-critical")))
    mutate(item.request["Metrics"])
    return _only(good, (), (item,))


def _more_metrics(metrics):
    stats = sum("MetricStat" in m for m in metrics)
    metrics[:0] = [{**copy.deepcopy(metrics[0]), "Id": f"m{i}"} for i in range(11 - stats)]


MATH_CASES = {  # the data-missing alarm (metric math over static metrics), broken
    "eleven metrics": (_more_metrics, "11 metrics: an alarm on metric math reads at most 10"),
    "an unknown id": (lambda m: m[-1].update(Expression="IF(d > 0, x * (a >= d), 1)"), "'x' names no metric"),
    "a function unfit for alarms": (lambda m: m[-1].update(Expression="IF(d > 0, g * (a >= AVG(d)), 1)"),
                                    "AVG() does not belong in an alarm"),
    "metric and expression": (lambda m: m[0].update(Expression="a"), "d: give exactly one of MetricStat, Expression"),
}


def test_the_data_missing_alarm_passes_and_broken_math_alarms_do_not(good):
    assert [f for f in run(RULES, _math_alarm(good, lambda m: None)) if f.rule.startswith("AL")] == []
    for case, (mutate, fragment) in MATH_CASES.items():
        findings = [f for f in run(RULES, _math_alarm(good, mutate)) if f.rule == "AL020"]
        assert any(fragment in f.message for f in findings), (case, findings)


@pytest.mark.parametrize("case", sorted(ALARM_CASES))
def test_broken_alarm_is_rejected_precisely(good, case):
    mutate, rule, fragment = ALARM_CASES[case]
    findings = run(RULES, _alarm(good, mutate))
    assert any(f.rule == rule and fragment in f.message for f in findings), findings


@pytest.mark.parametrize("description, units", [("a" * 1024, None), ("a" * 1022 + "\U0001f525", None),
                                                ("a" * 1023 + "\U0001f525", 1025), ("\U0001f525" * 600, 1200),
                                                ("a" * 1025, 1025)])
def test_alarm_description_length_is_counted_as_generate_lays_it_out(good, description, units):
    """AL001 measures AlarmDescription in UTF-16 units (render/alarm_text.length), as generate lays descriptions out:
    1,024 characters holding an emoji are 1,025 units and err, once."""
    from generator.render.alarm_text import DESCRIPTION_LIMIT, length

    findings = [f for f in run(RULES, _alarm(good, lambda r: r.update(AlarmDescription=description)))
                if f.rule == "AL001"]
    if units is None:
        assert length(description) <= DESCRIPTION_LIMIT and findings == []
    else:
        assert [f.message for f in findings] == [
            f"AlarmDescription: has {units} UTF-16 units ({len(description)} characters); at most 1024 allowed"]


def test_an_alarm_description_that_is_no_text_still_fails_the_schema(good):
    findings = [f for f in run(RULES, _alarm(good, lambda r: r.update(AlarmDescription=5))) if f.rule == "AL001"]
    assert [f.message for f in findings] == ["AlarmDescription: 5 is not of type 'string'"]


def test_flags_past_a_level_rank_by_their_sum_only_over_a_set_marked_with_the_level(good):
    """The temperature-high alarm reads its flags past the level (the lowest of a period at least 1) ranked by their
    sum over the window (level_plan): lint takes it; the same ranking over the temperature itself, or ranked by its
    own MIN(), errs."""
    (hot,) = [a for a in good.alarms if "gpu-temp-high" in a.request["AlarmName"]]
    assert not [f for f in run(RULES, _only(good, (), (hot,))) if f.rule == "AL008"]
    for old, new, said in (('"gpu", "above 80")', '"gpu")', "ORDER BY SUM DESC"),
                           ("ORDER BY SUM()", "ORDER BY MIN()", "ORDER BY MIN DESC")):
        item = copy.deepcopy(hot)
        item.request["Metrics"][0]["Expression"] = item.request["Metrics"][0]["Expression"].replace(old, new)
        findings = [f for f in run(RULES, _only(good, (), (item,))) if f.rule == "AL008"]
        assert findings and said in findings[0].message, findings


def test_duplicate_names_and_quota(good):
    item = good.alarms[0]
    duplicated = _only(good, (), (item, item))
    assert [f.rule for f in run(RULES, duplicated) if f.rule != "AL010"] == ["AL005"]
    many = [AlarmRequest("us-east-1", {**item.request, "AlarmName": f"a{i}"}) for i in range(201)]
    (finding,) = run([r for r in RULES if r.id == "AL006"], _only(good, (), tuple(many)))
    assert finding.severity == "warning" and "201 Metrics Insights alarms in us-east-1" in finding.message


def test_top_pods_500_passes_the_dashboard_limit(project_dir):
    """Settings allow 500 pods per chart; the per-pod dashboard then asks for more than 2,500 metrics."""
    subject = lint_input(load_project(project_dir("cloudwatch:\n  top_pods: 500\n")))
    findings = [f for f in run(RULES, subject) if f.rule == "CW011"]
    assert [f.where for f in findings] == ["cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"]
    assert "a dashboard shows at most 2,500" in findings[0].message


def test_generate_warns_when_alarms_notify_no_one(cli, tmp_path, project_dir):
    code, _, stderr = cli("generate", "--out", str(tmp_path / "a"))
    assert code == 0 and "13 of 13 CloudWatch alarms have no actions and notify no one" in stderr
    config = project_dir("alarms:\n  actions:\n    critical: ['arn:aws:sns:us-east-1:123456789012:gpu']\n"
                         "    warning: ['arn:aws:sns:us-east-1:123456789012:gpu']\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "b"))
    assert code == 0 and "no actions" not in stderr


def test_an_alarm_notifies_only_topics_of_its_own_region(cli, tmp_path, project_dir):
    """Clusters in two Regions, one topic in each: PutMetricAlarm refuses an SNS topic of another Region
    ("Invalid region us-east-1 specified. Only eu-west-1 is supported."), so each alarm takes its Region's."""
    east, west = "arn:aws:sns:us-east-1:123456789012:gpu", "arn:aws:sns:eu-west-1:123456789012:gpu"
    clusters = "clusters:\n  - {name: east, region: us-east-1}\n  - {name: west, region: eu-west-1}\n"
    config = project_dir(f"{clusters}alarms:\n  actions:\n    critical: [{east}, {west}]\n    warning: [{east}]\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "a"))
    alarms = json.loads((tmp_path / "a" / "cloudwatch" / "alarms.json").read_text())["alarms"]
    topics = {(a["Region"], a["Request"]["AlarmName"].split("-")[-1]): set(a["Request"]["AlarmActions"])
              for a in alarms}
    assert topics == {("us-east-1", "critical"): {east}, ("us-east-1", "warning"): {east},
                      ("eu-west-1", "critical"): {west}, ("eu-west-1", "warning"): set()}
    assert all(a["Request"]["OKActions"] == a["Request"]["AlarmActions"] for a in alarms)
    assert code == 0 and (f"warning alarms in eu-west-1 notify no one: alarms.actions.warning lists only SNS "
                          f"topics of other Regions ({east})") in stderr
    assert stderr.count("lists only SNS topics of other Regions") == 1
    assert "have no actions and notify no one (first: gpudash-west-" in stderr


def _first_math(body):
    """The first widget whose first line is a GROUP BY query (an array of series) and whose second is the hidden
    metric p1 its math takes the PERIOD() of, and its math line."""
    for widget in body["widgets"]:
        lines = widget.get("properties", {}).get("metrics", [])
        if widget["type"] == "metric" and len(lines) == 3 and "GROUP BY" in lines[0][-1]["expression"] \
                and lines[1][-1] == {"id": "p1", "visible": False}:
            return widget["properties"], lines[2][-1]
    raise AssertionError("no widget with a GROUP BY query and a math line")


TYPE_CASES = {  # (expression over q1, an array of series: what CW014 says)
    "IF(q1 < 1000000000, q1)": "a comparison '<' between TS[] and S",
    "SUM(IF(q1 < 5, q1))": "a comparison '<' between TS[] and S",
    "IF(SUM(q1), q1)": "IF(TS, TS[]) is not one of IF's documented syntaxes",
    "q1 > 3": "a comparison '>' between TS[] and S",
    "q1 / SEARCH('{x} y', 'Average', 300)": "arithmetic '/' between TS[] and TS[] is not documented",
    # two arrays of the same series are two arrays too: the page's arithmetic row pairs an array with a number
    # or one series only ("S, S S, TS TS, TS S, TS[] TS, TS[]" read as pairs)
    "q1 / (q1 * 0 + 1)": "arithmetic '/' between TS[] and TS[] is not documented",
    "q1 / (FLOOR(1000000000 / (ABS(q1) + 1)) / FLOOR(1000000000 / (ABS(q1) + 1)))":
        "arithmetic '/' between TS[] and TS[] is not documented",
    "SUM(q1 - q1)": "arithmetic '-' between TS[] and TS[] is not documented",
    "FLOOR(q1, 2)": "FLOOR(TS[], S) is not documented",
    "AVG(SUM(q1))": "the result is a number",
    "NOPE(q1)": "NOPE() is not a metric-math function",
    "q1 / (x1 + 1)": "'x1' names no metric",
    # "Valid input is metrics, not the results of other expressions": a Metrics Insights query is an expression
    "q1 / PERIOD(q1)": "PERIOD takes a metric",
    "q1 / PERIOD(p1 * 2)": "PERIOD takes a metric",
    "q1 / PERIOD(FIRST(q1))": "PERIOD takes a metric",
}


@pytest.mark.parametrize("expression", sorted(TYPE_CASES))
def test_math_on_undocumented_argument_types_is_refused_naming_the_widget(good, expression):
    def mutate(body):
        _first_math(body)[1]["expression"] = expression

    findings = [f for f in run(RULES, _with_body(good, mutate)) if f.rule == "CW014"]
    (finding,) = findings
    assert finding.severity == "error" and TYPE_CASES[expression] in finding.message, finding
    assert finding.where.startswith("cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json widget ")
    assert finding.where.endswith(f"({_first_math(_with_body(good, mutate).cloudwatch_dashboards[0].body)[0]['title']})")


@pytest.mark.parametrize("expression", [
    "q1 / 30", "SUM(q1) / SUM(q1 * 0 + 1)", "IF(MAX(q1) < 5, SUM(q1))", "FILL(q1, 0)", "-q1 * 2 ^ 3",
    "SUM(100 / [q1, q1])", "100 / q1", "q1 / MAX(q1)", "MAX(q1) - q1", "AVG(q1 / SUM(q1))", "METRICS() * 100",
    "FLOOR(1000000000 / (ABS(q1) + 1))", "q1 / PERIOD(p1)", "q1 * 30 / PERIOD(p1)", "SUM(q1) / PERIOD(p1)",
])
def test_documented_forms_pass(good, expression):
    def mutate(body):
        _first_math(body)[1]["expression"] = expression

    assert [f for f in run(RULES, _with_body(good, mutate)) if f.rule == "CW014"] == []


def test_an_expression_may_name_an_id_written_after_it(good):
    def mutate(body):
        properties, math = _first_math(body)
        properties["metrics"].insert(0, [{"expression": "e2 / 2", "id": "e0"}])
        properties["metrics"].append([{"expression": "SUM(q1)", "id": "e2"}])
        properties["metrics"].append([{"expression": "e0 < e2 AND e0 > 1", "id": "e3"}])

    assert [f for f in run(RULES, _with_body(good, mutate)) if f.rule == "CW014"] == []


def test_undocumented_alarm_math_is_refused_naming_the_alarm(good):
    findings = [f for f in run(RULES, _math_alarm(good, lambda m: m[-1].update(Expression="IF(d, g, a, 1)")))
                if f.rule == "CW014"]
    (finding,) = findings
    assert "gpu-data-missing" in finding.where and "IF(TS, TS, TS, S)" in finding.message


def test_the_add_on_s_data_missing_alarm_sums_only_its_query_s_array(project_dir):
    """On the Container Insights add-on the alarm counts GPU nodes with SUM over a GROUP BY query's series (the
    user guide: such a query in an alarm is wrapped in math returning one series); SUM of a single series, which
    the guide warns reads more data than the alarm evaluates, is still refused, and so is a LIMIT over 500."""
    addon = lint_input(load_project(project_dir("cloudwatch:\n  source: container-insights\n")))
    (alarm,) = [a for a in addon.alarms if a.request["AlarmName"].endswith("gpu-data-missing-critical")]
    (per_gpu,) = [a for a in addon.alarms if "gpu-data-missing-per-gpu" in a.request["AlarmName"]]
    # (each one note: a GPU the add-on publishes DCGM's blank for counts as reporting, AL010)
    assert [f.rule for f in run(RULES, _only(addon, (), (per_gpu,))) if f.rule.startswith(("AL", "CW"))] == ["AL010"]
    assert [f.rule for f in run(RULES, _only(addon, (), (alarm,))) if f.rule.startswith(("AL", "CW"))] == ["AL010"]

    def broken(expression_of: dict) -> list:
        item = copy.deepcopy(alarm)
        for metric in item.request["Metrics"]:
            metric.update(Expression=expression_of.get(metric["Id"], metric.get("Expression")))
            metric.pop("Expression") if metric["Expression"] is None else None
        return [f.message for f in run(RULES, _only(addon, (), (item,))) if f.rule in ("AL020", "AL008")]

    assert any("SUM() does not belong" in m for m in broken({"r": "SUM(c * 0 + 1) + 0 * c"}))
    query = next(m["Expression"] for m in alarm.request["Metrics"] if m["Id"] == "q")
    assert any("LIMIT 600: a query returns at most 500" in m for m in broken({"q": query.replace("500", "600")}))


UP_PER_NODE = ('SELECT AVG("up") FROM SCHEMA("ContainerInsights/Prometheus", "ClusterName", "node") '
               "WHERE \"ClusterName\" = 'gpu-cluster' GROUP BY \"node\" ORDER BY AVG() ASC LIMIT 50")
ONE_RULE = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("hot", "GPU hot", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node", "gpu")), ">", 90))
'''


def test_the_up_set_is_published_only_where_the_built_agent_declares_it(good, project_dir):
    """A query of the exporter targets' up per node reads a set the agent publishes only where the build's agent
    config declares it: with the data-missing rule (its alarm per node reads it), not without, GPUs expected or
    not."""
    def reading_up(subject):
        return [f for f in run(RULES, _with_body(subject, lambda b: _first_query(b).update(expression=UP_PER_NODE)))
                if f.rule == "CW008"]

    assert reading_up(good) == []
    config = project_dir("definitions:\n  alarms: [alarms]\n")
    (config.parent / "alarms").mkdir()
    (config.parent / "alarms" / "hot.py").write_text(ONE_RULE)
    findings = reading_up(lint_input(load_project(config)))
    assert [f.message for f in findings] == ["SCHEMA(ClusterName, node): the agent publishes no such dimension set"]
