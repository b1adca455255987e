"""test_combined_fleet_story's fleet with counters: every per-GPU counter-rate panel (energy, PCIe replays) at All
and with a pod or namespace picked, against the story's truth (c42b9a19's counted_rate had no case of its own: that
story is gauges only).

The story's copies, scrapes and pods (gpu-node-mig rolled with maxSurge, `Hostname` -> `hostname`, MIG; gpu-node-w
rolled while team-c/worker-0 takes its idle GPU 0 and team-a/solo-0 leaves GPU 1 between the copies' scrapes 8;
worker-0 in three namespaces; gpu-node-d drained, its pod moved onto gpu-node-mig's idle MIG instance), each copy
writing each GPU's energy counter (the integral of the story's power) and PCIe replay counter (a rate per GPU), on
MIG one series per instance, backfilled (no staleness markers), both scrape paths. The truth at an instant: the GPUs
the picked pods hold at their node's latest scrape (any copy's), each at the rate of its counter as read by all its
copies (counter_truth.stepped_rate over the recording's steps); at All every GPU. The panels read the counters'
recordings, written over the story by promtool from the generated recording rules (prometheus_server.recorded), as
Grafana reads a deployment's. With
team-a/solo-0 picked 3 s past the new copy's scrape 8, before c42b9a19 the panels drew gpu-node-w GPU 1 (200,000 mW,
4 replays/s) for a pod that holds nothing."""

from __future__ import annotations

import math

import pytest

from generator.artifacts import grafana_dashboards
from generator.model import Row
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from tests.integration import test_combined_fleet_story as story_
from tests.integration.test_fleet_truth import _counters as counters_of
from tests.support import messy_history, mixed_fleet
from tests.support.counter_truth import stepped_rate
from tests.support.mixed_fleet import Node
from generator.render.alarms import counted_group
from tests.support.prometheus_server import backfilled_fixture, range_macros, recorded

ENERGY, REPLAYS = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
COUNTERS = (ENERGY, REPLAYS)
REPLAYS_PER_S = {("gpu-node-mig", 0): 2, ("gpu-node-mig", 1): 5, ("gpu-node-w", 0): 1, ("gpu-node-w", 1): 4,
                 ("gpu-node-d", 0): 3}
SCRAPE, SCRAPES, COPIES = story_.SCRAPE, story_.SCRAPES, story_.COPIES
RATE_WINDOW = 4 * SCRAPE  # Grafana's $__rate_interval at a 30 s step
_ENERGY: dict[tuple[str, int], list[int]] = {}


def counter(metric: str, node: str, gpu: int, t: int) -> int:
    """GPU `gpu` of `node`'s counter `t` seconds into the story (mJ of energy: its power's integral; replays)."""
    if metric == REPLAYS:
        return 1000 + REPLAYS_PER_S[node, gpu] * t
    if (node, gpu) not in _ENERGY:
        grown = [0]
        for s in range(SCRAPES * SCRAPE + SCRAPE):
            grown.append(grown[-1] + round(story_.state(node, s).gpus[gpu].power * 1000))
        _ENERGY[node, gpu] = grown
    return 1_000_000_000 + _ENERGY[node, gpu][t]


def story(gpudash_job: bool):
    gauges = story_.story(gpudash_job)

    def openmetrics(start: int) -> str:
        series: messy_history.Series = {}
        for copy in COPIES:
            for k in copy.scrapes:
                t = k * SCRAPE + copy.offset
                node = Node(copy.node, copy.spelling, copy.exporter_pod, story_.state(copy.node, t).gpus)
                for metric in COUNTERS:
                    for gpu in node.gpus:
                        for instance in gpu.instances:
                            labels = mixed_fleet._labels(node, gpu, instance, instance.pod) \
                                + f',instance="{copy.address}",job="gpu-metrics"'
                            if gpudash_job:
                                labels += f',Namespace="gpu-operator",Service="nvidia-dcgm-exporter",' \
                                          f'node="{copy.node}",exporter_pod="{copy.exporter_pod}"'
                            series.setdefault((metric, labels), []).append(
                                (start + t, str(counter(metric, copy.node, gpu.index, t))))
        return gauges(start).removesuffix("# EOF\n") + messy_history.openmetrics(series)
    return openmetrics


gpudash_path = backfilled_fixture("combined-counters-gpudash-job", story(True), SCRAPES * SCRAPE, SCRAPE)
no_node_path = backfilled_fixture("combined-counters-no-node", story(False), SCRAPES * SCRAPE, SCRAPE)


@pytest.fixture(scope="module")
def rate_panels(tmp_path_factory):
    """(project, [(title, target)]) of every per-GPU counter-rate panel query of the default dashboards."""
    folder = tmp_path_factory.mktemp("combined-counters-project")
    (folder / "gpudash.yaml").write_text("")
    project = load_project(folder / "gpudash.yaml", counters_of(folder, set(story_.GAUGES) | set(COUNTERS)))
    found = []
    for dashboard in grafana_dashboards(project):
        neutral = next(d for d in project.dashboards
                       if f"{project.settings.grafana.uid_prefix}-{d.id}" == dashboard.uid)
        models = [panel for row in neutral.rows if isinstance(row, Row) for panel in row.panels]
        rendered = [p for p in dashboard.model["panels"] if p["type"] != "row"]
        for panel, model in zip(rendered, models, strict=True):
            for target, query in zip(panel["targets"], model.queries, strict=True):
                if query.metric in COUNTERS and set(query.by) == {"node", "gpu"}:
                    found.append((panel["title"], query.metric, target))
    assert {title for title, _, _ in found} == {"DEV_TOTAL_ENERGY_CONSUMPTION", "DEV_PCIE_REPLAY_COUNTER",
                                                "PCIe replays"}, found
    return project, found


def _rate(metric: str, node: str, gpu: int, at: int) -> float | None:
    """The GPU's rate at second `at` as its recording reads it: its counter as every copy read it, at the steps of
    the recording's group (the scrape interval's multiples) within the window."""
    samples = sorted({(k * SCRAPE + c.offset, counter(metric, node, gpu, k * SCRAPE + c.offset))
                      for c in COPIES if c.node == node for k in c.scrapes})
    last = at - at % SCRAPE
    return stepped_rate(samples, last - RATE_WINDOW, last)


def _truth(metric: str, at: int, selected: dict[str, str]) -> dict[str, float]:
    def picked(pod: tuple[str, str]) -> bool:
        return selected.get("namespace", pod[0]) == pod[0] and selected.get("pod", pod[1]) == pod[1]

    shown = {}
    for node in story_.fleet_at(at):
        for gpu in node.gpus:
            if {"namespace", "pod"} & set(selected) and not any(map(picked, gpu.holders())):
                continue
            if (rate := _rate(metric, node.name, gpu.index, at)) is not None:
                shown[f"{node.name} GPU {gpu.index}"] = rate
    return shown


PICKS = {"All": {}, "team-a/solo-0": {"namespace": "team-a", "pod": "solo-0"},
         "pod worker-0 (three namespaces)": {"pod": "worker-0"}, "namespace team-d": {"namespace": "team-d"}}
# around the story's changes: gpu-node-w's roll (8, 9; HIGHER_COPY), gpu-node-mig's roll and team-a/worker-0's end
# (16-18), the drain (24) and the move onto MIG (26, 27)
INSTANTS = [8 * SCRAPE + 15, story_.HIGHER_COPY, 9 * SCRAPE + 29, 16 * SCRAPE + 29, 18 * SCRAPE + 15,
            18 * SCRAPE + 29, 24 * SCRAPE + 29, 26 * SCRAPE + 29, 27 * SCRAPE + 29]


@pytest.fixture(scope="module")
def recorded_paths(rate_panels) -> set[str]:
    """The paths whose server holds the counters' recordings (recorded once per server)."""
    return set()


def _recorded(request, path: str, rate_panels, done: set[str]):
    """The path's server (prometheus, start), holding the story's counter recordings as a Prometheus evaluating the
    generated group at its 30 s interval records them (prometheus_server.recorded): the panels read them as Grafana
    does."""
    prometheus, start = request.getfixturevalue(path)
    if path not in done:
        project = rate_panels[0]
        recorded(prometheus, counted_group(COUNTERS, project.catalog, project.settings), start - 600,
                 start + SCRAPES * SCRAPE + 600)
        done.add(path)
    return prometheus, start


@pytest.mark.parametrize("path", ["gpudash_path", "no_node_path"])
@pytest.mark.parametrize("pick", sorted(PICKS))
def test_every_per_gpu_counter_rate_panel_reads_the_story(request, path, pick, rate_panels, recorded_paths):
    prometheus, start = _recorded(request, path, rate_panels, recorded_paths)
    project, panels = rate_panels
    wrong = []
    for at in INSTANTS:
        for title, metric, target in panels:
            expr = interpolate(target["expr"], {
                **range_macros(f"{SCRAPES * SCRAPE}s"), "__interval": f"{SCRAPE}s",
                "__rate_interval": f"{RATE_WINDOW}s", **variables(PICKS[pick], story_.VARIABLES)})
            result = prometheus.query(expr, at=start + at)
            shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
            assert len(shown) == len(result), result
            expected = _truth(metric, at, PICKS[pick])
            if set(shown) != set(expected) or not all(math.isclose(shown[k], expected[k], rel_tol=1e-9)
                                                      for k in expected):
                wrong.append((at, title, shown, expected))
    assert not wrong, "\n".join(map(str, wrong))


def test_the_story_has_the_pod_leave_between_the_copies_scrapes():
    """(a guard on the truth itself) team-a/solo-0 holds gpu-node-w GPU 1 mid-interval, nothing 3 s past the new
    copy's scrape 8; pod worker-0 names GPUs of two nodes at once."""
    solo = PICKS["team-a/solo-0"]
    assert set(_truth(ENERGY, 8 * SCRAPE + 15, solo)) == {"gpu-node-w GPU 1"}
    assert _truth(ENERGY, story_.HIGHER_COPY, solo) == {}
    assert set(_truth(REPLAYS, story_.HIGHER_COPY, PICKS["pod worker-0 (three namespaces)"])) == {
        "gpu-node-mig GPU 0", "gpu-node-w GPU 0"}
