"""Three alarms and their Prometheus twins driven through stories the twin suites did not hold (issue 10's
"each alarm and its Prometheus twin fire on the same situation").

Each story's readings go through the model of the agent (the generated configuration) into the CloudWatch alarm, and
into `promtool test rules` for the rule (test_gauge_twins' harness); the truth is worked out here from the story's
readings, over the alarm's evaluation range where a gap makes its state depend on it.

* gpu-temp-high: a GPU two pods share by time-slicing, named in turn at every scrape (kubelet's order, dcgm-exporter
  #340), whose exporter is replaced by an upgraded one spelling `hostname` (not `Hostname`) mid-story, with one
  reading at 75 °C and one blank.
* xid-error: a newer exporter writing `err_code` / `err_msg` on the XID gauge, so each new code starts a new series
  (0, then 43, then 79), then restarted (its new pod reads 0 again, as dcgm-exporter does after a restart).
* gpu-idle: a pod's GPU at 1 % whose utilization reads DCGM's blank for eighteen minutes, across which its exporter
  pod is replaced: the periods holding only blanks have no reading, neither idle nor busy (on the OTel pipeline:
  classic publishes the blank, AL010).

No divergence was found: both forms follow the truth at every evaluation of each story.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.integration.test_gauge_twins import (BLANK, IDLE, NEW, OLD, STEP, Source, Story, _alert, _build,
                                                _cloudwatch_wrong, _gauge_periods, _prometheus_case,
                                                _prometheus_wrong, _range_truth)

NODE = "ip-10-0-1-1"


@dataclass(frozen=True)
class Upgraded(Source):
    """A source whose exporter may be an upgraded one (`hostname`), and whose XID series may carry its code."""

    lower: bool = False  # the exporter spells the label `hostname` (its main branch after 4.x)
    code: str = ""  # err_code / err_msg of the XID gauge (newer exporters)

    def labels(self) -> str:
        text = super().labels()
        if self.lower:
            text = text.replace("Hostname=", "hostname=")
        if self.code:
            text += f',err_code="{self.code}",err_msg="Graphics Engine Exception"'
        return text


def _temp_high_in_turn() -> Story:
    """85 °C except 75 °C at t=540 s and DCGM's blank at t=1320 s; pods a and b named in turn (a at even scrapes);
    the exporter replaced after the scrape at 870 s by one spelling `hostname`. High once ten minutes hold readings
    and none at or under 80 °C (a blank is no reading): from t=1155 s."""
    def reading(k): return 75.0 if k == 18 else BLANK if k == 44 else 85.0

    def source(k):
        return Upgraded(OLD if k < 30 else NEW, node=NODE, pod="ab"[k % 2], lower=k >= 30)

    def truth(t):
        window = [reading(k) for k in range(80) if t - 600 < k * STEP <= t and reading(k) != BLANK]
        return t >= 600 and bool(window) and all(v > 80 for v in window)
    return Story("gpu-temp-high", "DCGM_FI_DEV_GPU_TEMP", 80, reading, source, truth, {"node": NODE, "gpu": "0"},
                 [k * STEP + 15 for k in range(20, 80)])


def _xid_codes_then_restart() -> Story:
    """XID 0 until t=570 s, 43 (err_code 43) from t=600 s, 79 (err_code 79) from t=1500 s; the exporter restarted after
    the scrape at 2070 s: its new pod reads 0 (no code). In error while a 5-minute period holds a reading above 0."""
    def reading(k): return 0.0 if k < 20 or k >= 70 else 43.0 if k < 50 else 79.0

    def source(k):
        if k >= 70:
            return Upgraded(("ip-10-0-1-1", NEW[1]), node=NODE)
        return Upgraded(("ip-10-0-1-1", OLD[1]), node=NODE, code="" if k < 20 else "43" if k < 50 else "79")
    return Story("xid-error", "DCGM_FI_DEV_XID_ERRORS", 110, reading, source,
                 _range_truth(_gauge_periods(reading, 110, max), lambda v: v > 0, 1, 1, "notBreaching"),
                 {"node": NODE, "gpu": "0"}, [k * STEP + 15 for k in range(10, 110)], example_range=True)


def _idle_blank_run_across_restart() -> Story:
    """Pod ml/a at 1 % except DCGM's blank from t=1800 s to t=2850 s (36 scrapes: 18 minutes, three whole periods and
    more); its exporter replaced after the scrape at 2370 s (the scrape at 2400 s missed). The idle alarm judges the 6
    latest periods with readings of its range: where fewer than 6 of them hold a reading it is not called idle."""
    def reading(k): return None if k == 80 else BLANK if 60 <= k < 96 else 1.0

    def source(k): return Source(OLD if k < 80 else NEW)
    return Story("gpu-idle", "DCGM_FI_DEV_GPU_UTIL", 140, reading, source,
                 _range_truth(_gauge_periods(reading, 140, lambda v: sum(v) / len(v)), lambda v: v < 5, 6, 6,
                              "notBreaching"),
                 IDLE, [k * STEP + 15 for k in range(50, 140)], example_range=True)


STORIES = {"temp-high-in-turn-across-an-exporter-upgrade": _temp_high_in_turn(),
           "xid-codes-as-series-then-exporter-restart": _xid_codes_then_restart(),
           "idle-blank-run-across-an-exporter-restart": _idle_blank_run_across_restart()}


CLASSIC = "agent:\n  pipeline: classic\n"
# agent.pipeline: classic publishes DCGM's blank (9.2e18), which the idle alarm's mean reads as a busy GPU from the
# first blank on: said by lint AL010 and the alarm's description, not judged here.
CASES = [(name, settings) for name in STORIES for settings in ("", CLASSIC)
         if not (settings == CLASSIC and STORIES[name].rule == "gpu-idle")]


@pytest.mark.parametrize("name, settings", CASES, ids=[f"{n}-{'classic' if s else 'otel'}" for n, s in CASES])
def test_alarm_and_rule_fire_on_the_truth_at_every_evaluation(name, settings, tmp_path):
    story = STORIES[name]
    pipeline = settings
    files, folder = _build(tmp_path, pipeline)
    expected = {t: story.alerts(t) for t in story.evaluations}
    assert any(expected.values()) and not all(expected.values())  # a situation to find, and one to leave
    wrong = _prometheus_wrong(folder, [(_alert(folder, story.rule), *_prometheus_case(story))], story.every)
    assert not wrong, f"the Prometheus rule differs from the truth at {wrong}"
    cloudwatch = _cloudwatch_wrong(story, files, expected)
    assert not cloudwatch, f"the CloudWatch alarm differs from the truth at {cloudwatch}"
