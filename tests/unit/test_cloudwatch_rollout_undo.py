"""A rollout undone within minutes (`kubectl rollout undo` of the exporter DaemonSet, maxSurge 0: never two exporter
pods on the node at once): what the CloudWatch counters read on the OTel pipeline.

A DaemonSet rolled back reuses its earlier ControllerRevision, so the re-created pods carry the earlier
`controller-revision-hash` again (kubernetes/kubernetes#45924: revisions of the same template are one). awsemf keeps
each label set's last reading for 5 minutes (internal/aws/metrics metric_calculator.go, cleanInterval; the key is the
metric's name and every label of the point, exporter/awsemfexporter datapoint.go): keyed by the hash alone, the
rolled-back pod's first delta was taken from the old pod's last reading, and so covered the seconds the undone
revision ran, which that revision's own series had published already (260,000 mW for a 200 W GPU). The pods'
`pod-template-generation` label, bumped at every template change (an undo too), keeps the two apart: the OTel
exporter job writes `exporter_revision` as `<hash>-<generation>`. Where no two exporter pods ever run at once, no
period may read more than the GPU's true increase (a rollout may lose the seconds between two pods' readings, as
docs/cloudwatch.md "Two exporter pods on one node" says; it may not count any twice).

Through the agent model (tests/support/cloudwatch_agent.py) into the generated widget, evaluated as CloudWatch
documents (tests/support/cloudwatch_eval.py).
"""

from __future__ import annotations

import math

import pytest

from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.exporter_overlap import (AGENT_FILE, END, WATTS, energy_rate_widget, exporter_page, overlap_build,
                                            revision_target)

OLD, NEW = "5d8f7c9b6d", "7c9d6f5b48"


def _published(pods: list[tuple[str, str, str, int, int]]):
    """The datapoints the agent publishes for one node whose exporter pods, (name, revision, generation, from, until)
    in seconds, run one after another; the first and third are scraped on the half minute (reading DCGM 1 s before), the second
    10 s past (its reading taken at 12 s past each half minute)."""
    files = overlap_build("otel")
    config, job = agent_config(files[AGENT_FILE])
    scrapes = []
    for i, (pod, revision, generation, start, until) in enumerate(pods):
        target = revision_target(job, pod, f"10.0.1.{10 + i}", revision, generation)
        for k in range(-2, END // 30):
            t = 30.0 * k + (10 if i % 2 else 0)
            if start <= t < until:
                taken = t - 1 if i % 2 == 0 else math.floor((t - 12) / 30) * 30 + 12
                scrapes.append(Scrape(t, exporter_page("hostname", "ip-10-0-1-1", taken), target))
    scrapes.sort(key=lambda s: s.timestamp)
    return files, Agent(config, job).run(scrapes)


def test_a_rollout_undone_within_minutes_never_reads_more_than_the_gpu_used():
    # the old revision until 900 s (its last reading 869 s); the new one from 930 s (first reading 942 s, its
    # baseline) to 1050 s; undone: the old revision's hash again from 1080 s, generation 3. Keyed by the hash alone
    # the period 900-1200 read 869 -> 1169 s from the old revision's series (300 s) plus 942 -> 1032 s from the new
    # one's (90 s): 390 s of energy in a 300 s period, 260,000 mW. Now the undo starts its own series (baseline
    # 1079 s): 942 -> 1032 s and 1079 -> 1169 s, 180 s (the two gaps of the two rollouts lost, as README says).
    files, points = _published([("nvidia-dcgm-exporter-a", OLD, "1", -100, 900),
                                ("nvidia-dcgm-exporter-b", NEW, "2", 930, 1050),
                                ("nvidia-dcgm-exporter-c", OLD, "3", 1080, 10**6)])
    (line,) = energy_rate_widget(files, points).values()
    assert line == {**{t: pytest.approx(WATTS * 1000) for t in range(0, END, 300)},
                    900: pytest.approx(180 * WATTS * 1000 / 300)}


def test_a_pod_re_created_in_the_same_generation_goes_on_counting_across_the_gap():
    # evicted and re-created by its DaemonSet, no template change: the same hash and generation, one series (as
    # tests/unit/test_cloudwatch_exporter_overlap.py's pod re-created with the same revision): its first delta covers
    # the gap from the old pod's last reading (869 s), and the period 900-1200 reads 869 -> 1152 s (its last reading
    # there: the new pod reads DCGM 28 s before its scrape), 283 s; the next periods 300 s each
    files, points = _published([("nvidia-dcgm-exporter-a", OLD, "1", -100, 900),
                                ("nvidia-dcgm-exporter-c", OLD, "1", 1080, 10**6)])
    (line,) = energy_rate_widget(files, points).values()
    assert line == {**{t: pytest.approx(WATTS * 1000) for t in range(0, END, 300)},
                    900: pytest.approx(283 * WATTS * 1000 / 300)}
