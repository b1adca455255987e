"""What publishing takes from a build: the build's own facts (Regions, folder, prune scope), its
CloudWatch bodies as data, and a clear refusal when the settings read now are not the build's."""

from __future__ import annotations

import json
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "builds"


def test_publishing_from_a_build_made_with_other_settings_is_refused_with_what_to_pass(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no ./gpudash.yaml is read
    build = tmp_path / "build"
    code, _, stderr = cli("generate", "--config", str(GOLDEN / "multi-region.yaml"), "--out", str(build),
                          env={"GPUDASH_CONFIG": None})
    assert code == 0, stderr
    for command in (("plan", "--no-grafana", "--no-cloudwatch"), ("push",), ("apply",)):
        code, _, stderr = cli(*command, "--from", str(build), env={"GPUDASH_CONFIG": None})
        assert code == 2, (command, stderr)
        assert "made with other settings" in stderr and "pass --config" in stderr, stderr
        assert "prune" in stderr


def test_what_publishing_writes_comes_from_the_build_not_the_settings(tmp_path):
    """The folder, the prune prefixes and each dashboard's Region are the build's, and the bodies are
    data: encoded for PutDashboard they are exactly the DashboardBody the build's files hold."""
    from generator.artifacts import build
    from generator.desired import desired_from
    from generator.output import read, write
    from generator.project import load_project
    from generator.serialize import compact_json

    built = build(load_project(GOLDEN / "multi-region.yaml"))
    files = write(tmp_path / "build", built)
    desired = desired_from(read(tmp_path / "build"))
    assert desired.folder == built.grafana_folder
    assert (desired.grafana_uid_prefix, desired.alarm_prefix, desired.dashboard_prefix) == \
        (built.grafana_uid_prefix, built.alarm_prefix, built.dashboard_prefix)
    assert desired.dashboard_regions == {d.name: d.region for d in built.cloudwatch_dashboards}
    assert len(set(desired.dashboard_regions.values())) == 2
    for name, body in desired.cloudwatch_dashboards.items():
        shipped = json.loads(files[f"cloudwatch/dashboards/{name}.json"])["DashboardBody"]
        assert isinstance(body, dict) and compact_json(body) == shipped


def _edit_manifest(build: Path, change) -> None:
    manifest = json.loads((build / "manifest.json").read_text())
    change(manifest)
    (build / "manifest.json").write_text(json.dumps(manifest))


def test_a_build_whose_manifest_does_not_record_its_artifacts_is_refused_not_guessed(tmp_path):
    import pytest

    from generator.artifacts import build
    from generator.errors import InputError
    from generator.output import read, write
    from generator.project import load_project

    built = build(load_project(GOLDEN / "multi-region.yaml"))
    other = sorted(built.cloudformation)[-1]
    cases = [
        (lambda m: m.pop("artifacts"), "made by an older gpudash"),
        (lambda m: m["artifacts"]["cloudwatch_dashboards"].popitem(), "records no Region for the CloudWatch dashboard"),
        (lambda m: m["artifacts"]["cloudformation"].remove(other), f"CloudFormation template 'cloudformation/{other}.json'"),
        (lambda m: m["artifacts"]["grafana"].append("gone"), "records the Grafana dashboard 'gone'"),
        (lambda m: m["artifacts"]["agents"].pop(), "which the manifest does not record"),
    ]
    for number, (change, says) in enumerate(cases):
        out = tmp_path / str(number)
        write(out, built)
        _edit_manifest(out, change)
        with pytest.raises(InputError) as raised:
            read(out)
        assert says in raised.value.what and raised.value.where.endswith("manifest.json"), raised.value.what


def test_a_build_whose_manifest_does_not_say_its_settings_is_refused(cli, tmp_path, monkeypatch):
    """Without the settings' sha256 nothing shows the build was made with the settings read now: lint and
    publishing refuse it (exit 2, naming the manifest) rather than judge or publish it by other settings."""
    monkeypatch.chdir(tmp_path)  # no ./gpudash.yaml is read
    build = tmp_path / "build"
    code, _, stderr = cli("generate", "--config", str(GOLDEN / "multi-region.yaml"), "--out", str(build),
                          env={"GPUDASH_CONFIG": None})
    assert code == 0, stderr
    manifest = json.loads((build / "manifest.json").read_text())
    del manifest["settings"]
    (build / "manifest.json").write_text(json.dumps(manifest))
    for command in (("lint",), ("plan", "--no-grafana", "--no-cloudwatch")):
        code, _, stderr = cli(*command, "--from", str(build), env={"GPUDASH_CONFIG": None})
        assert code == 2, (command, stderr)
        assert "does not record the settings" in stderr and "manifest.json" in stderr, stderr


def test_a_file_the_manifest_does_not_list_is_refused_by_lint_and_publish_from_the_build(cli, tmp_path, monkeypatch):
    """What ships is the whole folder (`kubectl apply -f build/k8s`): another cluster's agent ConfigMap
    copied in would ship unlinted, so reading the build refuses it; generating again names it and keeps it
    (gpudash did not write it), and clears it with --force."""
    from generator.resources import default_config

    monkeypatch.chdir(tmp_path)
    config = GOLDEN / "multi-region.yaml"
    for out, settings in (("build", config), ("other", default_config())):
        code, _, stderr = cli("generate", "--config", str(settings), "--out", str(tmp_path / out),
                              env={"GPUDASH_CONFIG": None})
        assert code == 0, stderr
    stray = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
    assert not (tmp_path / "build" / stray).exists()
    (tmp_path / "build" / stray).write_bytes((tmp_path / "other" / stray).read_bytes())
    for command in (("lint",), ("plan", "--no-grafana", "--no-cloudwatch")):
        code, _, stderr = cli(*command, "--config", str(config), "--from", str(tmp_path / "build"),
                              env={"GPUDASH_CONFIG": None})
        assert code == 2, (command, stderr)
        assert f"{stray} is in the build but not in its manifest" in stderr and "Traceback" not in stderr, stderr
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "build"),
                          env={"GPUDASH_CONFIG": None})
    assert code == 2 and f"1 file(s) gpudash did not write ({stray})" in stderr, stderr
    assert (tmp_path / "build" / stray).exists()
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "build"), "--force",
                          env={"GPUDASH_CONFIG": None})
    assert code == 0 and not (tmp_path / "build" / stray).exists(), stderr
    code, _, stderr = cli("lint", "--config", str(config), "--from", str(tmp_path / "build"), env={"GPUDASH_CONFIG": None})
    assert code == 0, stderr


def test_a_manifest_whose_prune_scope_was_edited_is_refused(cli, tmp_path, monkeypatch):
    """The prefixes the manifest records bound what publishing may prune; an edit of them alone (the
    files' sums do not cover them) is refused, not published with another scope."""
    monkeypatch.chdir(tmp_path)
    build = tmp_path / "build"
    assert cli("generate", "--out", str(build), env={"GPUDASH_CONFIG": None})[0] == 0
    manifest = json.loads((build / "manifest.json").read_text())
    payments = {"grafana_folder": {"uid": "payments", "title": "GPU monitoring"}}
    for key in ("alarm_prefix", "dashboard_prefix", "grafana_uid_prefix", "grafana_folder"):
        edited = {**manifest, "artifacts": {**manifest["artifacts"], key: payments.get(key, "payments")}}
        (build / "manifest.json").write_text(json.dumps(edited))
        for command in (("apply", "--prune"), ("push", "--prune"), ("lint",)):
            code, stdout, stderr = cli(*command, "--from", str(build), env={"GPUDASH_CONFIG": None})
            assert code == 2 and f"the manifest records {key} {payments.get(key, 'payments')!r}" in stderr, \
                (command, stderr)
