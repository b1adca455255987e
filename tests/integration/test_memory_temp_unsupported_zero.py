"""Memory temperature of GPUs that cannot read it, on a real Prometheus.

DCGM reports a field it cannot read as a blank sentinel near 2**63, but not for HBM/GDDR temperature on every GPU:
on L4 (and likely other GPUs without NVML_FI_DEV_MEMORY_TEMP) it reports 0, because nvmlDeviceGetFieldValues
succeeds as a call while the field's own status says unsupported (NVIDIA/DCGM #311); dcgm-exporter 3.3.5 wrote 0
on such GPUs too (NVIDIA/dcgm-exporter #460). Half an hour of 30 s scrapes is backfilled: an L4 writing
`DCGM_FI_DEV_MEMORY_TEMP` 0 at every scrape beside an H100 reading 45 °C, on one node.

Truth: the L4 has no memory temperature (a running GPU's memory is never at 0 °C), so "Memory temperature" shows
the H100 alone, as it does for a GPU writing DCGM's sentinel. Taking 0 as a reading draws a 0 °C line for the L4.
"""

from __future__ import annotations

import pytest

from tests.support.messy_history import openmetrics
from tests.support.prometheus_server import backfilled_fixture
from tests.support.range_panels import bundled_at

STEP, SCRAPES, OFFSET = 30, 60, 15
FIELD = "DCGM_FI_DEV_MEMORY_TEMP"
GPUS = ((0, "NVIDIA L4", 0), (1, "NVIDIA H100 80GB HBM3", 45))


def _openmetrics(start: int) -> str:
    return openmetrics({(FIELD, f'gpu="{gpu}",UUID="GPU-{gpu}",device="nvidia{gpu}",modelName="{model}",Hostname="n1",'
                                f'node="n1",job="dcgm-exporter"'):
                        [(start + OFFSET + k * STEP, str(value)) for k in range(SCRAPES)] for gpu, model, value in GPUS})


prometheus = backfilled_fixture("memory-temp-zero", _openmetrics, SCRAPES * STEP, STEP)


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="a GPU that cannot read its memory temperature and writes 0 for it (L4, "
                   "DCGM #311) is drawn at 0 °C: only DCGM's sentinel is taken for no reading")
@pytest.mark.parametrize("title", ["Memory temperature", "DEV_MEMORY_TEMP"])
def test_a_gpu_writing_0_for_memory_temperature_has_no_line(prometheus, title):
    server, start = prometheus
    assert bundled_at(server, title, start + OFFSET + 40 * STEP + 1) == {"n1 GPU 1": 45}
