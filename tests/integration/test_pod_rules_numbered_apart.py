"""The bundled per-pod alert rules through test_exporter_overlap_pod_rates_and_bars.py's rollouts, as a scraping
Prometheus stores them: three nodes of 3 GPUs, each old exporter scraped at 0 s of each interval, each new one from
ROLLOUT, 11 s into each interval, numbering the GPUs apart (C, A, B for A, B, C at indexes 0, 1, 2; n1's exporters
overlapping 8 intervals, n2's and n3's 4; n2 without a `node` label, its old exporter writing its own pod's name into
`Hostname`, its new one the node into `hostname`). A pod holds two GPUs of each node (train-ab on A and B, ...), the
third GPU's pod it alone; each GPU's utilisation is a tenth of its watts (A 30 %, B 50 %, C 70 %, ...) but those of
the idle GPUs, under the idle rule's 5 % level: train-de's two (D 2 %, E 3 %) and train-gh's G (2 %, beside H's 80 %).

The idle rule judges each GPU a pod holds (Query(..., ("pod", "gpu"))) by its mean over a 5-minute period. Its steps
key the pod's GPU by its UUID and the index is named once per evaluation (promql.pod_indexes), so each GPU is one
series of its own readings, at an index it has in either numbering, read over a range as at single instants (keyed
by the index at each step, each GPU was judged at the old exporter's index and at the new one's, and an index the two
numberings give two GPUs of one pod mixed their readings). The framebuffer rule reads each pod's least free memory,
no index: right. A user's panel per pod and GPU (its legend naming the index) keys each step's readings by the pod's
GPU and names its index at the step alike.
"""

from __future__ import annotations

import pytest

from generator.render.alarms import period_sign, period_value
from tests.integration.test_exporter_overlap_pod_rates_and_bars import COUNTERS, HOLDERS, PAIR_GAUGES
from tests.support.counter_rollout import ALIKE, EXPORTERS, ROLLOUT, SPAN, STEP, WATTS, counters_scraped
from tests.support.projects import bundled_project
from tests.support.prometheus_server import written_fixture

IDLE = {"D": 2.0, "E": 3.0, "G": 2.0}
UTIL = {name: IDLE.get(name, watts / 10) for name, watts in WATTS.items()}
BY_WATTS = {watts: UTIL[name] for name, watts in WATTS.items()}
GAUGES = {**PAIR_GAUGES, "DCGM_FI_DEV_GPU_UTIL": lambda watts, _: BY_WATTS[watts]}
# each node's GPUs in the old exporters' numbering and in the new ones' (by index)
OLD = ("ABC", "DEF", "GHI")
NEW = ("CAB", "FDE", "IGH")


def _story(exporters):
    return lambda start, unnamed=frozenset(): counters_scraped(start, COUNTERS, exporters, unnamed, pods=True,
                                                                gauges=GAUGES, holder=HOLDERS.__getitem__)


apart = written_fixture("pod-rules-apart", _story(EXPORTERS), SPAN, STEP)
alike = written_fixture("pod-rules-alike", _story(ALIKE), SPAN, STEP)
# the same stories, no exporter writing a UUID (a pod's GPU is then its index: promql._pod_gpu)
NO_UUID = frozenset(address for _, _, address, *_ in EXPORTERS)
apart_no_uuid = written_fixture("pod-rules-apart-no-uuid", lambda start: _story(EXPORTERS)(start, NO_UUID), SPAN, STEP)
alike_no_uuid = written_fixture("pod-rules-alike-no-uuid", lambda start: _story(ALIKE)(start, NO_UUID), SPAN, STEP)
# the rollouts apart, n3's new exporter serving I and G alone (at 0 and 1: the index the old one gives H)
SUBSET = (*EXPORTERS[:5], (*EXPORTERS[5][:4], "IG", *EXPORTERS[5][5:]))
subset = written_fixture("pod-rules-subset", _story(SUBSET), SPAN, STEP)


@pytest.fixture(scope="module")
def rules():
    """The bundled project and {alarm id: (alarm, its period's value expression)} of its per-pod rules."""
    project = bundled_project()
    return project, {alarm.id: (alarm, period_value(alarm, project.catalog, project.settings))
                     for alarm in project.alarms if alarm.id in ("gpu-idle", "framebuffer-full")}


def _gpus(pod: str, index: str) -> set[str]:
    """The GPUs of `pod` at `index` in either numbering."""
    held = {name for name, holder in HOLDERS.items() if holder == pod}
    return {order[int(index)] for order in (*OLD, *NEW)} & held


def _judged(prometheus, expr: str, at: int) -> dict[tuple[str, str], float]:
    return {(s["metric"]["pod"], s["metric"].get("gpu", "")): float(s["value"][1])
            for s in prometheus.query(expr, at=at)}


AFTER = range(-60, 661, 15)


def _judged_over(prometheus, expr: str, start: int, instants: range = AFTER) -> dict[int, dict[tuple[str, str], float]]:
    """`expr` at each instant of `instants` (seconds after the rollouts) in one range query, as a rule's twin tests
    and `promtool test rules` read it over a range (an expression pinned to the range's end, `@ end()`, reads every
    step alike there), each instant's {(pod, gpu): value}."""
    first = start + ROLLOUT + instants.start
    read = prometheus.query_at(expr, first, len(instants), instants.step)
    return {after: {(s["metric"]["pod"], s["metric"].get("gpu", "")): float(s["value"][1])
                    for s in read[float(first + k * instants.step)]} for k, after in enumerate(instants)}


@pytest.mark.parametrize("story", ["apart", "alike"])
def test_the_idle_rule_judges_each_gpu_a_pod_holds_once_by_its_own_readings(request, rules, story):
    """Every 15 s from a minute before the rollouts to 11 minutes after, the idle rule's period mean: one series per
    GPU a pod holds, at the GPU's index in the old exporter's numbering or the new one's, reading that GPU's utilisation
    alone (train-gh: G 2 % and H 80 %), read over a range. Keyed by its index at each step (before), from 15 to 510 s
    after the rollouts each GPU was judged at both indexes (train-ab: 30 %, 48.2 %, 50 % for A 30 and B 50) and an
    index both numberings give the pod's two GPUs mixed them (train-gh's GPU 1: 72.9 % at 15 s)."""
    prometheus, start = request.getfixturevalue(story)
    _, expr = rules[1]["gpu-idle"]
    wrong = {}
    for after, judged in _judged_over(prometheus, expr, start).items():
        per_pod = {}
        for (pod, index), value in judged.items():
            per_pod.setdefault(pod, []).append(round(value, 6))
            if not any(UTIL[name] == round(value, 6) for name in _gpus(pod, index)):
                wrong.setdefault(after, []).append((pod, index, value))
        for pod in set(HOLDERS.values()):
            truth = sorted(UTIL[name] for name, holder in HOLDERS.items() if holder == pod)
            if sorted(per_pod.get(pod, [])) != truth:
                wrong.setdefault(after, []).append((pod, sorted(per_pod.get(pod, [])), truth))
    assert not wrong, wrong


def test_the_idle_rule_finds_the_idle_gpus_once_through_the_overlaps(apart, rules):
    """The rule's comparison with its level, as its alert reads it (period_sign: the sign of the period's mean less
    5 %): below it train-de's D and E and train-gh's G, each one series at an index it has in either numbering, at
    every instant of the story, read over a range (each at the old exporter's index before the rollouts, at the new
    one's from its first scrape). Keyed by its index at each step (before),
    train-de's two idle GPUs were three idle series from 15 to 390 s after the rollouts."""
    prometheus, start = apart
    project, judged = rules
    alarm, _ = judged["gpu-idle"]
    expr = period_sign(alarm, project.catalog, project.settings, 0, None, alarm.condition.threshold)
    wrong = {}
    for after, judged in _judged_over(prometheus, expr, start).items():
        below = {key: value for key, value in judged.items() if value < 0}
        pods = sorted(pod for pod, _ in below)
        if pods != ["train-de", "train-de", "train-gh"] or \
                not all(_gpus(pod, index) & set(IDLE) for pod, index in below):
            wrong[after] = below
    assert not wrong, wrong


@pytest.mark.parametrize("story", ["apart", "alike", pytest.param("apart_no_uuid", marks=pytest.mark.xfail(
    strict=True, reason=(
        "no exporter writing a UUID, a pod's GPU is its index at each step, its reading the node's GPU at that index "
        "as the newest exporter reads it: train-gh's idle G (2 %) read 9.3 % at its old index 0 at 30 s after the "
        "rollouts, 27.1 % at 120 s, 50.9 % at 300 s (the new exporter's I, 90 %, there), and 73.5 % at the new index "
        "1 at 30 s (the old H's 80 %): never alerted from 30 s to the story's end (1,770 s); train-de (D 2 %, E 3 %) "
        "alerted for one of its two idle GPUs (GPU 1) from 1,020 to 1,500 s"))), "alike_no_uuid"])
def test_the_idle_alert_as_generated_names_each_idle_gpu_once(request, rules, story):
    """The idle alert as the rules file holds it (its periods' flags weighted and summed, each pod's GPU named by its
    index once: promql.pod_indexes), read over a range as a rule group evaluates it, every 30 s from a minute before
    the rollouts to the story's end: it fires for train-de's D and E and train-gh's G (idle since the story's start,
    more than the alert's periods before), each once, at an index the GPU has in either numbering, and for no busy
    GPU. Keyed by index at each step (measured on a real Prometheus before), the old index's series left as the old
    copies' readings left the periods while the new ones' had not breached for all of them: from 1,020 s after the
    rollouts to the story's end (1,770 s) train-de fired once (GPU 1) for its two idle GPUs and train-gh not at all.
    With no exporter writing a UUID (a pod's GPU is its index, promql._pod_gpu) numbered alike it holds; numbered
    apart nothing names a copy's GPU but its index (a strict xfail with the figures measured)."""
    from generator.render.alarms import prometheus_rules

    prometheus, start = request.getfixturevalue(story)
    project, judged = rules
    alarm, _ = judged["gpu-idle"]
    (alert,) = [rule["expr"] for group in prometheus_rules((alarm,), project.catalog, project.settings)["groups"]
                for rule in group["rules"] if "alert" in rule]
    wrong = {}
    for after, fired in _judged_over(prometheus, alert, start, range(-60, SPAN - ROLLOUT, 30)).items():
        pods = sorted(pod for pod, _ in fired)
        if pods != ["train-de", "train-de", "train-gh"] or \
                not all(_gpus(pod, index) & set(IDLE) for pod, index in fired):
            wrong[after] = fired
    assert not wrong, (f"{len(wrong)} instants from {min(wrong)} to {max(wrong)} s", wrong)


@pytest.mark.xfail(strict=True, reason=(
    "a GPU only the old exporter serves, at the index the new one gives another GPU of the pod, is named there with it "
    "(pod_indexes' one series per index, pooled): from 15 to 390 s after the rollouts train-gh reads one series, GPU 1, "
    "39.1 % at 15 s falling to 8.5 % at 390 s, for G's 2 % and H's 80 % (H's readings leaving the period)"))
def test_a_gpu_the_new_exporter_does_not_serve_is_judged_on_its_own_readings(subset, rules):
    """n3's new exporter serves I and G alone (numbered I, G), H only the old one, until its last scrape 90 s after
    the rollout: every 15 s from a minute before the rollouts to 11 minutes after, each of train-gh's series reads G's
    2 % or H's 80 % (H's while its readings are in the period), never a mix of both."""
    prometheus, start = subset
    _, expr = rules[1]["gpu-idle"]
    wrong = {after: gh for after, judged in _judged_over(prometheus, expr, start).items()
             if (gh := {key: round(value, 2) for key, value in judged.items() if key[0] == "train-gh"})
             and not set(gh.values()) <= {UTIL["G"], UTIL["H"]}}
    assert not wrong, (f"{len(wrong)} instants from {min(wrong)} to {max(wrong)} s", wrong)


@pytest.mark.parametrize("story", ["apart", "alike"])
def test_the_framebuffer_rule_reads_each_pods_least_free_memory(request, rules, story):
    """The framebuffer rule's period value (a pod's least free MiB of any GPU it holds: 10,000 less ten times the
    GPU's watts) through the overlaps reads each pod's own GPUs (train-ab 5,000 MiB, B's; measured so: a pod's least
    is no index's)."""
    prometheus, start = request.getfixturevalue(story)
    _, expr = rules[1]["framebuffer-full"]
    truth = {pod: min(10000 - 10 * WATTS[name] for name, holder in HOLDERS.items() if holder == pod)
             for pod in set(HOLDERS.values())}
    wrong = {}
    for after in AFTER:
        shown = {pod: value for (pod, _), value in _judged(prometheus, expr, start + ROLLOUT + after).items()}
        if shown != pytest.approx(truth):
            wrong[after] = shown
    assert not wrong, wrong


USER_PANEL = '''\
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="pod-gpus", title="Pod GPUs", rows=[Row("All", [
        Panel("Utilization of each pod's GPU", Query("DCGM_FI_DEV_GPU_UTIL", "avg", ("pod", "gpu"))),
    ])])
'''


@pytest.fixture(scope="module")
def pod_gpu_panel(tmp_path_factory):
    """A user's panel of each GPU a pod holds (legend 'Pod {{namespace}}/{{pod}} GPU {{gpu}}') and its project."""
    from generator.artifacts import grafana_dashboards
    from tests.support.projects import defined_project

    project = defined_project(tmp_path_factory.mktemp("pod-gpus"), dashboards=USER_PANEL)
    (dashboard,) = grafana_dashboards(project)
    return project, next(panel for panel in dashboard.model["panels"] if "targets" in panel)


@pytest.mark.parametrize("story", ["apart", "alike"])
def test_a_pods_gpu_lines_are_one_a_gpu_each_its_own_reading(request, pod_gpu_panel, story):
    """Every 15 s from a minute before the rollouts to 7 minutes after, a user's panel per pod and GPU draws one line
    per GPU a pod holds, at the GPU's index in the old exporter's numbering or the new one's, reading that GPU's
    utilisation (train-ab: A 30 %, B 50 %). Keyed by its index at each step (before: promql.pod_indexes names it now),
    from 15 to 270 s after the rollouts each GPU had a line at the old index and one at the new (train-ab 3 lines for
    2 GPUs: GPU 0 30 %, GPU 1 50 %, GPU 2 50 %; train-c 2 for 1), and the line at an index both numberings give read
    the higher of the two GPUs' readings (train-gh GPU 1 80 %, H's, where the new exporter puts G, 2 %)."""
    from tests.support.range_panels import panel_at

    prometheus, start = request.getfixturevalue(story)
    project, panel = pod_gpu_panel
    wrong = {}
    for after in range(-60, 421, 15):
        shown = panel_at(prometheus, project, panel, start + ROLLOUT + after, 3600)
        lines = {}
        for legend, value in shown.items():
            pod, _, index = legend.removeprefix("Pod ml/").rpartition(" GPU ")
            lines.setdefault(pod, []).append(round(value, 6))
            if not any(UTIL[name] == round(value, 6) for name in _gpus(pod, index)):
                wrong.setdefault(after, []).append((legend, value))
        for pod in set(HOLDERS.values()):
            truth = sorted(UTIL[name] for name, holder in HOLDERS.items() if holder == pod)
            if sorted(lines.get(pod, [])) != truth:
                wrong.setdefault(after, []).append((pod, sorted(lines.get(pod, [])), truth))
    assert not wrong, str(sorted(wrong))
