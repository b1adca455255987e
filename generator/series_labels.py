"""Which labels the CloudWatch agent's DCGM series carry, and so which dimension sets it can publish.

The agent publishes a sample under a dimension set only when every dimension of the set is a label
of the sample (the awsemf exporter's ExtractDimensions; both pipelines end in it), so a dimension
that some series lack silently drops those series from every widget and alarm reading the set.
The facts, from the exporter's source and its real payloads (shared reference exporter/*.prom):

* every series of every release carries `gpu`, `UUID`, `device` and `modelName`;
* `pod`, `namespace` and `container` only on a GPU that a pod holds (an idle GPU has none);
* the node is `Hostname` up to the current releases and `hostname` on the main branch: a fleet
  mid-upgrade has both, so neither is on every series (gpudash's scrape job attaches `node`);
* `pci_bus_id` is missing from older releases' series, `GPU_I_PROFILE` from whole GPUs, `xid` and
  `window_size_in_ms` from all but a few fields, label fields (DCGM_FI_DRIVER_VERSION, ...) from
  exporters whose counters file does not collect them;
* gpudash's scrape job adds `Namespace`, `Service`, `node`, `exporter_pod` (and Prometheus `job`,
  `instance`) to every series (`exporter_pod` and `instance` change when the exporter pod is replaced), and the agent's job gives a whole GPU `GPU_I_ID="none"`; the OTel
  pipeline moves `job` and `instance` into the resource, off the datapoints; `ClusterName` is
  attached by the agent's configuration on either pipeline;
* the OTel pipeline's job also attaches `exporter_revision`, the exporter pod's DaemonSet revision
  (its `controller-revision-hash` label, and `-<pod-template-generation>` where the pod has that label), which changes
  at each rollout, an undo included: the counters keep it so that awsemf
  keys each revision's deltas apart (render/agent_otel.merged_counters); no dimension set may name it.

The awsemf exporter (amazon-contributing fork, metric_declaration.go) drops a dimension set of more
than 10 names, counted as written, with a warning in the agent's log only, and removes a name written
twice. gpudash derives more sets from the two settings (derived_sets, which says which names each adds):
a setting is judged with the names the sets derived from it add.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .catalog import MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL, WHOLE_GPU_INSTANCE
from .derived_sets import SET_NAMES, added_to
from .markers import CLUSTER_DIMENSION, REQUIRED_DIMENSIONS

# Labels the scrape job adds to every series, beside the exporter's own.
# The node gpudash's scrape jobs and ServiceMonitor write from Kubernetes' record of where the exporter's pod runs
# (__meta_kubernetes_pod_node_name): never a pod's name (promql.gpus_named ranks no pod-like name in it).
SCRAPED_NODE = "node"
# The target's address (host:port) Prometheus writes: no hostname an exporter writes for its node.
TARGET_ADDRESS = "instance"
TARGET_LABELS = ("job", TARGET_ADDRESS, "Namespace", "Service", SCRAPED_NODE, "exporter_pod")
# Labels the exporter writes (BRIEF §3); Hostname became hostname on its main branch.
EXPORTER_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "hostname",
                   "pod", "namespace", "container", MIG_PROFILE_LABEL, MIG_INSTANCE_LABEL, "xid", "window_size_in_ms",
                   "pod_name", "pod_namespace", "container_name")  # the last three: --use-old-namespace
EVERY_GPU = ("gpu", "UUID", "device", "modelName")  # on every series of every exporter release
WORKLOAD = ("namespace", "pod", "container")  # on the series of a GPU a pod holds, and no other
OLD_WORKLOAD = ("pod_name", "pod_namespace", "container_name")  # WORKLOAD as --use-old-namespace names it


UUID_LABELS = ("UUID", "uuid")  # the label the exporter writes a GPU's UUID under, and with --use-old-namespace


@lru_cache(maxsize=64)
def uuid_label(workload: tuple[str, ...]) -> str:
    """The label the exporter writes a physical GPU's UUID under, from the labels the settings read the workload
    from: `uuid` with --use-old-namespace (which also names the workload labels pod_name, ...), `UUID` otherwise.
    Asked some 2,800 times a build (Labels.uuid, for every series a query names): kept for each set of labels."""
    return UUID_LABELS[1] if {label.removeprefix("exported_") for label in workload} & set(OLD_WORKLOAD) else \
        UUID_LABELS[0]


def exporter_labels(workload: tuple[str, ...]) -> set[str]:
    """The labels an exporter may write whose workload labels are named `workload` (render/scrape.written_labels:
    what `labels:` says the exporter writes)."""
    return {name for name in EXPORTER_LABELS if name not in WORKLOAD + OLD_WORKLOAD} | set(workload)
RESOURCE_LABELS = ("job", "instance")  # the OTel pipeline's receiver moves them into the resource
MAX_DIMENSIONS = 10  # awsemf drops a larger set (CloudWatch itself takes 30 per metric)
# What each pod's copy of a counter keeps on the OTel pipeline beside the per-pod sets' names
# (render/agent_otel.merged_counters: the GPU's identity, and GPU_I_PROFILE from the MIG per-pod set).
KEPT_BY_POD_COPIES = ("UUID", MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL)
STATIC_VALUES = ("Namespace", "Service", "job")  # one value per cluster: a static per-pod alarm can name it

# Values of the shapes real series carry, per label: lint judges a hand-edited label matcher of the agent by them (a
# matcher every one of them passes lets every real point through, one that fails one drops real points). From the
# exporter's payloads (shared reference exporter/*.prom: the A10G payload's Hostname is its exporter pod's name, an
# exporter run without NODE_NAME), its source (gpu the index, device nvidia<index>, UUID GPU-<8-4-4-4-12 hex>) and
# Kubernetes' names (a pod's a DNS subdomain, dots allowed; a namespace's and a container's a DNS label; a node's as
# EKS names it, by IP or by instance id, or as any other cluster does). Each label's list holds its edge cases: the
# first index and the first of two digits, a name beginning with a digit, one of a single character.
_NODES = ("ip-10-0-1-23.ec2.internal", "ip-192-168-101-7.us-west-2.compute.internal",
          "i-0123456789abcdef0.us-west-2.compute.internal", "gpu-node-1", "7")
_PODS = ("train-0", "gpu-burn-c68d8c774-ltg9s", "web-7d9f8b6c5-x2x9k", "job.v2-0", "0-batch-worker", "a")
_NAMESPACES = ("ml", "kube-system", "default", "team-1", "0team", "a")
_CONTAINERS = ("main", "cuda-vector-add", "trainer-2", "0c", "a")
REAL_VALUES: dict[str, tuple[str, ...]] = {
    "gpu": ("0", "1", "7", "10", "15"),
    "device": ("nvidia0", "nvidia1", "nvidia10"),
    "UUID": ("GPU-ff76466b-22fc-f7a9-abe2-ce3ac453b8b3", "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",
             "GPU-00000000-0000-0000-0000-000000000000"),
    "pci_bus_id": ("00000000:00:1E.0", "00000000:3B:00.0", "00000000:CA:00.0"),
    "modelName": ("NVIDIA A10G", "Tesla T4", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB"),
    "Hostname": (*_NODES, "nvidia-dcgm-exporter-48cwd"),
    "hostname": (*_NODES, "nvidia-dcgm-exporter-48cwd"),
    SCRAPED_NODE: _NODES,
    "pod": _PODS, "exported_pod": _PODS, "pod_name": _PODS,
    "namespace": _NAMESPACES, "exported_namespace": _NAMESPACES, "pod_namespace": _NAMESPACES,
    "container": _CONTAINERS, "exported_container": _CONTAINERS, "container_name": _CONTAINERS,
    MIG_PROFILE_LABEL: ("1g.5gb", "1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb", "1g.10gb+me", "1g.24gb"),
    MIG_INSTANCE_LABEL: ("1", "2", "13", WHOLE_GPU_INSTANCE),  # (a whole GPU's, which the agent's job writes)
    "xid": ("13", "31", "48", "79", "119"),
}


# The label the OTel pipeline's exporter job gives each series: its exporter pod's DaemonSet revision (the pod's
# controller-revision-hash label; none on a pod no DaemonSet owns).
REVISION_LABEL = "exporter_revision"
REVISION_META = "__meta_kubernetes_pod_label_controller_revision_hash"
# ... followed by the pod's template generation where it has one (its pod-template-generation label, which the
# DaemonSet controller bumps at every template change, an undo included): a rollback reuses the earlier revision
# and its hash, and awsemf would take the rolled-back pod's first delta from the earlier pod's last reading (kept
# 5 minutes), counting the undone revision's seconds twice.
GENERATION_META = "__meta_kubernetes_pod_label_pod_template_generation"

# Labels every sample carries whose value a GPU's series change when the exporter pod is replaced (a rollout, an
# upgrade, an eviction; the revision at a rollout only): in that period a GPU or pod is two series, counted twice
# by every count and sum.
CHANGING = ("exporter_pod", "instance", REVISION_LABEL)


def on_every_series(pipeline: str) -> tuple[str, ...]:
    """The labels every DCGM sample carries when it reaches the agent's exporter, on `pipeline`, with one value
    over a GPU's life."""
    targets = tuple(t for t in TARGET_LABELS if (pipeline == "classic" or t not in RESOURCE_LABELS)
                    and t not in CHANGING)
    return (CLUSTER_DIMENSION, *EVERY_GPU, *targets, MIG_INSTANCE_LABEL)


def _missing_from_some(name: str, pipeline: str) -> str:
    """Why `name` is not a label of every sample (the series that lack it publish nothing under the set)."""
    if name in WORKLOAD:
        return "only a GPU that a pod holds carries it: every GPU no pod holds would publish nothing"
    if name in ("Hostname", "hostname"):
        return "the exporter writes Hostname up to its current releases and hostname after them: the GPUs of " \
               "every node whose exporter writes the other spelling would publish nothing (node is on every series)"
    if name == MIG_PROFILE_LABEL:
        return "only MIG instances carry it: every whole GPU would publish nothing"
    if name in CHANGING and (pipeline == "classic" or name not in RESOURCE_LABELS):
        return "its value changes when the exporter pod is replaced (a rollout or upgrade): in that period each " \
               "GPU would be two series, counted twice by every count and sum over them"
    if name in RESOURCE_LABELS:
        return f"agent.pipeline {pipeline} moves it into the resource, off every sample: nothing would be published"
    if name == "pci_bus_id":
        return "older exporter releases do not write it: their GPUs would publish nothing"
    if name in EXPORTER_LABELS:
        return "the exporter writes it on a few fields only: every other field would publish nothing"
    return "it is not a label gpudash knows every DCGM series carries (label fields depend on the counters file): " \
           "the series without it would publish nothing"


def dimension_problem(document: dict[str, Any], defaults: dict[str, list[str]]) -> tuple[list[Any], str, str] | None:
    """The first dimension setting the agent could not publish as the queries read it: (the settings path,
    what is wrong, what to write instead); None when both sets are sound. `document` is the settings as
    written (only what it writes is judged; each list of names is judged as a whole), `defaults` the two
    settings' defaults."""
    cloudwatch = document.get("cloudwatch")
    if not isinstance(cloudwatch, dict):
        return None
    written = [key for key in ("dimensions", "gpu_dimensions") if isinstance(cloudwatch.get(key), list)
               and all(isinstance(name, str) for name in cloudwatch[key])]
    if cloudwatch.get("source") == "container-insights":
        for key in written:  # the defaults, as the commented settings file writes them, say nothing wrong
            if cloudwatch[key] != defaults[key]:
                return (["cloudwatch", key], f"cloudwatch.{key} is not read with cloudwatch.source: "
                        "container-insights: the add-on publishes its own dimension sets (ClusterName, Namespace, "
                        "FullPodName; NodeName, GpuDevice)", f"delete cloudwatch.{key}")
        return None
    agent = document.get("agent")
    pipeline = agent.get("pipeline", "otel") if isinstance(agent, dict) else "otel"
    pipeline = pipeline if pipeline in ("otel", "classic") else "otel"
    usable = on_every_series(pipeline)
    for key in written:
        names, added = cloudwatch[key], added_to(key)
        what = f"cloudwatch.{key} (the {SET_NAMES[key]} set)"
        required = REQUIRED_DIMENSIONS[key]
        allowed = usable + (WORKLOAD if key == "dimensions" else ())
        allowed = tuple(name for name in allowed if name not in added)
        alarms = document.get("alarms")
        static = key == "dimensions" and isinstance(alarms, dict) and alarms.get("per_pod") == "static"
        if static:  # a static alarm names the value of every dimension: only these have one known value per pod
            allowed = tuple(name for name in allowed if name in (*required, *STATIC_VALUES))
        fix = f"write [{', '.join(required)}] and, if you need them, more of: " \
              f"{', '.join(n for n in allowed if n not in required)}"
        if any(name not in names for name in required):
            continue  # settings._dimension_sets_checked says what it lacks
        for index, name in enumerate(names):
            if name in added:
                return (["cloudwatch", key, index],
                        f"{what} names {name}, which the sets gpudash derives from it for MIG instances add "
                        f"themselves: they would name it twice"
                        + ("" if name == MIG_INSTANCE_LABEL else ", and every whole GPU would publish nothing"), fix)
            if name not in allowed:
                why = "alarms.per_pod: static names the value of each dimension in a pod's alarm, and gpudash " \
                      "knows no one value of it per pod" if static and name in usable + WORKLOAD else \
                    _missing_from_some(name, pipeline)
                return ["cloudwatch", key, index], f"{what} names {name!r}: {why}", fix
        largest = len(names) + len(added)
        if largest > MAX_DIMENSIONS:
            derived = ", ".join(added)
            return (["cloudwatch", key],
                    f"{what} has {len(names)} names; the set gpudash derives from it for MIG instances adds {derived}: "
                    f"{largest} dimensions, and the agent drops a set of more than {MAX_DIMENSIONS} (its log says so, "
                    "nothing else does), with every widget and alarm that reads it",
                    f"name at most {MAX_DIMENSIONS - len(added)} dimensions in cloudwatch.{key}")
    pods, gpus = (cloudwatch[key] if key in written else defaults[key] for key in ("dimensions", "gpu_dimensions"))
    both = [name for name in gpus if name in pods and name not in REQUIRED_DIMENSIONS["dimensions"]]
    if pipeline == "otel" and both and set(gpus) <= {*pods, *KEPT_BY_POD_COPIES}:
        return (["cloudwatch", "dimensions"],
                f"cloudwatch.dimensions names {', '.join(both)}: with them it holds every name of the per-GPU set but "
                f"what each pod's copy of a counter keeps anyway ({', '.join(KEPT_BY_POD_COPIES)}): the OTel pipeline keeps a pod's "
                f"copy for the per-pod sets by leaving out a name of the per-GPU set, so every pod's copy would "
                f"also be published per GPU, and a GPU k pods share would read k times its increase",
                f"leave {both[-1]} out of cloudwatch.dimensions, or name in cloudwatch.gpu_dimensions a label the "
                f"per-pod set does not (such as modelName)")
    return None
