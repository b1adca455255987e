"""Per-pod view: what each workload pod gets out of its GPUs. Every line is a pod."""

from generator.model import Dashboard, Panel, Query, Row
from generator.panels import per_pod

FB_USED, FB_FREE = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"


def dashboards(ctx):
    compute = ctx.available([
        per_pod("DCGM_FI_DEV_GPU_UTIL", "GPU utilization by pod", min=0, max=100,
                thresholds=ctx.levels("gpu_util_percent")),
        per_pod("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Tensor core activity by pod", min=0, max=1),
        per_pod("DCGM_FI_PROF_DRAM_ACTIVE", "Memory bandwidth activity (DRAM) by pod", min=0, max=1),
        per_pod("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Graphics/compute engine activity by pod", min=0, max=1),
        per_pod("DCGM_FI_PROF_SM_ACTIVE", "SM activity by pod", min=0, max=1),
        per_pod("DCGM_FI_PROF_SM_OCCUPANCY", "SM occupancy by pod", min=0, max=1),
    ])
    memory = ctx.available([
        per_pod(FB_USED, "Framebuffer used by pod", aggregation="sum"),
        per_pod(FB_USED, "Framebuffer used share by pod", over=(FB_USED, FB_FREE), min=0, max=1,
                thresholds=ctx.levels("framebuffer_used_ratio"),
                description="Framebuffer used over total (used + free) of the pod's GPUs."),
    ])
    power = ctx.available([
        # DCGM reads a GPU's power, not a pod's: the title says what each pod's line is.
        per_pod("DCGM_FI_DEV_POWER_USAGE", "Power draw of each pod's GPUs", aggregation="sum",
                description="Power drawn by the GPUs the pod holds, each GPU counted once and whole: a GPU split "
                            "into MIG instances shows its whole draw under each pod holding one, and so does a GPU "
                            "pods share by time-slicing or MPS (an exporter without KUBERNETES_VIRTUAL_GPUS names "
                            "such a GPU under one of them per scrape, not always the same one: each pod a recent scrape "
                            "named shows it, as said below), so the pods' lines add up to more than the GPUs draw."),
        per_pod("DCGM_FI_DEV_SM_CLOCK", "SM clock by pod"),
        # DCGM counts a GPU's energy, not a pod's: the title says what each pod's line is.
        per_pod("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Energy use rate of each pod's GPUs", aggregation="sum",
                description="Energy used per second by the GPUs the pod holds, each GPU counted once and whole."),
    ])
    pcie = ctx.available([
        per_pod("DCGM_FI_PROF_PCIE_RX_BYTES", "PCIe receive by pod", aggregation="sum"),
        per_pod("DCGM_FI_PROF_PCIE_TX_BYTES", "PCIe transmit by pod", aggregation="sum"),
    ])
    pods = ctx.available([
        Panel("Pods on GPUs", Query("DCGM_FI_DEV_GPU_TEMP", "count", ("namespace", "pod")), kind="table",
              width=24, unit="count",
              description="Workload pods holding GPUs now, with how many GPUs each holds (a pod's MIG instances on "
                          "one GPU count as that GPU; a GPU pods share counts for each of them; a GPU whose "
                          "temperature reads DCGM's blank, not supported, is not counted)."),
    ])
    yield Dashboard(
        id="by-pod",
        title="GPU usage by pod",
        description="GPU utilization, activity, memory, power and PCIe traffic of each workload pod.",
        rows=[Row("Compute", compute), Row("Memory", memory), Row("Power and clocks", power),
              Row("PCIe", pcie), Row("Pods", pods)],
    )
