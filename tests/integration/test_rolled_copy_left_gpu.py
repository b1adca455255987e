"""A pod that ends just after its node's exporter was rolled (a DaemonSet update: the old copy's last scrape, then the
new copy's) stays on the GPU it left, at the idle GPU's reading, for the look-back after the old copy's last scrape.
Found by R3 (s39), pinned (strict xfail, truth asserted).

Backfilled (promtool: no staleness markers, as a backfill or the series before a Prometheus restart), 30 s scrapes:
node n's exporter copy A (10.0.0.1:9400, at +3 s) answers scrapes 0-9, copy B (10.0.0.2:9400, at +17 s) 8-19. GPU 0
holds ml/p (300 W) until scrape END - 1 and is idle from END (written without a pod, 60 W); GPU 1 holds ml/q (150 W)."""

from __future__ import annotations

import pytest

from tests.integration.test_pod_moved_node import SCRAPE, SCRAPES, shown  # 30 s scrapes, 20 of them
from tests.support.prometheus_server import backfilled_fixture

END = 10
MODEL = 'modelName="NVIDIA A100-SXM4-80GB",DCGM_FI_DRIVER_VERSION="570.133.20"'
COPIES = {"10.0.0.1:9400": (range(0, 10), 3), "10.0.0.2:9400": (range(8, SCRAPES), 17)}  # scrapes, offset
POWER = {"p": 300, "q": 150, None: 60}


def openmetrics(start: int) -> str:
    def sample(metric: str, address: str, offset: int, k: int, gpu: int) -> str:
        pod = "p" if gpu == 0 and k < END else ("q" if gpu else None)
        named = f',container="main",namespace="ml",pod="{pod}"' if pod else ""
        value = POWER[pod] if metric == "DCGM_FI_DEV_POWER_USAGE" else 50 + gpu
        return (f'{metric}{{gpu="{gpu}",UUID="GPU-n-{gpu}",device="nvidia{gpu}",{MODEL},Hostname="n"{named},'
                f'instance="{address}",job="gpu-metrics"}} {value} {start + k * SCRAPE + offset}')
    # each series' samples in time order (promtool's): a copy's GPU's series by pod, then its scrapes
    return "\n".join([text for metric in ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP") for text in (
        f"# TYPE {metric} gauge", *(sample(metric, address, offset, k, gpu)
                                    for address, (scrapes, offset) in COPIES.items() for gpu in (0, 1)
                                    for k in sorted(scrapes, key=lambda k: (gpu == 0 and k >= END, k))))]
                     + ["# EOF"]) + "\n"


backfilled = backfilled_fixture("rolled-copy-left-gpu", openmetrics, SCRAPES * SCRAPE, SCRAPE)


# each panel's truth after copy B's scrape k (k >= END: ml/p ended), with every pod and with ml/p picked
TRUTH = {"Power draw of each pod's GPUs": ({"Pod ml/q": 150.0}, {}), "Pods on GPUs": ({"Pod ml/q": 1.0}, {}),
         "Power draw": ({"n GPU 0": 60.0, "n GPU 1": 150.0}, {}),
         "Total power draw": ({"DCGM_FI_DEV_POWER_USAGE": 210.0}, {})}
WRONG = pytest.mark.xfail(strict=True, reason=(
    "idle_gpus joins a GPU's idleness to the pods' series of the same scrape target (held_labels: the copy's "
    "labels): copy A's last scrape named ml/p, so its series is not retired by copy B finding the GPU idle, and is "
    "read for the look-back after A's last scrape"))


@pytest.mark.parametrize("k", [pytest.param(END, marks=WRONG), pytest.param(END + 2, marks=WRONG), END + 4])
@pytest.mark.parametrize("title", sorted(TRUTH))
def test_a_pod_ended_after_its_exporter_was_rolled_leaves_its_gpu(backfilled, title, k):
    """At copy B's scrapes END and END + 2 (82 s and 112 s after copy A's last, within the 120 s look-back) the panels
    drew ml/p on GPU 0 at the idle GPU's 60 W: 'Power draw of each pod's GPUs' {ml/p 60, ml/q 150} for {ml/q 150},
    'Pods on GPUs' counts ml/p, and with ml/p picked 'Power draw' {n GPU 0: 60} and 'Total power draw' 60 where ml/p
    holds nothing. Past the look-back (END + 4) they read the truth."""
    prometheus, start = backfilled
    at = start + k * SCRAPE + 25  # after copy B's scrape k (+17 s), before the next
    every, picked = TRUTH[title]
    assert shown(prometheus, title, at, {}) == every
    assert shown(prometheus, title, at, {"namespace": "ml", "pod": "p"}) == picked
