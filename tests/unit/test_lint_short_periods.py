"""Lint AL029: the bundled alarms whose period is too short for the scrape interval, which generate keeps and warns
about, are said by `gpudash lint` too, of the build read back (`--from`) as of one it builds: a CI running lint on the
build it ships sees what generate said when it was made.

At scrape.interval 5m on the OTel pipeline three are: the stopped rule's and the idle alarm's 5-minute periods hold one
scrape, the data-missing rule's 10-minute window two.
"""

from __future__ import annotations

import json
import re


def _said(tmp_path, cli):
    """(generate's warnings of lint AL029 as (where, message, fix), lint --from's AL029 findings as (where, message),
    lint's exit code) of one build at scrape.interval 5m."""
    settings = tmp_path / "gpudash.yaml"
    settings.write_text("scrape:\n  interval: 5m\nagent:\n  pipeline: otel\n")
    code, stdout, stderr = cli("generate", "--config", str(settings), "--out", str(tmp_path / "build"),
                               "--output", "json")
    assert code == 0, stderr
    warned = [(n["where"], n["message"], n["fix"]) for n in json.loads(stdout)["warnings"] if n["rule"] == "AL029"]
    code, stdout, stderr = cli("lint", "--config", str(settings), "--from", str(tmp_path / "build"), "--output", "json")
    found = [(f["where"], f["message"]) for f in json.loads(stdout)["findings"] if f["rule"] == "AL029"]
    return warned, found, code


def test_lint_of_a_five_minute_build_says_the_short_periods_generate_said(tmp_path, cli):
    warned, found, code = _said(tmp_path, cli)
    assert code == 0  # warnings, as generate's
    assert [message.split("(bundled)")[0] for _, message, _ in warned] == [
        "alarms/gpu_alarms.py:108: alarm 'gpu-stopped-reporting' ", "alarms/gpu_alarms.py:77: alarm 'gpu-idle' ",
        "alarms/gpu_alarms.py:97: alarm 'gpu-data-missing' "]
    # each of generate's warnings, its where, what and fix, is a finding of lint --from
    assert sorted(found) == sorted((where, f"{message.removeprefix(f'{where}: ')}; fix: {fix}")
                                   for where, message, fix in warned)


def test_lint_of_a_build_at_the_default_interval_says_no_short_period(tmp_path, cli):
    (tmp_path / "gpudash.yaml").write_text("agent:\n  pipeline: otel\n")
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "build"))
    assert code == 0, stderr
    code, stdout, _ = cli("lint", "--config", str(tmp_path / "gpudash.yaml"), "--from", str(tmp_path / "build"),
                          "--output", "json")
    assert code == 0 and [f for f in json.loads(stdout)["findings"] if f["rule"] == "AL029"] == []


def test_each_scrape_interval_a_fix_names_is_taken_and_mends_its_alarm(tmp_path, cli):
    """At 5m the fixes said 'give scrape.interval 150s or less' (and '100s or less'): 120s, 90s and 45s are less, and
    the settings refuse each (cloudwatch.period 300 s is not a whole number of scrape intervals). A fix names the
    intervals the settings take, their refusal's own list up to the longest the alarm's scrapes allow, but those at
    which another bundled alarm's period is too short, and the longest and the shortest followed build without any
    warning of a bundled alarm's period."""
    warned, _, _ = _said(tmp_path, cli)
    settings = tmp_path / "gpudash.yaml"
    settings.write_text("scrape:\n  interval: 2m\nagent:\n  pipeline: otel\n")
    code, stdout, _ = cli("generate", "--config", str(settings), "--out", str(tmp_path / "refused"), "--output", "json")
    assert code == 2
    taken = re.findall(r"\b\d+s\b", json.loads(stdout)["error"]["fix"])
    named: dict[str, list[str]] = {}
    for _, message, fix in warned:
        listed = re.match(r"give scrape\.interval one of ((?:\d+s, )*\d+s) \(", fix).group(1).split(", ")
        assert listed == [interval for interval in taken if int(interval[:-1]) <= int(listed[-1][:-1])]
        for interval in listed:
            named.setdefault(interval, []).append(re.search(r"alarm '([^']+)'", message).group(1))
    # 150s, two scrapes a period, is under the three the data-missing rule's agent alarm counts: no fix names it, and the
    # stopped and idle rules' fixes say why they leave it out (followed, it led into the data-missing rule's warning)
    assert sorted(named, key=lambda interval: int(interval[:-1])) == [i for i in taken if i != "150s"]
    assert all(len(alarms) == 3 for alarms in named.values())
    assert sum("not 150s, too short for alarm 'gpu-data-missing')" in fix for _, _, fix in warned) == 2
    # each listed is one of the settings' own; built here, the longest and the shortest, with no warning of any
    # bundled alarm's period
    for interval in ("100s", "10s"):
        settings.write_text(f"scrape:\n  interval: {interval}\nagent:\n  pipeline: otel\n")
        code, stdout, stderr = cli("generate", "--config", str(settings), "--out", str(tmp_path / interval),
                                   "--output", "json")
        assert code == 0, stderr
        assert [n["message"] for n in json.loads(stdout)["warnings"] if n["rule"] == "AL029"] == [], interval
