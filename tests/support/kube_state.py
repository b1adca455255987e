"""kube-state-metrics as the data-missing alarm reads it: its DaemonSet series, as it serves them.

Other DaemonSets (the cluster's aws-node, with pods unavailable) and other series ride along,
so a query or scrape job that does not select the exporter's DaemonSet shows.
"""

from __future__ import annotations

from tests.support.cloudwatch_agent import Scrape
from tests.support.dcgm_fleet import discovered

DESIRED = "kube_daemonset_status_desired_number_scheduled"
AVAILABLE = "kube_daemonset_status_number_available"
UPDATED = "kube_daemonset_status_updated_number_scheduled"  # nodes running the current pod template
LABELS = "kube_daemonset_labels"  # label_<name> for each label --metric-labels-allowlist names
# The DaemonSet labels of each way of deploying the exporter, as kube-state-metrics writes them with
# --metric-labels-allowlist=daemonsets=[app,app.kubernetes.io/name]
OPERATOR_LABELS = {"label_app": "nvidia-dcgm-exporter"}
HELM_LABELS = {"label_app_kubernetes_io_name": "dcgm-exporter"}
OTHER = {"namespace": "kube-system", "daemonset": "aws-node", "label_app_kubernetes_io_name": "aws-node"}  # 5
# desired, 3 available: never the exporter's
KSM_POD = {"__address__": "10.0.2.9:8080", "__meta_kubernetes_namespace": "monitoring",
           "__meta_kubernetes_pod_name": "kube-prometheus-stack-kube-state-metrics-6d9f",
           "__meta_kubernetes_pod_container_port_number": "8080",
           "__meta_kubernetes_pod_label_app_kubernetes_io_name": "kube-state-metrics"}


def payload(exporter: dict[str, str] | None, desired: int, available: int,
            more: tuple[tuple[dict[str, str], int, int], ...] = (), updated: int | None = None,
            gpu_node: bool = True, nodes: tuple[str, ...] = ("ip-10-0-1-1",),
            gpu_resource: str = "nvidia_com_gpu") -> str:
    """/metrics of kube-state-metrics; `exporter` is the exporter DaemonSet's namespace and name (None:
    the DaemonSet does not exist) and the label_* labels its kube_daemonset_labels carries (none: the allowlist
    does not name them); `more`: other DaemonSets' labels (namespace, daemonset, label_*, any other), desired
    and available; `updated`: the exporter's nodes running its current pod template (None: all desired, no
    rollout; every other DaemonSet has none running); `nodes`: the cluster's nodes, each with the device plugin's
    nvidia.com/gpu capacity where `gpu_node` (kube-state-metrics' nodes collector writes each resource of a node's
    status, its name's . / - made _: `gpu_resource`, a device plugin config's own name such as nvidia_com_a100),
    else CPU only."""
    lines = []
    entries = [e for e in ((exporter, desired, available, desired if updated is None else updated),
                           (OTHER, 5, 3, 5), *((labels, d, a, d) for labels, d, a in more)) if e[0] is not None]
    for index, (metric, text) in enumerate(((DESIRED, "The number of nodes that should be running the daemon pod."),
                                            (AVAILABLE, "The number of nodes that should be running the daemon pod "
                                                        "and have one or more of the daemon pod running and "
                                                        "available"),
                                            (UPDATED, "The total number of nodes that are running updated daemon "
                                                      "pod"))):
        lines += [f"# HELP {metric} {text}", f"# TYPE {metric} gauge"]
        for labels, *numbers in entries:
            names = ",".join(f'{k}="{v}"' for k, v in labels.items() if not k.startswith("label_"))
            lines.append(f"{metric}{{{names}}} {numbers[index]}")
    lines += [f"# HELP {LABELS} Kubernetes labels converted to Prometheus labels.", f"# TYPE {LABELS} gauge"]
    for labels, *_ in entries:
        lines.append(f"{LABELS}{{{','.join(f'{k}={chr(34)}{v}{chr(34)}' for k, v in labels.items())}}} 1")
    lines += ["# HELP kube_node_info Information about a cluster node.", "# TYPE kube_node_info gauge",
              *(f'kube_node_info{{node="{node}",kernel_version="6.1"}} 1' for node in nodes),
              "# HELP kube_node_status_capacity The capacity for different resources of a node.",
              "# TYPE kube_node_status_capacity gauge"]
    for node in nodes:
        lines.append(f'kube_node_status_capacity{{node="{node}",resource="cpu",unit="core"}} 96')
        if gpu_node:
            lines.append(f'kube_node_status_capacity{{node="{node}",resource="{gpu_resource}",unit="integer"}} 8')
    return "\n".join(lines) + "\n"


def target_labels(job: dict) -> dict[str, str]:
    """The labels the generated kube-state-metrics job gives the kube-state-metrics pod."""
    return discovered(job, KSM_POD)


def scrape(job: dict, timestamp: float, exporter: dict[str, str] | None, desired: int, available: int,
           updated: int | None = None, more: tuple[tuple[dict[str, str], int, int], ...] = (),
           nodes: tuple[str, ...] = ("ip-10-0-1-1",)) -> Scrape:
    return Scrape(timestamp, payload(exporter, desired, available, more, updated=updated, nodes=nodes),
                  target_labels(job))
