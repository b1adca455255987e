"""Nothing the definitions ask for leaves a build unsaid: an alarm on a field the counters CSV does not
collect is named by `generate` and listed by `lint` (DF001), and it is missing from the Prometheus rules
and the CloudWatch alarms alike."""

from __future__ import annotations

import json

import yaml

from generator.resources import default_counters

LEFT_OUT = ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_XID_ERRORS")


def _csv_without(folder, names):
    lines = [line for line in default_counters().read_text().splitlines()
             if not line or line.startswith("#") or line.split(",")[0].strip() not in names]
    path = folder / "counters.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _alarm_ids(build):
    cloudwatch = {entry["Request"]["AlarmName"] for entry in json.loads((build / "cloudwatch/alarms.json").read_text())["alarms"]}
    rules = yaml.safe_load((build / "prometheus/rules.yaml").read_text())
    prometheus = {rule["alert"] for group in rules["groups"] for rule in group["rules"] if "alert" in rule}
    return cloudwatch, prometheus


def test_an_alarm_with_no_cloudwatch_alarm_is_noted_by_generate(tmp_path, cli):
    """On agent.pipeline: classic gpu-stopped-reporting is a Prometheus rule alone (lint AL027): generate says so, as it
    says an alarm left out of both (DF001) or out of CloudWatch by the Container Insights add-on (CW013); it said
    nothing, and one deploying CloudWatch alone was not told it goes without it. On the OTel pipeline (the default) it
    has its CloudWatch alarm, each node's GPUs unread, and nothing is noted."""
    config = tmp_path / "classic.yaml"
    config.write_text("agent:\n  pipeline: classic\nthresholds:\n  pcie_replays_per_minute: 0\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "build"))
    assert code == 0, stderr
    cloudwatch, prometheus = _alarm_ids(tmp_path / "build")
    assert "GpudashGpuStoppedReporting" in prometheus and not any("stopped" in name for name in cloudwatch)
    assert "note: alarm 'gpu-stopped-reporting' has no CloudWatch alarm, only its Prometheus rule: CloudWatch cannot " \
           "judge" in stderr and stderr.count("(lint AL027)") == 1, stderr
    code, _, stderr = cli("generate", "--out", str(tmp_path / "otel"))
    assert code == 0, stderr
    cloudwatch, prometheus = _alarm_ids(tmp_path / "otel")
    assert "GpudashGpuStoppedReporting" in prometheus and "gpudash-gpu-cluster-gpu-stopped-reporting-critical" in \
        cloudwatch and "(lint AL027)" not in stderr, stderr


def test_an_alarm_on_a_field_the_csv_lacks_is_noted_and_missing_from_both_backends(tmp_path, cli):
    csv = _csv_without(tmp_path, LEFT_OUT)
    code, _, stderr = cli("generate", "--csv", str(csv), "--out", str(tmp_path / "build"))
    assert code == 0, stderr
    for alarm, field in (("pcie-replays", LEFT_OUT[0]), ("xid-error", LEFT_OUT[1])):
        assert f"note: alarm {alarm!r} left out: the counters CSV does not collect {field}: no CloudWatch alarm " \
               f"and no Prometheus rule (lint DF001)" in stderr, stderr
    cloudwatch, prometheus = _alarm_ids(tmp_path / "build")
    assert cloudwatch and prometheus
    assert not any("pcie-replays" in name or "xid-error" in name for name in cloudwatch), cloudwatch
    assert not {"GpudashPcieReplays", "GpudashXidError"} & prometheus, prometheus
    assert {"GpudashGpuTempHigh", "GpudashGpuIdle"} <= prometheus  # the others are all there
    assert any("gpu-temp-high" in name for name in cloudwatch)

    for args in ((), ("--from", str(tmp_path / "build"))):
        code, stdout, stderr = cli("lint", "--csv", str(csv), *args, "--output", "json")
        assert code == 0, stderr
        notes = {f["message"]: f["where"] for f in json.loads(stdout)["findings"] if f["rule"] == "DF001"}
        for alarm, field in (("pcie-replays", LEFT_OUT[0]), ("xid-error", LEFT_OUT[1])):
            where = notes[f"alarm {alarm!r} left out: the counters CSV does not collect {field}"]
            assert where.startswith("alarms/gpu_alarms.py:"), where


def test_with_every_field_collected_no_alarm_is_noted(tmp_path, cli):
    code, _, stderr = cli("generate", "--out", str(tmp_path / "build"))
    assert code == 0, stderr
    # none left out (DF001), none without a CloudWatch alarm on the OTel pipeline (AL027: the test above)
    assert not [line for line in stderr.splitlines() if line.startswith("note: alarm")], stderr
    cloudwatch, prometheus = _alarm_ids(tmp_path / "build")
    assert {"GpudashPcieReplays", "GpudashXidError"} <= prometheus


def test_a_dashboard_whose_every_panel_is_left_out_is_warned_of_by_generate_and_lint(tmp_path, cli):
    """A counters CSV collecting none of the fields of the GPU health dashboard: each of its panels was a DF001 note
    among the others, and the dashboard was written and published with no panel, unsaid. generate now warns, naming
    the dashboard and the two ways out, and lint says it as a warning (DF002), from the build too; the dashboard is
    still written (left out of the build, `push --prune` would delete it from Grafana)."""
    import re

    from generator.resources import bundled

    fields = set(re.findall(r"DCGM_FI_[A-Z0-9_]+", (bundled("dashboards") / "gpu_health.py").read_text()))
    csv = _csv_without(tmp_path, fields)
    code, _, stderr = cli("generate", "--csv", str(csv), "--out", str(tmp_path / "build"))
    assert code == 0, stderr
    warned = [line for line in stderr.splitlines() if "'health'" in line and line.startswith("warning:")]
    assert warned == ["warning: dashboard 'health' (GPU health) has no panel, so it is written and published empty: "
                      "the counters CSV collects none of the fields its panels read (each a DF001 note), or it defines "
                      "none (lint DF002)"], stderr
    assert "fix: add its panels' fields to the counters CSV (`gpudash lint` lists each panel left out, DF001) or give " \
           "it a panel, or leave the dashboard out of definitions.dashboards" in stderr, stderr
    assert "gpudash-health" in {path.stem for path in (tmp_path / "build").rglob("*.json")}
    for args in ((), ("--from", str(tmp_path / "build"))):
        code, stdout, stderr = cli("lint", "--csv", str(csv), *args, "--output", "json")
        assert code == 0, stderr
        found = [f for f in json.loads(stdout)["findings"] if f["rule"] == "DF002"]
        assert [(f["severity"], f["where"].split(":")[0]) for f in found] == [("warning", "dashboards/gpu_health.py")]
        assert found[0]["message"].startswith("dashboard 'health' (GPU health) has no panel"), found


def test_a_dashboard_defined_with_no_panel_is_not_blamed_on_the_counters_csv(tmp_path, cli):
    """A dashboard a definition makes with no panel, every field collected: DF002 warns of it, naming that it may
    define none (it said only that the counters CSV collects none of its panels' fields, which left nothing out)."""
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "placeholder.py").write_text(
        "from generator.model import Dashboard\n\n\ndef dashboards(ctx):\n"
        "    return [Dashboard(id='later', title='Later', rows=[])]\n")
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: [dashboards]\n")
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "build"))
    assert code == 0, stderr
    warned = [line for line in stderr.splitlines() if line.startswith("warning: dashboard 'later'")]
    assert len(warned) == 1 and warned[0].endswith("or it defines none (lint DF002)"), stderr
    assert "give it a panel" in stderr and "DF001 note" not in stderr.replace(warned[0], ""), stderr


def test_with_every_field_collected_no_dashboard_is_empty(tmp_path, cli):
    code, stdout, stderr = cli("lint", "--output", "json")
    assert code == 0 and not [f for f in json.loads(stdout)["findings"] if f["rule"] == "DF002"], stderr
