"""The random fleets of test_cloudwatch_random_fleets.py made messier: each widget and alarm still reads the truth.

Three things no seeded fleet there has, each on fleets of both pipelines, the truth still computed from the fleet's
facts (mixed_fleet.truth, random_fleet.firing), never from a query:
* exporters writing no `UUID` label (an exporter built or relabelled without it): every GPU keeps its own line, its
  pod's totals and its fleet's values (the merges key the GPU's index beside the UUID);
* a GPU reset (driver reload) on the first node, just after its scrape at 990 s: every counter of its GPUs starts
  again from 0, so the growth across the reset is the new reading itself, which awsemf and the JSON path send as the
  delta of a counter that went down (a reset): each rate and increase stays the GPU's own;
* the first node's exporter failing one scrape in the middle of every 5-minute period (OTel pipeline: a gauge's
  period is the mean of the readings there are, a counter's growth arrives in the next reading's delta). On
  agent.pipeline: classic the per-pod totals read (n - m) / n of the truth there, as the by-pod dashboard's header
  says, so that pipeline is not held to it here.
"""

from __future__ import annotations

import re

import pytest

from tests.support import mixed_fleet, random_fleet
from tests.unit.test_cloudwatch_random_fleets import test_every_widget_and_alarm_reads_the_truth_of_a_random_fleet \
    as every_widget_reads_the_truth

RESET = 990  # seconds: the first node's GPUs reset just after this scrape


def _without_uuid(payload):
    return lambda *args, **kwargs: re.sub(r'UUID="[^"]*",?', "", payload(*args, **kwargs))



@pytest.fixture
def fleet_of(monkeypatch):
    """Patches the fleet the random test draws, so that its first node can be told; payloads are made afresh."""
    monkeypatch.setattr(mixed_fleet, "_PAYLOADS", {})
    drawn = {}
    original = random_fleet.fleet

    def fleet(*args, **kwargs):
        drawn["nodes"] = original(*args, **kwargs)
        return drawn["nodes"]

    monkeypatch.setattr(random_fleet, "fleet", fleet)
    return drawn


@pytest.mark.parametrize("seed, pipeline, shared", [(0, "otel", True), (3, "otel", "per-process"),
                                                    (1, "classic", False)])
def test_exporters_writing_no_uuid(tmp_path, monkeypatch, fleet_of, seed, pipeline, shared):
    monkeypatch.setattr(mixed_fleet, "payload", _without_uuid(mixed_fleet.payload))
    every_widget_reads_the_truth(tmp_path, seed, pipeline, shared)


@pytest.mark.parametrize("seed, pipeline, shared", [(0, "otel", True), (2, "otel", "per-process"),
                                                    (1, "classic", False)])
def test_a_gpu_reset_restarts_its_counters(tmp_path, monkeypatch, fleet_of, seed, pipeline, shared):
    value = mixed_fleet._value

    def reset(metric, gpu, instance, elapsed):
        text = value(metric, gpu, instance, elapsed)
        if metric in mixed_fleet.COUNTERS and elapsed > RESET and text != mixed_fleet.NOT_SUPPORTED \
                and any(gpu is mine for mine in fleet_of["nodes"][0].gpus):
            return f"{int(getattr(gpu, mixed_fleet.DEVICE[metric]) * (elapsed - RESET))} " \
                   f"{(mixed_fleet.STARTED + elapsed) * 1000}"
        return text

    monkeypatch.setattr(mixed_fleet, "_value", reset)
    every_widget_reads_the_truth(tmp_path, seed, pipeline, shared)
    reset_line = mixed_fleet.payload(fleet_of["nodes"][0], RESET + 30, 30)  # the reset is in the payloads read
    assert re.search(r"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION\{[^}]*\} \d{1,8} ", reset_line), reset_line


@pytest.mark.parametrize("seed, shared", [(0, True), (1, False), (4, "per-process")])
def test_an_exporter_failing_a_scrape_in_every_period(tmp_path, monkeypatch, fleet_of, seed, shared):
    payload = mixed_fleet.payload

    def failing(node, elapsed=None, interval=1, scrape=None):
        if elapsed is not None and elapsed >= 0 and elapsed % 300 == 120 and node is fleet_of["nodes"][0]:
            return ""
        return payload(node, elapsed, interval, scrape)

    monkeypatch.setattr(mixed_fleet, "payload", failing)
    every_widget_reads_the_truth(tmp_path, seed, "otel", shared)
