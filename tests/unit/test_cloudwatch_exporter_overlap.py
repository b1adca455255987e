"""Two exporter pods serving one GPU at once (a DaemonSet rollout with maxSurge: the old and the new pod side by side
on a node), an ordinary rollout (maxSurge 0: the new pod starts after the old one stops) and a pod re-created with
the same revision: what the CloudWatch counters read.

Each exporter reads DCGM on its own clock (its own watch, every collect interval), so a reading scraped later from
one exporter may have been taken earlier than the other exporter's last one. Here the old exporter's readings are
taken 1 s before its scrape, the new one's at 12 s past each half minute while it is scraped at 10 s past: the
readings of the two, in scrape order, go down and up. awsemf keeps one previous value per label set
(exporter/awsemfexporter datapoint.go: the key is the metric's name and every label of the point; a delta below 0
is taken as a reset and the reading itself is sent). Merged into one label set, each step down sent the whole
counter since the driver loaded as the period's increase (1.67e9 mW for a 200 W GPU; the PCIe replays alarm in ALARM
for a link replaying 30 per 5 minutes, threshold 50). The OTel pipeline's scrape job labels each series with its
exporter pod's DaemonSet revision (the pod's controller-revision-hash), which the merged counters keep: each
revision is a delta series of its own. So (docs/cloudwatch.md, "Two exporter pods on one node"):

* while both revisions run, both increases are summed: the seconds they run together count twice, never more;
* a rollout's new revision starts with a baseline: the increase between the old pod's last reading and the new pod's
  first is lost (with maxSurge the new pod's first reading comes before the old one's last: nothing is lost);
* a pod re-created with the same revision (evicted, deleted) goes on counting across the gap.

`agent.pipeline: classic` keys the agent's deltas by every label, the exporter pod's name among them: the same
doubling in an overlap, no spike.

Through the models of the agent (tests/support/cloudwatch_otel.py, the JSON path's in cloudwatch_agent.py) into the
generated widget and alarm, evaluated as CloudWatch documents (tests/support/cloudwatch_eval.py).
"""

from __future__ import annotations

import json

import pytest

from tests.support import cloudwatch_eval
from tests.support.exporter_overlap import END, TRUE_RATE, WATTS, energy_at, energy_rate_widget, published_points


def _pcie_states(files, points) -> dict[int, set[str]]:
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if a["Request"]["AlarmName"] == "gpudash-gpu-cluster-pcie-replays-warning"]
    return {end: set(cloudwatch_eval.alarm(request, points, end, evaluation_range=3).values())
            for end in range(360, END + 1, 60)}


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_a_pods_energy_use_rate_counts_a_long_overlap_twice_and_never_the_whole_counter(pipeline):
    # the new exporter from 600 s, the old one gone from 900 s: the period 600-900 holds the old revision's 300 s
    # (569 to 869 s) and the new one's 270 s, from its first reading (582 s, its baseline) to its last in the period
    # (852 s): (300 + 270) s x 200 W / 300 s. On main the otel pipeline read 1.67e9 mW there (the counter since boot).
    shown = energy_rate_widget(*published_points(pipeline, old_until=900, new_from=600))
    assert shown == {"Pod ml/train-0": {**{t: pytest.approx(v) for t, v in TRUE_RATE.items()},
                                        600: pytest.approx(570 * WATTS * 1000 / 300)}}


def test_the_pcie_replays_alarm_fires_only_where_a_long_overlap_counts_twice_past_its_threshold():
    # 30 replays per 5 minutes, threshold 50: in the 5-minute overlap the two revisions count 30 + 27 = 57, so the
    # alarm is ALARM while a period of its range holds it (the README and `gpudash verify`'s maxSurge warning say
    # so); OK before and after. On main: ALARM from 660 to 1140 s (the counter since boot sent as one increase).
    states = _pcie_states(*published_points("otel", old_until=900, new_from=600))
    assert {end for end, s in states.items() if s != {"OK"}} == {840, 900, 960}
    assert all(s == {"ALARM"} for end, s in states.items() if end in (840, 900, 960))


def test_a_short_overlap_reads_its_seconds_twice_and_the_alarm_stays_ok():
    # a surge pod ready within a minute: the new exporter from 840 s, the old one gone from 900 s. The period
    # 600-900 holds the old revision's 300 s and the new one's 30 s (822 to 852 s).
    files, points = published_points("otel", old_until=900, new_from=840)
    assert energy_rate_widget(files, points) == {"Pod ml/train-0": {**{t: pytest.approx(v) for t, v in TRUE_RATE.items()},
                                                              600: pytest.approx(330 * WATTS * 1000 / 300)}}
    assert set().union(*_pcie_states(files, points).values()) == {"OK"}


def test_an_ordinary_rollout_loses_the_increase_between_the_old_pods_last_reading_and_the_new_ones_first():
    # maxSurge 0: the old pod's last scrape at 870 s (its reading at 869 s), the new one's first at 940 s (reading
    # 912 s, the new revision's baseline): the 43 s between are counted nowhere, all in the period 900-1200,
    # which reads its 240 s from 912 to 1152 s. On main the merged series counted them (a gap under 5 minutes).
    files, points = published_points("otel", old_until=900, new_from=930)
    assert energy_rate_widget(files, points) == {"Pod ml/train-0": {**{t: pytest.approx(v) for t, v in TRUE_RATE.items()},
                                                              900: pytest.approx(240 * WATTS * 1000 / 300)}}
    assert set().union(*_pcie_states(files, points).values()) == {"OK"}


def test_a_pod_re_created_with_the_same_revision_goes_on_counting_across_the_gap():
    # evicted and re-created by its DaemonSet: a new pod name and address, the same revision and exporter release;
    # the awsemf delta of its first reading (912 s) covers the gap from the old pod's last (869 s, under 5 minutes):
    # the period 900-1200 reads 869 to 1152 s, the 240 s of the rollout above and its 43 s lost there (283 s: the
    # new pod reads DCGM 28 s before its scrape where the old one read 1 s before; the next periods read 300 s each)
    files, points = published_points("otel", old_until=900, new_from=930, new_revision="5d8f7c9b6d", new_style=False)
    assert energy_rate_widget(files, points) == {"Pod ml/train-0": {**{t: pytest.approx(v) for t, v in TRUE_RATE.items()},
                                                              900: pytest.approx(283 * WATTS * 1000 / 300)}}
    assert set().union(*_pcie_states(files, points).values()) == {"OK"}


def test_two_pods_of_one_revision_answering_at_once_publish_the_counter_since_boot():
    # Not covered (README): a pod still answering beside its replacement of the same revision and generation (one
    # scrape of overlap: the replacement's first scrape at 880 s gives DCGM's reading of 852 s, after the old pod's
    # of 869 s) is one delta series with it: the step down is sent as a reset, the counter since the driver loaded. The
    # pod's energy rate reads 1.67e8 mW in that period (true 200,000) and the replays alarm is ALARM from 900 to
    # 1140 s. Keying by pod as well would end it and lose every re-created pod's gap (the test above).
    files, points = published_points("otel", old_until=900, new_from=870, new_revision="5d8f7c9b6d", new_style=False)
    shown = energy_rate_widget(files, points)["Pod ml/train-0"]
    # the old pod's 300 s (569 to 869 s) and the replacement's reading of 852 s sent whole
    assert shown[600] == pytest.approx((300 * WATTS * 1000 + energy_at(852)) / 300)
    assert {end for end, s in _pcie_states(files, points).items() if s != {"OK"}} == {900, 960, 1020, 1080, 1140}
