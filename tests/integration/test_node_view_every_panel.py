"""Every panel of every bundled Grafana dashboard, with the Node variable set to a node, shows what All nodes shows of
that node's GPUs, on a real Prometheus over a messy fleet:

- node n3 mid-upgrade (maxSurge overlap on a scrape path that does not label the node: the GPU operator's
  ServiceMonitor as shipped): its old exporter writes its own pod's name into `Hostname` (no NODE_NAME), the new one
  `hostname="n3"`; the new one started later (its first scrapes fail) and one of its later scrapes fails. The old
  exporter reads higher utilization and power than the new one; both read the devices' counters alike.
  GPU 0 (GPU-n3-0) held by ml/p; GPU 1 (GPU-n3-1) idle, its utilization, temperature and PCIe replay count DCGM's
  blank in the new exporter.
  GPU 2 (GPU-n3-2) split into two MIG instances, one held by ml/m.
- node n4, read twice: its exporter (`Hostname="n4"`) and a newer one through a scrape job that labels the node
  (`hostname="n4"`, `node="n4"`, as gpudash's job writes it), which reads GPU 0 higher (95 %, 310 W) and its
  framebuffer lower; one scrape of that job fails within the steps read (again where no step after it read the old
  copy alone fresh: a loaded machine's late scrape). GPU 0 held by ml/q, GPU 1 held by team-b/r, whose memory
  temperature is DCGM's blank.

Truth: with node=n3 (n4) every panel's lines, legends and values at every step equal those All nodes shows with the
other node's GPUs left out (the All-nodes query with every field's series restricted to the node's GPUs by UUID): the
node picks which GPUs show, never which copy of a GPU is read. So in the default build and in one for exporters that
split fields per process (exporter.virtual_gpus, whose panels read a GPU's device value and a pod's own share
otherwise). A few panels also against values worked out here, at each step from the copy the copy choice reads then
(promql.chosen_copy: of the copies scraped within the last interval and not marked stale, the one scraped last),
worked out from the scrapes Prometheus stored: the step after n4's node-labelled copy's failed scrape reads its old
exporter's 90 % (a loaded machine's scrape that timed out did the same at a step the test did not choose).
"""

from __future__ import annotations

import math
import re
import time
from contextlib import contextmanager

import pytest

from generator.artifacts import grafana_dashboards
from generator.catalog import MIG_UNSUPPORTED, per_instance_field
from generator.model import Query
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.promql import legend
from tests.support.panel_expression import panel_expression
from tests.support.projects import bundled_project
from tests.support.prometheus_server import counted_read, range_macros, recorded_live, scraped_every
from tests.support.replay_exporter import ReplayExporter
from tests.support.scrape_scene import CountedAnswers, scraped_until
from tests.support.side_by_side import module_scenes, scene

OLD_POD = "nvidia-dcgm-exporter-q8w2z"
BLANK = 9223372036854775794  # DCGM's int64 blank (not supported)
SCRAPES = 16
LATE = 3  # the new exporter's first answers fail: it started later than the old one
NEW_FAILS_AT = (10,)
STEPS = 8  # the steps the values are read at, at least (from 4.5 s after both of n3's copies are stored: _shown)
COMMON = 'modelName="NVIDIA A100-SXM4-80GB",DCGM_FI_DRIVER_VERSION="570.133.20"'
T0 = time.time()

# gauges: (old exporter's, new exporter's) reading per n3 GPU, one reading per n4 GPU
GAUGES = {  # field: {gpu key: value or (old, new)}
    "DCGM_FI_DEV_GPU_UTIL": {"n3-0": (60, 50), "n3-1": (0, BLANK), "n4-0": (90, 95), "n4-1": 20},
    "DCGM_FI_DEV_MEM_COPY_UTIL": {"n3-0": (30, 35), "n3-1": (0, 0), "n4-0": 40, "n4-1": 5},
    "DCGM_FI_DEV_ENC_UTIL": {"n3-0": (0, 0), "n3-1": (0, 0), "n4-0": 0, "n4-1": 0},
    "DCGM_FI_DEV_DEC_UTIL": {"n3-0": (0, 0), "n3-1": (0, 0), "n4-0": 0, "n4-1": 0},
    "DCGM_FI_DEV_FB_USED": {"n3-0": (30000, 32000), "n3-1": (1000, 1000), "n4-0": (70000, 69000),
                            "n4-1": 8000},
    "DCGM_FI_DEV_FB_FREE": {"n3-0": (50000, 48000), "n3-1": (79000, 79000), "n4-0": 10000, "n4-1": 72000},
    "DCGM_FI_DEV_FB_RESERVED": {"n3-0": (500, 500), "n3-1": (500, 500), "n4-0": 500, "n4-1": 500},
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": {"n3-0": (0.6, 0.5), "n3-1": (0, 0), "n4-0": 0.9, "n4-1": 0.2},
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": {"n3-0": (0.3, 0.4), "n3-1": (0, 0), "n4-0": 0.7, "n4-1": 0.1},
    "DCGM_FI_PROF_DRAM_ACTIVE": {"n3-0": (0.2, 0.25), "n3-1": (0, 0), "n4-0": 0.5, "n4-1": 0.05},
    "DCGM_FI_DEV_POWER_USAGE": {"n3-0": (150, 140), "n3-1": (60, 55), "n4-0": (300, 310), "n4-1": 90},
    "DCGM_FI_DEV_MEMORY_TEMP": {"n3-0": (70, 71), "n3-1": (50, 50), "n4-0": 80, "n4-1": BLANK},
    "DCGM_FI_DEV_GPU_TEMP": {"n3-0": (65, 66), "n3-1": (40, BLANK), "n4-0": 75, "n4-1": 45},
    "DCGM_FI_DEV_SM_CLOCK": {"n3-0": (1400, 1410), "n3-1": (210, 210), "n4-0": 1980, "n4-1": 1100},
    "DCGM_FI_DEV_MEM_CLOCK": {"n3-0": (1593, 1593), "n3-1": (1593, 1593), "n4-0": 1593, "n4-1": 1593},
    "DCGM_FI_PROF_PCIE_TX_BYTES": {"n3-0": (2e9, 1e9), "n3-1": (0, 0), "n4-0": 3e9, "n4-1": 1e8},
    "DCGM_FI_PROF_PCIE_RX_BYTES": {"n3-0": (1e9, 2e9), "n3-1": (0, 0), "n4-0": 4e9, "n4-1": 2e8},
    "DCGM_FI_DEV_XID_ERRORS": {"n3-0": (0, 0), "n3-1": (43, 43), "n4-0": 0, "n4-1": 79},
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": {"n3-0": (0, 0), "n3-1": (0, 0), "n4-0": 0, "n4-1": 1},
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS": {"n3-0": (0, 0), "n3-1": (0, 0), "n4-0": 0, "n4-1": 0},
}
# counters: the device's count at a time (both exporters of a node read the same device)
COUNTERS = {
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": lambda key, t: 1e9 + {"n3-0": 150000, "n3-1": 60000, "n3-2": 120000,
                                                                    "n4-0": 300000, "n4-1": 90000}[key] * t,
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": lambda key, t: {"n3-0": 3, "n3-1": 0, "n3-2": 2, "n4-0": 1, "n4-1": 0}[key]
    * math.floor(t),
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": lambda key, t: {"n3-0": 5e6, "n3-1": 0, "n3-2": 2e6, "n4-0": 7e6,
                                                          "n4-1": 1e6}[key] * t,
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": lambda key, t: {"n3-0": 1, "n3-1": 0, "n3-2": 1, "n4-0": 0, "n4-1": 2}[key]
    * math.floor(t / 4),
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": lambda key, t: {"n3-0": 0, "n3-1": 1, "n3-2": 0, "n4-0": 0,
                                                               "n4-1": 0}[key] * math.floor(t / 5),
}
NEW_COUNTER_BLANKS = {("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "n3-1")}  # the new exporter reads DCGM's blank for them
PODS = {"n3-0": ("ml", "p"), "n4-0": ("ml", "q"), "n4-1": ("team-b", "r"), "n3-2/1": ("ml", "m")}
# n3's GPU 2 is split into two MIG instances (1: 3g.40gb, held by ml/m; 2: 4g.40gb, idle): a field of the instance
# reads its share of the device's reading below, a field of the device repeats on each instance, and GPU utilization,
# which MIG does not report, reads 0 (an exporter's stand-in)
MIG = {"1": ("3g.40gb", 0.75), "2": ("4g.40gb", 0.25)}
for _field, _values in GAUGES.items():
    _values["n3-2"] = (0, 0) if _field in MIG_UNSUPPORTED else tuple(v * 1.1 for v in _values["n3-0"])


def _series(node: str) -> list[tuple[str, str, str | None, float]]:
    """(key, labels of the GPU or MIG instance, instance id, share of an instance field's reading) of a node's."""
    series = []
    for gpu in (0, 1, 2) if node == "n3" else (0, 1):
        key = f"{node}-{gpu}"
        device = f'gpu="{gpu}",UUID="GPU-{key}",device="nvidia{gpu}"'
        for instance, (profile, share) in MIG.items() if key == "n3-2" else ((None, ("", 1)),):
            pod = PODS.get(f"{key}/{instance}" if instance else key)
            labels = ",".join(x for x in (device, instance and f'GPU_I_PROFILE="{profile}",GPU_I_ID="{instance}"',
                                          COMMON, pod and f'container="main",namespace="{pod[0]}",pod="{pod[1]}"')
                              if x)
            series.append((key, labels, instance, share))
    return series


def _payload(node: str, spelling: str, old: bool | None) -> str:
    t = time.time() - T0
    lines = []
    for metric, values in (*GAUGES.items(), *((m, None) for m in COUNTERS)):
        lines.append(f"# TYPE {metric} {'gauge' if values else 'counter'}")
        for key, labels, instance, share in _series(node):
            value = COUNTERS[metric](key, t) if values is None else values[key]
            value = BLANK if values is None and old is False and (metric, key) in NEW_COUNTER_BLANKS else value
            value = value[0 if old else 1] if isinstance(value, tuple) else value
            if instance and values is not None and per_instance_field(metric) and value < BLANK:
                value *= share
            lines.append(f"{metric}{{{labels},{spelling}}} {value:.17g}")
    return "\n".join(lines) + "\n"


def _up(prometheus, copies: dict[str, tuple[str, str]]) -> dict[str, dict[str, list[tuple[float, int]]]]:
    """Each node's copies' scrapes stored: {node: {copy: [(time, 1 answered or 0 failed)]}}."""
    scrapes = {"n3": {}, "n4": {}}
    for series in prometheus.query("up[10m]"):
        node, copy = copies[series["metric"]["instance"]]
        scrapes[node][copy] = [(float(at), int(up)) for at, up in series["values"]]
    return scrapes


def _first_step(prometheus) -> float | None:
    """The first step the tests read (_shown): 4.5 s after the second after both of n3's copies were first stored;
    None before both are."""
    firsts = [min(float(at) for at, _ in series["values"])
              for series in prometheus.query('DCGM_FI_DEV_GPU_TEMP{UUID="GPU-n3-0"}[10m]')]
    return math.floor(max(firsts)) + 4.5 if len(firsts) == 2 else None


@contextmanager
def _fleet(tmp_path_factory):
    """(prometheus, the instant from which both of n3's copies are stored, the last sample, each node's copies' scrapes:
    {node: {copy: [(time, 1 answered or 0 failed)]}}, a copy "old" (Hostname) or "new" (hostname)).

    The scene moves on by what Prometheus stored, not by a count of answers (at load ~30 a count missed: n3's new
    copy first stored late, n4's node-labelled copy's failed scrape before the first step read, or a late scrape of
    the old copy left it not fresh at the step after): n4's node-labelled copy fails its next scrape once its stored
    scrapes reach the first step read, and again while no step read after a failed one reads the old copy alone (the
    copy choice, _copy_read, at steps every copy's scrapes up to which are stored); the scene ends once n3's new
    exporter has served SCRAPES answers, STEPS steps are stored and one of them reads n4's old copy."""
    old = CountedAnswers(lambda n: _payload("n3", f'Hostname="{OLD_POD}"', True))
    new = CountedAnswers(lambda n: "garbage{ 1\n" if n <= LATE or n in NEW_FAILS_AT
                         else _payload("n3", 'hostname="n3"', False))
    n4 = CountedAnswers(lambda n: _payload("n4", 'Hostname="n4"', True))
    n4_job_fails: set[int] = set()  # the answers (by number) of n4's node-labelled copy that fail
    n4_job = CountedAnswers(lambda n: "garbage{ 1\n" if n in n4_job_fails
                            else _payload("n4", 'hostname="n4",node="n4"', False))
    ready = {"old read": False, "steps": 0, "looked": 0.0}
    with ReplayExporter(old) as a, ReplayExporter(new) as b, ReplayExporter(n4) as c, ReplayExporter(n4_job) as d:
        copies = {a.address: ("n3", "old"), b.address: ("n3", "new"), c.address: ("n4", "old"),
                  d.address: ("n4", "new")}

        def watch(prometheus) -> None:
            if new.served <= LATE or ready["old read"] and ready["steps"] >= STEPS and n4_job_fails \
                    or time.monotonic() < ready["looked"] + 1:  # a look a second: a scrape's worth of news
                return
            ready["looked"] = time.monotonic()
            first = _first_step(prometheus)
            scrapes = _up(prometheus, copies)
            if first is None or sum(map(len, scrapes.values())) < 4:
                return
            stored = max(float(at) for series in prometheus.query("DCGM_FI_DEV_GPU_TEMP[10m]")
                         for at, _ in series["values"])
            settled = min(stored, *(times[-1][0] for node in scrapes.values() for times in node.values()))
            steps = [first + i for i in range(int((settled - first) // 1) + 1)]
            ready["steps"] = len(steps)
            ready["old read"] = any(_copy_read(scrapes["n4"], "n4", at) == "old" for at in steps)
            failed = [at for at, up in scrapes["n4"]["new"] if not up]
            # a failure made to come only once those asked before are stored and the steps after them settled (one
            # at least: since c75fe0bb a step reads the old copy wherever it was scraped last, failure or none)
            if (not ready["old read"] or not n4_job_fails) and scrapes["n4"]["new"][-1][0] >= first \
                    and len(failed) >= len(n4_job_fails) and all(at + 2 <= settled for at in failed):
                n4_job_fails.add(n4_job.served + 1)

        with scraped_until(tmp_path_factory, "node-view-every-panel", [a.address, b.address, c.address, d.address],
                           lambda: new.served >= SCRAPES and ready["old read"] and ready["steps"] >= STEPS
                           and bool(n4_job_fails) and n4_job.served > max(n4_job_fails),
                           watch=watch) as prometheus:
            firsts = {series["metric"]["instance"]: min(float(at) for at, _ in series["values"])
                      for series in prometheus.query('DCGM_FI_DEV_GPU_TEMP{UUID="GPU-n3-0"}[10m]')}
            stored = [float(at) for series in prometheus.query("DCGM_FI_DEV_GPU_TEMP[10m]")
                      for at, _ in series["values"]]
            assert len(firsts) == 2, firsts
            recorded_live(prometheus, {"interval": "1s", "rules": [rule for settings in SETTINGS.values()
                                                                   for rule in _recording_rules(settings)]},
                          math.floor(min(stored)) - 30, math.ceil(max(stored)) + 1)
            # it scrapes no more: a panel on several dashboards, or alike in both builds, is asked once per node
            prometheus.remember_answers()
            yield prometheus, min(firsts.values()), max(firsts.values()), max(stored), _up(prometheus, copies)


scenes = module_scenes({"fleet": _fleet})
fleet = scene("fleet")


# the default build, and one for exporters that split fields per process (a GPU's device value read otherwise)
SETTINGS = {"defaults": "", "virtual_gpus": "exporter:\n  virtual_gpus: true\n"}


def _targets() -> list[tuple[str, str, str, dict]]:
    """(settings, dashboard, panel title, target) of every bundled dashboard's panels as each SETTINGS builds them."""
    return [(settings, dashboard.model["title"], panel.get("title", ""), target) for settings in SETTINGS.values()
            for dashboard in grafana_dashboards(bundled_project(settings))
            for panel in dashboard.model["panels"] for target in panel.get("targets", ())]


# panels a user may define beside the bundled ones: per node, a count of a counter's GPUs, increases, per namespace
DEFINED = (Query("DCGM_FI_DEV_POWER_USAGE", "avg", by=("node",)), Query("DCGM_FI_DEV_GPU_UTIL", "max", by=("node",)),
           Query("DCGM_FI_DEV_GPU_TEMP", "count", by=("node",)), Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "count"),
           Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "sum", by=("node",)),
           Query("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "sum", as_increase=True),
           Query("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "sum", by=("node",), as_increase=True),
           Query("DCGM_FI_DEV_FB_USED", "sum", by=("namespace",)), Query("DCGM_FI_DEV_GPU_UTIL", "avg", by=("gpu",)))


def _defined(query: Query) -> tuple[str, str, str, dict]:
    """A panel of `query` as the bundled dashboards' panels are rendered (render.grafana._targets)."""
    project = bundled_project()
    settings = project.settings
    expr = panel_expression(project, query)
    return "", "defined", f"{query.aggregation} of {query.metric} by {query.by}{' increase' * query.as_increase}", \
        {"expr": expr, "legendFormat": legend(query, settings.labels)}


TARGETS = [*_targets(), *map(_defined, DEFINED)]
RANGE = "20s"  # the dashboard range an increase over the range reads


# The counters' recordings the panels read, recorded over the scene as each build's counter rules record them on 1 s
# scrapes (prometheus_server.recorded): the panels read them as Grafana does. The virtual_gpus build's rules keep
# pod_uid and vgpu apart: its recordings under a name of their own, its panels reading that name.
RECORDED = {"": "gpudash:", SETTINGS["virtual_gpus"]: "gpudash_virtual_gpus:"}
_COUNTED = re.compile(r"\bgpudash:(?=DCGM_[A-Z0-9_]+:step_)")


def _recording_rules(settings: str) -> list[dict]:
    """The recording rules of the counters the panels of `settings`' build read, for 1 s scrapes, under its name."""
    group = counted_read([target["expr"] for s, _, _, target in TARGETS if s == settings], bundled_project(settings))
    return [{**rule, "record": _COUNTED.sub(RECORDED[settings], rule["record"]),
             "expr": scraped_every(rule["expr"], 30, 1)} for rule in group["rules"]]


def _restricted(expr: str, node: str) -> str:
    """`expr` with every field's series restricted to the GPUs of `node` (by UUID): what All nodes shows of them (a
    counter's recordings too: one series per GPU, its UUID as gpudash_gpu)."""
    matcher = f'UUID=~"GPU-{node}-.*"'
    expr = re.sub(r"\b(gpudash\w*:DCGM_[A-Z0-9_]+:step_[a-z]+)\{", rf'\1{{gpudash_gpu=~"GPU-{node}-.*", ', expr)
    expr = re.sub(r"\b(DCGM_[A-Z0-9_]+)\{", rf"\1{{{matcher}, ", expr)
    return re.sub(r"\b(DCGM_[A-Z0-9_]+)(?=\[|\)| )", rf"\1{{{matcher}}}", expr)


def _shown(fleet, target: dict, node: str | None, restrict: str | None = None, settings: str = "") \
        -> dict[float, dict[str, float]]:
    prometheus, _, start, end, _ = fleet
    expr = scraped_every(_COUNTED.sub(RECORDED[settings], target["expr"]), 30, 1)
    if restrict:
        expr = _restricted(expr, restrict)
    expr = interpolate(expr, {**variables({"node": node} if node else {}, ("namespace", "pod", "node", "gpu")),
                              "__rate_interval": "4s", **range_macros(RANGE)})
    first = math.floor(start) + 4.5
    # an instant panel as Grafana reads it at the end of a dashboard's range ending at each step (query_at's `instant`)
    return {at: {render_legend(target.get("legendFormat", ""), s["metric"]): float(s["value"][1]) for s in result}
            for at, result in prometheus.query_at(expr, first, int((end - first) // 1) + 1, 1,
                                                  instant=bool(target.get("instant"))).items()}


def _differ(one: dict[str, float], other: dict[str, float]) -> bool:
    return set(one) != set(other) or any(not math.isclose(one[k], other[k], rel_tol=1e-9, abs_tol=1e-9) for k in one)


@pytest.mark.parametrize("settings, dashboard, title, target", TARGETS,
                         ids=[f"{next(k for k, v in SETTINGS.items() if v == s)}/{d}/{t}/{n}"
                              for n, (s, d, t, _) in enumerate(TARGETS)])
def test_a_node_selected_shows_what_all_nodes_shows_of_its_gpus(fleet, settings, dashboard, title, target):
    wrong = {}
    for node in ("n3", "n4"):
        every = _shown(fleet, target, None, node, settings)
        one = _shown(fleet, target, node, settings=settings)
        wrong.update({(node, at): (every[at], one.get(at)) for at in every if _differ(every[at], one.get(at, {}))})
        assert node != "n3" or any(every.values()), f"{dashboard} / {title}: no line (n3 has a GPU of each kind)"
    assert not wrong, f"{dashboard} / {title}: (node, step): (All nodes of the node's GPUs, node selected) {wrong}"


# panel: {node: {copy: {legend: value}}}: what the node's GPUs read from one copy of the node's exporters, "old"
# (Hostname) or "new" (hostname). The MIG GPU's utilization is its instances' mean graphics engine activity (0.75 and
# 0.25 of 0.66 old, of 0.55 new) in %; n3's GPU 1 reads DCGM's blank utilization in its new copy (no reading: the old
# copy's 0 shows)
TRUTH = {
    "Average GPU utilization": {"n3": {"old": {"DCGM_FI_DEV_GPU_UTIL": 31.0},
                                       "new": {"DCGM_FI_DEV_GPU_UTIL": (50 + 0 + 27.5) / 3}},
                                "n4": {"old": {"DCGM_FI_DEV_GPU_UTIL": 55.0}, "new": {"DCGM_FI_DEV_GPU_UTIL": 57.5}}},
    "Total power draw": {"n3": {"old": {"DCGM_FI_DEV_POWER_USAGE": 375.0}, "new": {"DCGM_FI_DEV_POWER_USAGE": 349.0}},
                         "n4": {"old": {"DCGM_FI_DEV_POWER_USAGE": 390.0}, "new": {"DCGM_FI_DEV_POWER_USAGE": 400.0}}},
    "GPUs reporting": {"n3": dict.fromkeys(("old", "new"), {"DCGM_FI_DEV_GPU_TEMP": 3.0}),
                       "n4": dict.fromkeys(("old", "new"), {"DCGM_FI_DEV_GPU_TEMP": 2.0})},
    "GPU utilization": {"n3": {"old": {"n3 GPU 0": 60.0, "n3 GPU 1": 0.0, "n3 GPU 2": 33.0},
                               "new": {"n3 GPU 0": 50.0, "n3 GPU 1": 0.0, "n3 GPU 2": 27.5}},
                        "n4": {"old": {"n4 GPU 0": 90.0, "n4 GPU 1": 20.0},
                               "new": {"n4 GPU 0": 95.0, "n4 GPU 1": 20.0}}},
}
HIGHER = {"n3": "old", "n4": "new"}  # the copy reading the most (n3's old exporter; n4's node-labelled job)


def _copy_read(scrapes: dict[str, list[tuple[float, int]]], node: str, at: float) -> str:
    """The copy of `node`'s GPUs the panels read at `at`, by the copy choice (promql.chosen_copy, older_samples): of the
    copies fresh at `at` (the latest scrape at or before it answered, and was taken within the last scrape interval,
    1 s: not one marked stale by a failed scrape, nor one whose scrape came late) the one scraped last (each scrape is
    a reading of the node's GPUs at its time: the newest is their latest; the one reading the most before c75fe0bb), of
    copies scraped at one instant the one reading the most; where none is, the one
    read at the latest step of the interval (a subquery's 1 s steps: a step reads a sample within the second before
    it), of equal ones the one reading the most. A loaded machine's scrape that timed out or came late is what the
    product reads then, so the truth follows the scrapes Prometheus stored, not a timing the test does not control."""
    latest = {copy: max(((t, up) for t, up in times if t <= at), default=(-math.inf, 0))
              for copy, times in scrapes.items()}
    fresh = {copy: t for copy, (t, up) in latest.items() if up and t >= at - 1}
    if fresh:  # the fresher (scraped last), of copies scraped at one instant the one reading the most
        newest = max(fresh.values())
        return HIGHER[node] if fresh.get(HIGHER[node]) == newest else next(c for c, t in fresh.items() if t == newest)
    read = {copy: max((step for t, up in times if up and at - 4 <= t <= at  # within the 4 s look-back
                       if (step := min(math.floor(t) + 1, math.floor(at))) >= t), default=-math.inf)
            for copy, times in scrapes.items()}  # the latest step reading each answered scrape
    newest = max(read.values())
    return HIGHER[node] if read[HIGHER[node]] == newest else next(c for c, t in read.items() if t == newest)


@pytest.mark.parametrize("title", sorted(TRUTH))
def test_a_node_selected_shows_its_gpus_values(fleet, title):
    target = next(target for settings, _, t, target in TARGETS if t == title and not settings)
    scrapes = fleet[4]
    wrong = {}
    for node, truth in TRUTH[title].items():
        shown = _shown(fleet, target, node)
        read = {at: _copy_read(scrapes[node], node, at) for at in shown}
        wrong.update({(node, at): (values, truth[read[at]]) for at, values in shown.items()
                      if _differ(values, truth[read[at]])})
        assert len(shown) >= STEPS
        assert node != "n4" or "old" in read.values(), "no step after the node-labelled copy's failed scrape"
    assert not wrong, f"{title}: (node, step): (shown, true) {wrong}"
