"""Each CloudWatch dashboard body is written as the JSON string of its stamped compact ASCII text, whether it is
escaped whole or from the pieces of its dashboard's text split at a stand-in cluster name (the clusters' bodies of
one dashboard differ in their cluster's name, Region and stamp)."""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import BodyStrings, cloudwatch_dashboard_file, encode
from generator.ownership import stamp_cloudwatch_body
from generator.project import load_project


def _reference(body, name: str, project: str) -> bytes:
    """The body's string as the standard library writes it: stamped, compact ASCII JSON, as a JSON string."""
    text = json.dumps(stamp_cloudwatch_body(body, name, project), sort_keys=True, separators=(",", ":"))
    return json.dumps(text).encode()


def _artifacts(tmp_path, clusters: list[tuple[str, str]], project: str = ""):
    lines = "".join(f"  - {{name: {json.dumps(name)}, region: {region}}}\n" for name, region in clusters)
    (tmp_path / "gpudash.yaml").write_text((f"project: {project}\n" if project else "") + f"clusters:\n{lines}")
    return build(load_project(tmp_path / "gpudash.yaml"))


@pytest.mark.parametrize("clusters", [
    # names that the text holds elsewhere: a word of the header, the n of each \n escape, a Region, a digit
    [("a", "us-east-1"), ("b", "eu-west-1"), ("n", "us-east-1"), ("m", "eu-west-1")],
    [("gpu", "us-east-1"), ("us-east-1", "us-east-1"), ("eu-west-1", "us-east-1"), ("1", "eu-west-1")],
    # one name the start of another's, a name holding the other's kind, names alike but for - and _
    [("prod", "us-east-1"), ("prod-overview", "us-east-1"), ("prod-by", "eu-west-1"), ("prod_by", "us-east-1")],
])
def test_bodies_of_clusters_named_like_their_text_are_the_standard_librarys_strings(tmp_path, clusters):
    artifacts = _artifacts(tmp_path, clusters)
    files = encode(artifacts)
    assert len(artifacts.cloudwatch_dashboards) == 3 * len(clusters)
    for item in artifacts.cloudwatch_dashboards:
        expected = _reference(item.body, item.name, "")
        assert json.loads(files[cloudwatch_dashboard_file(item.name)])["DashboardBody"] == json.loads(expected)
        assert BodyStrings(artifacts)(item.name, item.held) == expected


def test_a_fleet_escapes_each_kind_once_and_every_body_as_the_standard_library_does(tmp_path):
    clusters = [(f"c{number:02}", ("us-east-1", "eu-west-1")[number % 2]) for number in range(12)]
    artifacts = _artifacts(tmp_path, clusters, project="team-a")
    strings = BodyStrings(artifacts)
    for item in artifacts.cloudwatch_dashboards:
        assert strings(item.name, item.held) == _reference(item.body, item.name, "team-a")
    # three dashboards in two Regions, each text split once at its stand-in names, and every body filled in
    assert len(strings.references) == 6
    assert sorted({region for _, region in strings.references}) == ["eu-west-1", "us-east-1"]
    assert all(reference is not None for reference in strings.references.values())


def test_a_stand_in_name_the_text_holds_elsewhere_escapes_each_body_whole(tmp_path, monkeypatch):
    # "Generated" is a word of every header: the text rendered with it splits at more places than the other
    # stand-in's, so no dashboard's text is split and every body is escaped whole, as the standard library does
    import generator.output as output

    monkeypatch.setattr(output, "_STAND_INS", ("Generated", "zz-stand-in"))
    artifacts = _artifacts(tmp_path, [("c1", "us-east-1"), ("c2", "us-east-1")], project="team-a")
    strings = BodyStrings(artifacts)
    for item in artifacts.cloudwatch_dashboards:
        assert strings(item.name, item.held) == _reference(item.body, item.name, "team-a")
    assert len(strings.references) == 3 and all(reference is None for reference in strings.references.values())


def test_a_body_that_is_not_the_one_rendered_is_escaped_whole(tmp_path):
    # a body given for a dashboard's name that is not the object the renderer made for it (a changed copy) is
    # escaped from itself, never filled in from its dashboard's text
    artifacts = _artifacts(tmp_path, [("c1", "us-east-1"), ("c2", "us-east-1")])
    strings = BodyStrings(artifacts)
    item = artifacts.cloudwatch_dashboards[0]
    changed = {**item.body, "start": "-PT3H"}
    assert strings(item.name, changed) == _reference(changed, item.name, "")
    assert strings(item.name, item.held) == _reference(item.body, item.name, "")


def test_a_name_written_otherwise_than_as_itself_is_seen_by_the_stand_ins(tmp_path, monkeypatch):
    # were the header to escape a character of a name (Markdown's "_"), a cluster's text would not be its dashboard's
    # text filled with the name: the stand-ins hold every kind of character a name may hold, so their texts split
    # apart and each body is escaped whole, as the standard library does
    from generator.render.cloudwatch import ClusterBodies

    rendered = ClusterBodies.body

    def escaping(self, cluster):
        body = rendered(self, cluster)
        header = {**body["widgets"][0], "properties": {"markdown": body["widgets"][0]["properties"]["markdown"]
                                                       .replace("_", "\\_")}}
        return {**body, "widgets": [header, *body["widgets"][1:]]}

    monkeypatch.setattr(ClusterBodies, "body", escaping)
    artifacts = _artifacts(tmp_path, [("prod_by", "us-east-1"), ("Prod-2", "us-east-1")])
    strings = BodyStrings(artifacts)
    for item in artifacts.cloudwatch_dashboards:
        assert strings(item.name, item.held) == _reference(item.body, item.name, "")


def test_a_body_alone_in_its_region_is_escaped_whole_without_splitting_its_text(tmp_path):
    # splitting a text renders it twice more (with the stand-ins): worth it for two or more bodies of a Region only
    artifacts = _artifacts(tmp_path, [("a", "us-east-1"), ("b", "eu-west-1"), ("c", "eu-west-1")], project="team-a")
    strings = BodyStrings(artifacts)
    for item in artifacts.cloudwatch_dashboards:
        assert strings(item.name, item.held) == _reference(item.body, item.name, "team-a")
    assert len(strings.references) == 3
    assert {region for _, region in strings.references} == {"eu-west-1"}
    assert all(reference is not None for reference in strings.references.values())


def test_generate_renders_the_body_of_one_cluster_per_dashboard_and_region_and_writes_every_cluster_s(tmp_path):
    # the clusters' bodies of a dashboard are written from its text split at their name: rendering each cluster's
    # body whole besides (1,000 clusters: 3,000 bodies, 87 MB) made dicts nothing read. A body is rendered where it is
    # measured (one per dashboard and Region: the template's size, CloudWatch's metric limits) and when it is asked for
    clusters = [(f"c{number:02}", ("us-east-1", "eu-west-1")[number % 2]) for number in range(8)]
    artifacts = _artifacts(tmp_path, clusters, project="team-a")
    files = encode(artifacts)
    assert len(artifacts.cloudwatch_dashboards) == 24
    assert sum(item.held.is_rendered for item in artifacts.cloudwatch_dashboards) <= 3 * 2
    for item in artifacts.cloudwatch_dashboards:  # each as the standard library writes its body, rendered now
        assert json.loads(files[cloudwatch_dashboard_file(item.name)])["DashboardBody"] == \
            json.loads(_reference(item.body, item.name, "team-a"))
        assert item.held.is_rendered and item.held == item.body
