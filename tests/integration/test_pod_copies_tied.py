"""Per-pod framebuffer panels where two exporters on one node read a MIG GPU alike.

Node n5 runs two dcgm-exporters at once (a Helm release's beside the GPU Operator's, or a DaemonSet rollout with a
surge), each an older one writing its own pod's name into `Hostname`; both are scraped every 30 s (7 s and 19 s in)
and read the same framebuffer per MIG instance. GPU 0 is split in two instances: ml/a holds instance 1 (12,000 MiB
used, 28,000 free), ml/b instance 2 (5,000 used, 35,000 free); GPU 1 is whole, held by ml/c (30,000 used, 50,000
free). The copies read alike, so which one a panel reads is a tie; the truth is the same whichever it reads: each
pod's framebuffer used, and its share of its instances' memory (0.3, 0.125, 0.375), at every instant: while the
copies read (both fresh), after both read DCGM's blank from scrape 14 on (the look-back's latest readings, a tie at
one step), and nothing once those leave the look-back. Read with and without exporter.virtual_gpus (an exporter
without KUBERNETES_VIRTUAL_GPUS writes only copies, each the device's reading).

Each part of a per-pod value reads the copy its own evaluation chooses, and of a tie either (Prometheus' order of
series changes from one evaluation to the next), naming the node by that copy's spelling (the exporters' pod names):
the check that leaves out a pod whose MIG instance reads DCGM's blank (promql._per_gpu) and, with virtual_gpus, the
sum of used and free a share divides by joined the parts by that node, and MIG pods ml/a and ml/b were left out at
8 to 9 of 20 calls of framebuffer used (all three pods at 20 of 20 of the share with virtual_gpus).
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.preview.interpolate import interpolate, variables
from generator.project import load_project
from generator.preview.legend import render as render_legend
from tests.support.projects import bundled_panel, counters_with
from tests.support.prometheus_server import SCENE_RANGE, backfilled_fixture

STEP, SCRAPES, READ = 30, 20, 14  # every copy reads DCGM's blank from scrape READ on
BLANK = 9223372036854775794
COPIES = (("nvidia-dcgm-exporter-7bq4x", 7, "10.0.5.11"), ("gpu-operator-dcgm-exporter-m2r8c", 19, "10.0.5.12"))
# (gpu, MIG instance or None, namespace, pod, used, free)
UNITS = ((0, "1", "ml", "a", 12000, 28000), (0, "2", "ml", "b", 5000, 35000), (1, None, "ml", "c", 30000, 50000))
COMMON = 'modelName="NVIDIA A100-SXM4-80GB",DCGM_FI_DRIVER_VERSION="570.133.20",container="main"'


def openmetrics(start: int) -> str:
    lines = []
    for field, at in (("DCGM_FI_DEV_FB_USED", 4), ("DCGM_FI_DEV_FB_FREE", 5)):
        lines.append(f"# TYPE {field} gauge")
        for hostname, offset, address in COPIES:
            for gpu, instance, namespace, pod, *values in UNITS:
                mig = f',GPU_I_ID="{instance}",GPU_I_PROFILE="3g.40gb"' if instance else ""
                labels = (f'gpu="{gpu}",UUID="GPU-n5-{gpu}",device="nvidia{gpu}",{COMMON},namespace="{namespace}",'
                          f'pod="{pod}"{mig},Hostname="{hostname}",instance="{address}:9400",job="dcgm-exporter"')
                lines += [f"{field}{{{labels}}} {values[at - 4] if k < READ else BLANK} {start + k * STEP + offset}"
                          for k in range(SCRAPES)]
    return "\n".join(lines) + "\n# EOF\n"


backfilled = backfilled_fixture("pod-copies-tied", openmetrics, SCRAPES * STEP, STEP)
TRUTH = {"Framebuffer used by pod": {f"Pod {ns}/{pod}": used for _, _, ns, pod, used, _ in UNITS},
         "Framebuffer used share by pod": {f"Pod {ns}/{pod}": used / (used + free)
                                           for _, _, ns, pod, used, free in UNITS}}
# Range queries per panel: a tie is broken anew by each (the same way at every instant of one). Framebuffer used, whose
# per-pod check the shares read too, at 0.03 CPU-s a call: 20 (8 to 10 of 20 read wrong before 51e06c54). A share costs
# Prometheus 0.26 CPU-s a call, 0.81 with virtual_gpus (27 times framebuffer used's): 6, as wrong before 51e06c54 at 17
# to 18 of 20 calls and at 20 of 20 (all six right by chance there: under 1e-5).
CALLS = {"Framebuffer used by pod": 20, "Framebuffer used share by pod": 6}
VIRTUAL_GPUS = "exporter:\n  virtual_gpus: true\n"


@pytest.mark.parametrize("settings", ["", VIRTUAL_GPUS])
@pytest.mark.parametrize("title", sorted(TRUTH))
def test_each_pod_at_every_instant_of_every_call(backfilled, title, settings):
    prometheus, start = backfilled
    target = bundled_panel(title, settings)["targets"][0]
    expr = interpolate(target["expr"], {**SCENE_RANGE, **variables({}, ("namespace", "pod", "node", "gpu"))})
    first, count, apart = 3 * STEP, 14, 37
    wrong = {}
    for call in range(CALLS[title]):  # range queries: 14 instants, the last readings fresh, late, then gone
        for at, rows in prometheus.query_at(expr, start + first, count, apart).items():
            shown = {render_legend(target["legendFormat"], s["metric"]): round(float(s["value"][1]), 6) for s in rows}
            late = at - start > (READ - 1) * STEP + 19 + 4 * STEP  # the last readings out of the look-back
            if shown != ({} if late else TRUTH[title]):
                wrong.setdefault(call, []).append((at - start, shown))
    assert not wrong, (f"{title}: true {TRUTH[title]}; wrong at {sum(map(len, wrong.values()))} of {CALLS[title] * count} "
                       f"instants over {len(wrong)} of {CALLS[title]} calls, e.g. {next(iter(wrong.values()))[:2]}")


SHARE_ALARM = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
               "    yield Alarm('fb-share', 'T', Condition(Query('DCGM_FI_DEV_FB_USED_PERCENT', 'max', ('pod',)), '>', "
               "0.2), description='d', runbook='r')\n")


@pytest.mark.parametrize("settings", ["", VIRTUAL_GPUS])
def test_a_pods_share_alarm_fires_for_the_pod_over_the_level(backfilled, tmp_path, settings):
    """A user's alarm on a pod's share of its GPU memory over 0.2 fires for ml/a (0.3 of its MIG instance), not ml/b
    (0.125); ml/c's whole GPU reads the exporter's own DCGM_FI_DEV_FB_USED_PERCENT, which this exporter does not write.
    A join of the share's used and free ignoring the node's spellings one-to-one dropped the spellings from the sum, and
    with exporter.virtual_gpus the rule read nothing: it fired for no pod."""
    prometheus, start = backfilled
    (tmp_path / "alarms").mkdir()
    (tmp_path / "alarms" / "alarms.py").write_text(SHARE_ALARM)
    (tmp_path / "gpudash.yaml").write_text(settings + "definitions:\n  alarms: [alarms]\n")
    csv = counters_with(tmp_path, "DCGM_FI_DEV_FB_USED_PERCENT, gauge, Ratio of FB used.\n")
    (rule,) = [r for g in build(load_project(tmp_path / "gpudash.yaml", csv)).prometheus_rules["groups"]
               for r in g["rules"] if r.get("alert") == "GpudashFbShare"]
    for at in (start + 12 * STEP, start + 13 * STEP + 20):  # while both copies read, five periods of them behind
        firing = {f"{s['metric']['namespace']}/{s['metric']['pod']}" for s in prometheus.query(rule["expr"], at=at)}
        assert firing == {"ml/a"}, (at - start, firing)
