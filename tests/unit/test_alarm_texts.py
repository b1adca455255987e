"""The clusters' alarms in alarms.json and the CloudFormation templates are written from one text per rule's form and
kind of cluster, their names set in (alarm_texts.AlarmTexts): byte for byte what writing each request whole writes, and
what each cluster built alone writes, whatever the names (words of the text, one the start of another, a stand-in's
own spelling) and settings."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from generator.alarm_texts import AlarmTexts
from generator.output import ALARMS_FILE, agent_file, encode, template_file
from generator.names import cluster_stack
from generator.render.cloudformation import RESOURCE_DEPTH
from generator.serialize import nested_json_size_bound
from tests.support.projects import fleet_build

ARN = "arn:aws:sns:{region}:123456789012:gpu-{severity}"

# Varied settings: alarms per pod (static) or per rule, SNS topics of both Regions (each alarm keeps its own Region's),
# a cluster's own exporter DaemonSets (a data-missing alarm each) and MIG setting, Prometheus labels or none
SETTINGS = [
    "",
    "alarms:\n  per_pod: static\n  static_pods: [ml/trainer-0, ml/c1]\n",
    "alarms:\n  name_prefix: gpu\n  actions:\n    critical: [{a}, {b}]\n    warning: [{b}]\n".format(
        a=ARN.format(region="us-east-1", severity="critical"), b=ARN.format(region="eu-west-1", severity="warning")),
    "exporter:\n  more_daemonsets: [monitoring/pool-b]\n",
]
# (name, Region, its own cluster settings)
CLUSTERS = [
    [("c1", "us-east-1", ""), ("c10", "us-east-1", ""), ("c2", "eu-west-1", ""), ("c3", "us-east-1", "")],
    # names the text holds elsewhere (a word of a description, a Region, a digit, the prefix), one the start of
    # another's, and the stand-ins' own spellings at their length
    [("gpu", "us-east-1", ""), ("idle", "us-east-1", ""), ("us-east-1", "us-east-1", ""), ("1", "eu-west-1", ""),
     ("gpudash", "us-east-1", ""), ("Qz9_X", "us-east-1", ""), ("Vw7-K", "us-east-1", ""), ("a", "us-east-1", ""),
     ("Cluster", "eu-west-1", ""), ("true", "us-east-1", ""), ("ab_c", "us-east-1", ""), ("ab-c", "us-east-1", "")],
    # clusters alike but in their exporter settings or label
    [("p1", "us-east-1", ", prometheus_label: p1"), ("p2", "us-east-1", ", prometheus_label: lab2"),
     ("p3", "us-east-1", ", prometheus_label: p3, exporter: {more_daemonsets: [gpu/other]}"),
     ("p4", "us-east-1", ", prometheus_label: p4, exporter: {mig: none}"),
     ("p5", "eu-west-1", ", prometheus_label: p5, exporter: {daemonset: dcgm}")],
    [("q1", "us-east-1", ", exporter: {more_daemonsets: [gpu/other]}"), ("q2", "us-east-1", ", exporter: {mig: none}"),
     ("q3", "eu-west-1", ", exporter: {daemonset: dcgm}"), ("q4", "eu-west-1", "")],
]


def _whole(artifacts):
    """The same set with nothing saying what made its requests: each is written whole."""
    return replace(artifacts, alarms=tuple(replace(alarm, made=None) for alarm in artifacts.alarms), alarm_resources={})


def _encoded_as_whole(artifacts) -> dict[str, bytes]:
    """encode(artifacts), found to be what the same set with each request written whole (_whole) encodes, file for
    file. The agents' ConfigMaps are written from the agents alone (neither set's alarms reach them), the same objects
    in both: the whole set is encoded without them, and every other file is compared (most of the CPU of encoding a
    fleet is its agents' YAML)."""
    files, whole = encode(artifacts), encode(replace(_whole(artifacts), agents=()))
    agents = {agent_file(agent.cluster) for agent in artifacts.agents}
    assert agents and agents <= set(files) and not agents & set(whole)
    assert {path: text for path, text in files.items() if path not in agents} == whole
    return files


def _standard(data) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("clusters", CLUSTERS)
def test_alarms_written_from_one_text_are_the_requests_written_whole(tmp_path, clusters, settings):
    artifacts = fleet_build(tmp_path, clusters, settings)
    texts = AlarmTexts(artifacts.alarms, artifacts.alarm_resources)
    files = _encoded_as_whole(artifacts)
    assert files[ALARMS_FILE] == _standard({"alarms": [alarm.as_dict() for alarm in artifacts.alarms]})
    # written from one text: every cluster's request of the rule's forms (the fleet's are not a cluster's)
    assert sum(alarm.made is not None for alarm in artifacts.alarms) == \
        sum(1 for template in artifacts.cloudformation.values() for resource in template["Resources"].values()
            if resource["Type"] == "AWS::CloudWatch::Alarm" and "Cluster" in template["Metadata"]["gpudash"])
    texts.alarms_file()
    pieces = [texts._pieces(alarm) for alarm in artifacts.alarms if alarm.made is not None]
    # names of 5 characters or more are never found in the text but as the name: each kind is written from one text
    assert all(piece is not None for piece, alarm in zip(pieces, [a for a in artifacts.alarms if a.made])
               if len(alarm.made[1].name) >= 5)
    # and measured from it for the templates: each cluster's resource as its own text measures
    measured = [(texts.bound(request), nested_json_size_bound(resource, RESOURCE_DEPTH))
                for template in artifacts.cloudformation.values() for resource in template["Resources"].values()
                for _, request in [artifacts.alarm_resources.get(id(resource), (None, None))] if request is not None]
    assert measured and all(bound in (None, size) for bound, size in measured)
    assert any(bound is not None for bound, _ in measured)


@pytest.mark.parametrize("settings", SETTINGS[:2])
def test_a_cluster_built_alone_has_the_template_and_alarms_it_has_in_the_fleet(tmp_path, settings):
    clusters = CLUSTERS[1]
    files = encode(fleet_build(tmp_path, clusters, settings))
    alarms = json.loads(files[ALARMS_FILE])["alarms"]
    for cluster in clusters:
        (tmp_path / cluster[0]).mkdir(exist_ok=True)
        alone = encode(fleet_build(tmp_path / cluster[0], [cluster], settings))
        path = template_file(cluster_stack(cluster[0], None, 1))
        assert alone[path] == files[path]
        mine = [item for item in json.loads(alone[ALARMS_FILE])["alarms"] if "-fleet-" not in
                item["Request"]["AlarmName"]]
        assert mine and all(item in alarms for item in mine)


def test_stand_ins_the_text_holds_elsewhere_write_each_request_whole(tmp_path, monkeypatch):
    # "gpu" is a word of every description: the texts rendered with it split at more places than the other
    # stand-in's, so no request is written from a text, and each is written whole
    import generator.alarm_texts as alarm_texts

    monkeypatch.setattr(alarm_texts, "ALARM_STAND_INS", ("gpu" * 40, "zqx" * 40))
    artifacts = fleet_build(tmp_path, [("abc", "us-east-1", ""), ("xyz", "us-east-1", "")], "")
    texts = AlarmTexts(artifacts.alarms, artifacts.alarm_resources)
    _encoded_as_whole(artifacts)
    assert all(texts._pieces(alarm) is None for alarm in artifacts.alarms if alarm.made is not None)
    assert texts.references


def test_a_name_written_otherwise_than_as_itself_is_seen_by_the_stand_ins(tmp_path, monkeypatch):
    # were a request to write its cluster's name otherwise (upper case in its description), a cluster's text would
    # not be the maker's text with the name set in: the stand-ins' texts split apart, and each is written whole
    import generator.render.alarms as alarms

    common = alarms._common

    def shouting(alarm, settings, name, description=None):
        request = common(alarm, settings, name, description)
        return {**request, "AlarmDescription": request["AlarmDescription"] + " " + name.upper()}

    monkeypatch.setattr(alarms, "_common", shouting)
    artifacts = fleet_build(tmp_path, [("prod_by", "us-east-1", ""), ("Prod-2", "us-east-1", "")], "")
    files = _encoded_as_whole(artifacts)
    assert "GPUDASH-PROD_BY-" in files[ALARMS_FILE].decode()


def test_a_template_resource_changed_after_it_was_built_is_written_as_it_is(tmp_path):
    artifacts = fleet_build(tmp_path, [("c1", "us-east-1", ""), ("c2", "us-east-1", "")], "")
    stack, template = next(item for item in artifacts.cloudformation.items() if "c1" in item[0])
    resources = {id_: ({**resource, "Properties": {**resource["Properties"], "Threshold": 7.5}}
                       if resource["Type"] == "AWS::CloudWatch::Alarm" else resource)
                 for id_, resource in template["Resources"].items()}
    edited = replace(artifacts, cloudformation={**artifacts.cloudformation, stack: {**template, "Resources": resources}})
    written = json.loads(encode(edited)[template_file(stack)])
    assert {r["Properties"]["Threshold"] for r in written["Resources"].values() if r["Type"] == "AWS::CloudWatch::Alarm"} \
        == {7.5}


def test_a_request_changed_after_it_was_built_is_written_as_it_is(tmp_path):
    artifacts = fleet_build(tmp_path, [("c1", "us-east-1", ""), ("c2", "us-east-1", "")], "")
    alarm = next(alarm for alarm in artifacts.alarms if alarm.made is not None)
    changed = replace(alarm, request={**alarm.request, "Threshold": 7.5})
    edited = replace(artifacts, alarms=tuple(changed if a is alarm else a for a in artifacts.alarms))
    assert encode(edited)[ALARMS_FILE] == _standard({"alarms": [a.as_dict() for a in edited.alarms]})
