"""The rules as PrometheusRules, one per rule group, each group cut to about half of what client-side `kubectl apply`
takes (render.alarms.size_bounded): an alarm's rules stay in one group (its alert reads its recording of the periods
in the same evaluation), the parts are about the same size, a group of one label stays whole, and each part's object
is named so that the alerts' first group keeps the object name every group had (names.prometheus_rule_name)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generator.last_applied import APPLY_LIMIT, encoded_bytes
from generator.names import COUNTER_GROUPS, prometheus_rule_name
from generator.project import load_project
from generator.render.alarms import ALERT_GROUPS, GROUP_BYTES, counter_of, prometheus_rule_resources, prometheus_rules, \
    size_bounded

GOLDEN_BUILDS = Path(__file__).resolve().parent.parent / "golden" / "builds"


def _rule(alarm: str, kind: str, size: int) -> dict:
    return {kind: f"Gpudash{alarm}" if kind == "alert" else f"gpudash:{alarm}:period_value",
            "expr": "vector(1)" + " " * size, "labels": {"gpudash_rule": alarm}}


def test_an_alarms_recording_stays_in_its_alerts_group():
    """Three rules of 0.6 GROUP_BYTES each, two of one alarm: cut by rule, the recording would end one group and its
    alert start the next (read 0 samples there at the same instant); cut by alarm, they stay together."""
    third = int(GROUP_BYTES * 0.6)
    rules = [_rule("a", "record", third), _rule("a", "alert", third), _rule("b", "alert", third)]
    parts = size_bounded({"name": "gpudash-gpu", "rules": rules})
    assert [part["name"] for part in parts] == ["gpudash-gpu", "gpudash-gpu-2"]
    assert [[r["labels"]["gpudash_rule"] for r in part["rules"]] for part in parts] == [["a", "a"], ["b"]]
    assert [r for part in parts for r in part["rules"]] == rules


def test_the_parts_are_the_fewest_and_about_the_same_size():
    rules = [_rule(f"x{n:02}", "alert", GROUP_BYTES // 10) for n in range(25)]  # 2.5 GROUP_BYTES
    sizes = [sum(encoded_bytes(r) for r in part["rules"]) for part in size_bounded({"name": "g", "rules": rules})]
    assert len(sizes) == 3 and max(sizes) <= GROUP_BYTES
    assert max(sizes) - min(sizes) <= max(encoded_bytes(r) for r in rules)  # within one alarm's rules
    small = [_rule("y", "alert", 100)]
    assert size_bounded({"name": "g", "interval": "30s", "rules": small}) == [
        {"name": "g", "interval": "30s", "rules": small}]


def test_a_group_of_one_label_stays_whole():
    """The watched clusters' recordings (one label for the group) past GROUP_BYTES: one group."""
    rules = [_rule("clusters", "record", GROUP_BYTES // 2) for _ in range(3)]
    assert size_bounded({"name": "gpudash-clusters", "rules": rules}) == [{"name": "gpudash-clusters", "rules": rules}]


def _counter(field: str, part: str, size: int) -> dict:
    return {"record": f"gpudash:{field}:{part}", "expr": "vector(1)" + " " * size,
            "labels": {"gpudash_rule": "gpudash-counters"}}


def test_each_counters_two_recordings_stay_in_one_group():
    """The counters' recordings all carry one label (their series' labels, kept from when they were one group): cut
    by label they stayed whole, one object of 205,797 bytes in the multi-region example (past the quarter of the limit
    kept for growth). Cut by counter, into COUNTER_GROUPS groups, a counter's step_increase and step_seconds stay
    together (a rate panel divides their sums over one window: evaluated in two groups, at two phases of the
    interval, the window's edges would hold other steps of each): a 1:3 split of sizes puts each counter whole."""
    size = GROUP_BYTES // 10  # 0.4 GROUP_BYTES a counter, 2 in all
    rules = [_counter(field, part, size * weight) for field in ("A", "B", "C", "D", "E")
             for part, weight in (("step_increase", 1), ("step_seconds", 3))]
    parts = size_bounded({"name": "gpudash-counters", "interval": "30s", "rules": rules}, COUNTER_GROUPS,
                         unit=counter_of)
    assert [p["name"] for p in parts] == ["gpudash-counters", "gpudash-counters-2", "gpudash-counters-3"]
    assert all(p["interval"] == "30s" for p in parts) and [r for p in parts for r in p["rules"]] == rules
    held = [[r["record"].split(":")[1] for r in p["rules"]] for p in parts]
    assert all(len(h) == 2 * len(set(h)) and h and h[::2] == h[1::2] for h in held), held  # whole counters, each pair
    assert max(sum(encoded_bytes(r) for r in p["rules"]) for p in parts) <= GROUP_BYTES
    # the bundled build: every counter's two recordings in one group, and every group written (empty ones too)
    project = load_project()
    groups = [g for g in prometheus_rules((), project.catalog, project.settings, ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
                                                                                  "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"))
              ["groups"] if g["name"].startswith("gpudash-counters")]
    assert [(g["name"], len(g["rules"])) for g in groups] == [
        ("gpudash-counters", 2), ("gpudash-counters-2", 0), ("gpudash-counters-3", 2)]


def test_each_group_is_an_object_named_for_it():
    assert [prometheus_rule_name(group) for group in ("gpudash-gpu", "gpudash-gpu-2", "gpudash-gpu-12",
                                                       "gpudash-counters", "gpudash-counters-2", "gpudash-clusters")] \
        == ["gpudash-gpu-alerts", "gpudash-gpu-alerts-2", "gpudash-gpu-alerts-12", "gpudash-counters",
            "gpudash-counters-2", "gpudash-clusters"]
    settings = load_project().settings
    groups = [{"name": name, "rules": [_rule(name, "alert", 10)]} for name in ("gpudash-gpu", "gpudash-gpu-2")]
    objects = prometheus_rule_resources({"groups": groups}, settings)
    assert [(o["kind"], o["metadata"]["name"], o["spec"]) for o in objects] == [
        ("PrometheusRule", "gpudash-gpu-alerts", {"groups": [groups[0]]}),
        ("PrometheusRule", "gpudash-gpu-alerts-2", {"groups": [groups[1]]})]
    assert GROUP_BYTES * 2 == APPLY_LIMIT


def test_the_alerts_keep_their_objects_when_the_rules_shrink():
    """kubectl apply leaves an object the file no longer holds: the alerts are written as ALERT_GROUPS objects whatever
    their size (empty ones hold no rule), so a build whose rules shrank (alarms disabled, down to none) still writes
    every alert object the bigger build wrote, and an alarm removed stops firing."""
    rules = [_rule(f"z{n}", "alert", GROUP_BYTES // 10) for n in range(4)]  # 0.4 GROUP_BYTES: one group would do
    parts = size_bounded({"name": "gpudash-gpu", "rules": rules}, ALERT_GROUPS)
    assert [p["name"] for p in parts] == ["gpudash-gpu", "gpudash-gpu-2", "gpudash-gpu-3"] and ALERT_GROUPS == 3
    assert [r for p in parts for r in p["rules"]] == rules
    one = size_bounded({"name": "gpudash-gpu", "rules": rules[:1]}, ALERT_GROUPS)
    assert [p["name"] for p in one] == ["gpudash-gpu", "gpudash-gpu-2", "gpudash-gpu-3"]
    assert sorted(len(p["rules"]) for p in one) == [0, 0, 1]
    project = load_project()
    none = prometheus_rules((), project.catalog, project.settings)
    assert [(g["name"], g["rules"]) for g in none["groups"] if g["name"].startswith("gpudash-gpu")] == [
        ("gpudash-gpu", []), ("gpudash-gpu-2", []), ("gpudash-gpu-3", [])]


@pytest.mark.parametrize("settings_file", [None, "multi-region.yaml"], ids=["one-cluster", "shared-prometheus"])
def test_every_build_writes_the_same_objects(settings_file):
    """kubectl apply leaves in the cluster an object the file no longer holds (docs/artifacts.md): whatever a user
    changes between two builds (alarms all removed, no counter panel, a Prometheus shared between clusters or not),
    the file names the same PrometheusRules, the ones gpudash can write, each holding its one group."""
    from dataclasses import replace

    from generator.artifacts import build

    project = load_project(GOLDEN_BUILDS / settings_file if settings_file else None)
    names = ["gpudash-gpu-alerts", "gpudash-gpu-alerts-2", "gpudash-gpu-alerts-3", "gpudash-counters",
             "gpudash-counters-2", "gpudash-counters-3", "gpudash-clusters"]
    for variant in (project, replace(project, alarms=()), replace(project, dashboards=(), grafanalib_dashboards=())):
        objects = build(variant, grafana=False).prometheus_rule_objects
        assert [o["metadata"]["name"] for o in objects] == names
        assert [[g["name"] for g in o["spec"]["groups"]] for o in objects] == [
            ["gpudash-gpu"], ["gpudash-gpu-2"], ["gpudash-gpu-3"], ["gpudash-counters"], ["gpudash-counters-2"],
            ["gpudash-counters-3"], ["gpudash-clusters"]]
    written = {o["metadata"]["name"]: o["spec"]["groups"][0]["rules"] for o in build(project).prometheus_rule_objects}
    assert bool(written["gpudash-clusters"]) == bool(settings_file)
    assert all(written[f"gpudash-counters{part}"] for part in ("", "-2", "-3"))
    bare = build(replace(project, dashboards=(), grafanalib_dashboards=()), grafana=False).prometheus_rule_objects
    assert [o["spec"]["groups"][0]["rules"] for o in bare][3:6] == [[], [], []]


_COPIES = '''
"""The bundled alarms and three more copies of each under other ids: alert rules past three groups' worth."""
import importlib.util
from dataclasses import replace

_spec = importlib.util.spec_from_file_location("_bundled_alarms", {bundled!r})
_bundled = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bundled)


def alarms(ctx):
    base = list(_bundled.alarms(ctx))
    return base + [replace(a, id=f"{{a.id}}-copy{{n}}") for n in range(1, 4) for a in base if not a.absent]
'''


def test_generate_names_the_prometheus_rules_the_previous_build_wrote_and_this_one_does_not(cli, tmp_path):
    """Past about 393 KB of alert rules the alerts take more than three objects; a later build of fewer alarms writes
    three, and kubectl apply leaves gpudash-gpu-alerts-4 and on in the cluster, still firing the alarms removed. A new
    prometheus_stack.namespace leaves every object in the old one. generate names each such object, namespaced, and
    the kubectl delete that removes them (seen at b699daab: nothing said)."""
    bundled = Path(__file__).resolve().parent.parent.parent / "alarms" / "gpu_alarms.py"
    (tmp_path / "alarms").mkdir()
    (tmp_path / "alarms" / "copies.py").write_text(_COPIES.format(bundled=str(bundled)))
    settings = (GOLDEN_BUILDS / "multi-region.yaml").read_text()
    config, build = tmp_path / "gpudash.yaml", tmp_path / "build"
    config.write_text(settings + "definitions:\n  alarms: [alarms]\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
    assert code == 0 and "PrometheusRules" not in stderr, stderr
    written = (build / "k8s" / "prometheusrule.yaml").read_text()
    extra = [f"gpudash-gpu-alerts-{n}" for n in range(4, 10) if f"  name: gpudash-gpu-alerts-{n}\n" in written]
    assert extra[:2] == ["gpudash-gpu-alerts-4", "gpudash-gpu-alerts-5"], written  # past 3 groups' worth
    config.write_text(settings)
    for again in (False, True):  # the shrink is named once: the build after it drops nothing
        code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
        assert code == 0, stderr
        if not again:
            listed = ", ".join(f"monitoring/{name}" for name in extra)
            assert f"warning: {build}: the previous build's PrometheusRules {listed} are no longer written" in stderr
            assert f"fix: `kubectl delete prometheusrule -n monitoring {' '.join(extra)}`" in stderr, stderr
        else:
            assert "PrometheusRules" not in stderr, stderr
    config.write_text(settings.replace("  namespace: monitoring\n", "  namespace: observability\n"))
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
    assert code == 0 and ("fix: `kubectl delete prometheusrule -n monitoring gpudash-gpu-alerts gpudash-gpu-alerts-2 "
                          "gpudash-gpu-alerts-3 gpudash-counters gpudash-counters-2 "
                          "gpudash-counters-3 gpudash-clusters`") in stderr, stderr


def test_a_build_made_before_its_record_named_its_prometheus_rules_is_read_from_its_file(cli, tmp_path):
    """A build's manifest records the PrometheusRules it wrote (output.artifacts_record), which the next generate reads;
    a build made before that record has only its file, read instead: a new namespace names the old objects all the
    same."""
    settings = (GOLDEN_BUILDS / "multi-region.yaml").read_text()
    config, build = tmp_path / "gpudash.yaml", tmp_path / "build"
    config.write_text(settings)
    assert cli("generate", "--config", str(config), "--out", str(build))[0] == 0
    manifest = json.loads((build / "manifest.json").read_text())
    assert manifest["artifacts"].pop("prometheus_rules") == [
        f"monitoring/{name}" for name in ("gpudash-gpu-alerts", "gpudash-gpu-alerts-2", "gpudash-gpu-alerts-3",
                                          "gpudash-counters", "gpudash-counters-2", "gpudash-counters-3",
                                          "gpudash-clusters")]
    (build / "manifest.json").write_text(json.dumps(manifest))
    config.write_text(settings.replace("  namespace: monitoring\n", "  namespace: observability\n"))
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
    assert code == 0 and ("fix: `kubectl delete prometheusrule -n monitoring gpudash-gpu-alerts gpudash-gpu-alerts-2 "
                          "gpudash-gpu-alerts-3 gpudash-counters gpudash-counters-2 "
                          "gpudash-counters-3 gpudash-clusters`") in stderr, stderr


def _without_the_record(build: Path) -> None:
    """`build` as a build made before its manifest's record named its PrometheusRules: read from its file."""
    manifest = json.loads((build / "manifest.json").read_text())
    del manifest["artifacts"]["prometheus_rules"]
    (build / "manifest.json").write_text(json.dumps(manifest))


def test_a_quoted_namespace_read_from_the_file_is_the_same_namespace(cli, tmp_path):
    """prometheus_stack.namespace 123 is a valid Kubernetes name that YAML writes quoted ('123'). Reading a build made
    before the record, generate took the quotes as part of the name, found none of its five objects written and told
    to `kubectl delete` all five, which the new build still writes: whoever followed it deleted every gpudash alert
    rule (seen at dbb84a22)."""
    config, build = tmp_path / "gpudash.yaml", tmp_path / "build"
    config.write_text('prometheus_stack:\n  namespace: "123"\n')
    assert cli("generate", "--config", str(config), "--out", str(build))[0] == 0
    assert "  namespace: '123'\n" in (build / "k8s" / "prometheusrule.yaml").read_text()  # the case: written quoted
    _without_the_record(build)
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
    assert code == 0 and "PrometheusRules" not in stderr, stderr
    _without_the_record(build)
    config.write_text('prometheus_stack:\n  namespace: "456"\n')
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
    assert code == 0 and ("fix: `kubectl delete prometheusrule -n 123 gpudash-gpu-alerts gpudash-gpu-alerts-2 "
                          "gpudash-gpu-alerts-3 gpudash-counters gpudash-counters-2 "
                          "gpudash-counters-3 gpudash-clusters`") in stderr, stderr


def test_a_fifo_in_place_of_the_previous_rules_is_not_waited_on(cli, tmp_path):
    """A FIFO where a build made before the record had its k8s/prometheusrule.yaml: generate opened it to read the
    names and waited for a writer for ever (seen at dbb84a22). It reads a regular file only, and the folder's check
    then says the file changed. (The thread's join bounds a hang; it measures no speed.)"""
    import os
    import threading

    from generator.output import previous_prometheus_rules, previous_record

    build = tmp_path / "build"
    assert cli("generate", "--out", str(build))[0] == 0
    _without_the_record(build)
    rules = build / "k8s" / "prometheusrule.yaml"
    rules.unlink()
    os.mkfifo(rules)
    found: list[object] = []
    reader = threading.Thread(target=lambda: found.append(previous_prometheus_rules(build, previous_record(build))),
                              daemon=True)
    reader.start()
    reader.join(60)
    assert found == [[]], "previous_prometheus_rules waited on the FIFO"
    code, _, stderr = cli("generate", "--out", str(build))
    assert code != 0 and "k8s/prometheusrule.yaml" in stderr, stderr


def test_only_names_gpudash_gives_are_offered_for_deletion(cli, tmp_path):
    """A PrometheusRule named in the previous build's manifest's record that is not gpudash's (the record edited) is
    never named for deletion: a new namespace names gpudash's five objects for `kubectl delete`, never it. (A file
    a person added one to is not read at all: test_a_previous_rules_file_changed_since_gpudash_wrote_it_...)"""
    config, build = tmp_path / "gpudash.yaml", tmp_path / "build"
    config.write_text("prometheus_stack:\n  namespace: monitoring\n")
    assert cli("generate", "--config", str(config), "--out", str(build))[0] == 0
    manifest = json.loads((build / "manifest.json").read_text())
    manifest["artifacts"]["prometheus_rules"].append("monitoring/team-alerts")
    (build / "manifest.json").write_text(json.dumps(manifest))
    config.write_text("prometheus_stack:\n  namespace: observability\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build), "--force")
    assert code == 0 and ("fix: `kubectl delete prometheusrule -n monitoring gpudash-gpu-alerts gpudash-gpu-alerts-2 "
                          "gpudash-gpu-alerts-3 gpudash-counters gpudash-counters-2 "
                          "gpudash-counters-3 gpudash-clusters`") in stderr, stderr
    assert "team-alerts" not in stderr, stderr


def test_a_previous_rules_file_changed_since_gpudash_wrote_it_names_nothing_for_deletion(cli, tmp_path):
    """A build made before the record named its PrometheusRules is read from its file, which a person may have edited
    (the write then needs --force): an object they added under a name of gpudash's form in the namespace the build
    leaves (their own rules, kept beside gpudash's) was named for `kubectl delete`. The file is read only as gpudash
    wrote it (its sha256 in the manifest): one changed since names nothing."""
    config, build = tmp_path / "gpudash.yaml", tmp_path / "build"
    config.write_text("prometheus_stack:\n  namespace: monitoring\n")
    assert cli("generate", "--config", str(config), "--out", str(build))[0] == 0
    rules = build / "k8s" / "prometheusrule.yaml"
    rules.write_text(rules.read_text() + "---\napiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n"
                     "  name: gpudash-gpu-alerts-9\n  namespace: monitoring\nspec:\n  groups: []\n")
    _without_the_record(build)
    config.write_text("prometheus_stack:\n  namespace: observability\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build), "--force")
    assert code == 0 and "kubectl delete" not in stderr and "gpudash-gpu-alerts-9" not in stderr, stderr


_EAST = "clusters:\n  - {name: %s, region: us-east-1}\n"
OTHER_SETTINGS = {  # the settings of the build in the folder, this build's settings, the stack the first wrote
    "another project": ("project: prod\n" + _EAST % "prod-east", "project: staging\n" + _EAST % "staging-east",
                        "gpudash-prod-cluster-prod-east"),
    "another settings file of the project": ("project: ml\n" + _EAST % "west", "project: ml\n" + _EAST % "east",
                                             "gpudash-ml-cluster-west"),
    "another project of the same cluster": ("project: ml\n" + _EAST % "gpu", "project: ml2\n" + _EAST % "gpu",
                                            "gpudash-ml-cluster-gpu"),
}


@pytest.mark.parametrize("case", OTHER_SETTINGS)
def test_what_a_build_of_other_settings_wrote_is_not_named_for_deletion(cli, tmp_path, case):
    """One folder, two settings files in turn (`--config prod.yaml`, then `--config staging.yaml`; or a project split
    into a file per cluster): the build the folder held was another deployment's, live, and what it wrote is not
    what this build drops. generate told the user to delete the other project's stack (`aws cloudformation
    delete-stack`) and every one of its PrometheusRules (`kubectl delete prometheusrule -n monitoring ...`): its
    alerting gone; of a project watching the same cluster, it said the resources move from its stack to this one's
    and to delete "the stacks no longer written". The manifest records the project and clusters a build was made
    for: a build of another project, or of none of these clusters, was made for other settings, nothing of it is
    named for deletion, and generate says why."""
    theirs, ours, stack = OTHER_SETTINGS[case]
    config, build = tmp_path / "theirs.yaml", tmp_path / "build"
    config.write_text(theirs + "prometheus_stack:\n  namespace: monitoring\n")
    assert cli("generate", "--config", str(config), "--out", str(build))[0] == 0
    config = tmp_path / "ours.yaml"
    config.write_text(ours + "prometheus_stack:\n  namespace: monitoring-staging\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
    assert code == 0, stderr
    for advice in ("kubectl delete", "delete-stack", "no longer written", "move to another stack"):
        assert advice not in stderr, stderr
    said = (f"warning: {build}: the build it held was made for other settings (another project, or no cluster of "
            f"these): its CloudFormation stacks {stack} and PrometheusRules monitoring/gpudash-gpu-alerts,")
    assert said in stderr, stderr
    # the same settings' next build over it names what it drops (its own namespace, changed)
    config.write_text(config.read_text().replace("monitoring-staging", "observability"))
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
    assert code == 0, stderr
    assert ("fix: `kubectl delete prometheusrule -n monitoring-staging gpudash-gpu-alerts gpudash-gpu-alerts-2 "
            "gpudash-gpu-alerts-3 gpudash-counters gpudash-counters-2 "
                          "gpudash-counters-3 gpudash-clusters`") in stderr, stderr


def test_a_previous_build_whose_cluster_wrote_only_a_later_part_is_these_settings(cli, tmp_path):
    """A cluster split over several templates whose first part was left empty (its resources gone from the
    definitions: a part with none is not written) wrote only `gpudash-ml-cluster2-east`: a build made before the
    manifest recorded its project and clusters is these settings' all the same (every part's name holds the project
    and the cluster), and what it drops is named."""
    config, build = tmp_path / "gpudash.yaml", tmp_path / "build"
    config.write_text("project: ml\n" + _EAST % "east" + "prometheus_stack:\n  namespace: monitoring\n")
    assert cli("generate", "--config", str(config), "--out", str(build))[0] == 0
    manifest = json.loads((build / "manifest.json").read_text())
    assert manifest["artifacts"].pop("publisher") == {"project": "ml", "clusters": ["east"]}
    assert manifest["artifacts"]["cloudformation"] == ["gpudash-ml-cluster-east"]
    manifest["artifacts"]["cloudformation"] = ["gpudash-ml-cluster2-east"]
    (build / "manifest.json").write_text(json.dumps(manifest))
    config.write_text(config.read_text().replace("monitoring", "observability"))
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
    assert code == 0 and "made for other settings" not in stderr, stderr
    assert "fix: `kubectl delete prometheusrule -n monitoring gpudash-gpu-alerts " in stderr, stderr


@pytest.mark.parametrize("recorded", [True, False], ids=["recorded", "made before the record"])
def test_a_build_with_no_cloudformation_stack_names_what_it_drops(cli, tmp_path, recorded):
    """Grafana and Prometheus only (dashboards for Grafana alone, no alarms, the agent's log group outside the stacks):
    the build writes no CloudFormation stack, so no stack tells whose it is. The manifest records the settings'
    project and clusters (a build made before that record: the clusters of its agents' configurations), and a new
    namespace names the objects the build before wrote, as with stacks."""
    (tmp_path / "dash").mkdir()
    (tmp_path / "dash" / "one.py").write_text(
        "from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
        "    return [Dashboard(id='one', title='One', backends=('grafana',),\n"
        "                      rows=[Row('r', [Panel('Temp', Query('DCGM_FI_DEV_GPU_TEMP', 'max'))])])]\n")
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "none.py").write_text("def alarms(ctx):\n    return []\n")
    config, build = tmp_path / "gpudash.yaml", tmp_path / "build"
    settings = ("definitions:\n  dashboards: dash\n  alarms: none\nagent:\n  log_group_in_stack: false\n"
                "prometheus_stack:\n  namespace: monitoring\n")
    config.write_text(settings)
    assert cli("generate", "--config", str(config), "--out", str(build))[0] == 0
    assert not (build / "cloudformation").exists()
    if not recorded:
        manifest = json.loads((build / "manifest.json").read_text())
        del manifest["artifacts"]["publisher"]
        (build / "manifest.json").write_text(json.dumps(manifest))
    config.write_text(settings.replace("monitoring", "observability"))
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
    assert code == 0 and "made for other settings" not in stderr, stderr
    assert "fix: `kubectl delete prometheusrule -n monitoring gpudash-gpu-alerts " in stderr, stderr


def test_a_stack_a_split_moved_to_another_settings_file_is_not_told_to_be_deleted_without_a_word(cli, tmp_path):
    """One settings file of clusters east and west split in two (east.yaml, west.yaml), east.yaml generated over the
    build of both: west's stack is no longer written by this file, but west.yaml's build deploys it. generate told to
    delete it before deploying (the west alarms gone until west.yaml's build is deployed, console edits lost), as
    for a cluster that left; `apply --prune` keeps such objects after a split without --removed-cluster. The fix
    line now says a stack another settings file now writes is not one to delete."""
    config, build = tmp_path / "both.yaml", tmp_path / "build"
    config.write_text("project: ml\nclusters:\n  - {name: east, region: us-east-1}\n"
                      "  - {name: west, region: us-west-2}\n")
    assert cli("generate", "--config", str(config), "--out", str(build))[0] == 0
    config.write_text("project: ml\n" + _EAST % "east")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
    assert code == 0 and "CloudFormation stacks gpudash-ml-cluster-west are no longer written" in stderr, stderr
    assert ("fix: delete each with `aws cloudformation delete-stack` before deploying the build (not one of a cluster "
            "another settings file now defines, after a split: that file's build deploys it)") in stderr, stderr



@pytest.mark.parametrize("settings_file", [None, "multi-region.yaml"], ids=["one-cluster", "shared-prometheus"])
def test_applying_the_build_over_one_counters_object_leaves_each_recording_in_one_object(settings_file):
    """Upgrading from a build whose counters' recordings were one object, gpudash-counters (before 14978afd): kubectl
    apply replaces each object of the new file by name, in the file's order, and leaves any other. The first counters'
    part keeps that name, so the old object is replaced (holding the first part's counters alone) and -2, -3 are
    created: after the apply every recording is in exactly one live object (none evaluated twice, none lost) and no
    live object is one the file does not write (nothing to prune). At every step between, no recording is in two."""
    from generator.artifacts import build

    project = load_project(GOLDEN_BUILDS / settings_file if settings_file else None)
    objects = build(project, grafana=False).prometheus_rule_objects
    counters = [o for o in objects if o["metadata"]["name"].startswith("gpudash-counters")]
    rules = [r for o in counters for r in o["spec"]["groups"][0]["rules"]]
    old = {**counters[0], "spec": {"groups": [{**counters[0]["spec"]["groups"][0], "name": "gpudash-counters",
                                               "rules": rules}]}}
    live = {o["metadata"]["name"]: o for o in objects if o not in counters} | {"gpudash-counters": old}

    def held() -> list[str]:
        return [r["record"] for o in live.values() for g in o["spec"]["groups"] for r in g["rules"] if "record" in r
                and r["record"].startswith("gpudash:DCGM")]
    assert sorted(held()) == sorted(r["record"] for r in rules) and len(rules) >= 8
    for resource in objects:  # kubectl apply -f, in the file's order
        live[resource["metadata"]["name"]] = resource
        assert len(held()) == len(set(held())), resource["metadata"]["name"]
    assert sorted(held()) == sorted(r["record"] for r in rules)
    assert set(live) == {o["metadata"]["name"] for o in objects}  # nothing left that the file does not write


def test_generate_names_the_dashboard_configmaps_the_previous_build_wrote_and_this_one_does_not(cli, tmp_path):
    """k8s/grafana-dashboards.yaml holds a ConfigMap per dashboard, named for its uid, which `kubectl apply -n
    NAMESPACE` leaves in the cluster once a later build no longer writes it (a dashboard removed or renamed, a new
    grafana.uid_prefix): Grafana's sidecar goes on loading the old dashboard, with that build's panels, beside the new
    one. generate named the PrometheusRules and stacks the new build drops but none of these ConfigMaps. It names them
    now, with the kubectl delete that removes them, once; a build of other settings' folder names none of them."""
    config, build = tmp_path / "gpudash.yaml", tmp_path / "build"
    config.write_text("prometheus_stack:\n  namespace: monitoring\n")
    assert cli("generate", "--config", str(config), "--out", str(build))[0] == 0
    config.write_text("prometheus_stack:\n  namespace: monitoring\ngrafana:\n  uid_prefix: gpu\n")
    names = ["gpudash-overview-dashboard", "gpudash-by-pod-dashboard", "gpudash-health-dashboard",
             "gpudash-all-metrics-dashboard"]
    for again in (False, True):
        code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
        assert code == 0, stderr
        if again:
            assert "dashboard ConfigMaps" not in stderr, stderr
            continue
        said = stderr.split("the previous build's dashboard ConfigMaps ")[1].split(" are no longer written")[0]
        assert sorted(said.split(", ")) == sorted(names), stderr
        assert "fix: `kubectl delete configmap -n NAMESPACE " in stderr, stderr
        assert all(name in stderr.split("kubectl delete configmap")[1] for name in names), stderr
    config.write_text("project: other\nprometheus_stack:\n  namespace: monitoring\n")  # another project's build
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
    assert code == 0 and "kubectl delete configmap" not in stderr, stderr
    assert "dashboard ConfigMaps gpu-" in stderr and "not named for deletion" in stderr, stderr


def _go_encoded(value) -> bytes:
    """`value` as Go's encoding/json writes it for kubectl (keys sorted, no spaces, HTML characters and the line and
    paragraph separators escaped, other characters as UTF-8): written out, to count."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for character, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                              ("\u2029", "\\u2029")):
        text = text.replace(character, escape)
    return text.encode()


@pytest.mark.parametrize("text", ["vector(1) > 0 and on (gpu) x < 2 & y", "above 87 °C: a > b", "a\u2028b\u2029 < c",
                                  "plain", "ünïcode & <tags>"])
def test_encoded_bytes_count_what_kubectl_writes(text):
    """Counted without writing the escapes: an ASCII text (a thousand clusters' rules, megabytes) is a byte a
    character; any other is encoded."""
    for value in ({"expr": text, "labels": {"a": text}}, [text, 1, None], text):
        assert encoded_bytes(value) == len(_go_encoded(value)), value
