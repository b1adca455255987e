"""A per-pod panel reads a GPU whose fresh copies all read DCGM's blank from the copy whose latest reading is within
the look-back, when two copies' last readings fall in one step of the scrape interval on either side of the
look-back's start.

A node mid-upgrade: its old exporter (`Hostname` = its own pod's name) is scraped 3 s into each 30 s interval, its new
one (`hostname="n3"`) 20 s in. Each GPU's copies read a value up to one scrape, then DCGM's blank (a field no longer
read). At the instant 130 s after the interval of the last readings began, the look-back (4 scrape intervals, 120 s)
starts between them: the old copy's last reading (3 s in) is older than the look-back, the new copy's (20 s in) is
within it. The truth: the new copy's reading. Both readings are the subquery's reading at the same step (the one
ending the interval), so the copies' times tie there:
- GPU 0 (pod ml/a): the old copy read 74, the new one 70. The tie went to the higher reading, the old copy's, which has
  no reading within the look-back: the pod was not shown at all.
- GPU 1 (pod ml/b): both read 60. The tie went to either copy, by the order Prometheus met the series in (it changes
  from call to call): the pod was shown at some calls and not at others.
"""

from __future__ import annotations

import pytest

from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from tests.support.projects import bundled_panel
from tests.support.prometheus_server import backfilled_fixture

STEP = 30
READ = 6  # each copy reads its values at scrapes 0..READ-1, then the blank
SCRAPES = 12
BLANK = 9223372036854775794
OLD, NEW = 3, 20  # each exporter's scrape offset within the interval
# (gpu, pod, old copy's reading, new copy's reading): each field reads it times SCALE
GPUS = ((0, "a", 74, 70), (1, "b", 60, 60))
COMMON = 'modelName="NVIDIA A100-SXM4-80GB",DCGM_FI_DRIVER_VERSION="570.133.20",container="main",namespace="ml"'
FIELDS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE")
SCALE = {"DCGM_FI_DEV_GPU_UTIL": 1, "DCGM_FI_DEV_FB_USED": 500, "DCGM_FI_DEV_POWER_USAGE": 3}


def openmetrics(start: int) -> str:
    lines = []
    for field in FIELDS:
        lines.append(f"# TYPE {field} gauge")
        for old, offset, node in ((True, OLD, 'Hostname="nvidia-dcgm-exporter-q8w2z"'), (False, NEW, 'hostname="n3"')):
            for gpu, pod, old_value, new_value in GPUS:
                labels = (f'gpu="{gpu}",UUID="GPU-n3-{gpu}",device="nvidia{gpu}",{COMMON},pod="{pod}",{node},'
                          f'instance="{"old" if old else "new"}:9400",job="dcgm"')
                for k in range(SCRAPES):
                    value = (old_value if old else new_value) * SCALE[field] if k < READ else BLANK
                    lines.append(f"{field}{{{labels}}} {value} {start + k * STEP + offset}")
    return "\n".join(lines) + "\n# EOF\n"


backfilled = backfilled_fixture("pod-late-copy-edge", openmetrics, SCRAPES * STEP, STEP)
EDGE = (READ - 1) * STEP + 130  # from the first scrape's interval: the look-back starts at 10 s of the last readings'
TRUTH = {"GPU utilization by pod": "DCGM_FI_DEV_GPU_UTIL", "Framebuffer used by pod": "DCGM_FI_DEV_FB_USED",
         "Power draw of each pod's GPUs": "DCGM_FI_DEV_POWER_USAGE"}
CALLS = 8


@pytest.mark.parametrize("title", sorted(TRUTH))
def test_the_copy_with_a_reading_within_the_lookback_is_read_at_every_call(backfilled, title):
    prometheus, start = backfilled
    target = bundled_panel(title)["targets"][0]
    expr = interpolate(target["expr"], variables({}, ("namespace", "pod", "node", "gpu")))
    truth = {f"Pod ml/{pod}": float(new * SCALE[TRUTH[title]]) for _, pod, _, new in GPUS}
    answers = []
    for _ in range(CALLS):  # each a range query of a few steps, as Grafana sends (evaluated through a map)
        steps = prometheus.query_at(expr, start + EDGE - 2 * STEP, 3, STEP)
        answers.append({render_legend(target["legendFormat"], s["metric"]): float(s["value"][1])
                        for s in steps[start + EDGE]})
    wrong = [answer for answer in answers if answer != truth]
    assert not wrong, f"{title} at the look-back's edge: true {truth}; shown at {len(wrong)} of {CALLS} calls: {wrong}"


def test_the_premise(backfilled):
    """At the edge every copy's latest sample is the blank and fresh (the late tier decides), the old copy's last
    reading is older than the look-back and the new copy's is within it."""
    prometheus, start = backfilled
    at = start + EDGE
    fresh = prometheus.query('count by (instance) (DCGM_FI_DEV_GPU_UTIL >= 1e14 and '
                             'present_over_time(DCGM_FI_DEV_GPU_UTIL[30s]))', at=at)
    assert {s["metric"]["instance"]: s["value"][1] for s in fresh} == {"old:9400": "2", "new:9400": "2"}
    within = prometheus.query('count by (instance) (min_over_time(DCGM_FI_DEV_GPU_UTIL[2m]) < 1e14)', at=at)
    assert {s["metric"]["instance"] for s in within} == {"new:9400"}
    stepped = prometheus.query('count by (instance) (last_over_time((last_over_time(DCGM_FI_DEV_GPU_UTIL[30s]) '
                               '< 1e14)[2m:30s]))', at=at)
    assert {s["metric"]["instance"] for s in stepped} == {"old:9400", "new:9400"}  # both read at one step
