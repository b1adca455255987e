"""Each cluster's agent ConfigMaps are written from one text per kind of cluster, its name set in (output.AgentTexts):
byte for byte what writing each cluster's ConfigMaps in full writes, and what each cluster built alone writes, on
either pipeline and whatever the names, those YAML would read as another type (123, true, null) included."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml

from generator.output import AgentTexts, agent_file, encode
from tests.support.projects import fleet_build

SETTINGS = ["", "agent:\n  pipeline: classic\n", "exporter:\n  more_daemonsets: [monitoring/pool-b]\n"]
CLUSTERS = [
    [("c1", "us-east-1", ""), ("c10", "us-east-1", ""), ("c2", "eu-west-1", ""), ("c30", "us-east-1", "")],
    # names YAML reads as a number, a boolean or null when unquoted, names the text holds elsewhere (a word of the
    # scrape config, a Region, a digit), one the start of another's, and the stand-ins' own spellings
    [("123", "us-east-1", ""), ("true", "us-east-1", ""), ("null", "us-east-1", ""), ("on", "eu-west-1", ""),
     ("0x1F", "us-east-1", ""), ("1e3", "us-east-1", ""), ("1_000", "us-east-1", ""), ("pod", "us-east-1", ""),
     ("us-east-1", "us-east-1", ""), ("1", "eu-west-1", ""), ("gpu", "us-east-1", ""), ("gpu-a", "us-east-1", ""),
     ("Qz9_X", "us-east-1", ""), ("Vw7-K", "us-east-1", ""), ("replace", "us-east-1", ""), ("keep", "us-east-1", "")],
    # clusters alike but in their exporter settings or Prometheus label
    [("p1", "us-east-1", ", prometheus_label: p1"), ("p2", "us-east-1", ", prometheus_label: lab2"),
     ("p3", "us-east-1", ", prometheus_label: p3, exporter: {more_daemonsets: [gpu/other]}"),
     ("p4", "us-east-1", ", prometheus_label: p4, exporter: {deployment: gpu-operator}"),
     ("p5", "eu-west-1", ", prometheus_label: p5, exporter: {daemonset: dcgm, namespace: gpu}")],
]


def _full(artifacts):
    """The same set with nothing saying what made its agents' configs: each is written in full."""
    return replace(artifacts, agents=tuple(replace(agent, made=None) for agent in artifacts.agents))


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("clusters", CLUSTERS)
def test_configmaps_written_from_one_text_are_those_written_in_full(tmp_path, clusters, settings):
    artifacts = fleet_build(tmp_path, clusters, settings)
    files = encode(artifacts)
    assert files == encode(_full(artifacts))
    texts = AgentTexts()
    written = {agent.cluster: texts(agent) for agent in artifacts.agents}
    for name, _, _ in clusters:
        # libyaml's parser where PyYAML has it (the same safe constructor and resolver: the same documents, and a
        # name read as a number or a boolean alike); the pure-Python reader took a quarter of the test's CPU
        documents = list(yaml.load_all(files[agent_file(name)], Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
        # the name reads back as the cluster's name (a string), wherever it is written
        assert any(name in str(document) for document in documents)
        if name in ("123", "true", "null", "on", "0x1F", "1_000"):  # YAML reads it as another type: in full
            assert written[name] is None
    # names of 3 characters or more that YAML reads as text are written from one text
    assert all(text is not None for name, text in written.items()
               if len(name) >= 3 and name not in ("123", "true", "null", "0x1F", "1_000", "1e3"))


@pytest.mark.parametrize("settings", SETTINGS[:2])
def test_a_cluster_built_alone_has_the_configmaps_it_has_in_the_fleet(tmp_path, settings):
    clusters = CLUSTERS[1][:8]
    files = encode(fleet_build(tmp_path, clusters, settings))
    for cluster in clusters:
        (tmp_path / cluster[0]).mkdir(exist_ok=True)
        alone = encode(fleet_build(tmp_path / cluster[0], [cluster], settings))
        assert alone[agent_file(cluster[0])] == files[agent_file(cluster[0])]


def test_a_name_set_in_where_it_is_not_a_whole_value_nor_after_a_slash_or_quote_is_written_in_full(
        tmp_path, monkeypatch):
    # a log group named <name>-gpu would be a value ending in text after the name (YAML could read `1-2-3` as
    # something else): no cluster's ConfigMaps are written from a text then
    import generator.render.agent as agent

    monkeypatch.setattr(agent, "log_group", lambda cluster: f"{cluster.name}-gpu")
    artifacts = fleet_build(tmp_path, [("abc", "us-east-1", ""), ("xyz", "us-east-1", "")], "")
    texts = AgentTexts()
    assert all(texts(agent) is None for agent in artifacts.agents)
    assert encode(artifacts) == encode(_full(artifacts))


def test_a_fleet_of_one_or_two_clusters_writes_its_configmaps_in_full(tmp_path, monkeypatch):
    """A kind's text is made by making its ConfigMaps twice more: for one or two clusters that costs more than it saves
    (a third of a one-cluster build's encoding), so they are written in full; three or more are written from it."""
    import generator.output as output

    made = []
    real = output._agent_pieces
    monkeypatch.setattr(output, "_agent_pieces", lambda *args: made.append(args) or real(*args))
    clusters = CLUSTERS[0][:3]
    for count in (1, 2, 3):
        (tmp_path / str(count)).mkdir()
        artifacts = fleet_build(tmp_path / str(count), clusters[:count], "")
        made.clear()
        assert encode(artifacts) == encode(_full(artifacts))
        assert bool(made) is (count >= output.AGENT_TEXTS_FROM)
