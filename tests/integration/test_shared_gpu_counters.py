"""A GPU's counter panels and rules read, on a real Prometheus, what one series of the GPU's readings would read,
however many pods share the GPU, whichever come and go, with scrapes missed, a counter reset and a blank.

An exporter run with KUBERNETES_VIRTUAL_GPUS (settings `exporter.virtual_gpus: true`) writes a GPU's counter once
per pod holding it (time-slicing, MPS): copies of one reading. The default exporter writes it once, under one of
the pods, and which one can change from scrape to scrape (dcgm-exporter #340): one series whose pod label moves.
Either writes it once without pod labels on a GPU no pod holds. The fleet holds both: GPUs 1, 2, 4 and 5 have
copies written together (the virtual-GPU exporter), GPU 6 is the default exporter's series moving to the other pod
at every scrape, GPU 3 a GPU taken from idle as both write it. The counter panels and rule are the same with and
without exporter.virtual_gpus (checked below), so every GPU is read with the one build. An hour of 30 s scrapes
of one node is backfilled into a real
Prometheus (`promtool tsdb create-blocks-from openmetrics`), twice: scraped on the 30 s grid, and 11 s after
it. The node's scrape fails one time in eleven (no series that scrape). The counters grow unevenly (2 to 8 a
scrape), so a value read over the wrong samples, or extrapolated from the wrong edges, shows. The GPUs:

0. one pod throughout (one series: the reference case);
1. two pods throughout;
2. a pod leaving four scrapes after the next one arrived, a third pod for twenty scrapes, then one leaving;
3. idle (its copy without pod labels), then, one scrape later, a pod; the next pod arriving as it leaves;
4. two pods, the counter restarting from 0;
5. two pods, one scrape reading DCGM's blank;
6. two pods named at alternate scrapes, each a scrape behind the other (the default exporter, #340).

The truth is computed here from the readings, one per scrape per GPU, independently of the queries:
Prometheus's documented rate (the growth between the first and last sample of the window, a reset
adding the value before it, extrapolated to the window's edges unless a sample is more than 1.1 average
intervals from the edge, then by half an interval, and to no further than where the counter would be 0) over
that one series, with a window that ends at the latest step of the scrape interval's grid a reading was taken
before (see README: a reading is timed at the step of the scrape interval it is read at); an increase (panel
or rule) is the sum of the agent's deltas over the window's readings, as CloudWatch sums them: the GPU's growth
since its last reading before the window, a reset's reading counted as it is. A window holding the blank gives
the rate or increase of its other readings.
"""

from __future__ import annotations

import functools
import math

import pytest

from generator.artifacts import grafana_dashboards
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from generator.promql import copies_note, recording_note
from tests.support.counter_truth import stepped_rate, summed_deltas
from tests.support.prometheus_server import Prometheus, backfilled_fixture, counted_read, recorded
from tests.support.promtool_rules import periods_as_read, window_queries

STEP, SCRAPES = 30, 120  # an hour of 30 s scrapes, k = 0 .. 119
PHASES = {"on-grid": 0, "off-grid": 11}  # node name: seconds after the 30 s grid its exporter is scraped
MISSED = {k for k in range(SCRAPES) if k % 11 == 5}  # the node's scrape fails: no series that scrape
RESET_GPU, RESET_AT = 4, 60  # the counter restarts from 0 at this scrape
BLANK_GPU, BLANK_AT = 5, 90
BLANK = 9223372036854775792  # DCGM's int64 blank
REPLAYS, ROWS = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
VARIABLES = ("namespace", "pod", "node", "gpu", "cluster")
IDLE = ""  # the copy a GPU no pod holds writes (no pod labels)


def _held(*spans: tuple[str, int, int]) -> dict[str, tuple[int, int]]:
    return {name: (first, end) for name, first, end in spans}


ALWAYS = (0, SCRAPES)
# gpu -> {pod or IDLE: (first scrape it is written at, the scrape it is no longer written at)}
COPIES = {
    0: _held(("a0", *ALWAYS)),
    1: _held(("b0", *ALWAYS), ("b1", *ALWAYS)),
    2: _held(("c0", 0, 40), ("c1", 36, SCRAPES), ("c2", 60, 80)),
    3: _held((IDLE, 0, 30), ("d0", 31, 70), ("d1", 69, SCRAPES)),  # no copy at scrape 30: one scrape between
    4: _held(("e0", *ALWAYS), ("e1", *ALWAYS)),
    5: _held(("f0", *ALWAYS), ("f1", *ALWAYS)),
    6: _held(("g0", *ALWAYS), ("g1", *ALWAYS)),  # each written at every other scrape: a scrape behind the other
}
ALTERNATE = {"g0": 0, "g1": 1}  # the parity of the scrapes at which each of these copies is written


def _growth(gpu: int, k: int) -> int:
    return 2 + (k * (gpu + 3)) % 7


@functools.cache
def reading(gpu: int, k: int) -> int:
    """The GPU's counter at scrape k (DCGM's blank aside)."""
    start = RESET_AT if gpu == RESET_GPU and k >= RESET_AT else -1
    return (0 if start >= 0 else 10_000) + sum(_growth(gpu, j) for j in range(start + 1, k + 1))


def written(gpu: int, k: int) -> list[str]:
    """The copies the exporter writes at scrape k, none when the scrape failed."""
    return [] if k in MISSED else [pod for pod, (first, end) in COPIES[gpu].items()
                                   if first <= k < end and ALTERNATE.get(pod, k % 2) == k % 2]


@functools.cache
def one_series(gpu: int, phase: int, start: int) -> tuple[tuple[float, float], ...]:
    """(time, value) of the GPU's readings as one series: one sample per scrape that wrote any copy (worked out once
    per GPU, phase and start: the truth at every instant reads it)."""
    return tuple((start + k * STEP + phase, float(BLANK if (gpu, k) == (BLANK_GPU, BLANK_AT) else reading(gpu, k)))
                 for k in range(SCRAPES) if written(gpu, k))


def _openmetrics(start: int) -> str:
    lines = []
    for metric in (REPLAYS, ROWS):
        for node, phase in PHASES.items():
            for gpu in COPIES:
                for pod in COPIES[gpu]:
                    labels = f'gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",modelName="NVIDIA A10G",' \
                             f'Hostname="{node}",node="{node}"'
                    if pod != IDLE:
                        labels += f',namespace="ml",pod="{pod}",container="main"'
                    for k in range(SCRAPES):
                        if pod in written(gpu, k):
                            value = BLANK if (gpu, k) == (BLANK_GPU, BLANK_AT) else reading(gpu, k)
                            lines.append(f"{metric}{{{labels}}} {value} {start + k * STEP + phase}")
    for node, phase in PHASES.items():  # each node's target's `up`, as Prometheus writes it: 0 at a failed scrape
        lines += [f'up{{node="{node}"}} {0 if k in MISSED else 1} {start + k * STEP + phase}' for k in range(SCRAPES)]
    return "\n".join(lines) + "\n# EOF\n"


backfilled = backfilled_fixture("shared-gpu-counters", _openmetrics, SCRAPES * STEP, STEP)


# --- the truth, from the readings ------------------------------------------------------------------------

def _lag(phase: int, step: int = STEP) -> int:
    """How long after a reading the step that reads it comes (a subquery's steps on the grid of `step`: the scrape
    interval's for panels, the rules' fine step for rules)."""
    return -phase % step


def _blank_within(samples, first: float, last: float) -> bool:
    return any(v >= 9e18 for t, v in samples if first <= t <= last)


def panel_truth(gpu: int, phase: int, start: int, at: float, window: int, rate: bool) -> float | None:
    """A rate as the panel reads its recording (the growth of the window's steps over their seconds); an increase as
    CloudWatch sums the agent's deltas."""
    samples = one_series(gpu, phase, start)
    if not rate:  # the scrapes of the range [at - window, at] itself (promql.range_increase)
        return summed_deltas(samples, at - window - 0.001, at)
    last = at - _lag(phase)
    # a rate's window holding a blank gives the rate of its other readings (the blank left out, as the agent's
    # filter drops it before its deltas)
    return stepped_rate(samples, last - window, last)


def rule_truth(gpu: int, phase: int, start: int, at: float, window: int) -> float | None:
    """The sum of the agent's deltas over the window's readings, as CloudWatch sums them: the GPU's growth since its
    last reading before the window, a reset's reading counted as it is, except a reading n scrapes after the one
    before it (a missed scrape) that stands for scrapes due before the window, which counts the share of those due
    inside it (promql._prorated). The rule reads at steps of RULE_STEP_SECONDS since the epoch: a reading is timed at
    the fine step after it."""
    from generator.render.alarms import RULE_STEP_SECONDS

    last = at - _lag(phase, RULE_STEP_SECONDS)
    return summed_deltas(one_series(gpu, phase, start), last - window, last, interval=STEP)


# --- the generated queries -------------------------------------------------------------------------------

VIRTUAL_GPUS = "exporter:\n  virtual_gpus: true\n"


@functools.cache
def _project(settings: str = ""):
    """The project with `settings` (gpudash.yaml text beside the bundled definitions; "" the bundled defaults)."""
    if not settings:
        return load_project()
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "gpudash.yaml").write_text(settings)
        return load_project(Path(folder) / "gpudash.yaml")


@functools.cache
def _health(settings: str = "") -> list[dict]:
    return next(d for d in grafana_dashboards(_project(settings)) if d.uid == "gpudash-health").model["panels"]


def _panel(title: str, settings: str = "") -> dict:
    return next(p for p in _health(settings) if p.get("title") == title)


def _shown(prometheus: Prometheus, expr: str, legend: str, start: int, runs,
           instants: list[int] | None = None) -> dict[int, dict[str, float]]:
    """{instant: {legend: value}}: what `expr` shows at each instant of the runs (seconds after `start`), each run
    read in one range query, or (`instants`: a query pinned to its own instant with `@ end()`, as Grafana's instant
    query of an increase over its range) one instant query per instant."""
    shown = {}
    for answers in ([{start + at: prometheus.query(expr, start + at) for at in instants}] if instants is not None
                    else [prometheus.query_at(expr, start + first, count, step) for first, step, count in runs]):
        for at, result in answers.items():
            lines = {render_legend(legend, s["metric"]): float(s["value"][1]) for s in result}
            assert len(lines) == len(result), result
            shown[int(at) - start] = lines
    return shown


def _expected(truth) -> dict[str, float]:
    values = {f"{node} GPU {gpu}": truth(gpu, phase) for node, phase in PHASES.items() for gpu in COPIES}
    return {key: value for key, value in values.items() if value is not None}


def _wrong(shown: dict[str, float], expected: dict[str, float]) -> dict:
    if set(shown) != set(expected):
        return {"missing": sorted(set(expected) - set(shown)), "extra": sorted(set(shown) - set(expected))}
    return {k: (shown[k], expected[k]) for k in expected if not math.isclose(shown[k], expected[k], rel_tol=1e-9)}


# instants off the 30 s grid (no reading on a window's edge), from 12 minutes in to the end of the hour: (first,
# step, count) runs, one a minute 7 s after the grid, one a minute 19 s after it
RUNS = [(12 * 60 + offset, 2 * STEP, (SCRAPES - 24) // 2) for offset in (7, 19)]
INSTANTS = sorted(first + i * step for first, step, count in RUNS for i in range(count))


def _range_cases(instant: int, window: int) -> set[tuple]:
    """What an increase over (instant - window, instant] meets, per GPU and node: at the window's start (the copies
    of the GPU's last reading before it and of its first inside, the scrapes between them, a first scrape missed, a
    reset or blank there), at its end (the last reading's copies, the last scrape missed, a reset or blank there),
    and inside it (the order in which the copies hand over, where the reset and the blank fall)."""
    def kinds(pods):  # which copies, as the query tells them apart: the idle one (no pod labels), how many pods
        return None if pods is None else (IDLE in pods, len(pods - {IDLE}))

    cases = set()
    for gpu in COPIES:
        for phase in PHASES.values():
            scrapes = [k for k in range(SCRAPES) if instant - window - 0.001 < k * STEP + phase <= instant]
            read = [k for k in range(SCRAPES) if written(gpu, k)]
            inside = [k for k in read if scrapes[0] <= k <= scrapes[-1]]
            before = max((k for k in read if k < scrapes[0]), default=None)
            pods = {k: frozenset(written(gpu, k)) for k in (*inside, before) if k is not None}
            order = tuple(pods[k] for i, k in enumerate(inside) if i == 0 or pods[k] != pods[inside[i - 1]])
            if set(COPIES[gpu]) & set(ALTERNATE):
                order = tuple(sorted(set(order), key=sorted))  # copies alternating: which ones, not how often
            marks = {RESET_AT: gpu == RESET_GPU, BLANK_AT: gpu == BLANK_GPU}
            where = [next((place for place, k in (("before", before), ("first", inside[0]), ("last", inside[-1]))
                           if k == at), "inside" if inside[0] < at < inside[-1] else None) if marked else None
                     for at, marked in marks.items()]
            cases |= {("start", instant % STEP, phase, gpu, kinds(pods.get(before)), kinds(pods[inside[0]]),
                       None if before is None else (inside[0] - before, len(pods[before] & pods[inside[0]])),
                       inside[0] - scrapes[0], *(place in ("before", "first") for place in where)),
                      ("end", instant % STEP, phase, gpu, kinds(pods[inside[-1]]), scrapes[-1] - inside[-1],
                       *(place == "last" for place in where)),
                      ("inside", gpu, order, *where)}
    return cases


@functools.cache
def covering(window: int) -> list[int]:
    """Fewest of the INSTANTS (chosen greedily) whose increases over `window` meet every case that all of them meet:
    each instant query of a range bar reads an hour of subqueries, about 0.17 s of CPU."""
    cases = {instant: _range_cases(instant, window) for instant in INSTANTS}
    left, chosen = set().union(*cases.values()), []
    while left:
        best = max(INSTANTS, key=lambda instant: (len(cases[instant] & left), -instant))
        chosen.append(best)
        left -= cases[best]
    return sorted(chosen)


EVERY_SCRAPE = [(12 * 60 + 7, STEP, len(range(12 * 60 + 7, SCRAPES * STEP, STEP)))]  # every window, once per scrape


COUNTER_PANELS = [("PCIe replays", REPLAYS, 300, True), ("Rows remapped (uncorrectable)", ROWS, 20 * 60, False)]


@pytest.fixture(scope="module")
def counters_recorded(backfilled):
    """The backfilled server, holding the counters' recordings the panels read as a Prometheus evaluating the default
    build's recording rules at their 30 s interval records them (prometheus_server.recorded)."""
    prometheus, start = backfilled
    group = counted_read([_panel(title)["targets"][0]["expr"] for title, *_ in COUNTER_PANELS], _project())
    recorded(prometheus, group, start - 600, start + SCRAPES * STEP + 600)
    return backfilled


@pytest.mark.parametrize("title, metric, window, rate", COUNTER_PANELS)
def test_a_counter_panel_reads_the_gpus_one_series(counters_recorded, title, metric, window, rate):
    """The health dashboard's counter panels (a rate over $__rate_interval, an increase over $__range, per GPU):
    every GPU reads what one series of its readings reads, at every instant, on both scrape phases."""
    prometheus, start = counters_recorded
    panel = _panel(title)
    (target,) = panel["targets"]
    # the copies (KUBERNETES_VIRTUAL_GPUS) and the moving series (default) are read by the same query
    assert _panel(title, VIRTUAL_GPUS)["targets"] == panel["targets"]
    assert target["legendFormat"] == "{{node}} GPU {{gpu}}"
    # what the truth below allows for (a rate's window ends at the GPU's latest step, up to 30 s before the instant,
    # its recordings evaluated on the grid here: test_counter_recording_offset for another offset; an increase counts
    # the scrapes of the range itself)
    assert panel["description"].endswith(recording_note(STEP) if rate else copies_note(STEP, whole_range=True))
    assert recording_note(STEP).endswith("so the window ends at the GPU's latest step evaluated, up to 30 s and that "
                                         "offset before the panel's time.")
    expr = interpolate(target["expr"],
                       {"__rate_interval": f"{window}s", "__range": f"{window}s", "__range_ms": str(window * 1000),
                        **variables({}, VARIABLES)})
    blank_inside = set()
    # a rate at every instant, in two range queries; an increase (one instant query each) at the instants that meet
    # every case all of them meet
    instants = INSTANTS if rate else covering(window)
    shown = _shown(prometheus, expr, target["legendFormat"], start, RUNS, instants=None if rate else instants)
    assert sorted(shown) == instants
    for instant in instants:
        at = start + instant
        expected = _expected(lambda gpu, phase: panel_truth(gpu, phase, start, at, window, rate))
        wrong = _wrong(shown[instant], expected)
        assert not wrong, (title, instant, wrong)
        last = at - (0 if rate else 0.001)  # the window's end: a rate's on the grid phase, as one series reads it
        blank_inside.add(_blank_within(one_series(BLANK_GPU, PHASES["on-grid"], start), last - window, last))
    # windows holding the blank were among them: each gave the rate or increase of the other readings
    assert blank_inside == {True, False}


def test_the_truth_is_where_the_earlier_forms_read_wrong(backfilled):
    """The forms this replaced read wrong on this fleet: each copy's own rate and then the GPU's largest reads only
    the larger part of a window a pod arrived or left in; the copies' largest at each step of a subquery, without
    asking when each copy's sample was taken, reads a scrape missed at a step as one more interval of growth."""
    prometheus, start = backfilled
    selector = f'{REPLAYS}{{node="on-grid"}}'
    per_copy = f"max by (node, gpu) (rate({selector}[5m]))"
    stepped = f"max by (node, gpu) (rate((max without (pod, namespace, container) ({selector}))[5m:30s]))"
    misread = {form: set() for form in (per_copy, stepped)}
    shown = {form: _shown(prometheus, form, "{{node}} GPU {{gpu}}", start, RUNS) for form in misread}
    for instant in INSTANTS:
        at = start + instant
        expected = _expected(lambda gpu, phase: panel_truth(gpu, phase, start, at, 300, True))
        for form in misread:
            read = shown[form][instant]
            misread[form] |= {key for key in read if key in expected and key.startswith("on-grid")
                              and not math.isclose(read[key], expected[key], rel_tol=1e-6)}
    assert {"on-grid GPU 2", "on-grid GPU 3"} <= misread[per_copy]  # pods arriving and leaving
    assert {"on-grid GPU 0", "on-grid GPU 1"} <= misread[stepped]  # missed scrapes, whatever pods do


def test_the_counter_rule_reads_the_gpus_growth_since_its_reading_before_the_window(backfilled):
    """The PCIe replays rule's increase (the exact growth, its reset check and its blank guard over one reading per
    step of the rule's 5 s step): copies that hand over with a scrape between them, or overlap, missed scrapes
    on either edge of the window (a reading after a missed scrape due before the window: half its delta), a reset, a
    blank."""
    from generator.render.alarms import prometheus_rules

    prometheus, start = backfilled
    projects = (_project(), _project(VIRTUAL_GPUS))
    (rule,), (twin,) = ([r for g in prometheus_rules(project.alarms, project.catalog, project.settings)["groups"]
                         for r in g["rules"] if r["labels"].get("gpudash_rule") == "pcie-replays"]
                        for project in projects)
    assert twin == rule  # the copies and the moving series are read by the same rule
    (alarm,) = [a for a in projects[0].alarms if a.id == "pcie-replays"]
    # every period's increase, taken from the periods' expression as the rule reads it (one for all its periods)
    expr, periods = periods_as_read(alarm, projects[0].catalog, projects[0].settings, rule["expr"])
    assert " > bool 50)" in rule["expr"] and "[569999ms:5s]" in expr and periods == 3  # the period and its reach
    edges = set()
    # the windows with a missed scrape on an edge, the reset or the blank on or next to one, and every fourth of the
    # others, each read as the rule group evaluates it (the period's start is read with `@ end()`: one instant query
    # per instant): a window ending at t read as period 0 at t, or as period k at t + k periods (each instant's query
    # evaluates every period, so its three periods judge three windows)
    first, step, count = EVERY_SCRAPE[0]

    def edged(instant: int) -> bool:
        last = (instant - 7) // STEP
        return {last - 10, last} & MISSED or any(k + d in (RESET_AT, BLANK_AT) for k in (last - 10, last)
                                                 for d in (-1, 0, 1))
    instants = [first + k * step for k in range(count)]
    windows = [instant for k, instant in enumerate(instants) if k % 4 == 0 or edged(instant)]
    queries = window_queries(windows, instants, 300, periods)
    assert len(windows) > count // 3 and len(queries) * 2 <= len(windows)
    judged = set()
    for instant, reads in queries.items():
        answer = prometheus.query(expr, start + instant)
        for period, window in reads.items():
            series = [s for s in answer if s["metric"]["gpudash_period"] == str(period)]
            read = {render_legend("{{node}} GPU {{gpu}}", s["metric"]): float(s["value"][1]) for s in series}
            assert len(read) == len(series), series
            at = start + window
            expected = _expected(lambda gpu, phase: rule_truth(gpu, phase, start, at, 300))
            wrong = _wrong(read, expected)
            assert not wrong, (window, f"period {period} at {instant}", wrong)
            judged.add(window)
            edges |= {(window - 7) // STEP - 10 in MISSED, (window - 7) // STEP in MISSED}
    assert judged == set(windows)
    assert edges == {True, False}  # windows with a scrape missed on an edge were among them
