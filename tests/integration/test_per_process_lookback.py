"""With exporter.virtual_gpus, a mean, total or maximum over GPUs of a field the exporter splits per process (GPU
utilization, framebuffer used) reads each GPU's device reading at its latest reading within the panels' look-back,
as it reads every other gauge: not the instant's samples of its series.

Half an hour of 30 s scrapes, backfilled into a real Prometheus, shaped as the exporters write them
(tests/support/virtual_gpus.py cites the source): on a 4.5.3+ node, a GPU pods hold has its own series (the device's
reading, no pod) and one series per pod (that pod's processes' share); on a 4.5.2 node with the setting, every pod's
copy is the device's reading.

- ip-10-0-1-1 (4.5.3): GPU 0, two pods sharing it, its own series reading DCGM's blank at odd scrapes (the pods'
  shares, 30 and 25, written all along); GPU 1, one pod, gone from 20 minutes in (no sample after, no staleness
  marker: as after a Prometheus restart); GPU 2 no pod (its own series only).
- ip-10-0-1-2 (4.5.2): GPU 0, two pods' copies, both reading the blank at odd scrapes.
- ip-10-0-1-3 (4.5.3): GPU 0 read by one exporter until scrape 30 and by its replacement (another scrape target)
  from scrape 28 (both at scrapes 28 and 29: two copies), the old one's series left without a staleness marker; each
  reading falls by 0.1 per scrape, so the old copy's last reading is above the live one's.

Each device reading moves by 0.1 per scrape, so the latest reading differs from the ones before it. The truth at an
instant: each GPU with a reading of its device's own value within the look-back (promql.label_lookback: 4 scrape
intervals, 120 s) contributes its latest one; a pod's share is never the device's reading. Read at the instant
(before): GPU 0 of ip-10-0-1-1 read its pods' largest share (30) at odd scrapes, ip-10-0-1-2's GPU left the panels at
odd scrapes, the gone GPU stayed for the 5 minutes an instant selector reads its last sample, and the replaced
exporter's copy outread the live one for as long. Alert rules read one reading per step of their window: a step
whose own series read the blank read the pods' largest share there too.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from generator.model import Query
from generator.preview.interpolate import interpolate, variables
from generator.project import load_project
from generator.promql import expression, label_lookback, settings_clusters
from generator.resources import default_counters
from tests.integration.test_blank_mean_lookback import HOW
from tests.support.blank_scene import COUNT, END, EVERY, FIRST, NOT_SUPPORTED, STEP, STEPS, read_instants
from tests.support.panel_expression import panel_expression
from tests.support.prometheus_server import SCENE_RANGE, backfilled_fixture
from tests.support.shown_truth import off_truth

UTIL, FB = "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"
LOOKBACK = 4 * STEP
ON, OLD, MOVED = "ip-10-0-1-1", "ip-10-0-1-2", "ip-10-0-1-3"
LEFT = 40  # ip-10-0-1-1 GPU 1: no sample from scrape 40 on
REPLACED, TAKEN_OVER = 30, 28  # ip-10-0-1-3: the old exporter's last scrape (exclusive), the new one's first
# (node, gpu): (mode, pods: (namespace, pod, share of utilization, share of framebuffer))
GPUS = {(ON, 0): ("per-process", (("ml", "ts-0", 30, 12000), ("ml", "ts-1", 25, 9000))),
        (ON, 1): ("per-process", (("ml", "solo", 58, 19000),)),
        (ON, 2): ("per-process", ()),
        (OLD, 0): ("copies", (("serve", "a", 40, 20000), ("serve", "b", 40, 19200))),
        (MOVED, 0): ("per-process", (("batch", "job", 50, 15000),))}
BASE = {UTIL: {(ON, 0): 80, (ON, 1): 60, (ON, 2): 0, (OLD, 0): 70, (MOVED, 0): 90},
        FB: {(ON, 0): 30000, (ON, 1): 20000, (ON, 2): 300, (OLD, 0): 39200, (MOVED, 0): 25000}}


def device(field: str, node: str, gpu: int, k: int) -> float | None:
    """The device reading GPU (node, gpu) wrote at scrape k (None: no sample; NOT_SUPPORTED: the blank)."""
    if (node, gpu) == (ON, 1) and k >= LEFT:
        return None
    if (node, gpu) in ((ON, 0), (OLD, 0)) and k % 2:
        return NOT_SUPPORTED
    step = -k / 10 if node == MOVED else k / 10
    return BASE[field][node, gpu] + step


def targets(node: str, k: int) -> list[str]:
    """The scrape targets (instance) that wrote the node's series at scrape k."""
    if node != MOVED:
        return [f"{node[3:].replace('-', '.')}:9400"]
    return [address for address, first, last in (("10.0.1.3:9400", 0, REPLACED), ("10.0.1.33:9400", TAKEN_OVER, STEPS))
            if first <= k < last]


def openmetrics(start: int) -> str:
    lines = []
    for field in (UTIL, FB):
        lines.append(f"# TYPE {field} gauge")
        for k in range(STEPS):
            for (node, gpu), (mode, pods) in GPUS.items():
                value = device(field, node, gpu, k)
                if value is None:
                    continue
                base = (f'gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",modelName="NVIDIA A10G",'
                        f'Hostname="{node}",DCGM_FI_DRIVER_VERSION="570.133.20",node="{node}",job="dcgm-exporter"')
                for instance in targets(node, k):
                    written = [] if pods and mode == "copies" else [("", value)]
                    for v, (namespace, pod, util, fb) in enumerate(pods):
                        share = value if mode == "copies" else util if field == UTIL else fb
                        written.append((f',container="main",namespace="{namespace}",pod="{pod}",'
                                        f'pod_uid="uid-{namespace}-{pod}",vgpu="{v}"', share))
                    lines += [f'{field}{{{base},instance="{instance}"{more}}} {v:g} {start + k * STEP}'
                              for more, v in written]
    return "\n".join(lines) + "\n# EOF\n"


def latest(field: str, t: float) -> dict[tuple[str, int], float]:
    """Each GPU with a device reading within the look-back before `t` (seconds from the first scrape): its latest."""
    found = {}
    for node, gpu in GPUS:
        read = [value for k in range(STEPS) if t - LOOKBACK < k * STEP <= t
                and (value := device(field, node, gpu, k)) is not None and value < 1e14]
        if read:
            found[node, gpu] = read[-1]
    return found


backfilled = backfilled_fixture("per-process-lookback", openmetrics, END, STEP)
KEYS = {None: lambda node, gpu: "all", "node": lambda node, gpu: node,
        "gpu": lambda node, gpu: f"{node} {gpu}"}
LABELS = {None: lambda metric: "all", "node": lambda metric: metric["node"],
          "gpu": lambda metric: f"{metric['node']} {metric['gpu']}"}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    folder = tmp_path_factory.mktemp("per-process-lookback")
    wanted = {UTIL, FB, "DCGM_FI_DRIVER_VERSION"}
    (folder / "counters.csv").write_text("\n".join(
        line for line in default_counters().read_text().splitlines()
        if line and not line.startswith("#") and line.split(",")[0].strip() in wanted) + "\n")
    (folder / "gpudash.yaml").write_text("exporter:\n  virtual_gpus: true\n")
    return load_project(folder / "gpudash.yaml", folder / "counters.csv")


def _truth(field: str, how: str, key: str | None):
    def truth(t: float) -> dict[str, float]:
        groups = defaultdict(list)
        for (node, gpu), value in latest(field, t).items():
            groups[KEYS[key](node, gpu)].append(value)
        return {name: HOW[how](values) for name, values in groups.items()}
    return truth


def test_the_premise():
    assert latest(UTIL, 11 * STEP + 5)[ON, 0] == 81.0  # the blank at scrape 11: the reading of scrape 10
    assert latest(UTIL, 11 * STEP + 5)[OLD, 0] == 71.0
    assert (ON, 1) not in latest(UTIL, LEFT * STEP + LOOKBACK + 5)
    assert latest(UTIL, 35 * STEP + 5)[MOVED, 0] == 90 - 3.5  # the replacement's, below the old copy's last (87.1)
    assert latest(FB, END + LOOKBACK) == {}


@pytest.mark.parametrize("field", [UTIL, FB])
@pytest.mark.parametrize("how", ["avg", "sum", "max"])
@pytest.mark.parametrize("key", [None, "node", "gpu"])
def test_a_per_gpu_reading_of_a_per_process_field_is_the_devices_latest_within_the_lookback(project, backfilled,
                                                                                           field, how, key):
    prometheus, start = backfilled
    by = {None: (), "node": ("node",), "gpu": ("node", "gpu")}[key]
    expr = panel_expression(project, Query(field, how, by))
    shown = read_instants(prometheus, start, expr, LABELS[key])
    wrong = off_truth(shown, _truth(field, how, key))
    assert not wrong, f"instants: (shown, true) {dict(list(wrong.items())[:6])} ({len(wrong)} of {len(shown)})"


def _window_mean(field: str, key, t: float) -> float | None:
    """The mean of a GPU's device readings (the blank none) taken within a rule's 5-minute window ending at `t`, one
    per step of the scrape interval, as gauge_readings reads them."""
    read = [value for k in range(STEPS) if t - 300 < k * STEP <= t
            and (value := device(field, *key, k)) is not None and value < 1e14]
    return sum(read) / len(read) if read else None


@pytest.mark.parametrize("field", [UTIL, FB])
@pytest.mark.parametrize("by", [("node", "gpu"), ("pod",)])
def test_a_rules_reading_of_a_per_process_field_is_the_devices(project, backfilled, field, by):
    """An alert rule's mean over its window per GPU, and per pod of the whole GPU it holds, reads the device's
    readings: a step whose own series reads the blank is no reading (the pods' largest share was read: 55.0 for a
    GPU at 80.0, 21,000 MiB for 30,000)."""
    prometheus, start = backfilled
    settings = project.settings
    expr = expression(Query(field, "avg", by, whole_gpu=by == ("pod",)), settings.labels, project.catalog,
                      settings_clusters(settings), rate_window="300s", increase_window="300s", gauge_window="300s",
                      per_instance=True, resolution="30s", hold="30s",
                      named_within=label_lookback(settings.scrape.seconds))
    label = LABELS["gpu"] if by != ("pod",) else lambda metric: f"{metric['namespace']}/{metric['pod']}"
    # the first 20 minutes, a window in: every GPU and pod there all along but the replaced exporter's
    shown = {t: value for t, value in read_instants(prometheus, start, expr, label).items() if 300 < t < LEFT * STEP}

    def truth(t: float) -> dict[str, float]:
        if by != ("pod",):
            return {KEYS["gpu"](*key): _window_mean(field, key, t) for key in GPUS}
        return {f"{namespace}/{pod}": _window_mean(field, key, t) for key, (_, pods) in GPUS.items()
                for namespace, pod, _, _ in pods}
    wrong = off_truth(shown, truth)
    assert not wrong, f"instants: (shown, true) {dict(list(wrong.items())[:4])} ({len(wrong)} of {len(shown)})"


def share(field: str, key: tuple[str, int], pod: tuple[str, str], k: int) -> float | None:
    """What the pod's copy of GPU `key` wrote at scrape k: its own share on a 4.5.3 node, the device's reading on a
    4.5.2 one (None: no sample)."""
    mode, pods = GPUS[key]
    value = device(field, *key, k)
    if value is None or mode == "copies":
        return value
    return next(util if field == UTIL else fb for namespace, name, util, fb in pods if (namespace, name) == pod)


@pytest.mark.parametrize("field", [UTIL, FB])
@pytest.mark.parametrize("how", ["avg", "sum", "max"])
@pytest.mark.parametrize("key", ["pod", "namespace"])
def test_a_per_pod_reading_of_a_per_process_field_is_each_pods_latest_share_within_the_lookback(project, backfilled,
                                                                                                field, how, key):
    """Per pod, each pod a scrape within the look-back named on a GPU, at its copy's latest reading within it; per
    namespace, its pods' shares of a 4.5.3 GPU added up (a 4.5.2 GPU's copies, each the device's reading, once)."""
    prometheus, start = backfilled
    expr = panel_expression(project, Query(field, how, (key,)))
    shown = read_instants(prometheus, start, expr,
                          (lambda metric: f"{metric['namespace']}/{metric['pod']}") if key == "pod"
                          else (lambda metric: metric["namespace"]))

    def truth(t: float) -> dict[str, float]:
        groups: dict[str, dict[tuple[str, int], list[float]]] = defaultdict(lambda: defaultdict(list))
        for gpu, (mode, pods) in GPUS.items():
            for namespace, pod, _, _ in pods:
                read = [value for k in range(STEPS) if t - LOOKBACK < k * STEP <= t
                        and (value := share(field, gpu, (namespace, pod), k)) is not None and value < 1e14]
                if read:
                    group = f"{namespace}/{pod}" if key == "pod" else namespace
                    groups[group][gpu].append(read[-1] if mode == "per-process" or not groups[group][gpu] else 0)
        # a group's use of a GPU: its pods' shares added (a 4.5.2 GPU's copies once), its largest a pod's
        return {group: HOW[how]([HOW["max" if how == "max" else "sum"](values) for values in gpus.values()])
                for group, gpus in groups.items()}
    wrong = off_truth(shown, truth)
    assert not wrong, f"instants: (shown, true) {dict(list(wrong.items())[:4])} ({len(wrong)} of {len(shown)})"


def _holds(namespace: str, pod: str):
    return lambda key: (namespace, pod) in [(n, p) for n, p, _, _ in GPUS[key][1]]


@pytest.mark.parametrize("selected, shows", [
    *(({"namespace": namespace, "pod": pod}, _holds(namespace, pod))
      for namespace, pod in (("ml", "ts-0"), ("ml", "solo"), ("serve", "b"))),
    *(({"node": node}, lambda key, node=node: key[0] == node) for node in (ON, OLD, MOVED))])
def test_with_a_pod_or_node_selected_a_per_gpu_panel_reads_its_gpus_devices(project, backfilled, selected, shows):
    """The pod variable keeps the GPUs a copy in scope names (a 4.5.3 GPU's own series names no pod), the node
    variable the node's GPUs, each read as the device."""
    prometheus, start = backfilled
    expr = panel_expression(project, Query(UTIL, "avg", ("node", "gpu")))
    chosen = {**SCENE_RANGE, **variables(selected, ("cluster", "namespace", "pod", "node", "gpu"))}
    found = prometheus.query_at(interpolate(expr, chosen), start + FIRST, COUNT, EVERY)
    shown = {at - start: {LABELS["gpu"](s["metric"]): float(s["value"][1]) for s in result}
             for at, result in found.items()}

    def truth(t: float) -> dict[str, float]:
        return {KEYS["gpu"](*key): value for key, value in latest(UTIL, t).items() if shows(key)}
    wrong = off_truth(shown, truth)
    assert not wrong, f"instants: (shown, true) {dict(list(wrong.items())[:6])} ({len(wrong)} of {len(shown)})"
