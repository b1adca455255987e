"""Lint AL029: the bundled alarms whose period is too short for the scrape interval, which generate keeps and warns
about, are said by `gpudash lint` too, of the build read back (`--from`) as of one it builds: a CI running lint on the
build it ships sees what generate said when it was made.

At scrape.interval 5m on the OTel pipeline three are: the stopped rule's and the idle alarm's 5-minute periods hold one
scrape, the data-missing rule's 10-minute window two.
"""

from __future__ import annotations

import json


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
