"""A GPU's health and P2P status on the dashboards when a watch recovers, on a real Prometheus.

dcgm-exporter writes DCGM_EXP_GPU_HEALTH_STATUS once per GPU and watched system (`health_watch`) with the incident's
error code as a label (`health_error_code`, "DCGM_FR_OK" while the watch passes; gpu_health_collector.go), and
DCGM_EXP_P2P_STATUS once per GPU and peer (`peer_gpu`) with the status's name as a label (`link_status`;
p2p_status_collector.go). A watch that fails and recovers is thus a new series each time: PCIe passing (0, DCGM_FR_OK)
until scrape 20, failing (20, DCGM_FR_PCI_REPLAY_RATE) from scrape 20, passing again (a new DCGM_FR_OK series) from
scrape 40. Half an hour of 30 s scrapes of one H100 is backfilled, as after a Prometheus restart: no staleness marker
ends the failing series (a range read passes over them anyway).

Truth: from scrape 40 the GPU, its node and its pod read 0 (every watch passes, every link OK). Taking the largest of
every series within the look-back kept the failed watch's 20 beside its recovery for 90 s.

DCGM_EXP_XID_ERRORS_COUNT changes its series the same way (expcollector.go): one series per XID code seen within the
window (`xid`), and one without `xid` reading 0 where none was. XID 79 from scrape 20 is counted 1 until the window
(5 minutes) passes at scrape 30, then the series without `xid` reads 0 again.
"""

from __future__ import annotations

import pytest

from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from tests.support.messy_history import Series, openmetrics
from tests.support.projects import counters_with, defined_project
from tests.support.live_scrapes import scraped_fixture
from tests.support.prometheus_server import SCENE_RANGE, backfilled_fixture, counted_inline, scraped_every
from tests.support.range_panels import VARIABLES
from generator.artifacts import grafana_dashboards

STEP, SCRAPES, OFFSET = 30, 60, 15
HEALTH, P2P, XIDS = "DCGM_EXP_GPU_HEALTH_STATUS", "DCGM_EXP_P2P_STATUS", "DCGM_EXP_XID_ERRORS_COUNT"
WINDOW = 'window_size_in_ms="300000"'
LABELS = ('gpu="0",UUID="GPU-0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="n1",job="dcgm-exporter",'
          'container="main",namespace="ml",pod="train-0"')
# (since scrape, value, label) of the watch or link that changes; the other one passes throughout
STATES = {HEALTH: ((0, 0, "DCGM_FR_OK"), (20, 20, "DCGM_FR_PCI_REPLAY_RATE"), (40, 0, "DCGM_FR_OK")),
          P2P: ((0, 0, "OK"), (20, 6, "Unknown"), (40, 0, "OK"))}
CHANGING = {HEALTH: ('health_watch="PCIE"', "health_error_code"), P2P: ('peer_gpu="1"', "link_status")}
STEADY = {HEALTH: 'health_watch="MEM",health_error_code="DCGM_FR_OK"', P2P: 'peer_gpu="2",link_status="OK"'}
DASHBOARDS = f'''
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="states", title="States", rows=[Row("states", [
        Panel(f"{{name}} by {{by}}", Query(name, "max", how), description=by, unit="state")
        for name in ({HEALTH!r}, {P2P!r}) for by, how in (("gpu", ("node", "gpu")), ("node", ("node",)),
                                                           ("pod", ("pod",)))] + [
        Panel(f"{XIDS} by {{by}}", Query({XIDS!r}, "sum", how), description=by, unit="count")
        for by, how in (("gpu", ("node", "gpu")), ("node", ("node",)), ("pod", ("pod",)))])])
'''


def _state_at(field: str, k: int) -> tuple[int, str]:
    return next((value, label) for since, value, label in reversed(STATES[field]) if k >= since)


def _openmetrics(start: int) -> str:
    series: Series = {}
    for field in (HEALTH, P2P):
        fixed, label = CHANGING[field]
        for k in range(SCRAPES):
            value, name = _state_at(field, k)
            at = start + OFFSET + k * STEP
            series.setdefault((field, f'{LABELS},{fixed},{label}="{name}"'), []).append((at, str(value)))
            series.setdefault((field, f"{LABELS},{STEADY[field]}"), []).append((at, "0"))
    for k in range(SCRAPES):
        counted = _xids_at(k)
        own = f'xid="79",{WINDOW}' if counted else WINDOW
        series.setdefault((XIDS, f"{LABELS},{own}"), []).append((start + OFFSET + k * STEP, str(counted)))
    return openmetrics(series)


def _xids_at(k: int) -> int:
    """The XIDs the exporter counts in its window at scrape k: XID 79 from scrape 20 until the window passes."""
    return 1 if 20 <= k < 30 else 0


prometheus = backfilled_fixture("state-label-changes", _openmetrics, SCRAPES * STEP, STEP)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    folder = tmp_path_factory.mktemp("states")
    csv = counters_with(folder, f"{HEALTH}, counter, DCGM reported health status\n{P2P}, counter, P2P NvLink status\n"
                              f"{XIDS}, counter, reported XIDs during last window\n")
    return defined_project(folder, f"counters: {csv}\n", dashboards=DASHBOARDS)


def _shown(server, project, title: str, at: float) -> dict[str, float]:
    (dashboard,) = [d for d in grafana_dashboards(project) if d.uid.endswith("-states")]
    (panel,) = [p for p in dashboard.model["panels"] if p.get("title") == title]
    (target,) = [t for t in panel["targets"] if not t.get("instant")]
    expr = interpolate(target["expr"], {**SCENE_RANGE, **variables({}, VARIABLES)})
    return {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in server.query(expr, at=at)}


@pytest.mark.parametrize("field", [HEALTH, P2P])
@pytest.mark.parametrize("by", ["gpu", "node", "pod"])
def test_a_state_reads_its_newest_series_when_a_watch_recovers(prometheus, project, field, by):
    server, start = prometheus
    shown = {k: set(_shown(server, project, f"{field} by {by}", start + OFFSET + k * STEP + 1).values())
             for k in range(16, 48)}
    assert shown == {k: {float(_state_at(field, k)[0])} for k in range(16, 48)}


@pytest.mark.parametrize("by", ["gpu", "node", "pod"])
def test_an_xid_count_falls_to_0_when_the_window_passes(prometheus, project, by):
    server, start = prometheus
    shown = {k: set(_shown(server, project, f"{XIDS} by {by}", start + OFFSET + k * STEP + 1).values())
             for k in range(16, 40)}
    assert shown == {k: {float(_xids_at(k))} for k in range(16, 40)}


# Live scrapes (every half second, as 30 s scrapes): exporter `u` on node u, whose PCIe watch fails from its answer 4
# and passes again from 10; exporter `r-old` on node r, failing from its answer 4 until it ends at 12 (the exporter pod
# restarted to clear it), `r-new` (another pod: another target) passing from its answer 13 on. Each GPU holds ml/train.
INTERVAL, ANSWERS, LOOKBACK = 0.5, 24, 4
LIVE = {"u": ("u", 0, ANSWERS, (4, 10)), "r-old": ("r", 0, 12, (4, ANSWERS)), "r-new": ("r", 13, ANSWERS, (0, 0))}


def _page(exporter: str, k: int) -> str:
    node, first, end, (fails, passes) = LIVE[exporter]
    if not first <= k < end:
        return ""
    failing = fails <= k < passes
    labels = (f'gpu="0",UUID="GPU-{node}-0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="{node}",'
              f'container="main",namespace="ml",pod="train"')
    pcie = 'health_error_code="DCGM_FR_PCI_REPLAY_RATE"' if failing else 'health_error_code="DCGM_FR_OK"'
    return (f"# TYPE {HEALTH} gauge\n{HEALTH}{{{labels},health_watch=\"PCIE\",{pcie}}} {20 if failing else 0}\n"
            f"{HEALTH}{{{labels},health_watch=\"MEM\",health_error_code=\"DCGM_FR_OK\"}} 0\n")


live = scraped_fixture("health-live", _page, LIVE, ANSWERS, INTERVAL)


def _live_truth(times: dict[str, list[float]], at: float) -> dict[str, tuple[float, bool]]:
    """{GPU legend: (its worst watch at its newest answer by `at`, certain)}: uncertain at the look-back's edge."""
    newest: dict[str, tuple[float, float]] = {}
    for name, (node, first, end, (fails, passes)) in LIVE.items():
        taken = [(t, k) for k, t in enumerate(times[name]) if t <= at and first <= k < end]
        if taken and taken[-1][0] > newest.get(node, (float("-inf"), 0.0))[0]:
            newest[node] = (taken[-1][0], 20.0 if fails <= taken[-1][1] < passes else 0.0)
    return {f"{node} GPU 0": (value, at - when < (LOOKBACK - 1) * INTERVAL) for node, (when, value) in newest.items()
            if at - when <= (LOOKBACK + 1) * INTERVAL}


def test_a_live_gpu_reads_its_worst_watch_at_its_newest_answer(live, project):
    prometheus, times, start, count, step = live
    (dashboard,) = [d for d in grafana_dashboards(project) if d.uid.endswith("-states")]
    (panel,) = [p for p in dashboard.model["panels"] if p.get("title") == f"{HEALTH} by gpu"]
    (target,) = [t for t in panel["targets"] if not t.get("instant")]
    expr = scraped_every(counted_inline(target["expr"], project), 30, INTERVAL)
    query = interpolate(expr, {**SCENE_RANGE, **variables({}, VARIABLES)})
    wrong = {}
    for at, result in prometheus.query_at(query, start, count, step).items():
        shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
        expected = _live_truth(times, at)
        certain = {legend for legend, (_, sure) in expected.items() if sure}
        if not certain <= set(shown) <= set(expected) or any(shown[g] != expected[g][0] for g in shown):
            wrong[round(at - start, 3)] = (shown, expected)
    assert not wrong
    assert {value for at in (start + i * step for i in range(count)) for value, _ in _live_truth(times, at).values()} \
        == {0.0, 20.0}
