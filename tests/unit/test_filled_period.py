"""An alarm judged over several periods with its missing periods filled (TreatMissingData notBreaching or breaching)
whose period is under two scrape intervals is refused when it is the user's, and warned about when it is bundled.

An exporter whose scrapes land at a period's edge (here within 0.3 s of the minute) leaves some periods of one scrape
interval without a scrape and others with two, and CloudWatch fills each empty period as the alarm says. Measured
through the agent model and CloudWatch's documented evaluation: a pod's GPU at 1 % from minute 60 to 120, the idle
alarm (AVG of GPU utilization per pod and GPU, six periods, missing data not breaching) at 60 s periods at 60 s
scrapes was in ALARM at 36 of the 55 minutes it should be over an evaluation range one period longer than the
alarm's (51 over two longer), at 55 with scrapes mid-minute; the bundled alarm at scrape.interval 5m (300 s periods)
at 24 of 33 (27 over two longer). At 120 s periods (two scrape intervals) it is in ALARM at all 49, as with scrapes
mid-minute. An alarm of one period, or with missing data neither breaching nor not (missing), is judged on the latest
datapoints the range holds and is right at one scrape a period (the temperature, framebuffer and XID alarms at 60 s
periods at 60 s scrapes: in ALARM at the same minutes as with scrapes mid-minute).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import cloudwatch_eval
from tests.support.edge_scrapes import alarm_project, edge_points, gauge_page, refusal

IDLE = 3600  # the pod's GPU 1 idle from minute 60 to 120


def _alarm(period: int, periods: int, missing: str) -> str:
    # missing data breaching: on a field MIG reports (two alarms judge utilization, and one of them reads nothing in a
    # cluster without GPUs of its kind: refused with breaching)
    condition = ("Query('DCGM_FI_DEV_GPU_UTIL', 'avg', ('pod', 'gpu')), '<', 5" if missing != "breaching" else
                 "Query('DCGM_FI_DEV_GPU_TEMP', 'max', ('node', 'gpu')), '>', 85")
    return (f"from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
            f"    return [Alarm('idle', 'GPU idle', Condition({condition}),\n"
            f"                  severity='warning', period_seconds={period}, evaluation_periods={periods}, "
            f"missing_data={missing!r})]\n")


def _project(folder: Path, period: int, periods: int, interval: int, missing: str = "notBreaching") -> Path:
    return alarm_project(folder, _alarm(period, periods, missing), interval)


def _page(t: float) -> str:
    return gauge_page("DCGM_FI_DEV_GPU_UTIL", [90, 1 if IDLE <= t < 2 * IDLE else 90])


def _bundled_warning(tmp_path, cli, settings: str, alarm: str) -> dict:
    """generate's one warning (JSON) naming `alarm` (quoted) of a build of the bundled alarms with `settings`."""
    (tmp_path / "gpudash.yaml").write_text(settings)
    code, stdout, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "out"),
                               "--output", "json")
    assert code == 0, stderr
    (tmp_path / "answer.json").write_text(stdout)
    (warning,) = [n for n in json.loads(stdout)["warnings"] if alarm in n["message"]]
    return warning


# the fix keeps the rule's window (period x evaluation periods) where a whole number of the longer periods spans it: a
# longer period alone would lengthen it (60 s x 6 at 120 s periods: 12 minutes, not 6)
# and the scrape intervals at which it is taken as written, each dividing its period and cloudwatch.period
@pytest.mark.parametrize("period, periods, interval, missing, fix", [
    (60, 6, 60, "notBreaching", "period_seconds=120 and evaluation_periods=3, which keep its window of 360 s, or give "
                                "scrape.interval one of 10s, 12s, 15s, 20s, 30s (30 s or less, dividing "
                                "cloudwatch.period and the alarm's period)"),
    (60, 3, 60, "breaching", "period_seconds=120 (no whole number of 120 s periods spans its window of 180 s: give it "
                             "evaluation_periods=1 (120 s) or evaluation_periods=2 (240 s), and say that span in its "
                             "description), or give scrape.interval one of 10s, 12s, 15s, 20s, 30s (30 s or less, "
                             "dividing cloudwatch.period and the alarm's period)"),
    (300, 3, 300, "notBreaching", "period_seconds=600 (no whole number of 600 s periods spans its window of 900 s: "
                                  "give it evaluation_periods=1 (600 s) or evaluation_periods=2 (1200 s), and say that "
                                  "span in its description), or give scrape.interval one of 10s, 12s, 15s, 20s, 25s, "
                                  "30s, 50s, 60s, 75s, 100s, 150s (150 s or less, dividing cloudwatch.period and the "
                                  "alarm's period)")])
def test_a_period_under_two_scrape_intervals_judged_filled_is_refused(period, periods, interval, missing, fix, tmp_path,
                                                                       cli):
    message, stderr = refusal(cli, _project(tmp_path, period, periods, interval, missing), tmp_path)
    assert message.startswith("error: alarms/mine.py:")
    assert (f"alarm 'idle': its period of {period} s is under 2 scrape intervals (scrape.interval {interval} s), and "
            f"it is judged over {periods} periods with missing data "
            f"{'not breaching' if missing == 'notBreaching' else 'breaching'}") in message
    assert f"  fix: give the alarm {fix}, or missing_data='missing'" in stderr.splitlines()


def test_the_fix_of_a_refused_filled_period_followed_keeps_the_window_and_builds(tmp_path, cli):
    """60 s x 6 at 60 s scrapes, refused: the fix's 120 s x 3 spans the same 6 minutes and is built, its CloudWatch
    alarm of 3 periods of 120 s."""
    settings = _project(tmp_path, 120, 3, 60)
    code, _, stderr = cli("generate", "--config", str(settings), "--out", str(tmp_path / "build"))
    assert code == 0 and "alarm 'idle'" not in stderr, stderr
    (request,) = [a["Request"] for a in json.loads((tmp_path / "build" / "cloudwatch" / "alarms.json").read_text())[
        "alarms"] if a["Request"]["AlarmName"].endswith("-idle-warning")]
    periods = {m.get("Period") or m.get("MetricStat", {}).get("Period") for m in request["Metrics"]} - {None}
    assert (periods, request["EvaluationPeriods"]) == ({120}, 3)


@pytest.mark.parametrize("period, periods, missing", [(60, 1, "notBreaching"), (60, 6, "missing")])
def test_one_period_or_missing_data_missing_is_built(period, periods, missing, tmp_path, cli):
    settings = _project(tmp_path, period, periods, 60, missing)
    code, _, stderr = cli("generate", "--config", str(settings), "--out", str(tmp_path / "build"))
    assert code == 0, stderr


def test_two_scrape_intervals_a_period_fire_at_every_range_with_scrapes_at_the_minutes_edge(tmp_path):
    # three hours, each scrape within 0.3 s of the minute's edge
    request, points = edge_points(_project(tmp_path, 120, 6, 60), "idle", _page, 60, 3 * IDLE)
    assert (request["EvaluationPeriods"], request["DatapointsToAlarm"], request["TreatMissingData"]) == (
        6, 6, "notBreaching")
    ready = (IDLE + 120 * 6) // 60  # the first minute whose six periods are all idle
    ends = [m * 60 for m in range(50, 131)]
    for extra in (1, 2):
        fired = cloudwatch_eval.fired_at(request, points, ends, "pod", evaluation_range=6 + extra)
        assert fired == {"p1": {m * 60 for m in range(ready, 121)}}


def test_the_bundled_idle_alarm_at_five_minute_scrapes_is_kept_and_said(tmp_path, cli):
    """The bundled idle alarm's 5-minute periods hold one scrape at scrape.interval 5m: it is built (its period is not
    the user's to write), and generate warns with what to do."""
    warning = _bundled_warning(tmp_path, cli, "scrape:\n  interval: 5m\n", "'gpu-idle'")
    assert ("alarm 'gpu-idle' (bundled): its period of 300 s is under 2 scrape intervals (scrape.interval 300 s), "
            "and it is judged over 6 periods with missing data not breaching") in warning["message"]
    # its copy at 600 s periods keeps the 30 minutes it names (idle_minutes) in 3 periods, not 6 (60 minutes)
    assert warning["fix"] == ("give scrape.interval one of 10s, 12s, 15s, 20s, 25s, 30s, 50s, 60s, 75s, 100s (150 s or less, "
                              "dividing cloudwatch.period and the alarm's period; not 150s, too short for alarm "
                              "'gpu-data-missing'), or copy the bundled alarms into a folder of "
                              "your own, "
                              "named in definitions.alarms, and give it period_seconds=600 and evaluation_periods=3, "
                              "which keep its window of 1800 s")
    alarms = json.loads((tmp_path / "out" / "cloudwatch" / "alarms.json").read_text())["alarms"]
    assert any(a["Request"]["AlarmName"].endswith("-gpu-idle-warning") for a in alarms)


# the least period holds three scrapes as well: at two a period its agent alarm counts under 1 reading, which no period
# with data does (lint AL028), so 120 s at 60 s scrapes, which the window alone would take, built an alarm never firing.
# One such period is longer than the window: none keeps it, and the fix names the nearest, one period.
@pytest.mark.parametrize("period, periods, interval, least, intervals", [
    (60, 2, 60, 180, "10s, 12s, 15s, 20s (20 s or less"), (300, 2, 300, 900, "10s, 12s, 15s, 20s, 25s, 30s, 50s, 60s, "
                                                                             "75s, 100s (100 s or less")])
def test_a_data_missing_window_under_three_scrape_intervals_is_refused(period, periods, interval, least, intervals,
                                                                      tmp_path, cli):
    """The data-missing rule's per-node count over a window of two scrape intervals fires on both of them bringing no
    GPU data, and a window ending at the edge of a node's scrapes holds one: with scrapes within 0.3 s of the minute a
    rule of 60 s periods x 2 at 60 s scrapes missed an exporter hung for 40 minutes at 10 of the 39 minutes it fires
    with scrapes mid-minute; at 120 s periods x 2 (four scrape intervals) at 38 (its first minute one scrape late).
    Said once: the period's agent alarm never firing is part of the same message."""
    definitions = (f"from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
                   f"    return [Alarm('gone', 'GPU data gone', Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'count'), '<', 1),"
                   f"\n                  severity='critical', absent=True, missing_data='breaching', "
                   f"period_seconds={period}, evaluation_periods={periods})]\n")
    message, stderr = refusal(cli, alarm_project(tmp_path, definitions, interval), tmp_path)
    assert message.startswith("error: alarms/mine.py:")
    assert (f"alarm 'gone': its window of {period * periods} s ({periods} periods of {period} s) is under 3 scrape "
            f"intervals (scrape.interval {interval} s)") in message
    assert "so it can never fire" in message
    assert (f"  fix: give the alarm period_seconds={least} (one period of {least} s is longer than its window of "
            f"{period * periods} s: give it evaluation_periods=1 ({least} s), and say that span in its description), "
            f"or give scrape.interval one of {intervals}, dividing cloudwatch.period and the alarm's period)"
            ) in stderr.splitlines()
    (tmp_path / "alarms" / "mine.py").write_text(definitions.replace(
        f"period_seconds={period}, evaluation_periods={periods}", f"period_seconds={least}, evaluation_periods=1"))
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "out"))
    assert code == 0 and "can never be in ALARM" not in stderr and "alarm 'gone': its" not in stderr, stderr


def test_the_bundled_data_missing_alarm_at_five_minute_scrapes_is_told_a_period_its_agent_alarm_fires_at(tmp_path, cli):
    """At scrape.interval 5m the bundled data-missing rule's window (2 x 300 s) is too short: the fix names an interval
    and a period at which its agent alarm, counting under half of a period's scrapes, can fire (100 s, 900 s), not
    150 s or 600 s, where it counts under 1 reading. One period of 900 s is longer than the 600 s window: the fix says
    so and names one period (900 s), not the two that made 1800 s. The agent alarm never firing and the cluster alarm
    firing where no exporter stopped are said in the same warning, once (AL029; not again under AL028)."""
    warning = _bundled_warning(tmp_path, cli, "scrape:\n  interval: 5m\n", "'gpu-data-missing'")
    assert warning["rule"] == "AL029"
    assert warning["fix"] == ("give scrape.interval one of 10s, 12s, 15s, 20s, 25s, 30s, 50s, 60s, 75s, 100s (100 s or less, dividing "
                              "cloudwatch.period and the alarm's period), or copy the bundled alarms into a folder of "
                              "your own, "
                              "named in definitions.alarms, and give it period_seconds=900 (one period of 900 s is "
                              "longer than its window of 600 s: give it evaluation_periods=1, datapoints_to_alarm=1 "
                              "(900 s), and say that span in its description)")
    assert warning["message"].endswith(
        "so a hung exporter is missed at such evaluations; its period of 300 s is under 3 scrape intervals "
        "(scrape.interval 300 s): its alarm on the agent's reads of kube-state-metrics fires on a period holding under "
        "0.5 readings of its 1 scrape, which no period with a reading does (one without has no datapoint, not "
        "breaching), so it can never fire; and its period holds no scrape whenever the exporters' scrapes land at its "
        "edge a little early then a little late, which its cluster alarm reads as no GPU reporting, so next to a "
        "period whose scrapes all failed (every exporter failing every other scrape) it fires though no exporter "
        "stopped")
    answer = json.loads(_generated(tmp_path))
    assert [n for n in answer["warnings"] if n["rule"] == "AL028"] == []


def test_the_bundled_idle_alarm_whose_window_600_s_periods_do_not_divide_is_told_its_span(tmp_path, cli):
    """idle_minutes 35 is 7 periods of 300 s: at 600 s periods no whole number of them spans its 2100 s, and the fix
    says so and names the two nearest numbers and their spans, not a period alone."""
    warning = _bundled_warning(tmp_path, cli, "scrape:\n  interval: 5m\nthresholds:\n  idle_minutes: 35\n", "'gpu-idle'")
    assert warning["fix"].endswith("give it period_seconds=600 (no whole number of 600 s periods spans its window of "
                                   "2100 s: give it evaluation_periods=3 (1800 s) or evaluation_periods=4 (2400 s), "
                                   "and say that span in its description)")


@pytest.mark.parametrize("pipeline, alarms", [
    ("otel", "its alarm on the agent's reads of kube-state-metrics fires"),
    ("classic", "its alarms on the agent's reads of kube-state-metrics and on each GPU (agent.pipeline: classic) fire")])
def test_a_data_missing_period_of_two_scrapes_whose_window_holds_enough_is_refused(pipeline, alarms, tmp_path, cli):
    """120 s periods x 3 at 60 s scrapes: a window of 6 scrape intervals, but a period of 2, under half of which (its
    agent alarm's, and on classic its per-GPU alarm's, count) is under 1 reading: no period with a reading is, so they
    could never fire. Refused as the other short periods of a user's rule are (it was built, warned by lint AL028)."""
    definitions = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
                   "    return [Alarm('gone', 'GPU data gone', Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'count'), '<', 1),"
                   "\n                  severity='critical', absent=True, missing_data='breaching', "
                   "period_seconds=120, evaluation_periods=3)]\n")
    settings = alarm_project(tmp_path, definitions, 60)
    settings.write_text(settings.read_text() + f"agent:\n  pipeline: {pipeline}\n")
    message, stderr = refusal(cli, settings, tmp_path)
    assert message == (f"error: alarms/mine.py:5: alarm 'gone': its period of 120 s is under 3 scrape intervals "
                       f"(scrape.interval 60 s): {alarms} on a period holding under 1 reading of its 2 scrapes, which "
                       f"no period with a reading does (one without has no datapoint, not breaching), so "
                       f"{'it' if pipeline == 'otel' else 'they'} can never fire")
    # 180 s x 2 keeps its window of 360 s (a longer period alone made it 540 s), on classic too (two periods)
    assert ("  fix: give the alarm period_seconds=180 and evaluation_periods=2, which keep its window of 360 s, or "
            "give scrape.interval one of 10s, 12s, 15s, 20s, 30s (40 s or less, dividing cloudwatch.period and the "
            "alarm's period)") in stderr.splitlines()
    (tmp_path / "alarms" / "mine.py").write_text(definitions.replace("period_seconds=120, evaluation_periods=3",
                                                                      "period_seconds=180, evaluation_periods=2"))
    code, _, stderr = cli("generate", "--config", str(settings), "--out", str(tmp_path / "out"))
    assert code == 0 and "can never be in ALARM" not in stderr and "alarm 'gone': its" not in stderr, stderr


@pytest.mark.parametrize("pipeline, keep", [
    # one period of 600 s keeps the 600 s window: followed at 150 s scrapes it fires at the minutes the bundled 2 x 300 s
    # fires (test_the_bundled_data_missing_fix_followed_at_150s_fires_as_the_rule_does)
    ("otel", "period_seconds=600 and evaluation_periods=1, datapoints_to_alarm=1, which keep its window of 600 s"),
    # on classic its per-GPU alarm over one period fires for a node added or removed: two periods, the nearest window
    ("classic", "period_seconds=600 (2 periods of 600 s are longer than its window of 600 s, its alarm per GPU "
                "(agent.pipeline: classic) firing over one period for a GPU node added or removed: give it "
                "evaluation_periods=2 (1200 s), and say that span in its description)")])
def test_the_bundled_data_missing_alarm_at_two_scrapes_a_period_is_kept_and_said(pipeline, keep, tmp_path, cli):
    """At scrape.interval 150s the bundled rule's window (2 x 300 s) holds 4 scrapes, its period 2: built (its period is
    not the user's to write), and generate warns with an interval and a period at which its agent alarm fires, and
    the evaluation periods that keep its window where any do; once (AL029, not again as AL028)."""
    warning = _bundled_warning(tmp_path, cli, f"scrape:\n  interval: 150s\nagent:\n  pipeline: {pipeline}\n",
                               "'gpu-data-missing'")
    assert ("alarm 'gpu-data-missing' (bundled): its period of 300 s is under 3 scrape intervals (scrape.interval "
            "150 s)") in warning["message"] and warning["rule"] == "AL029"
    assert warning["fix"] == ("give scrape.interval one of 10s, 12s, 15s, 20s, 25s, 30s, 50s, 60s, 75s, 100s (100 s or less, dividing "
                              "cloudwatch.period and the alarm's period), or copy the bundled alarms into a folder of "
                              "your own, "
                              f"named in definitions.alarms, and give it {keep}")
    assert [n for n in json.loads(_generated(tmp_path))["warnings"] if n["rule"] == "AL028"] == []


def _generated(tmp_path) -> str:
    """The JSON answer _bundled_warning's generate gave (kept beside its build)."""
    return (tmp_path / "answer.json").read_text()


@pytest.mark.parametrize("interval", ["5m", "150s"])
def test_the_bundled_data_missing_alarm_left_out_is_not_warned_of_its_periods(interval, tmp_path, cli):
    """With alarms.expected_gpus: none the data-missing rule is left out of both backends (a note says so): its window
    and period, judging nothing, are warned of no more (at 5m its window, at 150s its period were)."""
    (tmp_path / "gpudash.yaml").write_text(f"scrape:\n  interval: {interval}\nalarms:\n  expected_gpus: none\n")
    code, stdout, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "out"),
                               "--output", "json")
    assert code == 0, stderr
    answer = json.loads(stdout)
    assert [n["message"] for n in answer["warnings"] if "'gpu-data-missing'" in n["message"]] == []
    assert any(n["message"].startswith("alarm 'gpu-data-missing' is left out") for n in answer["notes"])


# a period under 60 s is refused (the agent publishes standard resolution): the fix keeps the rule's window at 60 s or
# the longer period its scrapes ask for, or says none does and names the nearest (60 s alone lengthened 30 s x 3 to 180 s)
@pytest.mark.parametrize("period, periods, interval, missing, fix, followed", [
    (30, 4, 30, "notBreaching", "period_seconds=60 and evaluation_periods=2, which keep its window of 120 s", (60, 2)),
    (30, 3, 30, "notBreaching", "period_seconds=60 (no whole number of 60 s periods spans its window of 90 s: give it "
                                "evaluation_periods=1 (60 s) or evaluation_periods=2 (120 s), and say that span in its "
                                "description)", (60, 2)),
    (30, 3, 30, "breaching", "period_seconds=60 (no whole number of 60 s periods spans its window of 90 s: give it "
                             "evaluation_periods=1 (60 s) or evaluation_periods=2 (120 s), and say that span in its "
                             "description)", (60, 1)),
    (30, 8, 60, "notBreaching", "period_seconds=120 and evaluation_periods=2, which keep its window of 240 s", (120, 2))])
def test_a_period_under_a_minute_is_told_the_standard_period_that_keeps_its_window(period, periods, interval, missing,
                                                                                     fix, followed, tmp_path, cli):
    message, stderr = refusal(cli, _project(tmp_path, period, periods, interval, missing), tmp_path)
    assert (f"alarm 'idle': a period of {period} s needs high-resolution metrics; the agent publishes standard "
            f"resolution (60 s)") in message
    assert f"  fix: give the alarm {fix}" in stderr.splitlines()
    # followed: built at the claimed period and periods, no refusal
    (tmp_path / "alarms" / "mine.py").write_text(_alarm(*followed, missing))
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "b2"))
    assert code == 0, stderr
    (request,) = [a["Request"] for a in json.loads((tmp_path / "b2" / "cloudwatch" / "alarms.json").read_text())[
        "alarms"] if a["Request"]["AlarmName"].endswith("-idle-warning")]
    periods_built = {m.get("Period") or m.get("MetricStat", {}).get("Period") for m in request["Metrics"]} - {None}
    assert (periods_built, request["EvaluationPeriods"]) == ({followed[0]}, followed[1])
    assert followed[0] * followed[1] in ((period * periods // followed[0]) * followed[0],
                                         (period * periods // followed[0] + 1) * followed[0])


def _followed(tmp_path, cli, written: str) -> dict:
    """The idle alarm's CloudWatch request of a build of alarms/mine.py as `written`, asserting generate neither
    refuses nor warns of the alarm."""
    (tmp_path / "alarms" / "mine.py").write_text(written)
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "followed"))
    assert code == 0 and "alarm 'idle'" not in stderr, stderr
    (request,) = [a["Request"] for a in json.loads((tmp_path / "followed" / "cloudwatch" / "alarms.json").read_text())[
        "alarms"] if a["Request"]["AlarmName"].endswith("-idle-warning")]
    return request


def test_a_window_over_three_hours_is_told_before_its_short_period_and_its_fix_followed_builds(tmp_path, cli):
    """60 s x 240 at 60 s scrapes (4 hours), missing data not breaching: its period was refused first, and its fix (120 s
    x 120, which keeps the 4 hours) was then refused for the 3 hours CloudWatch reads; told first, the window's fix said
    'keep period x evaluation periods within 3 hours (thresholds.idle_minutes <= 180)', no numbers and a setting of the
    bundled idle alarm, and 60 s x 180 followed was refused for its period. The window is told first, its fix the
    alarm's own fields at numbers its period's check takes too (120 s x 90, the 3 hours), saying why not 60 s x 180;
    followed, it builds with no refusal or warning."""
    message, stderr = refusal(cli, _project(tmp_path, 60, 240, 60), tmp_path)
    assert message == ("error: alarms/mine.py:5: alarm 'idle': 240 periods of 60 s span 4 hours; CloudWatch evaluates a "
                       "Metrics Insights alarm over the latest 3 hours of data only")
    assert ("  fix: give the alarm period_seconds=120 and evaluation_periods=90 (10800 s), within the 3 hours; at 180 "
            "periods of 60 s it would be refused: its period of 60 s is under 2 scrape intervals (scrape.interval "
            "60 s)") in stderr.splitlines()
    request = _followed(tmp_path, cli, _alarm(120, 90, "notBreaching"))
    periods = {m.get("Period") or m.get("MetricStat", {}).get("Period") for m in request["Metrics"]} - {None}
    assert (periods, request["EvaluationPeriods"]) == ({120}, 90)


def _gone(period: int, periods: int) -> str:
    return ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
            "    return [Alarm('gone', 'GPU data gone', Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'count'), '<', 1),\n"
            "                  severity='critical', absent=True, missing_data='breaching', "
            f"period_seconds={period}, evaluation_periods={periods})]\n")


# the fix keeps two periods (data_missing.fewest_periods): those spanning the window where any do (600 s: 300 s x 2),
# else the nearest; scraping more often mends nothing, and is not said
@pytest.mark.parametrize("period, interval, fix, followed", [
    (300, 60, "period_seconds=180 (2 periods of 180 s are longer than its window of 300 s, its alarm per GPU "
              "(agent.pipeline: classic) firing over one period for a GPU node added or removed: give it "
              "evaluation_periods=2 (360 s), and say that span in its description)", (180, 2)),
    (600, 60, "period_seconds=300 and evaluation_periods=2, which keep its window of 600 s", (300, 2)),
    (300, 30, "period_seconds=120 (no whole number of 120 s periods spans its window of 300 s: give it "
              "evaluation_periods=2 (240 s) or evaluation_periods=3 (360 s), and say that span in its description)",
     (120, 3))])
def test_a_data_missing_rule_of_one_period_on_classic_is_refused_by_generate_and_lint_alike(period, interval, fix,
                                                                                           followed, tmp_path, cli):
    """On agent.pipeline: classic the rule's per-GPU alarm over one period fires for a GPU node added or removed (300 s
    x 1 at 60 s scrapes: 12 minutes in ALARM after a node removed, test_data_missing_short_period). The bundled rule's
    fix never names one period there; a rule of the user's of one period was built without a word. It is refused, as
    the user's other data-missing rules that judge wrong are, and lint of the project says the same; on otel it is
    built."""
    settings = alarm_project(tmp_path, _gone(period, 1), interval)
    settings.write_text(settings.read_text() + "agent:\n  pipeline: classic\n")
    message, stderr = refusal(cli, settings, tmp_path)
    assert message == ("error: alarms/mine.py:5: alarm 'gone': it is judged over one period (evaluation_periods=1), "
                       "and on agent.pipeline: classic its alarm per GPU fires over one period for a GPU node added or "
                       "removed: the node's GPUs are short of observations in the period it came or left, and a "
                       "removed node's short datapoint stays the latest, so the alarm stays in ALARM minutes after "
                       "(over 2 periods running it fires for neither)")
    assert f"  fix: give the alarm {fix}" in stderr.splitlines()
    said = []
    for command in ("generate", "lint"):
        code, stdout, _ = cli(command, "--config", str(settings), *(("--out", str(tmp_path / "json"))
                                                                    if command == "generate" else ()),
                              "--output", "json")
        said.append((code, json.loads(stdout)["error"]))
    assert said[0] == said[1] and said[0][0] == 2 and said[0][1]["fix"] == f"give the alarm {fix}"
    _gone_followed(tmp_path, cli, settings, followed)
    (tmp_path / "alarms" / "mine.py").write_text(_gone(period, 1))
    settings.write_text(settings.read_text().replace("pipeline: classic", "pipeline: otel"))
    code, _, stderr = cli("generate", "--config", str(settings), "--out", str(tmp_path / "otel"))
    assert code == 0 and not _warned_of("'gone'", stderr), stderr


@pytest.mark.parametrize("period, periods, fix, followed", [
    (30, 2, "period_seconds=60 (2 periods of 60 s are longer than its window of 60 s, its alarm per GPU (agent.pipeline: "
            "classic) firing over one period for a GPU node added or removed: give it evaluation_periods=2 (120 s), and "
            "say that span in its description)", (60, 2)),
    (30, 3, "period_seconds=60 (2 periods of 60 s are longer than its window of 90 s, its alarm per GPU (agent.pipeline: "
            "classic) firing over one period for a GPU node added or removed: give it evaluation_periods=2 (120 s), and "
            "say that span in its description)", (60, 2)),
    (30, 4, "period_seconds=60 and evaluation_periods=2, which keep its window of 120 s", (60, 2))])
def test_a_data_missing_rule_under_a_minute_on_classic_is_told_periods_it_is_not_refused_for(period, periods, fix,
                                                                                             followed, tmp_path, cli):
    """A data-missing rule of 30 s x 2 or x 3 at 10 s scrapes on classic is refused for its high-resolution period; its
    fix named one period of 60 s ('period_seconds=60 and evaluation_periods=1, which keep its window of 60 s'), which
    is refused in turn (one period on classic: its per-GPU alarm fires for a node added or removed). The fix names two
    periods, and followed it builds with no refusal or warning of the rule."""
    settings = alarm_project(tmp_path, _gone(period, periods), 10)
    settings.write_text(settings.read_text() + "agent:\n  pipeline: classic\n")
    message, stderr = refusal(cli, settings, tmp_path)
    assert message == (f"error: alarms/mine.py:5: alarm 'gone': a period of {period} s needs high-resolution metrics; "
                       f"the agent publishes standard resolution (60 s)")
    assert f"  fix: give the alarm {fix}" in stderr.splitlines()
    _gone_followed(tmp_path, cli, settings, followed)


@pytest.mark.parametrize("period", [60, 120])
def test_a_data_missing_rule_of_one_period_on_classic_is_told_it_before_its_scrape_interval(period, tmp_path, cli):
    """A data-missing rule of one period on classic at scrapes its period is not a whole number of (60 s or 120 s at
    150 s) was told 'pick a scrape.interval that divides 60 s (10s, ..., 60s)', and each interval followed was refused
    for its one period, which no interval mends. The one period is told first, with the periods its scrapes ask for,
    and that fix followed builds."""
    settings = alarm_project(tmp_path, _gone(period, 1), 150)
    settings.write_text(settings.read_text() + "agent:\n  pipeline: classic\n")
    message, stderr = refusal(cli, settings, tmp_path)
    assert "it is judged over one period (evaluation_periods=1), and on agent.pipeline: classic" in message
    assert "not a whole number of scrape intervals" not in stderr
    assert (f"  fix: give the alarm period_seconds=600 (2 periods of 600 s are longer than its window of {period} s, "
            f"its alarm per GPU (agent.pipeline: classic) firing over one period for a GPU node added or removed: give "
            f"it evaluation_periods=2 (1200 s), and say that span in its description)") in stderr.splitlines()
    _gone_followed(tmp_path, cli, settings, (600, 2))


@pytest.mark.parametrize("period, missing", [(120, "breaching"), (60, "notBreaching")])
def test_each_scrape_interval_a_period_not_whole_scrapes_is_told_builds(period, missing, tmp_path, cli):
    """An alarm of 120 s (or a filled one of 60 s) at 150 s scrapes is refused: its period is not a whole number of
    scrape intervals; the fix names intervals dividing its period, and each, written as scrape.interval, builds with no
    refusal or warning of the alarm."""
    settings = _project(tmp_path, period, 2, 150, missing)
    message, stderr = refusal(cli, settings, tmp_path)
    assert f"its period of {period} s is not a whole number of scrape intervals (scrape.interval 150 s)" in message
    (named,) = [line.split("(")[1].split(")")[0] for line in stderr.splitlines()
                if line.startswith(f"  fix: pick a scrape.interval that divides {period} s")]
    refused = {}
    for interval in named.split(", "):
        settings.write_text(settings.read_text().replace(settings.read_text().split("\n")[1], f"  interval: {interval}"))
        code, _, stderr = cli("generate", "--config", str(settings), "--out", str(tmp_path / interval))
        if code or _warned_of("'idle'", stderr):
            refused[interval] = stderr.splitlines()[1]
    assert not refused, refused


def _gone_followed(tmp_path, cli, settings: Path, followed: tuple[int, int]) -> None:
    """The data-missing rule written at `followed` (period, evaluation periods) builds with no refusal or warning of it,
    its per-GPU alarm at those."""
    (tmp_path / "alarms" / "mine.py").write_text(_gone(*followed))
    code, _, stderr = cli("generate", "--config", str(settings), "--out", str(tmp_path / "followed"))
    assert code == 0 and not _warned_of("'gone'", stderr), stderr
    (request,) = [a["Request"] for a in json.loads((tmp_path / "followed" / "cloudwatch" / "alarms.json").read_text())[
        "alarms"] if a["Request"]["AlarmName"].endswith("-gone-per-gpu-critical")]
    assert (request["Metrics"][0]["Period"], request["EvaluationPeriods"]) == followed


def _warned_of(alarm: str, stderr: str) -> list[str]:
    """generate's warnings and errors naming `alarm` (its notes, such as lint AL017's of a per-GPU alarm, left)."""
    return [line for line in stderr.splitlines() if line.startswith(("warning:", "error:")) and alarm in line]
