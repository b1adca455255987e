"""Stories judged together in one promtool run, each its own cluster (tests/support/cluster_stories): what the batch
may be trusted with is checked, not assumed."""

from __future__ import annotations

import pytest

from tests.support.cluster_stories import fleet_presence, kept_apart, story_own
from tests.support.promtool_rules import judged_apart

METRIC = "DCGM_FI_DEV_GPU_TEMP"


@pytest.mark.parametrize("expr, apart", [
    ("max by (cluster, node) (DCGM_FI_DEV_GPU_TEMP)", True),
    ("max by (node, gpu, UUID) (DCGM_FI_DEV_GPU_TEMP)", True),  # the alert's: each story's UUIDs its own
    ("max by (node) (DCGM_FI_DEV_GPU_TEMP)", False),
    ("sum(DCGM_FI_DEV_GPU_TEMP)", False),
    ("a and on (cluster, node) b", True),
    ("a and b", True),  # matched on every label, the cluster among them
    ("a and on (node) b", False),
    ("a and ignoring (cluster) b", False),
    ("a and on () count(DCGM_FI_DEV_GPU_TEMP)", True),  # the fleet's presence: the same in each story
    ("a and on () absent_over_time(DCGM_FI_DEV_GPU_TEMP[300s] offset 300s)", True),
    ("a and on () count(b)", False),  # another metric's count: not checked alike
    ('a and on () absent_over_time(DCGM_FI_DEV_GPU_TEMP{node="n"}[300s])', False),  # one node's: a story's
    ('absent_over_time(DCGM_FI_DEV_GPU_TEMP{node="n"}[300s])', False),  # empty where any story has the node
    ('absent_over_time(DCGM_FI_DEV_GPU_TEMP{UUID!=""}[300s])', False),
    ("absent(kube_node_created)", False),  # another metric's presence: not checked alike
    ('vector(scalar(DCGM_FI_DEV_GPU_TEMP{gpu="0"}))', False),  # NaN where two stories have the GPU
    ("scalar(vector(1))", True),
    ("a + on (gpudash_o0) group_left () (label_replace(vector(1), \"gpudash_o0\", \"1\", \"\", \"\") or vector(0))",
     True),  # numbers: the same for every story
])
def test_a_rule_keeps_stories_apart_only_where_each_join_and_grouping_keeps_the_cluster(expr, apart):
    assert kept_apart([expr], METRIC) is apart


def test_the_fleet_presence_tells_a_series_read_from_one_seen_through_the_look_back_and_from_none():
    series = [{"series": f'{METRIC}{{UUID="a"}}', "values": "1x2 _ _ stale _"},
              {"series": f'{METRIC}{{UUID="b"}}', "values": "_ _ _ _ _ _ _ " + " ".join(["_"] * 10) + " 1"},
              {"series": 'kube_node_created{node="n"}', "values": "0x20"}]
    assert fleet_presence(series, METRIC) == "LLLvv.." + "." * 10 + "L"


def test_the_fleet_presence_tells_a_sample_at_the_look_back_s_edge_from_one_ended_there():
    """Prometheus 2 reads a sample 5 minutes old (its look-back is closed), 3 does not; one ended by a staleness
    marker then is read by neither: two stories alike but for that marker are not one presence."""
    read = {"series": f'{METRIC}{{UUID="a"}}', "values": "1 " + "_ " * 11}
    ended = {"series": f'{METRIC}{{UUID="a"}}', "values": "1 " + "_ " * 9 + "stale _"}
    assert fleet_presence([read], METRIC) == "L" + "v" * 9 + "b."
    assert fleet_presence([ended], METRIC) == "L" + "v" * 9 + ".."


def test_a_story_s_series_are_marked_its_own_and_a_gpu_without_uuid_is_refused():
    own = story_own([{"series": f'{METRIC}{{gpu="0",UUID="GPU-1",node="n"}}', "values": "1"},
                     {"series": 'kube_node_created{node="n"}', "values": "0"}], 3, METRIC)
    assert [one["series"] for one in own] == [f'{METRIC}{{cluster="s3",gpu="0",UUID="GPU-1-s3",node="n"}}',
                                              'kube_node_created{cluster="s3",node="n"}']
    with pytest.raises(AssertionError):
        story_own([{"series": f'{METRIC}{{gpu="0",node="n"}}', "values": "1"}], 0, METRIC)


@pytest.mark.parametrize("expr, apart", [
    ("max by (node, gpu) (x)", True),
    ("x and on (node, gpu) y", True),
    ("x and on () y", False),
    ('x * scalar(y{node="n"})', False),  # NaN where two stories have the node's series: every story's x then
    ("x * scalar(vector(2))", True),  # numbers: the same for every story
    ('absent_over_time(x{node="n"}[5m])', False),  # empty where any story has a series of it
])
def test_stories_told_apart_by_their_names_are_kept_apart_only_where_nothing_answers_for_all(expr, apart):
    """judged_apart (stories marked by namespace, node and UUID: promtool_rules.stories_own)."""
    assert judged_apart(expr) is apart
