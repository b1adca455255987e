"""A MIG GPU's utilization on the dashboards, on a real Prometheus: its instances weighed by their size.

One node, half an hour of 30 s scrapes, as the exporter writes an A100 80GB split into MIG instances (no GPU
utilization for the GPU; graphics engine activity per instance, `GPU_I_ID`, `GPU_I_PROFILE`, the pod holding it):

* GPU 0: a `3g.40gb` instance busy all the time (activity 1.0, pod `a/big`) beside four idle `1g.10gb` instances
  (pods `b/s1` to `b/s4`);
* GPU 1: a whole GPU at 10 % (pod `c/w`).

Truth: an instance's engine (or tensor) activity is a share of its own compute slices' cycles, and the `3g` instance
owns 3 of the 7 slices the five instances hold, so GPU 0 was busy 3/7 = 42.9 % of its capacity (the slice-weighted
roll-up users of MIG compute by hand); the fleet's mean over the two GPUs is (42.9 + 10) / 2 = 26.4 %.
The plain mean of the five instances reads 20 % for GPU 0 (and 15 % for the fleet): a GPU running one large job flat
out looks four-fifths idle.
"""

from __future__ import annotations

import pytest

from tests.support.prometheus_server import backfilled_fixture
from tests.support.range_panels import bundled_at

STEP, SCRAPES, OFFSET = 30, 60, 15
NODE = "gpu-node-1"
ACTIVE, UTIL = "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_UTIL"
TENSOR = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"  # written as the engine activity: the same roll-up, a ratio panel
# GPU 0's instances: (GPU_I_ID, profile, activity, namespace, pod)
INSTANCES = [("1", "3g.40gb", 1.0, "a", "big"), ("2", "1g.10gb", 0.0, "b", "s1"), ("3", "1g.10gb", 0.0, "b", "s2"),
             ("4", "1g.10gb", 0.0, "b", "s3"), ("5", "1g.10gb", 0.0, "b", "s4")]
MIG_GPU = 100 * (3 * 1.0) / (3 + 4 * 1)  # 42.857 %: the instances' activity weighed by their compute slices
WHOLE_GPU = 10.0


def _openmetrics(start: int) -> str:
    labels = f'modelName="NVIDIA A100-SXM4-80GB",Hostname="{NODE}",node="{NODE}",job="dcgm-exporter"'
    lines = []
    for field in (ACTIVE, TENSOR):
        lines.append(f"# TYPE {field} gauge")
        for k in range(SCRAPES):
            at = start + OFFSET + k * STEP
            lines += [f'{field}{{gpu="0",UUID="GPU-0",{labels},GPU_I_ID="{i}",GPU_I_PROFILE="{profile}",'
                      f'namespace="{namespace}",pod="{pod}"}} {value} {at}'
                      for i, profile, value, namespace, pod in INSTANCES]
            lines.append(f'{field}{{gpu="1",UUID="GPU-1",{labels},namespace="c",pod="w"}} {WHOLE_GPU / 100} {at}')
    lines.append(f"# TYPE {UTIL} gauge")
    lines += [f'{UTIL}{{gpu="1",UUID="GPU-1",{labels},namespace="c",pod="w"}} {WHOLE_GPU} {start + OFFSET + k * STEP}'
              for k in range(SCRAPES)]
    return "\n".join(lines) + "\n# EOF\n"


prometheus = backfilled_fixture("mig-utilization-weighted", _openmetrics, SCRAPES * STEP, STEP)


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="a MIG GPU's utilization is the plain mean of its instances' engine activity, "
                   "not weighted by their compute slices: a 3g instance busy beside four idle 1g instances reads 20 % "
                   "where the GPU is 43 % busy, and the fleet's mean 15 % where it is 26 %")
def test_a_mig_gpus_utilization_weighs_its_instances_by_size(prometheus):
    server, start = prometheus
    at = start + OFFSET + 40 * STEP
    shown = {"GPU utilization": bundled_at(server, "GPU utilization", at),
             "GPU utilization, namespace b": bundled_at(server, "GPU utilization", at, namespace="b"),
             "Average GPU utilization": bundled_at(server, "Average GPU utilization", at)}
    truth = {"GPU utilization": {f"{NODE} GPU 0": round(MIG_GPU, 9), f"{NODE} GPU 1": WHOLE_GPU},
             "GPU utilization, namespace b": {f"{NODE} GPU 0": round(MIG_GPU, 9)},
             "Average GPU utilization": {UTIL: round((MIG_GPU + WHOLE_GPU) / 2, 9)}}
    assert shown == truth


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="a MIG GPU's engine and tensor activity per GPU is the plain mean of its instances, not "
                          "weighted by their compute slices: 0.2 where the GPU is 0.43 busy")
@pytest.mark.parametrize("title", ["Tensor core activity", "PROF_GR_ENGINE_ACTIVE", "PROF_PIPE_TENSOR_ACTIVE"])
def test_a_mig_gpus_activity_weighs_its_instances_by_size(prometheus, title):
    server, start = prometheus
    shown = bundled_at(server, title, start + OFFSET + 40 * STEP)
    assert shown == {f"{NODE} GPU 0": round(MIG_GPU / 100, 9), f"{NODE} GPU 1": WHOLE_GPU / 100}
