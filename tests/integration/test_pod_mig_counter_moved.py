"""A StatefulSet pod's MIG instance moved to another node, its counter's increase per pod and MIG instance.

The story (30 s scrapes, 1 hour, written into a real Prometheus with staleness markers): pod ml/train-0 holds MIG
instance 1 (1g.10gb) of GPU 0 on n1 (GPU-A, energy counter from 5,000,000 mJ) until MOVED, then the same instance of
GPU 0 on n2 (GPU-B, from 1,000,000 or 9,000,000 mJ: below and above A's); n1's exporter names the pod for LAG seconds
more (the kubelet's pod-resources answer lags), so both GPUs carry the pod for three scrapes. Each counter grows
1,000 mJ a scrape. Truth over the hour, each GPU's growth while it named the pod: A 62 scrapes (62,000), B 60
(60,000): 122,000.

The panel computes it; lint GF006 calls the query an error all the same (its aggregation by gpu and the MIG instance,
namespace and pod holds no label of the node), so `gpudash lint` exits 1 on a build that shows the truth.
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.lint import run
from generator.lint.runner import all_rules
from tests.support.lint_input import lint_input
from tests.support.projects import defined_project
from tests.support.prometheus_server import STALE, written_fixture
from tests.support.range_panels import panel_at

SPAN, STEP, MOVED, LAG = 3600, 30, 1800, 90
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
PANEL = f"Query({ENERGY!r}, 'sum', ('pod', 'mig_instance'), as_increase=True)"


def _scraped(b_from: int):
    def series_of(start: int):
        series: dict[tuple, list[tuple[float, str]]] = {}
        for uuid, node, address, base in (("GPU-A", "n1", "10.0.0.5", 5_000_000), ("GPU-B", "n2", "10.0.0.6", b_from)):
            for t in range(0, SPAN + 1, STEP):
                held = t < MOVED + LAG if uuid == "GPU-A" else t >= MOVED
                pod = {"pod": "train-0", "namespace": "ml", "container": "c"} if held else {}
                for metric, value in (("DCGM_FI_DEV_GPU_TEMP", 40), (ENERGY, base + 1000 * (t // STEP))):
                    labels = tuple(sorted({"__name__": metric, "gpu": "0", "UUID": uuid, "device": "nvidia0",
                                           "modelName": "NVIDIA A100", "Hostname": node, "node": node,
                                           "instance": f"{address}:9400", "job": "gpu-metrics", "GPU_I_ID": "1",
                                           "GPU_I_PROFILE": "1g.10gb", **pod}.items()))
                    series.setdefault(labels, []).append((start + t, str(value)))
                    if uuid == "GPU-A" and t == MOVED + LAG - STEP:  # the pod's series ends: a staleness marker
                        series[labels].append((start + t + STEP, STALE))
        return series
    return series_of


below = written_fixture("pod-mig-counter-moved-below", _scraped(1_000_000), SPAN, STEP)
above = written_fixture("pod-mig-counter-moved-above", _scraped(9_000_000), SPAN, STEP)


def _project(tmp_path):
    return defined_project(tmp_path, dashboards="from generator.model import Dashboard, Panel, Query, Row\n\n"
                           f"dashboard = Dashboard('moved', 'Moved', (Row('r', (Panel('Energy', ({PANEL},), "
                           "kind='table'),)),))\n")


@pytest.mark.parametrize("story", ["below", "above"])
def test_the_pods_instance_increase_is_each_gpus_growth_while_it_named_the_pod(request, story, tmp_path):
    prometheus, start = request.getfixturevalue(story)
    project = _project(tmp_path)
    (board,) = [b for b in build(project).grafana if b.uid.endswith("-moved")]
    (panel,) = [p for p in board.model["panels"] if p.get("targets")]
    assert panel_at(prometheus, project, panel, start + SPAN, SPAN) == {
        "Pod ml/train-0 MIG 1 (1g.10gb)": pytest.approx(122_000.0)}


@pytest.mark.xfail(strict=True, reason="lint GF006 reads the per-pod MIG instance aggregation (gpu, GPU_I_ID, "
                                       "GPU_I_PROFILE, cluster, namespace, pod) before the idelta() steps as GPU 0 "
                                       "of several nodes merged, though the panel shows each GPU's own growth")
def test_lint_finds_no_error_in_the_panel_that_shows_the_truth(tmp_path):
    project = _project(tmp_path)
    errors = [f"{f.rule} {f.message}" for f in run(all_rules(), lint_input(project, build(project)))
              if f.severity == "error"]
    assert errors == []
