"""GPU health: errors, memory repair, link problems, heat and throttling, per node and GPU."""

from generator.model import Dashboard, Panel, Query, Row
from generator.panels import PER_GPU, per_gpu


def _worst(metric, title, description, **panel):
    """The worst value per GPU (max), for error-like fields; with as_increase, its increase over the range."""
    return Panel(title, Query(metric, "max", PER_GPU, as_increase=panel.pop("as_increase", False)),
                 description=description, **panel)


def dashboards(ctx):
    errors = ctx.available([
        _worst("DCGM_FI_DEV_XID_ERRORS", "Last XID error code",
               "Code of the most recent XID error per GPU; 0 means none since the driver loaded. "
               "Look the code up in NVIDIA's XID catalogue.", unit="state"),
        _worst("DCGM_FI_DEV_ROW_REMAP_FAILURE", "Row remap failures",
               "1 when remapping a failed memory row did not succeed: drain the node, then reset or "
               "replace the GPU.", unit="state", thresholds=(1, 1)),
        _worst("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "Rows remapped (uncorrectable)",
               "Rows remapped after uncorrectable memory errors during the selected time range.",
               unit="count", as_increase=True),
        _worst("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "Rows remapped (correctable)",
               "Rows remapped after correctable memory errors during the selected time range.",
               unit="count", as_increase=True),
        per_gpu("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Double-bit ECC errors", aggregation="max"),
        per_gpu("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "Single-bit ECC errors", aggregation="max"),
    ])
    links = ctx.available([
        per_gpu("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "PCIe replays", aggregation="max"),
        per_gpu("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "NVLink throughput",
                description="MB/s sent and received over all NVLink links of the GPU, as DCGM reads it: the "
                            "traffic since its previous reading, per second."),
        per_gpu("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "NVLink CRC flit errors", aggregation="sum"),
        per_gpu("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "NVLink replays", aggregation="sum"),
    ])
    heat = ctx.available([
        per_gpu("DCGM_FI_DEV_GPU_TEMP", "GPU temperature", aggregation="max",
                thresholds=ctx.levels("gpu_temp_celsius")),
        per_gpu("DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature", aggregation="max",
                thresholds=ctx.levels("memory_temp_celsius")),
        per_gpu("DCGM_FI_DEV_POWER_USAGE", "Power draw"),
        per_gpu("DCGM_FI_DEV_SM_CLOCK", "SM clock"),
        per_gpu("DCGM_FI_DEV_MEM_CLOCK", "Memory clock"),
        per_gpu("DCGM_FI_DEV_POWER_VIOLATION", "Throttled by power"),
        per_gpu("DCGM_FI_DEV_THERMAL_VIOLATION", "Throttled by heat"),
    ])
    yield Dashboard(
        id="health",
        title="GPU health",
        description="XID errors, row remapping, PCIe and NVLink errors, temperatures, power and clocks per GPU.",
        rows=[Row("Errors and memory repair", errors), Row("PCIe and NVLink", links),
              Row("Heat, power and clocks", heat)],
    )
