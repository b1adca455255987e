"""clusters[].exporter.mig: each cluster's CloudWatch alarms and dashboards are built by its own exporter.mig.

A fleet of one cluster with MIG GPUs (`split`: tests/support/mixed_fleet's fleet, two A100s split into MIG instances,
which report no GPU utilization) and one of whole GPUs (`whole`: the same fleet without its MIG node) says so per
cluster. Before, exporter.mig was the fleet's alone: either every cluster was taken for one that may have MIG GPUs
(a mean of GPU utilization per namespace refused everywhere, exit 2; the whole cluster's alarms noted AL012 and its
dashboards saying MIG GPUs are left out) or none was (the split cluster's alarms blind to its MIG GPUs).

Each cluster's agent model is run over its own fleet, and each alarm is judged over the points of its own cluster
(its query's ClusterName filter) against the rule's truth (test_mig_half_alarms._truth, which promtool matches on
the mixed fleet).
"""

from __future__ import annotations

import json
import re

import pytest

from generator.artifacts import build, notes
from generator.cloudwatch_query import (MIG_LEFT_OUT, NO_MIG_INSTANCES, POD_INSTANCES, WEIGHS_PER_SERIES,
                                        WHOLE_GPU_CONTRIBUTORS, WHOLE_GPU_LINES)
from generator.errors import InputError
from generator.output import encode
from generator.render.alarms import cloudwatch_alarms
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.mig_alarm_truth import FLEET, TESTED, WHOLE, alarm_truth, per_cluster_alarms, two_cluster_settings
from tests.support.projects import defined_project

STEP, END = 30, 900
FLEETS = {"whole": WHOLE, "split": FLEET}  # each cluster's nodes


def _points(files: dict[str, bytes]) -> list:
    """Each cluster's fleet through its own agent's model (its ClusterName on its points): those the alarms read."""
    read = cloudwatch_eval.reads(*(a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]))
    points = []
    for cluster, fleet in FLEETS.items():
        config, job = agent_config(files[f"k8s/cwagent-prometheus-config-{cluster}.yaml"])
        points += Agent(config, job, only=read).run([Scrape(k * STEP, mixed_fleet.payload(node, k * STEP, STEP),
                                                            target_labels(job, node.name))
                                                     for k in range(-2, END // STEP) for node in fleet])
    return points


def _fired(files: dict[str, bytes], points: list) -> dict[str, set]:
    """{alarm name: the groups in ALARM at END}."""
    fired = {}
    for item in json.loads(files["cloudwatch/alarms.json"])["alarms"]:
        request = item["Request"]
        fired[request["AlarmName"]] = {key for key, state in cloudwatch_eval.alarm(request, points, END).items()
                                       if state == "ALARM"}
    return fired


# (rule, aggregation, grouping, comparison, threshold, scope): the mean per namespace below 10 is refused wherever
# GPUs may be split (its whole GPUs alone could fire where the rule does not), on either pipeline; a GPU's mean
# below 10 (one GPU per group) is a whole GPUs' and a MIG instances' alarm there, the whole GPUs' alone where none is
# split; the largest per namespace above 50 can only miss a MIG GPU (AL012) where GPUs may be split.
NAMESPACE_MEAN = ("ns-mean-low", "avg", ("namespace",), "<", 10.0, "cluster")
GPU_MEAN = ("gpu-mean-low", "avg", ("node", "gpu"), "<", 10.0, "cluster")
NAMESPACE_MAX = ("ns-max-high", "max", ("namespace",), ">", 50.0, "cluster")


@pytest.fixture(scope="module", params=[(p, f) for p in ("otel", "classic") for f in (False, True)],
                ids=lambda p: f"{p[0]}-{'fleet-none' if p[1] else 'cluster-none'}")
def built(request, tmp_path_factory):
    pipeline, fleet_none = request.param
    project = defined_project(tmp_path_factory.mktemp("p"), two_cluster_settings(*request.param),
                              alarms=per_cluster_alarms(NAMESPACE_MEAN, GPU_MEAN, NAMESPACE_MAX))
    files = encode(build(project))
    return pipeline, project, files, _fired(files, _points(files))


def _expected(case, fleet) -> set:
    _, aggregation, by, comparison, threshold, _ = case
    return {group for group, value in alarm_truth(aggregation, by, fleet).items() if TESTED[comparison](value, threshold)}


def _shown(groups: set, by: tuple) -> set:
    return {tuple((key, dict(group).get(key)) for key in by) for group in groups}


def test_the_whole_cluster_alarms_on_every_gpu_as_its_rule_does(built):
    """The whole cluster's alarms: every rule made, no MIG instances' alarm, each firing for exactly the rule's groups
    of its fleet (the mean per namespace too, refused there before the cluster could say none)."""
    _, project, files, fired = built
    whole = {name: groups for name, groups in fired.items() if "-whole-" in name}
    assert sorted(whole) == sorted(f"gpudash-whole-{rule}-warning" for rule, *_ in (NAMESPACE_MEAN, GPU_MEAN,
                                                                                         NAMESPACE_MAX))
    for case in (NAMESPACE_MEAN, GPU_MEAN, NAMESPACE_MAX):
        expected = _expected(case, WHOLE)
        assert expected, case  # the fleet holds a group to find
        assert _shown(whole[f"gpudash-whole-{case[0]}-warning"], case[2]) == expected, case


def test_the_split_cluster_keeps_its_mig_alarms_and_leaves_out_the_half_alarm(built):
    """The split cluster's alarms: the GPU mean as a whole GPUs' and a MIG instances' alarm, together exactly the
    rule's GPUs (a MIG GPU by its instances' engine activity); the mean per namespace not made there (its whole GPUs
    alone could fire where the rule does not), said by a note naming the cluster."""
    pipeline, project, files, fired = built
    split = {name: groups for name, groups in fired.items() if "-split-" in name}
    said = {note.message for note in notes(project) if note.rule == "AL012"}
    if pipeline == "otel":  # the namespace's use of each GPU the agent makes, a MIG GPU's by its stand-in: no half
        assert _shown(split["gpudash-split-ns-mean-low-warning"], ("namespace",)) == _expected(NAMESPACE_MEAN, FLEET)
        assert not any("'ns-mean-low'" in m for m in said), said
    else:
        assert "gpudash-split-ns-mean-low-warning" not in split
        assert any("'ns-mean-low' is not made on CloudWatch in cluster split" in m for m in said), said
    gpus = split["gpudash-split-gpu-mean-low-warning"] | split.get("gpudash-split-gpu-mean-low-mig-warning", set())
    # on otel one alarm reads the merged per-GPU set (a MIG GPU by its instances' mean); on classic a second alarm
    assert ("gpudash-split-gpu-mean-low-mig-warning" in split) == (pipeline == "classic")
    assert _shown(gpus, ("node", "gpu")) == _expected(GPU_MEAN, FLEET)
    shown = _shown(split["gpudash-split-ns-max-high-warning"], ("namespace",))
    if pipeline == "otel":  # read from the namespace's use of each GPU, a MIG GPU's by its stand-in
        assert shown == _expected(NAMESPACE_MAX, FLEET) and not any("'ns-max-high'" in m for m in said), said
    else:
        assert shown <= _expected(NAMESPACE_MAX, FLEET)  # can only miss a MIG GPU
        assert any("'ns-max-high'" in m and "in cluster split" in m for m in said), said
    assert not any("cluster whole" in m for m in said), said


def test_a_fleet_alarm_over_clusters_that_differ_is_built_as_for_the_strictest(tmp_path):
    """A fleet-scope alarm reads its Region's clusters together: with the split cluster among them it is built as
    where GPUs may be split (a GPU's mean on classic: its MIG instances' alarm beside the whole GPUs'); in a Region of
    whole clusters alone, without it."""
    settings = two_cluster_settings("classic", False).replace("  - name: split\n    region: us-east-1",
                                                "  - name: split\n    region: eu-west-1")
    fleet_gpu = ("fleet-gpu-mean", "avg", ("node", "gpu"), "<", 10.0, "fleet")
    fleet_max = ("fleet-ns-max", "max", ("namespace",), ">", 50.0, "fleet")  # can only miss a MIG GPU
    (tmp_path / "a").mkdir()
    project = defined_project(tmp_path / "a", settings, alarms=per_cluster_alarms(fleet_gpu, fleet_max))
    names = {(item["Region"], item["Request"]["AlarmName"])
             for item in cloudwatch_alarms(project.alarms, project.settings, project.catalog)}
    assert names == {("us-east-1", "gpudash-fleet-fleet-gpu-mean-warning-us-east-1"),
                     ("eu-west-1", "gpudash-fleet-fleet-gpu-mean-warning-eu-west-1"),
                     ("eu-west-1", "gpudash-fleet-fleet-gpu-mean-mig-warning-eu-west-1"),
                     ("us-east-1", "gpudash-fleet-fleet-ns-max-warning-us-east-1"),
                     ("eu-west-1", "gpudash-fleet-fleet-ns-max-warning-eu-west-1")}, names
    said = [note.message for note in notes(project) if note.rule == "AL012"]
    assert len(said) == 1 and "'fleet-ns-max'" in said[0] and "on CloudWatch in Region eu-west-1 " in said[0], said
    # both clusters in one Region: the strictest (GPUs may be split)
    (tmp_path / "b").mkdir()
    project = defined_project(tmp_path / "b", two_cluster_settings("classic", False), alarms=per_cluster_alarms(fleet_gpu))
    names = {item["Request"]["AlarmName"]
             for item in cloudwatch_alarms(project.alarms, project.settings, project.catalog)}
    assert names == {"gpudash-fleet-fleet-gpu-mean-warning", "gpudash-fleet-fleet-gpu-mean-mig-warning"}, names


def test_a_half_alarm_is_still_refused_where_every_cluster_may_have_mig(tmp_path):
    """A fleet whose every cluster may have MIG GPUs (one saying `some`, one unset) makes the half alarm nowhere: it is
    refused (exit 2 at generate), naming the setting that builds it (agent.pipeline: classic: the OTel pipeline
    makes the namespace's use of each GPU, a MIG GPU's by its stand-in, so the rule is no half alarm there)."""
    project = defined_project(tmp_path, "agent:\n  pipeline: classic\n"
                                        "clusters:\n  - name: a\n    region: us-east-1\n    exporter:\n"
                                        "      mig: some\n  - name: b\n    region: us-east-1\n",
                              alarms=per_cluster_alarms(NAMESPACE_MEAN))
    with pytest.raises(InputError) as refused:
        cloudwatch_alarms(project.alarms, project.settings, project.catalog)
    assert "'ns-mean-low'" in str(refused.value) and "clusters[].exporter.mig: none" in refused.value.hint


def _header(text: bytes) -> str:
    """A CloudWatch dashboard file's header widget's text."""
    return json.loads(json.loads(text)["DashboardBody"])["widgets"][0]["properties"]["markdown"]


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_each_clusters_dashboard_header_says_only_what_is_true_of_its_gpus(pipeline, tmp_path):
    """The whole cluster's CloudWatch dashboards say nothing of MIG GPUs left out, weighing once per instance, lines per
    MIG instance or MIG copies; the split cluster's still do where they are."""
    project = defined_project(tmp_path, two_cluster_settings(pipeline, False))
    files = encode(build(project))
    headers = {name: _header(text) for name, text in files.items() if name.startswith("cloudwatch/dashboards/")}
    whole = {name: text for name, text in headers.items() if "-whole-" in name}
    split = {name: text for name, text in headers.items() if "-split-" in name}
    assert whole and len(whole) == len(split)
    for name, text in whole.items():
        # the bundled panels of MIG instances alone keep their titles, left out of CloudWatch: they would draw no line
        # there (NO_MIG_INSTANCES says why)
        said = re.sub(r"(Framebuffer used|Graphics engine activity) per MIG instance", "", text)
        said = said.replace(NO_MIG_INSTANCES, "")
        said = said.replace(WHOLE_GPU_LINES, "").replace(" MIG instances (cloudwatch.top_gpus)", "")
        assert "MIG" not in said, (name, [line for line in re.split(r"[;.]", said) if "MIG" in line])
    said = " ".join(split.values())
    assert MIG_LEFT_OUT in said
    if pipeline == "classic":
        assert WEIGHS_PER_SERIES in said or POD_INSTANCES in said


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_each_clusters_alarm_descriptions_say_only_what_is_true_of_its_gpus(pipeline, tmp_path):
    """What gpudash adds to a whole cluster's alarm descriptions (after its own note: the definition's text is the
    user's) says nothing of MIG instances, a counter's lines per GPU instance and a count of GPUs included; the split
    cluster's alarms of those rules still say it."""
    from generator.markers import ALARM_DESCRIPTION_NOTE

    count = ("gpus-per-node", "count", ("node",), "<", 1.5, "cluster")
    text = per_cluster_alarms(count) + (
        "    yield Alarm('replays', 'X', Condition(Query('DCGM_FI_DEV_PCIE_REPLAY_COUNTER', 'sum', ('node', 'gpu'), "
        "as_increase=True), '>', 0), description='x', runbook='y')\n")
    project = defined_project(tmp_path, two_cluster_settings(pipeline, False), alarms=text)
    added = {}
    for item in json.loads(encode(build(project, grafana=False))["cloudwatch/alarms.json"])["alarms"]:
        request = item["Request"]
        added[request["AlarmName"]] = request["AlarmDescription"].split(ALARM_DESCRIPTION_NOTE, 1)[1]
    whole = {name: text for name, text in added.items() if "-whole-" in name}
    split = {name: text for name, text in added.items() if "-split-" in name}
    assert len(whole) == 2, sorted(added)
    for name, text in whole.items():
        assert "MIG" not in text.replace(WHOLE_GPU_CONTRIBUTORS, ""), (name, text)
    if pipeline == "classic":  # (otel reads each GPU once in both: a merged per-GPU set, a device counter per GPU)
        assert any("MIG" in text for text in split.values()), split


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_a_fleet_said_to_have_no_mig_says_nothing_of_mig_in_headers_and_descriptions(pipeline, tmp_path):
    """exporter.mig: none of a one-cluster fleet: the bundled dashboards' headers and alarms' descriptions (what
    gpudash adds to them) say nothing of MIG GPUs left out or counted per instance (they said "GPUs split into MIG
    instances do not report it and are left out" on a fleet the settings say has none)."""
    from generator.markers import ALARM_DESCRIPTION_NOTE

    project = defined_project(tmp_path, f"agent:\n  pipeline: {pipeline}\nexporter:\n  mig: none\n")
    files = encode(build(project))
    for name, text in files.items():
        if name.startswith("cloudwatch/dashboards/"):
            said = re.sub(r"(Framebuffer used|Graphics engine activity) per MIG instance", "", _header(text))
            said = said.replace(NO_MIG_INSTANCES, "")  # (those panels left out of CloudWatch, and why)
            said = said.replace(WHOLE_GPU_LINES, "").replace(" MIG instances (cloudwatch.top_gpus)", "")
            assert "MIG" not in said, (name, [line for line in re.split(r"[;.]", said) if "MIG" in line])
    for item in json.loads(files["cloudwatch/alarms.json"])["alarms"]:
        added = item["Request"]["AlarmDescription"].split(ALARM_DESCRIPTION_NOTE, 1)[1]
        assert "MIG" not in added.replace(WHOLE_GPU_CONTRIBUTORS, ""), (item["Request"]["AlarmName"], added)


def test_a_line_per_namespace_says_the_mig_case_it_reads_wrong(tmp_path):
    """On agent.pipeline: classic a line per namespace over the per-pod set counts a GPU once per MIG instance its pods
    hold, each pod on its own slice (the usual MIG layout) included: its note says that case, not only a pod on
    several instances (which the fleet of a reader may not have, so that the note read as not applying)."""
    from generator.cloudwatch_query import GROUP_INSTANCES

    dashboards = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
                  "    panels = [Panel('ns power', Query('DCGM_FI_DEV_POWER_USAGE', 'sum', ('namespace',)), "
                  "description='d'), Panel('pod power', Query('DCGM_FI_DEV_POWER_USAGE', 'avg', ('pod',)), "
                  "description='d')]\n"
                  "    yield Dashboard(id='ns', title='Namespaces', rows=[Row('all', panels)])\n")
    project = defined_project(tmp_path, "agent:\n  pipeline: classic\n", dashboards=dashboards)
    files = encode(build(project, grafana=False))
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-ns.json"])[
        "DashboardBody"])
    header = body["widgets"][0]["properties"]["markdown"]
    assert f"ns power: {GROUP_INSTANCES}" in header and f"pod power: {POD_INSTANCES}" in header, header
