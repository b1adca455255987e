"""A pod's counter panels and rules read, on a real Prometheus, the pod's true increase of each GPU it holds, across
exporter replacements, whatever labels tell the pod's copies of a GPU apart.

Twenty minutes of 30 s scrapes of two nodes are backfilled (`promtool tsdb create-blocks-from openmetrics`). Each
node's exporter is replaced mid-run by an upgraded one, as a DaemonSet rollout does: a new exporter pod
(`exporter_pod`) at a new address (`instance`), the node spelled `hostname` instead of `Hostname`, and each pod's
copy carrying the pod's UID and its own labels (dcgm-exporter 4.4+ --kubernetes-enable-pod-uid / -pod-labels).
On `n-old` (no `node` label: the ServiceMonitor path without the node relabeling) one scrape passes with no
exporter and one scrape fails; on `n-mig` (gpudash's job: `node` attached) the two exporters overlap for two
scrapes. The pods:

* ml/train-0: two whole GPUs on n-old throughout (its total adds the GPUs it holds); ml/train-1: one whole GPU on
  n-mig until it ends at scrape 24 (the story had train-0 on n-old and n-mig at once, which a pod cannot be: it runs
  on one node, and a per-pod panel now leaves out the targets of a node a pod left, promql.naming_targets);
* ml/infer-0 and ml/infer-1: one GPU shared by time-slicing, which the exporter (without KUBERNETES_VIRTUAL_GPUS,
  the default settings here) writes once, under infer-0 at even scrapes and infer-1 at odd ones: the pod it names
  changes from scrape to scrape (dcgm-exporter #340), so each pod's series has a gap at every other scrape;
* team-a/worker-0 and team-b/worker-0: one pod name in two namespaces, on two GPUs (two pods, never merged);
* mig/a holding two MIG instances of one GPU (the device's counter repeats on each: the GPU counts once), mig/b a
  third instance of it;
* ml/late-0 arriving on n-mig's GPU 1 at scrape 25, once train-1 left it.

What a per-pod counter panel claims: the counter of each GPU the pod holds, whole (DCGM counts per device, not per
pod). The truth is computed here from the readings. A rate (the Energy panel): each GPU a scrape within the window
named the pod on, with the rate of the GPU's readings at every scrape where any copy of it was written (whatever pod
it names), with Prometheus's documented rate (tests/support/counter_truth.py), added over the pod's GPUs. An increase
over the range: per pod and GPU, one series of the GPU's readings at the scrapes where any copy of the pod's was
written, added over the pod's GPUs; the rule's increase is the GPU's growth since the pod's reading before the
window, the pod's largest over its GPUs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from generator.artifacts import grafana_dashboards
from generator.model import Alarm, Condition, Dashboard, Panel, Query, Row
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from generator.promql import recording_note
from generator.render.alarms import prometheus_expression
from generator.render.grafana import render
from tests.support.counter_truth import stepped_rate, summed_deltas
from tests.support.prometheus_server import backfilled as backfilled_prometheus, counted_inline, range_macros
from tests.support.promtool_rules import periods_as_read, window_queries

STEP, SCRAPES = 30, 40
ENERGY, REPLAYS = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
SCALE = {ENERGY: 1000, REPLAYS: 1}  # a reading of each, per unit of the GPU's counter below
VARIABLES = ("namespace", "pod", "node", "gpu", "cluster")
LEGEND = "Pod {{namespace}}/{{pod}}"


@dataclass(frozen=True)
class Exporter:
    labels: tuple[tuple[str, str], ...]  # the node's spelling and the scrape's target labels
    scrapes: range
    pod_identity: bool  # 4.4+ with --kubernetes-enable-pod-uid and --kubernetes-enable-pod-labels


def _exporters(node: str, address: str, with_node: bool, old: range, new: range) -> tuple[Exporter, ...]:
    attached = (("node", node),) if with_node else ()
    target = (("job", "gpu-metrics"),)
    return (Exporter((("Hostname", node), *attached, ("instance", f"{address}1:9400"),
                      ("exporter_pod", f"nvidia-dcgm-exporter-{node}-a"), *target), old, False),
            Exporter((("hostname", node), *attached, ("instance", f"{address}2:9400"),
                      ("exporter_pod", f"nvidia-dcgm-exporter-{node}-b"), *target), new, True))


EXPORTERS = {
    "n-old": _exporters("n-old", "10.0.1.", False, range(0, 19), range(20, SCRAPES)),  # none at 19
    "n-mig": _exporters("n-mig", "10.0.2.", True, range(0, 22), range(20, SCRAPES)),  # both at 20 and 21
}
MISSED = {("n-old", 30)}  # the scrape failed: no series


@dataclass(frozen=True)
class Copy:
    node: str
    gpu: int
    namespace: str
    pod: str
    first: int = 0  # the first scrape the exporter writes the pod's copy at
    end: int = SCRAPES  # the scrape it no longer does
    mig: tuple[str, str] | None = None  # (GPU_I_ID, GPU_I_PROFILE)
    parity: int | None = None  # named only at the scrapes of this parity (a shared GPU's pod label moving, #340)


COPIES = (
    Copy("n-old", 0, "ml", "train-0"), Copy("n-old", 4, "ml", "train-0"),
    Copy("n-mig", 1, "ml", "train-1", end=24),
    Copy("n-old", 1, "ml", "infer-0", parity=0), Copy("n-old", 1, "ml", "infer-1", parity=1),
    Copy("n-old", 2, "team-a", "worker-0"), Copy("n-old", 3, "team-b", "worker-0"),
    Copy("n-mig", 0, "mig", "a", mig=("1", "3g.20gb")), Copy("n-mig", 0, "mig", "a", mig=("2", "3g.20gb")),
    Copy("n-mig", 0, "mig", "b", mig=("3", "1g.5gb")),
    Copy("n-mig", 1, "ml", "late-0", first=25),
)
GPUS = sorted({(c.node, c.gpu) for c in COPIES})


def reading(node: str, gpu: int, k: int) -> int:
    """The GPU's counter at scrape k: uneven growth, so a value read over the wrong samples shows."""
    number = GPUS.index((node, gpu))
    return 10_000 + sum(2 + (j * (number + 3)) % 7 for j in range(k + 1))


def _writers(copy: Copy, k: int) -> list[Exporter]:
    if (copy.node, k) in MISSED or not copy.first <= k < copy.end or copy.parity not in (None, k % 2):
        return []
    return [exporter for exporter in EXPORTERS[copy.node] if k in exporter.scrapes]


def _openmetrics(start: int) -> str:
    return "\n".join(_samples(start)) + "\n# EOF\n"


def _samples(start: int) -> list[str]:
    lines = []
    for metric in (ENERGY, REPLAYS):
        for copy in COPIES:
            for exporter in EXPORTERS[copy.node]:
                labels = [("gpu", str(copy.gpu)), ("UUID", f"GPU-{copy.node}-{copy.gpu}"),
                          ("device", f"nvidia{copy.gpu}"), ("modelName", "NVIDIA A100-SXM4-40GB"), *exporter.labels]
                if copy.mig:
                    labels += [("GPU_I_PROFILE", copy.mig[1]), ("GPU_I_ID", copy.mig[0])]
                labels += [("pod", copy.pod), ("namespace", copy.namespace), ("container", "main")]
                if exporter.pod_identity:
                    labels += [("pod_uid", f"uid-{copy.namespace}-{copy.pod}"), ("app", copy.pod.split("-")[0])]
                text = ",".join(f'{name}="{value}"' for name, value in labels)
                lines += [f"{metric}{{{text}}} {reading(copy.node, copy.gpu, k) * SCALE[metric]} {start + k * STEP}"
                          for k in range(SCRAPES) if exporter in _writers(copy, k)]
    return lines


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pod-counters")  # twenty minutes end an hour ago: all in the blocks
    with backfilled_prometheus(folder, _openmetrics, SCRAPES * STEP, STEP) as started:
        yield started


# --- the truth, from the readings ------------------------------------------------------------------------

def _pod_gpus(node: str | None = None) -> dict[tuple[str, str], set[tuple[str, int]]]:
    held: dict[tuple[str, str], set[tuple[str, int]]] = {}
    for copy in COPIES:
        if node is None or copy.node == node:
            held.setdefault((copy.namespace, copy.pod), set()).add((copy.node, copy.gpu))
    return held


def pod_series(pod: tuple[str, str], gpu: tuple[str, int], metric: str, start: int) -> list[tuple[float, float]]:
    """The GPU's readings, one per scrape at which any copy of the pod's was written (by either exporter)."""
    copies = [c for c in COPIES if (c.namespace, c.pod) == pod and (c.node, c.gpu) == gpu]
    return [(start + k * STEP, float(reading(*gpu, k) * SCALE[metric])) for k in range(SCRAPES)
            if any(_writers(c, k) for c in copies)]


def gpu_series(gpu: tuple[str, int], metric: str, start: int) -> list[tuple[float, float]]:
    """The GPU's readings, one per scrape at which any copy of it was written (whatever pod it names)."""
    return [(start + k * STEP, float(reading(*gpu, k) * SCALE[metric])) for k in range(SCRAPES)
            if any(_writers(c, k) for c in COPIES if (c.node, c.gpu) == gpu)]


def truth(metric: str, start: int, at: float, window: int, how: str, node: str | None = None,
          held: bool = False) -> dict[str, float]:
    """Per pod: "rate", the rate of each GPU a scrape within the window named the pod on (the GPU's, from all its
    readings: the growth of the window's readings over the seconds it grew in, as its recording gives it), added up; "increase" (the agent's deltas summed) of each GPU it holds, from the pod's readings, added
    up; "exact": the rule's growth (the same sum), its largest; `held` (an alarm's period): a GPU without a delta in
    the window has none."""
    shown = {}
    for pod, gpus in _pod_gpus(node).items():
        values = []
        for gpu in gpus:
            samples = pod_series(pod, gpu, metric, start)
            if how == "rate" and not any(at - window <= when <= at for when, _ in samples):
                continue  # no scrape of the window named the pod on the GPU
            value = stepped_rate(gpu_series(gpu, metric, start), at - window, at) if how == "rate" \
                else summed_deltas(samples, at - window, at, held=held)
            if value is not None:
                values.append(value)
        if values:
            shown[f"Pod {pod[0]}/{pod[1]}"] = max(values) if how == "exact" else sum(values)
    return shown


# --- the generated queries -------------------------------------------------------------------------------

def _shown(prometheus, expr: str, at: float) -> dict[str, float]:
    return _legends(prometheus.query(expr, at=at))


def _legends(result: list[dict]) -> dict[str, float]:
    shown = {render_legend(LEGEND, s["metric"]): float(s["value"][1]) for s in result}
    assert len(shown) == len(result), result
    return shown


def _panel_shown(prometheus, expr: str, start: int, instants: list[int]) -> dict[int, dict[str, float]]:
    """A time-series panel's values at each of `instants` (seconds from `start`), as Grafana asks for them: range
    queries, one per run of instants two scrapes apart (each step evaluated as an instant query at it; the windows of
    neighbouring steps overlap, so one range query costs Prometheus a fraction of its instant queries). Not for an
    expression pinned with `@ end()` (an increase over the range, asked as an instant query)."""
    shown = {}
    for offset in sorted({instant % (2 * STEP) for instant in instants}):
        run = [instant for instant in instants if instant % (2 * STEP) == offset]
        assert run == list(range(run[0], run[-1] + 1, 2 * STEP)), run
        for at, result in prometheus.query_at(expr, start + run[0], len(run), 2 * STEP).items():
            shown[round(at - start)] = _legends(result)
    return shown


def _wrong(shown: dict[str, float], expected: dict[str, float]) -> dict:
    if set(shown) != set(expected):
        return {"missing": sorted(set(expected) - set(shown)), "extra": sorted(set(shown) - set(expected))}
    return {k: (shown[k], expected[k]) for k in expected if not math.isclose(shown[k], expected[k], rel_tol=1e-9)}


def _substitute(expr: str, window: int, **selected: str) -> str:
    return interpolate(expr, {"__rate_interval": f"{window}s", **range_macros(f"{window}s"),
                              **variables(selected, VARIABLES)})


# instants off the 30 s grid (no reading on a window's edge), from 7 minutes in (a 5-minute window after the
# first reading) to the end, through the replacement, the pods arriving and leaving
INSTANTS = [7 * 60 + k * STEP + offset for k in range(0, SCRAPES - 14, 2) for offset in (7, 19)]


def _energy_panel(project) -> dict:
    dashboard = next(d for d in grafana_dashboards(project) if d.uid == "gpudash-by-pod")
    return next(p for p in dashboard.model["panels"] if p.get("title") == "Energy use rate of each pod's GPUs")


def test_the_pods_energy_panel_reads_each_gpu_the_pod_holds_whole_across_exporter_replacements(backfilled):
    """The by-pod dashboard's energy panel (a rate over $__rate_interval, summed per pod): every pod reads the energy of
    the GPUs it holds, across the exporter's replacement, a spelling change, pod UIDs and labels, with the node
    variable at All and at one node (whose spellings the panel reads as one)."""
    prometheus, start = backfilled
    project = load_project()
    panel = _energy_panel(project)
    (target,) = panel["targets"]
    target = {**target, "expr": counted_inline(target["expr"], project)}  # the recording's history (backfilled)
    assert target["legendFormat"] == LEGEND
    assert panel["description"].endswith(recording_note(STEP, per_pod=True))
    assert "counts in full under each of them" in panel["description"]
    assert "under each pod a scrape of the window named" in panel["description"]
    window = 300
    seen = set()
    for node in (None, "n-old"):
        shown = _panel_shown(prometheus, _substitute(target["expr"], window, **({"node": node} if node else {})),
                             start, INSTANTS)
        for instant in INSTANTS:
            expected = truth(ENERGY, start, start + instant, window, "rate", node)
            wrong = _wrong(shown[instant], expected)
            assert not wrong, (instant, node, wrong)
            seen |= set(expected)
    assert {"Pod team-a/worker-0", "Pod team-b/worker-0", "Pod ml/late-0", "Pod mig/a"} <= seen
    # the pod of two MIG instances reads its GPU once, as its neighbour does; the time-sliced pods, named at
    # alternate scrapes, each read the whole GPU's rate, from all its readings (checked above)
    at = start + INSTANTS[-1]
    shown = _shown(prometheus, _substitute(target["expr"], window), at)
    assert shown["Pod mig/a"] == shown["Pod mig/b"]
    assert shown["Pod ml/infer-0"] == shown["Pod ml/infer-1"]
    readings = {pod: pod_series(("ml", pod), ("n-old", 1), ENERGY, start) for pod in ("infer-0", "infer-1")}
    assert {pod: len(samples) for pod, samples in readings.items()} == {"infer-0": 19, "infer-1": 19}
    assert not set(readings["infer-0"]) & set(readings["infer-1"])  # never named together


def test_a_pods_counter_increase_panel_reads_the_pods_true_increase(backfilled):
    """A per-pod increase over the dashboard's range (a user's panel of PCIe replays by pod): over 10 minutes that hold
    the replacement, each pod's increase of each GPU it holds, added up."""
    prometheus, start = backfilled
    project = load_project()
    dashboard = Dashboard(id="pods", title="Replays by pod", rows=[Row("Replays", [
        Panel("PCIe replays by pod", Query(REPLAYS, "sum", ("pod",), as_increase=True))])])
    (panel,) = [p for p in render(dashboard, project.catalog, project.settings)["panels"] if p["type"] != "row"]
    (target,) = panel["targets"]
    assert target["legendFormat"] == LEGEND
    window = 600
    for instant in INSTANTS[6:]:
        at = start + instant
        wrong = _wrong(_shown(prometheus, _substitute(target["expr"], window), at),
                       truth(REPLAYS, start, at, window, "increase"))
        assert not wrong, (instant, wrong)


def test_a_per_pod_counter_rule_reads_the_pods_growth_since_its_reading_before_the_window(backfilled):
    """A per-pod alert on a counter (PCIe replays of any GPU a pod holds, over 5 minutes): the exact growth since the
    pod's last reading before the window, read from one reading of its copies per step, at every scrape; none where
    no reading of the window has one before it (a pod's first scrape: the agent sends no delta, CloudWatch's period
    has no datapoint)."""
    prometheus, start = backfilled
    project = load_project()
    alarm = Alarm("pod-replays", "PCIe replays on a pod's GPU",
                  Condition(Query(REPLAYS, "max", ("pod",), as_increase=True), ">", 0))
    # every period's increase, taken from the periods' expression as the rule reads it (one for all its periods): the
    # window ending at each scrape from 7 minutes on, read as period k at an instant k periods after its end (each
    # instant's query evaluates every period, so its periods judge that many windows)
    expr, periods = periods_as_read(alarm, project.catalog, project.settings,
                                    prometheus_expression(alarm, project.catalog, project.settings))
    assert "[299999ms:5s]" in expr
    instants = list(range(7 * 60 + 7, SCRAPES * STEP, STEP))
    queries = window_queries(instants, instants, 300, periods)
    assert len(queries) * 2 < len(instants)
    judged = set()
    for instant, reads in queries.items():
        answer = prometheus.query(expr, at=start + instant)
        for period, window in reads.items():
            shown = _legends([s for s in answer if s["metric"]["gpudash_period"] == str(period)])
            wrong = _wrong(shown, truth(REPLAYS, start, start + window, 300, "exact", held=True))
            assert not wrong, (window, f"period {period} at {instant}", wrong)
            judged.add(window)
    assert judged == set(instants)
