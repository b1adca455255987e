"""With exporter.virtual_gpus, "Framebuffer used share by pod" leaves out a GPU one of whose MIG instances the pod holds
reads DCGM's blank for its free memory, or writes no free memory at all: the rest of the pod's instances on that GPU
are not its share of the GPU (BLANK_INSTANCE_NOTE, pooled_note).

One node of a dcgm-exporter 4.5.3+ run with KUBERNETES_VIRTUAL_GPUS (each MIG instance's own used-memory series
without pod labels, each pod's copy its own share; free memory on each pod's copy, the device's value), half an hour
of 30 s scrapes backfilled into a real Prometheus:
- GPU 0: instance 1 held by ml/a (a's share 6,000 of 10,000 MiB used, 30,000 free), instance 2 by ml/b (5,000 of
  5,000 used, 35,000 free);
- GPU 1: instance 1 held by ml/a (8,000 of 8,000 used, 32,000 free);
- GPU 2: both instances held by ml/d, instance 1 reading 4,000 used, 16,000 free, instance 2 6,000 used and DCGM's
  blank free;
- GPU 3: both instances held by ml/e, instance 1 reading 3,000 used, 17,000 free, instance 2 7,000 used and no free
  series.
Truth at every instant: ml/a (6,000 + 8,000) / (40,000 + 40,000) = 0.175, ml/b 5,000 / 40,000 = 0.125, no line for
ml/d nor ml/e (their one GPU each is left out). Without the blank-instance check, ml/d read 4,000 + 6,000 over its
instance 1's 20,000 (0.5) and ml/e 10,000 / 20,000 (0.5).
"""

from __future__ import annotations

import pytest

from generator.model import Query
from generator.project import load_project
from generator.resources import default_counters
from tests.support.blank_scene import END, NOT_SUPPORTED, STEP, STEPS, read_instants
from tests.support.panel_expression import panel_expression
from tests.support.prometheus_server import backfilled_fixture

USED, FREE = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"
NODE = "ip-10-0-3-1"
# (gpu, MIG instance): ((namespace, pod, own used share),), device used, device free (None: no series)
UNITS = {(0, "1"): ((("ml", "a", 6000),), 10000, 30000),
         (0, "2"): ((("ml", "b", 5000),), 5000, 35000),
         (1, "1"): ((("ml", "a", 8000),), 8000, 32000),
         (2, "1"): ((("ml", "d", 4000),), 4000, 16000),
         (2, "2"): ((("ml", "d", 6000),), 6000, NOT_SUPPORTED),
         (3, "1"): ((("ml", "e", 3000),), 3000, 17000),
         (3, "2"): ((("ml", "e", 7000),), 7000, None)}
TRUTH = {"ml/a": 14000 / 80000, "ml/b": 5000 / 40000}
LOOKBACK = 4 * STEP  # promql.label_lookback at 30 s scrapes: no line once the last scrape is older


def truth(at: float) -> dict[str, float]:
    return TRUTH if at < (STEPS - 1) * STEP + LOOKBACK else {}


def openmetrics(start: int) -> str:
    lines = []
    for field in (USED, FREE):
        lines.append(f"# TYPE {field} gauge")
        for k in range(STEPS):
            for (gpu, instance), (pods, used, free) in UNITS.items():
                device = used if field == USED else free
                if device is None:
                    continue
                base = (f'gpu="{gpu}",UUID="GPU-{NODE}-{gpu}",device="nvidia{gpu}",modelName="NVIDIA A100-SXM4-80GB",'
                        f'Hostname="{NODE}",GPU_I_ID="{instance}",GPU_I_PROFILE="3g.40gb",'
                        f'DCGM_FI_DRIVER_VERSION="570.133.20",node="{NODE}",job="dcgm-exporter",'
                        f'instance="10.0.3.1:9400"')
                written = [("", device)] if field == USED else []  # the instance's own series: per-process fields
                written += [(f',container="main",namespace="{namespace}",pod="{pod}",pod_uid="uid-{namespace}-{pod}",'
                             f'vgpu="{v}"', share if field == USED else device)
                            for v, (namespace, pod, share) in enumerate(pods)]
                lines += [f"{field}{{{base}{more}}} {value:g} {start + k * STEP}" for more, value in written]
    return "\n".join(lines) + "\n# EOF\n"


backfilled = backfilled_fixture("mig-share-blank-virtual-gpus", openmetrics, END, STEP)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mig-share-blank-virtual-gpus")
    wanted = {USED, FREE, "DCGM_FI_DRIVER_VERSION"}
    (folder / "counters.csv").write_text("\n".join(
        line for line in default_counters().read_text().splitlines()
        if line and not line.startswith("#") and line.split(",")[0].strip() in wanted) + "\n")
    (folder / "gpudash.yaml").write_text("exporter:\n  virtual_gpus: true\n")
    return load_project(folder / "gpudash.yaml", folder / "counters.csv")


def test_a_pods_share_leaves_out_a_gpu_one_of_whose_instances_it_holds_has_no_free_memory_reading(project, backfilled):
    prometheus, start = backfilled
    expr = panel_expression(project, Query(USED, "avg", ("pod",), over=(USED, FREE)))
    shown = read_instants(prometheus, start, expr, lambda m: f"{m['namespace']}/{m['pod']}")
    wrong = {at: values for at, values in shown.items()
             if {pod: round(value, 6) for pod, value in values.items()} != truth(at)}
    assert sum(bool(truth(at)) for at in shown) >= 100
    assert not wrong, f"instants: shown (true {TRUTH}) {dict(list(wrong.items())[:3])} ({len(wrong)} of {len(shown)})"
