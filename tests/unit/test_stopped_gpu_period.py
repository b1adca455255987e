"""A GPU stopped reporting rule of the user's whose period is a single scrape interval is refused; one of two or more
is judged as the bundled rule is.

The rule vouches for a node's exporter by its other GPUs' reading in each period, and its CloudWatch alarm judges each
node on a datapoint of its GPUs unread in each period, every period breaching, no data not breaching. An exporter
whose scrapes land at a period's edge (here within 0.3 s of the minute) leaves some periods of one scrape interval
without a scrape and others with two: with 60 s periods at 60 s scrapes the alarm over ten periods was in ALARM at
15 of the 78 minutes after the GPU had been lost for its window (evaluation range one period longer than the alarm's;
40 with two). With two scrape intervals a period (120 s periods at 60 s scrapes, or 60 s at 30 s) it is in ALARM at
every minute from the window's end at every plausible evaluation range, as with scrapes mid-minute.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generator.cli_base import main
from tests.support import cloudwatch_eval
from tests.support.edge_scrapes import alarm_project, edge_points, refusal

LOST = 1800  # GPU 1 of four stops at minute 30
# the scrape intervals a 60 s period's refusal names (each divides it and cloudwatch.period 300, two in a period)
TO30 = "give scrape.interval one of 10s, 12s, 15s, 20s, 30s (30 s or less, dividing cloudwatch.period and the alarm's period)"


def _alarm(period: int, periods: int) -> str:
    return (f"from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
            f"    return [Alarm('gpu-gone', 'GPU gone', Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'count', "
            f"('node', 'gpu')), '<', 1),\n"
            f"                  severity='critical', period_seconds={period}, evaluation_periods={periods}, "
            f"stopped=True)]\n")


def _project(folder: Path, period: int, periods: int, interval: int) -> Path:
    return alarm_project(folder, _alarm(period, periods), interval)


def _page(lost: bool) -> str:
    lines = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    lines += [f'DCGM_FI_DEV_GPU_TEMP{{gpu="{gpu}",UUID="GPU-node-a-{gpu}",device="nvidia{gpu}",'
              f'modelName="NVIDIA A100-SXM4-80GB",Hostname="node-a"}} {40 + gpu}'
              for gpu in range(4) if not (lost and gpu == 1)]
    return "\n".join(lines) + "\n"


# the fix keeps the rule's window (a longer period alone lengthened it: 60 s x 10 at 120 s, 20 minutes), or says none
# does and names the nearest; and the scrape intervals at which the rule as written is taken, none for a period under
# 60 s, which CloudWatch judges at no interval ('or scrape more often' led 30 s x 4 at 30 s scrapes to 15 s, refused)
@pytest.mark.parametrize("period, periods, interval, fix", [
    (60, 10, 60, "period_seconds=120 and evaluation_periods=5, which keep its window of 600 s, or " + TO30),
    (60, 5, 60, "period_seconds=120 (no whole number of 120 s periods spans its window of 300 s: give it "
                "evaluation_periods=2 (240 s) or evaluation_periods=3 (360 s), and say that span in its description), "
                "or " + TO30),
    (30, 4, 30, "period_seconds=60 and evaluation_periods=2, which keep its window of 120 s")])
def test_a_period_of_one_scrape_interval_is_refused(period, periods, interval, fix, tmp_path, cli):
    message, stderr = refusal(cli, _project(tmp_path, period, periods, interval), tmp_path)
    assert message.startswith("error: alarms/mine.py:")
    assert (f"alarm 'gpu-gone': its period of {period} s is under 2 scrape intervals (scrape.interval {interval} s)"
            in message)
    assert f"  fix: give the alarm {fix}" in stderr.splitlines()


@pytest.mark.parametrize("period, periods, interval", [(120, 5, 60), (60, 10, 30)])
def test_two_scrape_intervals_a_period_fire_at_every_range_with_scrapes_at_the_minutes_edge(period, periods, interval,
                                                                                           tmp_path):
    # two hours, each scrape within 0.3 s of the minute's edge
    request, points = edge_points(_project(tmp_path, period, periods, interval), "gpu-gone",
                                  lambda t: _page(t >= LOST), interval, 7200)
    assert (request["EvaluationPeriods"], request["DatapointsToAlarm"], request["TreatMissingData"]) == (
        periods, periods, "notBreaching")
    ready = (LOST + period * periods) // 60  # the minute the window holds only periods since the loss
    fired = cloudwatch_eval.fired_at(request, points, [m * 60 for m in range(31, 118)], "node")
    assert fired == {"node-a": {m * 60 for m in range(ready, 118)}}


def test_the_bundled_rule_at_five_minute_scrapes_is_kept_and_said(tmp_path, cli):
    """The bundled rule's 5-minute periods hold one scrape at scrape.interval 5m: it is kept (its period is not the
    user's to write), and generate warns with what to do, in text and in JSON."""
    settings = tmp_path / "gpudash.yaml"
    settings.write_text("scrape:\n  interval: 5m\n")
    code, _, stderr = cli("generate", "--config", str(settings), "--out", str(tmp_path / "build"))
    assert code == 0, stderr
    assert ("alarm 'gpu-stopped-reporting' (bundled): its period of 300 s is under 2 scrape intervals "
            "(scrape.interval 300 s)") in stderr
    # 150s left out: the data-missing rule's agent alarm never fires at two scrapes a period (it warned then)
    assert ("fix: give scrape.interval one of 10s, 12s, 15s, 20s, 25s, 30s, 50s, 60s, 75s, 100s (150 s or less, dividing "
            "cloudwatch.period and the alarm's period; not 150s, too short for alarm 'gpu-data-missing'), or copy the "
            "bundled alarms") in stderr
    rules = (tmp_path / "build" / "prometheus" / "rules.yaml").read_text()
    assert "GpudashGpuStoppedReporting" in rules
    code, stdout, _ = cli("generate", "--config", str(settings), "--out", str(tmp_path / "json"), "--output", "json")
    (warning,) = [n for n in json.loads(stdout)["warnings"] if "gpu-stopped-reporting" in n["message"]]
    # its copy at 600 s periods keeps the 10 minutes its description names in one period, not two (20 minutes)
    assert warning["fix"] == ("give scrape.interval one of 10s, 12s, 15s, 20s, 25s, 30s, 50s, 60s, 75s, 100s (150 s or less, "
                              "dividing cloudwatch.period and the alarm's period; not 150s, too short for alarm "
                              "'gpu-data-missing'), or copy the bundled alarms into a folder of "
                              "your own, "
                              "named in definitions.alarms, and give it period_seconds=600 and evaluation_periods=1, "
                              "which keep its window of 600 s")


def test_the_bundled_rules_fix_followed_at_five_minute_scrapes_fires_ten_minutes_after_the_last_reading(tmp_path,
                                                                                                         cli):
    """One period of 600 s at 300 s scrapes (the fix the bundled rule's warning gives) is built with no refusal, and
    with scrapes at the minute's edge its CloudWatch alarm is in ALARM at every minute from 10 minutes after the lost
    GPU's last reading (the scrape at minute 26), at every evaluation range; two such periods would wait 20."""
    settings = _project(tmp_path, 600, 1, 300)
    code, _, stderr = cli("generate", "--config", str(settings), "--out", str(tmp_path / "build"))
    assert code == 0 and "alarm 'gpu-gone'" not in stderr, stderr
    request, points = edge_points(settings, "gpu-gone", lambda t: _page(t >= LOST), 300, 7200)
    assert (request["Metrics"][0]["Period"], request["EvaluationPeriods"]) == (600, 1)
    for extra in (1, 2):
        fired = cloudwatch_eval.fired_at(request, points, [m * 60 for m in range(31, 118)], "node",
                                         evaluation_range=1 + extra)
        assert fired == {"node-a": {m * 60 for m in range(36, 118)}}


def test_datapoints_to_alarm_of_fewer_periods_is_refused_with_the_period_in_one_message(tmp_path, cli):
    """The rule fires for a GPU every scrape over its window read unread, each period: its CloudWatch alarm is built
    N of N. A datapoints_to_alarm under evaluation_periods, which would not be built, is refused; all of them is built;
    a short period's fix names datapoints_to_alarm of all its periods where the alarm sets one. Where its period is too
    short as well, one message says both: told alone (a definition's refusal, before the settings), its fix followed
    was refused for the period."""
    written = _alarm(60, 7).replace("stopped=True", "stopped=True, datapoints_to_alarm=4")
    message, stderr = refusal(cli, alarm_project(tmp_path, written, 30), tmp_path)
    assert ("stopped=True fires for a GPU that every scrape over its window read unread, each of its 7 periods: "
            "datapoints_to_alarm 4 would not be built") in message
    assert "  fix: drop datapoints_to_alarm (for a window of 4 periods write evaluation_periods=4)" in stderr.splitlines()
    code, stderr = _generated(tmp_path, cli, 60, 7, 7, "b2")
    assert code == 0, stderr
    (request,) = [a["Request"] for a in json.loads((tmp_path / "b2" / "cloudwatch" / "alarms.json").read_text())[
        "alarms"] if "gpu-gone" in a["Request"]["AlarmName"]]
    assert (request["EvaluationPeriods"], request["DatapointsToAlarm"]) == (7, 7)
    # 30 s x 7 of 7 at 30 s scrapes: 210 s, told 60 s periods, all of them breaching (the evaluation periods alone
    # left datapoints_to_alarm 7 over 3 or 4 periods, which the model refuses)
    code, stderr = _generated(tmp_path, cli, 30, 7, 7, "b3")
    assert code == 2
    assert ("  fix: give the alarm period_seconds=60 (no whole number of 60 s periods spans its window of 210 s: give "
            "it evaluation_periods=3, datapoints_to_alarm=3 (180 s) or evaluation_periods=4, datapoints_to_alarm=4 "
            "(240 s), and say that span in its description)") in stderr.splitlines()
    # 30 s x 7 of 4: both at once, and the fix drops datapoints_to_alarm with the period's change
    code, stderr = _generated(tmp_path, cli, 30, 7, 4, "b4")
    assert code == 2
    assert ("alarm 'gpu-gone': stopped=True fires for a GPU that every scrape over its window read unread, each of its "
            "7 periods: datapoints_to_alarm 4 would not be built; and its period of 30 s is under 2 scrape intervals "
            "(scrape.interval 30 s)") in stderr
    assert ("  fix: drop datapoints_to_alarm, and give the alarm period_seconds=60 (no whole number of 60 s periods "
            "spans its window of 210 s: give it evaluation_periods=3 (180 s) or evaluation_periods=4 (240 s), and say "
            "that span in its description)") in stderr.splitlines()
    code, stderr = _generated(tmp_path, cli, 60, 3, None, "b5")
    assert code == 0 and "alarm 'gpu-gone'" not in stderr, stderr


def _generated(tmp_path, cli, period: int, periods: int, needed: int | None, out: str) -> tuple[int, str]:
    """generate's exit code and stderr with alarms/mine.py the rule of `period` s x `periods`, `needed` of them."""
    written = _alarm(period, periods)
    if needed is not None:
        written = written.replace("stopped=True", f"stopped=True, datapoints_to_alarm={needed}")
    (tmp_path / "alarms" / "mine.py").write_text(written)
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / out))
    return code, stderr


def test_a_fix_whose_longer_period_does_not_divide_three_hours_names_no_span_past_them(tmp_path, cli):
    """240 s x 45 at 240 s scrapes spans the 3 hours a Metrics Insights alarm reads; no whole number of the 480 s periods
    the rule asks for spans them, and the next above (23 x 480 s, 11040 s) would be refused: the fix names 22 alone,
    which followed builds at 480 s x 22 with no refusal or warning of the rule."""
    settings = _project(tmp_path, 240, 45, 240)
    settings.write_text(settings.read_text() + "cloudwatch:\n  period: 3600\n")
    built = _fix_followed(cli, tmp_path, settings, (
        "period_seconds=480 (no whole number of 480 s periods spans its window of 10800 s: give it "
        "evaluation_periods=22 (10560 s), and say that span in its description), or give scrape.interval one of 10s, "
        "12s, 15s, 16s, 20s, 24s, 30s, 40s, 48s, 60s, 80s, 120s (120 s or less, dividing cloudwatch.period and the "
        "alarm's period)"), 480, 22)
    (request,) = [a["Request"] for a in json.loads((built / "cloudwatch" / "alarms.json").read_text())[
        "alarms"] if "gpu-gone" in a["Request"]["AlarmName"]]
    assert request["EvaluationPeriods"] == 22


def test_a_rule_prometheus_alone_judges_is_told_spans_past_the_three_hours_cloudwatch_reads(tmp_path, cli):
    """On agent.pipeline: classic the rule makes no CloudWatch alarm (lint AL027): the 3 hours a Metrics Insights alarm
    reads do not bound it. 30 s x 361 (10,830 s) at 30 s scrapes is told both spans nearest its window at 60 s periods
    (the longer was dropped, as for its CloudWatch alarm), and the longer, followed, is built."""
    settings = _project(tmp_path, 30, 361, 30)
    settings.write_text(settings.read_text() + "agent:\n  pipeline: classic\n")
    built = _fix_followed(cli, tmp_path, settings, (
        "period_seconds=60 (no whole number of 60 s periods spans its window of 10830 s: give it "
        "evaluation_periods=180 (10800 s) or evaluation_periods=181 (10860 s), and say that span in its description), "
        "or give scrape.interval one of 10s, 15s (15 s or less, dividing cloudwatch.period and the alarm's period)"),
        60, 181)
    assert "GpudashGpuGone" in (built / "prometheus" / "rules.yaml").read_text()


def _fix_followed(cli, tmp_path, settings: Path, fix: str, period: int, periods: int) -> Path:
    """The build of alarms/mine.py the rule of `period` s x `periods`, asserting generate refused the rule first
    with `fix` ('give the alarm ...'), then built it with nothing said of it (but that it has no CloudWatch alarm)."""
    _, stderr = refusal(cli, settings, tmp_path)
    assert f"  fix: give the alarm {fix}" in stderr.splitlines()
    (tmp_path / "alarms" / "mine.py").write_text(_alarm(period, periods))
    code, _, stderr = cli("generate", "--config", str(settings), "--out", str(tmp_path / "b2"))
    assert code == 0 and not [line for line in stderr.splitlines() if "'gpu-gone'" in line
                              and not line.startswith("note: alarm 'gpu-gone' has no CloudWatch alarm")], stderr
    return tmp_path / "b2"


# each command reading the alarms, with what it needs to get as far as reading them (nothing it would reach: the
# refusal comes first)
READING = {"generate": ("--out", "build"), "lint": (), "cost": ("--pods", "1"),
           "plan": ("--no-grafana", "--no-cloudwatch"), "apply": ("--dry-run",), "push": ("--dry-run",),
           "preview": ("--prometheus-url", "http://127.0.0.1:9", "--out", "site"),
           "verify": ("--skip", "kube", "--skip", "exporter", "--skip", "cloudwatch",
                      "--prometheus-url", "http://127.0.0.1:9")}


def test_every_command_reading_the_alarms_is_checked():
    assert set(READING) == set(main.list_commands(None)) - {"metrics", "init-config"}


@pytest.mark.parametrize("command", sorted(READING))
def test_datapoints_to_alarm_of_fewer_periods_is_refused_by_every_command_reading_the_alarms(command, tmp_path,
                                                                                          monkeypatch, cli):
    """A definition's mistake: refused as the alarm is read, as the model refused it before the settings' checks of its
    periods told it with theirs (preview and verify, which build no alarm, took it)."""
    monkeypatch.chdir(tmp_path)
    written = _alarm(120, 7).replace("stopped=True", "stopped=True, datapoints_to_alarm=4")
    settings = alarm_project(tmp_path, written, 30)
    code, _, stderr = cli(command, "--config", str(settings), *READING[command],
                          env={"GRAFANA_URL": "http://127.0.0.1:9", "GRAFANA_TOKEN": "t"})
    assert code == 2, stderr
    assert ("error: alarms/mine.py:5: alarm 'gpu-gone': stopped=True fires for a GPU that every scrape over its window "
            "read unread, each of its 7 periods: datapoints_to_alarm 4 would not be built") in stderr.splitlines()
    assert "  fix: drop datapoints_to_alarm (for a window of 4 periods write evaluation_periods=4)" in stderr.splitlines()


@pytest.mark.parametrize("pipeline, judged", [
    ("classic", "its Prometheus rule then lets go of it"),
    ("otel", "its CloudWatch alarm, every period breaching and no data not breaching, then misses the lost GPU, and "
             "its Prometheus rule lets go of it")])
def test_a_short_period_is_said_of_the_rule_and_alarm_the_pipeline_makes(pipeline, judged, tmp_path, cli):
    """On agent.pipeline: classic the rule has no CloudWatch alarm (lint AL027): its short period's refusal speaks of
    its Prometheus rule alone, not of an alarm it does not make."""
    settings = _project(tmp_path, 30, 4, 30)
    settings.write_text(settings.read_text() + f"agent:\n  pipeline: {pipeline}\n")
    message, _ = refusal(cli, settings, tmp_path)
    assert message.endswith(f"(a node's scrapes falling at a period's edge): {judged}")
