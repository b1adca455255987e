"""A GPU pods share by time-slicing, on an exporter that names it under one of them per scrape (without
KUBERNETES_VIRTUAL_GPUS, dcgm-exporter #340), read by the per-GPU panels at a failed scrape: the GPU's reading is
that of the latest scrape that answered, not an older scrape's that named the other pod.

One node scraped every second (the panel's query made for 30 s scrapes, scaled): GPU 0 named under ml/a at odd
scrapes and ml/b at even ones (Prometheus marks the other pod's series stale at each), its utilization falling 5 % a
scrape; GPU 1 held by ml/c throughout. Scrapes 10 and 15 fail (every series marked stale: the panels read the late
tier, each GPU's latest reading within the look-back). Per pod, each pod a scrape within the look-back named on a
GPU shows that reading too. Before, the highest of the copy's pods' series' latest readings showed: the other pod's
reading of the scrape before, 55 % for 50 % (per GPU, and under both pods)."""

from __future__ import annotations

import pytest

from generator.model import Query
from generator.preview.interpolate import interpolate, variables
from generator.project import load_project
from generator.resources import default_counters
from tests.support.panel_expression import panel_expression
from tests.support.prometheus_server import SCENE_RANGE, scraped_every
from tests.support.replay_exporter import ReplayExporter
from tests.support.scrape_scene import CountedAnswers, scraped_until

UTIL = "DCGM_FI_DEV_GPU_UTIL"
FAILS, SCRAPES = (10, 15), 18
DEVICE = 'modelName="NVIDIA A10G",Hostname="n1",DCGM_FI_DRIVER_VERSION="570.133.20"'


def readings(n: int) -> dict[str, tuple[str, float]]:
    """Per GPU, the pod the exporter's nth answer names it under and its utilization."""
    return {"0": ("a" if n % 2 else "b", 95 - 5 * n), "1": ("c", 40 + n)}


def payload(n: int) -> str:
    if n in FAILS:
        return "garbage{ 1\n"
    lines = [f"# TYPE {UTIL} gauge"]
    for gpu, (pod, value) in readings(n).items():
        lines.append(f'{UTIL}{{gpu="{gpu}",UUID="GPU-n1-{gpu}",device="nvidia{gpu}",{DEVICE},container="main",'
                     f'namespace="ml",pod="{pod}"}} {value}')
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def scraped(tmp_path_factory):
    exporter = CountedAnswers(payload)
    with ReplayExporter(exporter) as served:
        with scraped_until(tmp_path_factory, "pods-in-turn-failed", [served.address],
                       lambda: exporter.served >= SCRAPES) as prometheus:
            yield prometheus, sorted(float(at) for series in prometheus.query("up[10m]") for at, _ in series["values"])


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pods-in-turn-failed")
    (folder / "counters.csv").write_text("\n".join(
        line for line in default_counters().read_text().splitlines()
        if line and not line.startswith("#") and line.split(",")[0].strip() == UTIL) + "\n")
    (folder / "gpudash.yaml").write_text("{}\n")
    return load_project(folder / "gpudash.yaml", folder / "counters.csv")


@pytest.mark.parametrize("how", ["avg", "max", "min"])
@pytest.mark.parametrize("by", [(), ("gpu",)])
def test_a_failed_scrape_reads_the_gpus_latest_answered_reading(scraped, project, how, by):
    prometheus, scrapes = scraped
    assert len(scrapes) >= SCRAPES
    expr = panel_expression(project, Query(UTIL, how, by))
    expr = interpolate(scraped_every(expr, project.settings.scrape.seconds, 1),
                       {**SCENE_RANGE, **variables({}, ("namespace", "pod", "node", "gpu"))})
    aggregate = {"avg": lambda v: sum(v) / len(v), "max": max, "min": min}[how]
    wrong = {}
    for n, at in enumerate(scrapes[:SCRAPES], start=1):
        answered = n - 1 if n in FAILS else n
        truth = {gpu: value for gpu, (_, value) in readings(answered).items()}
        truth = truth if by else {"all": aggregate(list(truth.values()))}
        shown = {s["metric"].get("gpu", "all"): float(s["value"][1]) for s in prometheus.query(expr, at + 0.5)}
        if set(shown) != set(truth) or any(abs(shown[k] - truth[k]) > 1e-9 for k in truth):
            wrong[n] = (shown, truth)
    assert not wrong, f"scrape: (shown, true) {wrong}"


@pytest.mark.parametrize("how", ["avg", "max"])
def test_per_pod_a_failed_scrape_reads_the_gpus_latest_answered_reading(scraped, project, how):
    """Per pod, each pod a scrape within the look-back named on a GPU shows the GPU's reading of the latest scrape that
    answered, ml/a and ml/b alike."""
    prometheus, scrapes = scraped
    expr = panel_expression(project, Query(UTIL, how, ("pod",)))
    expr = interpolate(scraped_every(expr, project.settings.scrape.seconds, 1),
                       {**SCENE_RANGE, **variables({}, ("namespace", "pod", "node", "gpu"))})
    wrong = {}
    for n, at in enumerate(scrapes[:SCRAPES], start=1):
        answered = n - 1 if n in FAILS else n
        named = {readings(k)["0"][0] for k in range(max(1, n - 3), n + 1) if k not in FAILS}
        truth = {**{pod: readings(answered)["0"][1] for pod in named}, "c": readings(answered)["1"][1]}
        shown = {s["metric"]["pod"]: float(s["value"][1]) for s in prometheus.query(expr, at + 0.5)}
        if n > 4 and (set(shown) != set(truth) or any(abs(shown[k] - truth[k]) > 1e-9 for k in truth)):
            wrong[n] = (shown, truth)
    assert not wrong, f"scrape: (shown, true) {wrong}"
