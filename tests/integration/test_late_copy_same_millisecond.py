"""Two copies of one GPU (n4 mid-rollout: the old exporter's job and gpudash's, which labels the node) scraped at the
same millisecond every 30 s, the old copy reading 90 % and gpudash's 95 % (or the other way round), then neither
scraped again: 'GPU utilization' reads the GPU from the late tier (promql.looked_back) for the look-back.

looked_back's key said "of readings taken at one millisecond the higher, a ten-thousandth of its atan over 1e5 added"
to the sample's time. On a real Prometheus the time is ~1.79e9 s, where one float64 ulp is 2.4e-7 s, and
0.0001 * atan(v / 1e5) is ~1e-9 * v: 90 and 95 add 9.0e-8 and 9.5e-8, both rounded away. The keys are equal and
topk picks either copy: the line jumps between 90 and 95 from one instant to the next (6 to 32 of 45 instants read
90, a different set each run). promtool's unit tests start at t = 0, where the tie-break resolves. Read 95 at every
instant at 8c3fac51 (time() + 0.1 * atan). The tie-break is now 0.0003 * (1.5708 + atan(v / 1000)) (promql._TIE_SCALE):
under a millisecond, and 90 and 95 differ by six ulps there."""

from __future__ import annotations

import pytest

from tests.support import messy_history
from tests.support.prometheus_server import backfilled_fixture
from tests.support.scrape_scene import lookback_panel

OLD = 'instance="n4:9400",job="dcgm"'
JOB = 'instance="10.0.0.4:9400",job="gpudash-dcgm"'
GPU = 'gpu="0",UUID="GPU-n4-0",device="nvidia0",modelName="NVIDIA A100-SXM4-80GB"'
LAST = 8 * 30 - 1  # the copies' last scrape (both at 30 n - 1 s)


def _scene(old: float, job: float):
    def openmetrics(start: int) -> str:
        series: messy_history.Series = {}
        for n in range(1, 9):
            at = start + 30 * n - 1
            for target, labels, value in ((OLD, f'{GPU},Hostname="n4",{OLD}', old),
                                          (JOB, f'{GPU},hostname="n4",node="n4",{JOB}', job)):
                series.setdefault(("up", target), []).append((at, 1))
                series.setdefault(("DCGM_FI_DEV_GPU_UTIL", labels), []).append((at, value))
        return messy_history.openmetrics(series)
    return openmetrics


old_lower = backfilled_fixture("same-ms-old-lower", _scene(90, 95), 600, 1)
old_higher = backfilled_fixture("same-ms-old-higher", _scene(95, 90), 600, 1)


@pytest.mark.parametrize("path", ["old_lower", "old_higher"])
def test_copies_read_at_one_millisecond_show_the_higher_in_the_late_tier(request, path):
    prometheus, start = request.getfixturevalue(path)
    _, expr = lookback_panel("", "GPU utilization", 30)
    read = {after: [s["value"][1] for s in prometheus.query(expr, at=start + LAST + after)]
            for after in range(31, 120, 2)}  # no copy fresh: the late tier, within the 5-minute look-back
    wrong = {after: value for after, value in read.items() if value != ["95"]}
    assert not wrong, f"{len(wrong)} of {len(read)} instants: {sorted(wrong.items())}"
