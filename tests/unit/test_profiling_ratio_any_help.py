"""DCGM's profiling activities are ratios 0-1 whatever the counters CSV's help text says.

DCGM reads DCGM_FI_PROF_*_ACTIVE and SM occupancy as ratios; NVIDIA's CSVs say "Ratio of ...", and a CSV of one's own
saying "(in %)" instead does not scale them. gpudash read such a line as a percentage: the by-pod charts of graphics and
tensor activity drew 0.5 (a pod at 50 %) on a 0-100 % axis, and Grafana showed it as 0.5 %.
"""

from __future__ import annotations

from generator.artifacts import build
from generator.catalog import parse_counters
from generator.output import encode
from generator.project import load_project
from tests.support.projects import counters_retyped

PERCENT_HELP = {"DCGM_FI_PROF_GR_ENGINE_ACTIVE": "Graphics engine activity (in %).",
                "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "Tensor pipe activity (in %)."}


def test_profiling_activities_are_ratios_whatever_the_help_text_says():
    catalog = parse_counters(
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, Graphics engine activity (in %).\n"
        "DCGM_FI_PROF_SM_OCCUPANCY, gauge, Warps resident on an SM (in %).\n"
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, gauge, Tensor pipe activity.\n"
        "DCGM_FI_PROF_PCIE_TX_BYTES, gauge, PCIe transmit throughput in bytes per second.\n"
        "DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\n", source="counters.csv")
    assert {m.name: m.unit_key for m in catalog} == {
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "ratio", "DCGM_FI_PROF_SM_OCCUPANCY": "ratio",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "ratio", "DCGM_FI_PROF_PCIE_TX_BYTES": "bytes_per_s",
        "DCGM_FI_DEV_GPU_UTIL": "percent"}


def _cloudwatch(project) -> dict[str, bytes]:
    return {path: data for path, data in encode(build(project, grafana=False)).items()
            if path.startswith("cloudwatch/")}


def test_a_build_from_a_csv_saying_percent_is_the_build_from_nvidias_wording(tmp_path):
    """The CloudWatch dashboards and alarms (axes, the MIG idle alarm's 1 less each reading above 0.95) are those
    of the bundled CSV's "Ratio of ..." lines."""
    settings = counters_retyped(tmp_path, {name: f"gauge, {help}" for name, help in PERCENT_HELP.items()})
    said_percent = _cloudwatch(load_project(settings, tmp_path / "counters.csv"))
    assert said_percent == _cloudwatch(load_project())
