"""A total over GPUs of a field a GPU's MIG instances add up (framebuffer used) reads each instance at its latest
reading within the panels' look-back: a GPU one of whose instances reads DCGM's blank at every other scrape is not
dropped at those scrapes.

One node, half an hour of 30 s scrapes, backfilled into a real Prometheus: GPU 0 whole (10,000 MiB used), GPU 1 split
into two MIG instances (20,000 and 12,000 MiB), the second of which reads DCGM's blank at odd scrapes, GPU 2 into two
whose second reads only the blank. The truth at an instant: a GPU each of whose instances has a reading within the
look-back (promql.label_lookback: 4 scrape intervals) is the sum of their latest readings; a GPU with an instance
without one has no value (BLANK_INSTANCE_NOTE: the rest of its instances are not the GPU). So the fleet's total is
42,000 MiB (GPU 1 32,000) at every instant after the first scrape. The blank-instance check (one_copy's `blanks`)
read each instance's latest sample: at odd scrapes it found the blank and left GPU 1 out, the total 10,000 MiB at
90 of 210 instants.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from generator.model import Query
from generator.project import load_project
from tests.integration.test_mig_twins import built_with
from tests.support.blank_scene import END, NOT_SUPPORTED, STEP, STEPS, read_instants
from tests.support.panel_expression import panel_expression
from tests.support.prometheus_server import backfilled_fixture

USED = "DCGM_FI_DEV_FB_USED"
NODE = "ip-10-0-1-1"
# (gpu, MIG instance or None, profile): the series the node writes
SERIES = [(0, None, None), (1, "1", "3g.40gb"), (1, "2", "3g.40gb"), (2, "1", "4g.40gb"), (2, "2", "3g.40gb")]
FLAPPING = (1, "2", "3g.40gb")  # a reading at even scrapes, the blank at odd ones
BLANK_ONLY = (2, "2", "3g.40gb")
BASE = {(0, None, None): 10000, (1, "1", "3g.40gb"): 20000, (1, "2", "3g.40gb"): 12000, (2, "1", "4g.40gb"): 5000}


def sample(series, k: int) -> int:
    return NOT_SUPPORTED if series == BLANK_ONLY or series == FLAPPING and k % 2 else BASE[series]


def openmetrics(series_written, sample, metric: str = USED) -> Callable[[int], str]:
    """The node's payloads: each of `series_written` (gpu, MIG instance or None, profile) at scrape k reading
    `sample(series, k)` (None: no sample) of `metric`."""
    def written(start: int) -> str:
        lines = [f"# TYPE {metric} gauge"]
        for k in range(STEPS):
            for series in series_written:
                gpu, instance, profile = series
                value = sample(series, k)
                if value is None:
                    continue
                mig = f',GPU_I_ID="{instance}",GPU_I_PROFILE="{profile}"' if instance else ""
                lines.append(f'{metric}{{gpu="{gpu}",UUID="GPU-{NODE}-{gpu}",device="nvidia{gpu}",'
                             f'modelName="NVIDIA H100 80GB HBM3",Hostname="{NODE}"{mig},'
                             f'DCGM_FI_DRIVER_VERSION="535.161.08",container="main",namespace="ml",'
                             f'pod="train-0",node="{NODE}",job="dcgm-exporter"}} {value} {start + k * STEP}')
        return "\n".join(lines) + "\n# EOF\n"
    return written


backfilled = backfilled_fixture("blank-mig-instance-lookback", openmetrics(SERIES, sample), END, STEP)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("blank-mig-instance-lookback"), {}, fields=(USED,))


def shown_total(built, backfilled, by: tuple[str, ...]) -> dict[float, dict[str, float]]:
    """The total of framebuffer used over the fleet (`by` nothing) or per GPU (`by` gpu) as the panels read it, at
    every instant read."""
    _, folder = built
    prometheus, start = backfilled
    project = load_project(folder / "gpudash.yaml", folder / "counters.csv")
    expr = panel_expression(project, Query(USED, "sum", by))
    return read_instants(prometheus, start, expr, lambda metric: metric["gpu"] if by else "all")


@pytest.mark.parametrize("by, truth", [((), {"all": 42000.0}), (("gpu",), {"0": 10000.0, "1": 32000.0})])
def test_a_total_of_mig_instances_reads_each_instances_latest_reading_within_the_lookback(built, backfilled, by, truth):
    shown = shown_total(built, backfilled, by)
    wrong = {t: value for t, value in shown.items() if STEP < t < END and value != truth}
    assert not wrong, f"instants: shown {dict(list(wrong.items())[:6])} ({len(wrong)} of {len(shown)})"
