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

Node n4, across a Prometheus restart: its old exporter's copy (`Hostname` its pod's name, scraped 3 s in) stops after
its fifth scrape with no staleness marker (none is written across a restart), reading 90; the new exporter's copy
(`hostname="n4"`, 20 s in) reads 40 to its sixth scrape, then DCGM's blank. Between the new copy's first blank and the
old copy's last sample leaving the look-back (43 s), no copy is fresh with a reading and the truth is the new copy's
latest reading, 30 s newer than the old copy's. The late tier ranked a copy by the steps at which the instant selector
read it, and that selector reads a series no marker ended for 5 minutes: the old copy ranked newest at every step, and
pod rs/c showed 90 for 40 (the per-GPU panels' late tier reads a copy's sample taken within each step: looked_back).
"""

from __future__ import annotations

import pytest

from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from tests.support.projects import bundled_panel
from tests.support.prometheus_server import SCENE_RANGE, backfilled_fixture

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


# node n4 (pod rs/c on GPU 0): each copy's (node spelling, offset, reading, scrapes read, scrapes written, instance)
UNMARKED = (('Hostname="nvidia-dcgm-exporter-k2p9d"', OLD, 90, 5, 5, "old4"),
            ('hostname="n4"', NEW, 40, READ, SCRAPES, "new4"))


def _unmarked(field: str, start: int) -> list[str]:
    lines = []
    for spelling, offset, value, read, written, instance in UNMARKED:
        labels = (f'gpu="0",UUID="GPU-n4-0",device="nvidia0",{COMMON.replace("ml", "rs")},pod="c",{spelling},'
                  f'instance="{instance}:9400",job="dcgm"')
        lines += [f"{field}{{{labels}}} {value * SCALE[field] if k < read else BLANK} {start + k * STEP + offset}"
                  for k in range(written)]
    return lines


def _unmarked_truth(t: float) -> float | None:
    """Pod rs/c's reading at `t` (from the first scrape's interval): the fresh copy's reading (of two, the one sampled
    last: each scrape is a reading of the one GPU at its time; the higher, the old copy's 90 for 40, before c75fe0bb),
    else the newest reading within the look-back (Prometheus 2's closed ranges)."""
    samples = [[(k * STEP + offset, value if k < read else None) for k in range(written)]
               for _, offset, value, read, written, _ in UNMARKED]
    latest = [[s for s in copy if s[0] <= t][-1:] for copy in samples]
    fresh = [s[0] for s in latest if s and s[0][0] >= t - STEP and s[0][1] is not None]
    if fresh:  # (time, reading): the latest, of readings taken at one instant the higher
        return max(fresh)[1]
    read = [s for copy in samples for s in copy if t - LOOKBACK <= s[0] <= t and s[1] is not None]
    return max(read)[1] if read else None


def openmetrics(start: int) -> str:
    lines = []
    for field in FIELDS:
        lines.append(f"# TYPE {field} gauge")
        lines += _unmarked(field, start)
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
LOOKBACK = 4 * STEP  # promql.label_lookback at 30 s scrapes


@pytest.mark.parametrize("title", sorted(TRUTH))
def test_the_copy_with_a_reading_within_the_lookback_is_read_at_every_call(backfilled, title):
    prometheus, start = backfilled
    target = bundled_panel(title)["targets"][0]
    expr = interpolate(target["expr"], {**SCENE_RANGE, **variables({}, ("namespace", "pod", "node", "gpu"))})
    truth = {f"Pod ml/{pod}": float(new * SCALE[TRUTH[title]]) for _, pod, _, new in GPUS}
    answers = []
    for _ in range(CALLS):  # each a range query of a few steps, as Grafana sends (evaluated through a map)
        steps = prometheus.query_at(expr, start + EDGE - 2 * STEP, 3, STEP)
        answers.append({legend: value for s in steps[start + EDGE]
                        if (legend := render_legend(target["legendFormat"], s["metric"])).startswith("Pod ml/")
                        and (value := float(s["value"][1])) is not None})
    wrong = [answer for answer in answers if answer != truth]
    assert not wrong, f"{title} at the look-back's edge: true {truth}; shown at {len(wrong)} of {CALLS} calls: {wrong}"


def test_the_premise(backfilled):
    """At the edge every copy's latest sample is the blank and fresh (the late tier decides), the old copy's last
    reading is older than the look-back and the new copy's is within it."""
    prometheus, start = backfilled
    at = start + EDGE
    util = 'DCGM_FI_DEV_GPU_UTIL{namespace="ml"}'
    fresh = prometheus.query(f'count by (instance) ({util} >= 1e14 and present_over_time({util}[30s]))', at=at)
    assert {s["metric"]["instance"]: s["value"][1] for s in fresh} == {"old:9400": "2", "new:9400": "2"}
    within = prometheus.query(f'count by (instance) (min_over_time({util}[2m]) < 1e14)', at=at)
    assert {s["metric"]["instance"] for s in within} == {"new:9400"}
    stepped = prometheus.query(f'count by (instance) (last_over_time((last_over_time({util}[30s]) < 1e14)[2m:30s]))',
                               at=at)
    assert {s["metric"]["instance"] for s in stepped} == {"old:9400", "new:9400"}  # both read at one step


@pytest.mark.parametrize("title", sorted(TRUTH))
def test_a_copy_no_marker_ended_is_not_newer_than_its_last_sample(backfilled, title):
    """Pod rs/c at every second from the old copy's last reading to the end of the scrapes: the fresh copy's reading,
    else the newest within the look-back (the new copy's 40, not the old copy's 90 from 30 s before it)."""
    prometheus, start = backfilled
    target = bundled_panel(title)["targets"][0]
    expr = interpolate(target["expr"], {**SCENE_RANGE,
                                        **variables({"namespace": "rs"}, ("namespace", "pod", "node", "gpu"))})
    first = 4 * STEP
    steps = prometheus.query_at(expr, start + first, SCRAPES * STEP - first, 1)
    wrong = {}
    for at, rows in steps.items():
        shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in rows}
        value = _unmarked_truth(at - start)
        truth = {} if value is None else {"Pod rs/c": value * SCALE[TRUTH[title]]}
        if shown != truth:
            wrong[at - start] = (shown, truth)
    first_wrong = min(wrong, default=None)
    assert not wrong, f"{title}: (shown, true) at {len(wrong)} of {len(steps)} instants, first at {first_wrong} s: " \
        f"{wrong.get(first_wrong)}"
