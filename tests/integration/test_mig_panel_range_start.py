"""A MIG GPU's instances read at the first steps of a dashboard range that begins just after their last scrape.

The story (30 s scrapes, one hour, backfilled: no staleness marker ends a series, as across a Prometheus restart):
node-m's GPU 0 (GPU-m0, its exporter labelling it `hostname=node-m`) is split into two MIG instances, 1 (1g.10gb,
1,000 MiB used) and 2 (2g.20gb, 2,000 MiB), until the scrape at minute 28.5; from the next scrape the GPU is whole
(500 MiB used). The dashboard's range begins 36 s after the instances' last scrape and runs to the hour's end.

Truth ("Framebuffer used per MIG instance", All): the late tier reads each instance's last scrape while it is within
the look-back (4 scrapes, 120 s): `node-m GPU 0 MIG 1 (1g.10gb)` 1,000 and `MIG 2 (2g.20gb)` 2,000 at the steps up to
84 s into the range, nothing after. The GPU is named by its whole copies (in the range) and its instances' (before
it): the panel names only GPUs with an instance (promql._filtered_gpus), over the range and the look-back before its
start, so that a panel on a fleet without MIG names no GPU at every step.
"""

from __future__ import annotations

from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from tests.support.projects import bundled_panel
from tests.support.prometheus_server import backfilled_fixture, range_macros

STEP, SCRAPES = 30, 120  # an hour
WHOLE = 58  # the first scrape of the whole GPU; the instances' last is the one before
INSTANCES = {"1": ("1g.10gb", 1000), "2": ("2g.20gb", 2000)}
BEGINS = 36  # seconds after the instances' last scrape the dashboard's range begins
LOOKBACK = 120


def _openmetrics(start: int) -> str:
    labels = 'gpu="0",UUID="GPU-m0",device="nvidia0",modelName="NVIDIA A100 80GB PCIe",hostname="node-m",' \
             'instance="10.0.9.7:9400",job="nvidia-dcgm-exporter"'
    lines = ["# TYPE DCGM_FI_DEV_FB_USED gauge"]
    for k in range(SCRAPES):
        at = start + k * STEP + 4
        if k < WHOLE:
            lines += [f'DCGM_FI_DEV_FB_USED{{{labels},GPU_I_ID="{i}",GPU_I_PROFILE="{profile}"}} {used} {at}'
                      for i, (profile, used) in INSTANCES.items()]
        else:
            lines.append(f"DCGM_FI_DEV_FB_USED{{{labels}}} 500 {at}")
    return "\n".join(lines) + "\n# EOF\n"


history = backfilled_fixture("mig-panel-range-start", _openmetrics, SCRAPES * STEP, STEP)


def test_the_instances_read_within_the_look_back_at_the_range_s_first_steps(history):
    prometheus, start = history
    last = start + (WHOLE - 1) * STEP + 4
    first, end = last + BEGINS, start + SCRAPES * STEP
    (target,) = bundled_panel("Framebuffer used per MIG instance")["targets"]
    expr = interpolate(target["expr"], {**range_macros(f"{end - first}s"), "__interval": "15s",
                                        **variables({}, ("namespace", "pod", "node", "gpu"))})
    shown = prometheus.query_at(expr, first, (end - first) // 15 + 1, 15)
    lines = {round(at - last): {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1])
                                for s in series} for at, series in shown.items()}
    truth = {after: ({f"node-m GPU 0 MIG {i} ({profile})": float(used) for i, (profile, used) in INSTANCES.items()}
                     if after < LOOKBACK else {}) for after in lines}
    wrong = {after: (lines[after], truth[after]) for after in lines if lines[after] != truth[after]}
    assert not wrong, f"seconds after the instances' last scrape: (shown, truth): {dict(list(wrong.items())[:4])}"
    assert sum(bool(t) for t in truth.values()) >= 5
