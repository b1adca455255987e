"""Under 500 GPUs the fleet's values now weigh each GPU whole in the minute drawn, one read there fewer times than its
node was scraped too: a GPU that read DCGM's blank at one of the minute's two scrapes, or that left its node within
the minute while the node's other GPUs went on reporting.

"GPUs reporting", "Total power draw" and "Average GPU utilization" combine one series per GPU (each GPU's mean over
the minute) while their query holds every GPU. A form that combines per node instead (each node's GPU count and
total per scrape, averaged over the minute: the way past 500 GPUs that issue 10 asks for, /work/coord/s40/G-log.md)
weighs such a GPU by its share of its node's readings in the minute: 20.07 % where the mean of the 480 GPUs is
20.15 %, and 62,110 W for 62,160 W. These controls hold the per-GPU truth under 500 GPUs against that trade.
"""

from __future__ import annotations

from tests.support import cloudwatch_eval
from tests.unit.test_cloudwatch_fleet_over_500 import BLANK, END, PER_NODE, _shown

NODES = 60  # 480 GPUs: every value combines one series per GPU
GONE_AT = END - 90  # inside the minute drawn (from END - 120): node 0's GPU 7 reads at END - 120, never after


def _labels(node: int, g: int) -> str:
    return f'gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",Hostname="n{node}"'


def _page(node: int, t: float, blank: bool) -> str:
    """Node `node`'s page at `t`: its GPUs at 50 °C, 100 + node W and 20 %, but node 0's GPU 7 at 90 %, which reads
    DCGM's blank at GONE_AT (`blank`) or is gone from GONE_AT on (its node's other GPUs reporting on)."""
    lines = []
    for name in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL"):
        lines.append(f"# TYPE {name} gauge")
        for g in range(PER_NODE):
            odd = (node, g) == (0, 7)
            if odd and not blank and t >= GONE_AT:
                continue
            value = {"DCGM_FI_DEV_GPU_TEMP": 50.0, "DCGM_FI_DEV_POWER_USAGE": 100.0 + node,
                     "DCGM_FI_DEV_GPU_UTIL": 90.0 if odd else 20.0}[name]
            if odd and blank and t == GONE_AT and name == "DCGM_FI_DEV_GPU_UTIL":
                value = BLANK
            lines.append(f"{name}{{{_labels(node, g)}}} {value}")
    return "\n".join(lines) + "\n"


def _now(blank: bool) -> dict[str, float]:
    _, widgets, points = _shown(None, lambda node, t: _page(node, t, blank), NODES)
    values = {}
    for title in ("GPUs reporting", "Total power draw", "Average GPU utilization"):
        (shown,) = cloudwatch_eval.widget(widgets[title], points, END - 6 * 3600, END, now=END).values()
        assert max(shown) == END - 120, (title, shown)
        values[title] = shown[END - 120]
    return values


MEAN = (90.0 + (NODES * PER_NODE - 1) * 20.0) / (NODES * PER_NODE)  # GPU 7 of node 0 weighs as one GPU: 20.15 %


def test_a_gpu_reading_the_blank_once_in_the_minute_weighs_whole_in_the_fleet_mean():
    """Its mean over the minute is its one reading, 90 %; weighed by its readings within its node: 20.07 %."""
    values = _now(blank=True)
    assert abs(values["Average GPU utilization"] - MEAN) < 1e-9, values
    assert values["GPUs reporting"] == NODES * PER_NODE, values


def test_a_gpu_that_left_its_node_within_the_minute_counts_adds_and_weighs_whole():
    """It reported in the minute drawn: it counts, adds its 100 W and weighs whole (per node: 62,110 W for 62,160 W,
    20.07 %; 479.5 GPUs where a node's count is its mean over the minute, not its largest)."""
    values = _now(blank=False)
    assert values["GPUs reporting"] == NODES * PER_NODE, values
    assert abs(values["Total power draw"] - sum(PER_NODE * (100.0 + n) for n in range(NODES))) < 1e-9, values
    assert abs(values["Average GPU utilization"] - MEAN) < 1e-9, values
