"""A pod's framebuffer share across an exporter upgrade that renames the node (old: `Hostname` = its own pod's name;
new: `hostname="n6"`), one scrape of the new exporter failing soon after, on a real Prometheus scraping every half
second. The GPU (UUID GPU-n6-0, 80,000 MiB) held by ml/p reads 40,000 used before the upgrade and 60,000 after: the
share is 0.5, then 0.75; through the failed scrape the latest reading within the lookback (0.75) stands, as a pod's
power does (promql._Device: "one failed scrape hides nothing").

At d468274: at the failed scrape both copies are read from the lookback, topk takes used of the new copy and
free of the old one (labelled with different node spellings): the division matches nothing and ml/p leaves the panel.
On a88cfb0 (one copy chosen by used + free, a tie going to the first in Prometheus' order): at that step the old
exporter's copy is read, 0.5 (3 runs of 3), where the new one's 0.75 is the latest.
"""

from __future__ import annotations

import math

import pytest

from generator.preview.legend import render as render_legend
from tests.support.replay_exporter import ReplayExporter
from tests.support.scrape_scene import CountedAnswers, lookback_panel, scraped_until

OLD_SCRAPES = 6
FAILS_AT = 2  # the new exporter's second answer is not a valid exposition: that scrape fails
INTERVAL = 0.5  # seconds between scrapes: the lookback and the range's steps are in scrapes


def _payload(node_label: str, used: float) -> str:
    device = ('gpu="0",UUID="GPU-n6-0",pci_bus_id="00000000:10:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",'
              f'{node_label},DCGM_FI_DRIVER_VERSION="570.133.20",container="main",namespace="ml",pod="p"')
    return "".join(f"# TYPE {m} gauge\n{m}{{{device}}} {v:g}\n"
                   for m, v in (("DCGM_FI_DEV_FB_USED", used), ("DCGM_FI_DEV_FB_FREE", 80000 - used),
                                ("DCGM_FI_DEV_POWER_USAGE", 100.0)))


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory):
    before = CountedAnswers(lambda n: _payload('Hostname="nvidia-dcgm-exporter-x7k2p"', 40000.0) if n <= OLD_SCRAPES else "")
    after = CountedAnswers(lambda n: "garbage{ 1\n" if n == FAILS_AT else _payload('hostname="n6"', 60000.0))
    old = ReplayExporter(before)
    new = ReplayExporter(lambda: "" if before.served <= OLD_SCRAPES else after())
    with old, new:
        with scraped_until(tmp_path_factory, "pod-lookback-share-failed", [old.address, new.address],
                       lambda: after.served >= FAILS_AT + 6, interval=INTERVAL) as prometheus:
            samples = sorted((float(at), float(v)) for series in prometheus.query(
                'DCGM_FI_DEV_FB_USED{pod="p"}[10m]') for at, v in series["values"])
            yield prometheus, samples


def test_a_pods_framebuffer_share_through_a_failed_scrape_after_a_renaming_upgrade_is_its_latest(upgraded):
    prometheus, samples = upgraded
    first_new = min(at for at, used in samples if used == 60000.0)
    # past the lookback (4 scrapes) after the first sample, half an interval off the interval's multiples
    start = math.floor(samples[0][0] / INTERVAL) * INTERVAL + 4.5 * INTERVAL
    wrong = {}
    for title, share in (("Framebuffer used share by pod", lambda used: used / 80000), ("Power draw of each pod's GPUs",
                                                                                      lambda used: 100.0)):
        target, expr = lookback_panel("", title, INTERVAL)
        count = int((samples[-1][0] - start) // INTERVAL) + 1
        for at, result in prometheus.query_at(expr, start, count, INTERVAL).items():
            shown = {render_legend(target["legendFormat"], s["metric"]): round(float(s["value"][1]), 4) for s in result}
            latest = [used for when, used in samples if when <= at]
            truth = {"Pod ml/p": share(latest[-1])} if latest else {}
            if shown != truth:
                wrong[title, round(at - first_new, 1)] = (shown, truth)
    assert not wrong, f"(panel, seconds after the new exporter's first scrape): (shown, true) {wrong}"
