"""Twelve GPUs on two nodes scraped every 30 s for half an hour, DCGM's blank among their readings (one GPU flapping
between a reading and the blank, one reading only the blank, one gone at 20 minutes): the exporter's answers, the truth
of which GPUs report, and a dashboard panel's values read from a Prometheus every 10 s."""

from __future__ import annotations

from collections.abc import Callable

from generator.artifacts import grafana_dashboards
from generator.preview.interpolate import interpolate, variables
from generator.project import load_project
from tests.support.prometheus_server import SCENE_RANGE


NOT_SUPPORTED = 9223372036854775794
STEP, STEPS = 30, 60  # half an hour of 30 s scrapes
END = STEP * STEPS
LOOKBACK = 4 * STEP  # promql.label_lookback at 30 s scrapes
TEMP = "DCGM_FI_DEV_GPU_TEMP"
NODES = {"ip-10-0-1-1": 6, "ip-10-0-1-2": 6}
GPUS = [(node, gpu) for node, count in NODES.items() for gpu in range(count)]
FLAPPING = ("ip-10-0-1-1", 3)  # a reading at even scrapes, the blank at odd ones
BLANK_ONLY = ("ip-10-0-1-2", 0)
GONE, LEFT = ("ip-10-0-1-2", 5), 40  # no sample from scrape 40 (20 minutes) on
VARIABLES = ("cluster", "namespace", "pod", "node", "gpu")


def pod(node: str, gpu: int) -> tuple[str, str]:
    if node == "ip-10-0-1-1":
        return "ml", "train-0" if gpu < 4 else "train-1"
    return "serve", f"infer-{gpu}"


def sample(node: str, gpu: int, k: int) -> int | None:
    """The temperature GPU (node, gpu) wrote at scrape k (None: no sample)."""
    if (node, gpu) == GONE and k >= LEFT:
        return None
    if (node, gpu) == BLANK_ONLY or (node, gpu) == FLAPPING and k % 2:
        return NOT_SUPPORTED
    return 60 + gpu


def reporting(t: float) -> list[tuple[str, int]]:
    """The GPUs with a reading within the look-back before `t` (seconds from the first scrape)."""
    return [(node, gpu) for node, gpu in GPUS
            if any(t - LOOKBACK < k * STEP <= t and (value := sample(node, gpu, k)) is not None and value < 1e14
                   for k in range(STEPS))]


def openmetrics(sample) -> Callable[[int], str]:
    """The fleet's payloads, each GPU's temperature at scrape k `sample(node, gpu, k)` (None: no sample)."""
    def written(start: int) -> str:
        lines = [f"# TYPE {TEMP} gauge"]
        for k in range(STEPS):
            for node, gpu in GPUS:
                value = sample(node, gpu, k)
                if value is not None:
                    namespace, name = pod(node, gpu)
                    lines.append(f'{TEMP}{{gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",'
                                 f'modelName="NVIDIA H100 80GB HBM3",Hostname="{node}",'
                                 f'DCGM_FI_DRIVER_VERSION="535.161.08",container="main",namespace="{namespace}",'
                                 f'pod="{name}",node="{node}",job="dcgm-exporter"}} {value} {start + k * STEP}')
        return "\n".join(lines) + "\n# EOF\n"
    return written


# every 10 s from the first scrape to 5 minutes after the last, 5 s off the scrape grid
FIRST, COUNT, EVERY = 5, (END + 300) // 10, 10


def dashboard_expr(folder, uid: str, title: str) -> tuple[str, str]:
    project = load_project(folder / "gpudash.yaml", folder / "counters.csv")
    dashboard = next(d for d in grafana_dashboards(project) if d.uid == uid)
    (panel,) = [p for p in dashboard.model["panels"] if p.get("title") == title]
    (target,) = panel["targets"]
    return target["expr"], target["legendFormat"]


def read_instants(prometheus, start: int, expr: str, label) -> dict[float, dict[str, float]]:
    """{seconds from the first scrape: {label of each series: value}} at every instant read, each as an instant query
    reads it (query_at's `instant`): an expression pinned with `@ end()` (a fleet rule reads which copy is a GPU's
    newest once an evaluation; a panel names its GPUs over a dashboard's range ending at each instant) is read as a
    rule is evaluated, an instant query at each instant."""
    expr = interpolate(expr, {**SCENE_RANGE, **variables({}, VARIABLES)})
    found = prometheus.query_at(expr, start + FIRST, COUNT, EVERY, instant=True)
    return {at - start: {label(s["metric"]): float(s["value"][1]) for s in result} for at, result in found.items()}
