"""Fleet overview: how busy, full, hot and power-hungry the GPUs are, per node and GPU."""

from generator.model import Dashboard, Panel, Query, Row
from generator.panels import fleet_stat, per_gpu, per_mig_instance

UTIL = "DCGM_FI_DEV_GPU_UTIL"
FB_USED, FB_FREE = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"
POWER = "DCGM_FI_DEV_POWER_USAGE"
TEMP = "DCGM_FI_DEV_GPU_TEMP"


def dashboards(ctx):
    summary = ctx.available([
        Panel("GPUs reporting", Query(TEMP, "count"), kind="stat", width=4, height=4, unit="count",
              description="Number of GPUs with a reading of their temperature for the current selection (a GPU "
                          "split into MIG instances counts once; one whose temperature reads DCGM's blank, not "
                          "supported, is not counted)."),
        fleet_stat(UTIL, "Average GPU utilization", thresholds=ctx.levels("gpu_util_percent")),
        fleet_stat(TEMP, "Average GPU temperature", kind="gauge", thresholds=ctx.levels("gpu_temp_celsius"),
                   min=0, max=110),
        fleet_stat(POWER, "Total power draw", aggregation="sum"),
        fleet_stat(TEMP, "Hottest GPU", aggregation="max", thresholds=ctx.levels("gpu_temp_celsius")),
        fleet_stat(FB_USED, "Framebuffer in use", over=(FB_USED, FB_FREE), kind="gauge",
                   thresholds=ctx.levels("framebuffer_used_ratio"), min=0, max=1,
                   description="Framebuffer used over total (used + free) of each selected GPU, averaged "
                               "over the GPUs."),
    ])
    usage = ctx.available([
        per_gpu(UTIL, "GPU utilization", thresholds=ctx.levels("gpu_util_percent"), min=0, max=100),
        per_gpu(FB_USED, "Framebuffer memory used"),
        per_gpu(POWER, "Power draw"),
        per_gpu(TEMP, "GPU temperature", thresholds=ctx.levels("gpu_temp_celsius")),
        per_gpu("DCGM_FI_DEV_SM_CLOCK", "SM clock"),
        per_gpu("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Tensor core activity", min=0, max=1),
    ])
    mig = ctx.available([
        per_mig_instance(FB_USED, "Framebuffer used per MIG instance",
                         description="Framebuffer used by each MIG instance (GPUs not split into instances are "
                                     "left out)."),
        per_mig_instance("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Graphics engine activity per MIG instance", min=0, max=1,
                         description="Share of time each MIG instance's graphics/compute engine was busy (MIG "
                                     "instances do not report GPU utilization)."),
    ])
    yield Dashboard(
        id="overview",
        title="GPU fleet overview",
        description="Utilization, memory, power and temperature of every GPU, by node and GPU index.",
        rows=[Row("Fleet", summary), Row("Per GPU", usage), Row("MIG instances", mig)],
    )
