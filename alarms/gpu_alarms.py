"""The default GPU alarms. Thresholds come from the settings (`thresholds:` and `alarms:`)."""

from generator.catalog import PRESENCE
from generator.container_insights import enabled as addon_source
from generator.model import Alarm, Condition, Query
from generator.stopped_gpus import HELD, uuid_name

POD = ("pod",)  # a pod is named with its namespace in every backend
# Per GPU in Prometheus (alerts name the node and GPU); CloudWatch has no GPU dimension and
# aggregates these over the cluster.
GPU = ("node", "gpu")
# Each GPU a pod holds, named with the pod (a pod's GPUs are on its node): a pod's GPUs judged one by one (a
# mean over them hides idle GPUs beside a busy one).
POD_GPU = ("pod", "gpu")


def alarms(ctx):
    temp = ctx.levels("gpu_temp_celsius")
    framebuffer = ctx.levels("framebuffer_used_ratio")
    idle_minutes = int(ctx.threshold("idle_minutes"))
    # The level the framebuffer alarm compares: the add-on publishes the pod's used share, the agent free MiB.
    near_full = (f"over {framebuffer[1]:.0%} of its memory used" if addon_source(ctx.settings) else
                 f"under {ctx.settings.alarms.framebuffer_free_mib:g} MiB of memory free")
    # GPU data is there when a field every GPU reports is: the first the counters CSV collects.
    reported = next((name for name in PRESENCE if ctx.has(name)), PRESENCE[0])
    candidates = [
        Alarm("xid-error", "XID error reported",
              Condition(Query("DCGM_FI_DEV_XID_ERRORS", "max", GPU), ">", 0),
              severity="critical", missing_data="notBreaching",
              # The exporter holds a GPU's last XID code until it restarts (dcgm-exporter #500, DCGM #277):
              # the alarm is a state, not an event, and a later XID changes nothing it can see.
              description="A GPU reported an XID error: a driver, memory or hardware fault. The exporter keeps "
                          "a GPU's last XID code until the exporter restarts, so this stays in alarm from the "
                          "first XID on and does not notify again for a later one, of the same code or another.",
              runbook="Find the GPU (gpudash-health, Last XID error code), look the code up in NVIDIA's XID "
                      "catalogue; codes 48, 63, 64, 74, 79, 92-95 usually mean draining the node. Once handled, "
                      "restart the exporter pod on the node to clear the code (and the alarm)."),
        Alarm("row-remap-failure", "GPU memory row remap failed",
              Condition(Query("DCGM_FI_DEV_ROW_REMAP_FAILURE", "max", GPU), ">", 0),
              severity="critical", missing_data="notBreaching",
              description="A GPU could not remap a failing memory row; its memory is no longer reliable.",
              runbook="Cordon and drain the node, then reset the GPU; replace it if the failure persists."),
        Alarm("uncorrectable-rows", "Uncorrectable memory rows remapped",
              Condition(Query("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "sum", GPU, as_increase=True), ">", 0),
              severity="warning", missing_data="notBreaching",
              description="Rows were remapped after uncorrectable memory errors within the last 5 minutes, or "
                          "while the GPU's data was away (up to an hour) before its first reading back.",
              runbook="Workloads on the GPU saw an uncorrectable error: check their logs, and plan a GPU reset."),
        Alarm("gpu-temp-high", "GPU temperature high",
              # Every reading of two 5-minute periods (10 minutes) above the level: the lowest per period, both
              # forms judging the two latest periods with readings of the four latest (render.alarms._of_range).
              Condition(Query("DCGM_FI_DEV_GPU_TEMP", "min", GPU), ">", temp[0]),
              severity="warning", evaluation_periods=2, datapoints_to_alarm=2,
              description=f"A GPU has read above {temp[0]:g} °C at every reading of its two latest 5-minute "
                          f"periods with readings; a brief peak does not count. A period without a reading (an "
                          f"exporter restarting) is passed over for an earlier one of the latest four, as "
                          f"CloudWatch's evaluation range does. A GPU that joins hot alarms once two periods hold a "
                          f"reading (5 to 10 minutes); across a gap in a GPU's data, readings from before it may "
                          f"count.",
              runbook="Check the node's cooling and fan state; sustained heat throttles clocks."),
        Alarm("gpu-temp-critical", "GPU temperature critical",
              Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", GPU), ">", temp[1]),
              severity="critical",
              description=f"A GPU is above {temp[1]:g} °C.",
              runbook="Move work off the node now; the GPU will throttle hard or shut down."),
        Alarm("framebuffer-full", "Pod's GPU memory nearly full",
              Condition(Query("DCGM_FI_DEV_FB_USED", "max", POD, over=("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"),
                              whole_gpu=True), ">", framebuffer[1]),
              # An allocation fails at the peak: the least free memory of any GPU (MIG instance) the pod
              # holds, at any reading of one 5-minute period (CloudWatch) or of the last 5 minutes (Prometheus).
              cloudwatch=Condition(Query("DCGM_FI_DEV_FB_FREE", "min", POD), "<",
                                   ctx.settings.alarms.framebuffer_free_mib),
              severity="warning",
              description=f"A GPU (or MIG instance) a pod holds had {near_full} at a reading of the last 5 "
                          f"minutes: the pod's next allocation at such a peak may fail (OOM).",
              runbook="Lower the batch size or model footprint, or move the pod to a GPU with more memory."),
        Alarm("gpu-idle", "Allocated GPU idle",
              # Per GPU the pod holds (per MIG instance on a MIG GPU): a pod using one of its four GPUs leaves three
              # idle, which the pod's mean (25 %) would hide; a busy instance beside an idle one of the same GPU alike.
              Condition(Query("DCGM_FI_DEV_GPU_UTIL", "avg", POD_GPU), "<",
                        ctx.threshold("idle_gpu_util_percent")),
              # idle_minutes is a multiple of 5 (the settings refuse any other): whole 5-minute periods.
              severity="warning", evaluation_periods=idle_minutes // 5, missing_data="notBreaching",
              description=f"A pod holds a GPU but has used under {ctx.threshold('idle_gpu_util_percent'):g}% of it "
                          f"for {idle_minutes} minutes: money spent on nothing. Each GPU the pod holds is judged "
                          f"on its own, and each MIG instance (a pod using one of its GPUs or instances and not the "
                          f"others alarms for the others).",
              runbook="Ask the pod's owner to release the GPU, or scale the workload down."),
        Alarm("pcie-replays", "PCIe replays increasing",
              Condition(Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "max", GPU, as_increase=True), ">",
                        ctx.threshold("pcie_replays_per_minute") * 5),
              severity="warning", missing_data="notBreaching",
              description=f"A GPU's PCIe link retried transfers more than "
                          f"{ctx.threshold('pcie_replays_per_minute') * 5:g} times within 5 minutes: a degrading "
                          f"link or riser.",
              runbook="Check the node's PCIe errors (dmesg, nvidia-smi -q); reseat or replace the GPU."),
        Alarm("gpu-data-missing", "No GPU metrics arriving",
              Condition(Query(reported, "count"), "<", 1),
              severity="critical", absent=True, missing_data="breaching", evaluation_periods=2,
              datapoints_to_alarm=2,
              description="GPU metrics are missing where kube-state-metrics says exporter pods should run: an "
                          "exporter, its DaemonSet, kube-state-metrics or the CloudWatch agent stopped. A GPU node "
                          "group at zero and GPUs no pod holds are not missing data.",
              runbook="Run `gpudash verify`. Then, by the alert's reason: `kubectl -n <exporter namespace> get ds,pods "
                      "-o wide` (a pod not Ready or crash-looping on a node: its logs; the DaemonSet gone: "
                      "reinstall it); kube-state-metrics not scraped: check its pod and the scrape target; on "
                      "CloudWatch, the cwagent-prometheus Deployment and its logs."),
        Alarm("gpu-stopped-reporting", "GPU stopped reporting",
              # Each GPU against its node's other GPUs (generator/stopped_gpus.py); on CloudWatch each node's GPUs unread
              # below its highest index (agent.pipeline: otel; elsewhere a Prometheus rule alone: lint AL027)
              Condition(Query(reported, "count", GPU), "<", 1),
              severity="critical", evaluation_periods=2, stopped=True,
              description="A GPU that reported within the last hour has read nothing for 10 minutes while another GPU "
                          "of its node read in each 5-minute period: DCGM lost it (fallen off the bus, XID 79, a "
                          "driver error) and the exporter, which leaves out blank values, serves the node's other GPUs "
                          "without it. A node scaled down, an exporter restarting or rolled out, a MIG "
                          "reconfiguration, a node renamed by an exporter upgrade and a pod leaving its GPU do not "
                          "fire it. It holds while the GPU reads nothing and its node's other GPUs read, past the "
                          "hour (a recording rule keeps it), and clears when the GPU reads again, when its node's "
                          "other GPUs stop too or another machine takes the node's name. A node of one GPU is the "
                          "data-missing rule's. Its CloudWatch alarm (agent.pipeline: otel) names the node, and sees a "
                          "GPU below the node's highest index only (elsewhere none: lint AL027)."
                          + (f" {HELD}." if ctx.settings.exporter.virtual_gpus else ""),
              runbook="On the node: `nvidia-smi` and `dmesg | grep -i xid` (79: fallen off the bus). Cordon and drain "
                      "the node, then reset the GPU (`nvidia-smi -r`) or reboot; replace it if it falls off again. "
                      "The alert's GPU is the index the GPU last read under: a reboot that leaves it out indexes "
                      "the GPUs after it one lower, so find the lost GPU by the alert's "
                      f"{uuid_name(ctx.settings)} label (`nvidia-smi -L`; an exporter writing no UUID gives none). "
                      "CloudWatch's alarm names the node: the GPU `nvidia-smi -L` lacks or cannot read is the lost one."),
    ]
    # An alarm on a field the counters CSV does not collect is left out with a note (generate, lint DF001).
    return ctx.available(candidates)
