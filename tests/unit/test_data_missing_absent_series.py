"""The "GPU data missing" alarm (its metric math over the cluster's static metrics) where some of them have no data
point in the whole evaluation range: no GPU node yet, a GPU node group scaled to zero, the agent or
kube-state-metrics stopped, the exporter DaemonSet deleted or its pods unavailable.

What metric math makes of a series with no data point at all is not written (the user guide says how a missing value
of a series that has data points is read, and that FILL fills the missing values of a time series; not whether an
empty series is a series of missing values, nor whether FILL makes values from nothing): the harness reads it either
way (cloudwatch_eval.ABSENT_SERIES, FILL_FROM_NOTHING). Each outage fires under all four readings (fail-safe: no
reading of the undocumented case silences it). A healthy cluster is OK under all four; a cluster without GPU nodes,
or with its GPU node group at zero, is OK under three, and ALARM (loud, not silent) where an empty series empties
any arithmetic and FILL makes nothing from nothing.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Datapoint

STEP, END = 30, 3600
READINGS = ("zero", False), ("zero", True), ("empty", True), ("empty", False)


@pytest.fixture(scope="module")
def request_(tmp_path_factory):
    folder = tmp_path_factory.mktemp("absent-series")
    (folder / "gpudash.yaml").write_text("")
    files = encode(build(load_project(folder / "gpudash.yaml"), grafana=False))
    alarms = json.loads(files["cloudwatch/alarms.json"])["alarms"]
    (found,) = [a["Request"] for a in alarms if a["Request"]["AlarmName"].endswith("gpu-data-missing-critical")]
    return found


def _points(request: dict, present: dict[str, float]) -> list[Datapoint]:
    """Datapoints every scrape for the alarm's metrics whose id is in `present` (id -> value; a SampleCount id
    -> how many observations per scrape), none for the others; the alarm's two reads of one metric (u and v) get
    the same points."""
    points, seen = [], set()
    for query in request["Metrics"]:
        if "MetricStat" not in query or query["Id"] not in present:
            continue
        metric = query["MetricStat"]["Metric"]
        key = (metric["MetricName"], tuple(sorted((d["Name"], d["Value"]) for d in metric["Dimensions"])))
        if key in seen:
            continue
        seen.add(key)
        counted = query["MetricStat"]["Stat"] == "SampleCount"
        count, value = (int(present[query["Id"]]), 1.0) if counted else (1, float(present[query["Id"]]))
        points += [Datapoint(metric["Namespace"], key[0], key[1], float(t), value)
                   for t in range(0, END, STEP) for _ in range(count)]
    return points


# (what runs, the ids with data and their values, the state)
SCENES = {
    "healthy": ({"n": 3, "k": 2, "d": 2, "a": 2, "u": 2, "v": 2, "g": 16}, "OK"),
    "no GPU node yet": ({"n": 3}, "OK"),
    "GPU node group at zero": ({"n": 3, "d": 0, "a": 0, "u": 0, "v": 0}, "OK"),
    "agent stopped": ({}, "ALARM"),
    "kube-state-metrics stopped": ({"g": 16}, "ALARM"),
    "exporter DaemonSet deleted": ({"n": 3, "k": 2}, "ALARM"),
    "exporter pods unavailable": ({"n": 3, "k": 2, "d": 2, "a": 0, "u": 2, "v": 2}, "ALARM"),
}
LOUD = {"no GPU node yet", "GPU node group at zero"}  # ALARM where an empty series empties arithmetic, FILL none


@pytest.mark.parametrize("absent, fill", READINGS)
@pytest.mark.parametrize("scene", list(SCENES))
def test_the_data_missing_alarm_under_each_reading_of_an_empty_series(request_, monkeypatch, scene, absent, fill):
    monkeypatch.setattr(cloudwatch_eval, "ABSENT_SERIES", absent)
    monkeypatch.setattr(cloudwatch_eval, "FILL_FROM_NOTHING", fill)
    present, state = SCENES[scene]
    if scene in LOUD and (absent, fill) == ("empty", False):
        state = "ALARM"
    assert cloudwatch_eval.alarm(request_, _points(request_, present), END) == {(): state}
