"""GPU health: errors, memory repair, link problems, heat and throttling, per node and GPU."""

from generator.model import Dashboard, Panel, Query, Row
from generator.panels import per_gpu


def _present(ctx, panels):
    """Keep the (metric, panel factory) pairs whose metric the counters CSV collects."""
    return [make() for metric, make in panels if ctx.has(metric)]


def dashboards(ctx):
    errors = _present(ctx, [
        ("DCGM_FI_DEV_XID_ERRORS", lambda: Panel(
            "Last XID error code", Query("DCGM_FI_DEV_XID_ERRORS", "max", ("node", "gpu")), unit="state",
            description="Code of the most recent XID error per GPU; 0 means none since the driver loaded. "
                        "Look the code up in NVIDIA's XID catalogue.")),
        ("DCGM_FI_DEV_ROW_REMAP_FAILURE", lambda: Panel(
            "Row remap failures", Query("DCGM_FI_DEV_ROW_REMAP_FAILURE", "max", ("node", "gpu")), unit="state",
            thresholds=(1, 1), description="1 when remapping a failed memory row did not succeed: "
                                           "drain the node and reset or replace the GPU.")),
        ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", lambda: Panel(
            "Rows remapped (uncorrectable)", Query("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "max", ("node", "gpu"),
                                                   as_increase=True), unit="count",
            description="Rows remapped after uncorrectable memory errors during the selected time range.")),
        ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", lambda: Panel(
            "Rows remapped (correctable)", Query("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "max", ("node", "gpu"),
                                                 as_increase=True), unit="count",
            description="Rows remapped after correctable memory errors during the selected time range.")),
        ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", lambda: per_gpu("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Double-bit ECC errors")),
        ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", lambda: per_gpu("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "Single-bit ECC errors")),
    ])
    links = _present(ctx, [
        ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", lambda: per_gpu("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "PCIe replays",
                                                            aggregation="max")),
        ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", lambda: per_gpu("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
                                                               "NVLink bandwidth counter rate", aggregation="sum")),
        ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", lambda: per_gpu(
            "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "NVLink CRC flit errors", aggregation="sum")),
        ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", lambda: per_gpu(
            "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "NVLink replays", aggregation="sum")),
    ])
    heat = _present(ctx, [
        ("DCGM_FI_DEV_GPU_TEMP", lambda: per_gpu("DCGM_FI_DEV_GPU_TEMP", "GPU temperature", aggregation="max",
                                                 thresholds=ctx.levels("gpu_temp_celsius"))),
        ("DCGM_FI_DEV_MEMORY_TEMP", lambda: per_gpu("DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature",
                                                    aggregation="max", thresholds=ctx.levels("memory_temp_celsius"))),
        ("DCGM_FI_DEV_POWER_USAGE", lambda: per_gpu("DCGM_FI_DEV_POWER_USAGE", "Power draw")),
        ("DCGM_FI_DEV_SM_CLOCK", lambda: per_gpu("DCGM_FI_DEV_SM_CLOCK", "SM clock")),
        ("DCGM_FI_DEV_MEM_CLOCK", lambda: per_gpu("DCGM_FI_DEV_MEM_CLOCK", "Memory clock")),
        ("DCGM_FI_DEV_POWER_VIOLATION", lambda: per_gpu("DCGM_FI_DEV_POWER_VIOLATION", "Throttled by power")),
        ("DCGM_FI_DEV_THERMAL_VIOLATION", lambda: per_gpu("DCGM_FI_DEV_THERMAL_VIOLATION", "Throttled by heat")),
    ])
    rows = [Row(title, panels) for title, panels in (
        ("Errors and memory repair", errors), ("PCIe and NVLink", links), ("Heat, power and clocks", heat),
    ) if panels]
    yield Dashboard(
        id="health",
        title="GPU health",
        description="XID errors, row remapping, PCIe and NVLink errors, temperatures, power and clocks per GPU.",
        rows=rows,
    )
