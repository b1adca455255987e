"""CloudWatch's listings (ListDashboards, DescribeAlarms by name prefix) may lag the writes of a moment ago: a `plan`
or `apply --prune` right after an `apply` is listed again, a bounded number of times on the deadline's clock, until
the listing holds what reads by name show; a listing that never does fails the command, and its gap is never read as
permission to prune (through the fault proxy in front of moto, which hides the freshly written names for a number of
listings)."""

from __future__ import annotations

import json

import pytest

from generator.targets.relisting import RELIST_WAITS
from tests.support.cloudwatch_world import TWO_CLUSTERS, alarms, fresh, other_cluster, snapshot, writes
from tests.support.fault_proxy import Rule


def _lagging(listings: int) -> list[Rule]:
    """Rules answering the first `listings` ListDashboards and DescribeAlarms-by-prefix calls each without the objects
    of cluster gpu-cluster (those the last apply wrote): a listing behind the writes."""
    def behind(key: str, name: str):
        def rewrite(body: bytes) -> bytes:
            answer = json.loads(body)
            answer[key] = [item for item in answer[key] if not item[name].startswith("gpudash-gpu-cluster-")]
            return json.dumps(answer).encode()
        return rewrite

    return [Rule(path="/", operation="ListDashboards", action="rewrite", times=listings, contains=WHOLE_LISTING,
                 callback=behind("DashboardEntries", "DashboardName")),
            Rule(path="/", operation="DescribeAlarms", action="rewrite", times=listings, contains=b"AlarmNamePrefix",
                 callback=behind("MetricAlarms", "AlarmName"))]


WHOLE_LISTING = b'"DashboardNamePrefix": "gpudash-"'  # the listing of every name (not one cluster's)
CLUSTER_LISTINGS = 2  # a prune also lists each cluster's names, once: gpu-cluster's, and other's (--removed-cluster)


def _listings(proxy) -> int:
    """The listings of every dashboard name made."""
    return proxy.operations.count("ListDashboards") - CLUSTER_LISTINGS


@pytest.fixture
def two_clusters_published(proxied, published, project_dir):
    """Both clusters' objects published, then those of gpu-cluster written again by this settings' apply (cluster
    "other" is no longer defined): what a plan or prune right after that apply finds."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    fresh(proxy)
    return proxy, client, apply


def test_a_plan_right_after_an_apply_waits_out_a_listing_behind_it_and_plans_as_if_it_were_not(
        two_clusters_published, cli):
    """The listings leave out the objects just written for the first few calls: the plan lists again (on the
    deadline's clock) and shows what a caught-up listing shows: nothing to create, cluster "other"'s objects to
    prune. It used to fail (exit 3) saying the listing holds only some of the objects."""
    proxy, client, apply = two_clusters_published
    plan = ("plan", "--no-grafana", "--removed-cluster", "other", "--output", "json")
    code, caught_up, stderr = cli(*plan, env={"AWS_ENDPOINT_URL": proxy.url})
    assert code == 1 and "Traceback" not in stderr, (code, stderr)
    proxy.inject(*_lagging(3))
    code, lagging, stderr = cli(*plan, env={"AWS_ENDPOINT_URL": proxy.url})
    assert code == 1 and "Traceback" not in stderr, (code, stderr)
    assert json.loads(lagging) == json.loads(caught_up)
    assert '"create"' not in lagging and "gpudash-other-" in lagging, lagging


def test_a_prune_right_after_an_apply_prunes_what_a_caught_up_listing_shows(two_clusters_published):
    """apply --prune while the listings are behind the last apply: once a listing holds what reads by name show, the
    other cluster's objects are pruned and this cluster's are left as they are."""
    proxy, client, apply = two_clusters_published
    before = snapshot(client)
    proxy.inject(*_lagging(len(RELIST_WAITS)))  # the last listing again catches up
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 0 and "Traceback" not in stderr, (code, stderr)
    after = snapshot(client)
    assert set(after[0]) == {name for name in before[0] if not other_cluster(name)}, sorted(after[0])
    assert set(after[1]) == {name for name in before[1] if not other_cluster(name)}, sorted(after[1])
    assert all(after[0][name] == before[0][name] for name in after[0]) and all(
        after[1][name] == before[1][name] for name in after[1])


def test_a_listing_behind_for_longer_than_the_waits_fails_the_prune_and_deletes_nothing(two_clusters_published):
    """A listing still behind after every listing again: the prune fails (exit 3) saying so, nothing is written, and
    the listings end (a bounded number of them)."""
    proxy, client, apply = two_clusters_published
    before = sorted(alarms(client))
    proxy.inject(*_lagging(len(RELIST_WAITS) + 1))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 3 and "Traceback" not in stderr, (code, stderr)
    assert f"in {len(RELIST_WAITS) + 1} listings over {sum(RELIST_WAITS):g} s" in stderr, stderr
    assert "what --prune would delete cannot be read" in stderr, stderr
    assert writes(proxy) == [] and sorted(alarms(client)) == before
    assert _listings(proxy) == len(RELIST_WAITS) + 1


def test_a_deadline_nearer_than_the_waits_ends_the_prune_saying_what_the_listing_left_out(two_clusters_published):
    """The waits for a listing to catch up stay within the command's deadline: one that would outlive it ends the
    command (exit 3) with what the listings left out, and nothing is written."""
    proxy, client, apply = two_clusters_published
    before = sorted(alarms(client))
    proxy.inject(*_lagging(len(RELIST_WAITS) + 1))
    code, report, stderr = apply("--prune", "--removed-cluster", "other", "--deadline", "10")
    assert code == 3 and "Traceback" not in stderr, (code, stderr)
    assert "leaving out" in stderr and "no time left to retry within the deadline of 10 s" in stderr, stderr
    assert writes(proxy) == [] and sorted(alarms(client)) == before


def _leaving_out(start: str) -> list[Rule]:
    """Rules answering the next ListDashboards and DescribeAlarms-by-prefix call each without the objects named
    `start`*."""
    def without(key: str, name: str):
        def rewrite(body: bytes) -> bytes:
            answer = json.loads(body)
            answer[key] = [item for item in answer[key] if not item[name].startswith(start)]
            return json.dumps(answer).encode()
        return rewrite

    return [Rule(path="/", operation="ListDashboards", action="rewrite", callback=without("DashboardEntries",
                                                                                          "DashboardName")),
            Rule(path="/", operation="DescribeAlarms", action="rewrite", contains=b"AlarmNamePrefix",
                 callback=without("MetricAlarms", "AlarmName"))]


def test_a_listing_again_that_leaves_out_what_the_first_held_is_not_gone_on_with(two_clusters_published):
    """The first listings leave out this cluster's objects (written a moment ago); the listings again hold them but
    leave out cluster "other"'s, which the first held (a listing answered by another replica, as far behind in its
    own way). The listing gone on with must hold everything a listing or a read by name showed: going on with the
    second, the prune left cluster "other"'s objects without a word (exit 0). Now it lists again until one holds
    them all, and prunes them."""
    proxy, client, apply = two_clusters_published
    before = snapshot(client)
    proxy.inject(*_leaving_out("gpudash-gpu-cluster-"), *_leaving_out("gpudash-other-"))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 0 and "Traceback" not in stderr, (code, stderr)
    after = snapshot(client)
    assert set(after[1]) == {name for name in before[1] if not other_cluster(name)}, sorted(after[1])
    assert set(after[0]) == {name for name in before[0] if not other_cluster(name)}, sorted(after[0])


def test_an_object_a_first_listing_held_that_is_gone_since_is_not_waited_for(two_clusters_published):
    """The first listings are behind in both ways: they leave out this cluster's objects and hold one of cluster
    "other"'s that is deleted right after (by a person, or the prune of a moment ago). The listings again are caught
    up: they hold the first and not the second. An object a listing again leaves out is read by name before it is
    waited for: the one deleted is gone, and the prune goes on with the caught-up listing (it waited 30 s and failed
    when the listing gone on with had to hold everything the first held)."""
    proxy, client, apply = two_clusters_published
    before = snapshot(client)
    gone_alarm, gone_dashboard = sorted(n for n in before[0] if other_cluster(n))[0], "gpudash-other-health"

    def behind_then_deleted(key: str, name: str, delete):
        def rewrite(body: bytes) -> bytes:
            delete()  # gone right after this listing was made
            answer = json.loads(body)
            answer[key] = [item for item in answer[key] if not item[name].startswith("gpudash-gpu-cluster-")]
            return json.dumps(answer).encode()
        return rewrite

    proxy.inject(Rule(path="/", operation="ListDashboards", action="rewrite",
                      callback=behind_then_deleted("DashboardEntries", "DashboardName",
                                                   lambda: client.delete_dashboards(DashboardNames=[gone_dashboard]))),
                 Rule(path="/", operation="DescribeAlarms", action="rewrite", contains=b"AlarmNamePrefix",
                      callback=behind_then_deleted("MetricAlarms", "AlarmName",
                                                   lambda: client.delete_alarms(AlarmNames=[gone_alarm]))))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 0 and "Traceback" not in stderr, (code, stderr)
    after = snapshot(client)
    assert set(after[1]) == {name for name in before[1] if not other_cluster(name)}, sorted(after[1])
    assert set(after[0]) == {name for name in before[0] if not other_cluster(name)}, sorted(after[0])
