"""Every mark gpudash puts on what it writes so that it recognises it later, spelled once.

`ownership` decides what the marks prove; renderers attach them; the publishers and lint read them.
The CloudWatch dimension that names the cluster is spelled here too: the agent config, widgets,
alarms, verify and the Container Insights table all have to agree on it.
"""

from __future__ import annotations

import re

OWNER = "gpudash"

# CloudWatch alarms: ownership, the rule that made the alarm, and the hash of what was written.
ALARM_OWNER_TAG = {"Key": "ManagedBy", "Value": OWNER}
ALARM_OWNER_TEXT = f"{ALARM_OWNER_TAG['Key']}={ALARM_OWNER_TAG['Value']}"  # how messages name the tag
ALARM_RULE_TAG = "gpudash:rule"
ALARM_HASH_TAG = "gpudash:sha256"
ALARM_PROJECT_TAG = "gpudash:project"  # the settings' `project`: which project's alarm it is
# The clusters of the settings that published an object of a project (one project may be split over several
# settings files): an alarm's tag, and a line of a CloudWatch dashboard's header text, which its stamp covers.
ALARM_CLUSTERS_TAG = "gpudash:clusters"
PUBLICATION_NOTE = "gpudash clusters:"
TAG_VALUE_LENGTH = 256  # CloudWatch's longest tag value
ALARM_DESCRIPTION_NOTE = "Managed by gpudash"  # in AlarmDescription, before the definition and rule

# Grafana dashboards: the owner tag; every version gpudash saves has a message that starts with the
# hash note. CloudWatch dashboards carry the same note at the end of their header text.
GRAFANA_OWNER_TAG = "gpudash-managed"
HASH_NOTE = "gpudash sha256:"
# After the hash, a Grafana version's message records the uid prefix it was saved with: the evidence --prune
# needs that a dashboard is this project's, since a uid alone can be read with more than one prefix.
UID_PREFIX_NOTE = "uid-prefix:"
# Then which settings saved it: their project (NO_PROJECT when they name none) and their clusters (comma-separated,
# as many whole names as PUBLISHER_LENGTH holds): two projects, or two settings files of one project, that share a
# Grafana folder and uid prefix never overwrite or prune each other's dashboards.
PROJECT_NOTE, CLUSTERS_NOTE, NO_PROJECT = "project:", "clusters:", "-"
# Grafana refuses a save whose version message is longer than GRAFANA_MESSAGE_LENGTH bytes (400 "message too long,
# max 500 characters"); the notes above take at most 143 bytes besides the clusters, so PUBLISHER_LENGTH leaves
# room for them and the rest of the message (the commit note) is cut to fit.
GRAFANA_MESSAGE_LENGTH, PUBLISHER_LENGTH = 500, 300
# Then the claims of other settings files of the project that generate the same dashboard (same folder, uid and
# content) and found it saved by the settings recorded above: one `also:` word per settings file, naming each of its
# clusters by the first characters of a digest: CLAIM_DIGEST_LENGTHS[0] of them when every claim fits so, else
# CLAIM_DIGEST_LENGTHS[1] (compact: claims share the message's 500 bytes). When the claims do not fit even so, the
# message records CLAIMS_CUT alone: claimed by settings not listed, never pruned.
CLAIM_NOTE, CLAIM_DIGEST_LENGTHS, CLAIMS_CUT = "also:", (16, 8), "*"

# Kubernetes objects (ConfigMaps, ServiceMonitor, PrometheusRule).
KUBERNETES_MANAGED_BY = {"app.kubernetes.io/managed-by": OWNER}
KUBERNETES_SELECTOR = ",".join(f"{key}={value}" for key, value in KUBERNETES_MANAGED_BY.items())  # kubectl's -l
# The settings that wrote a prometheus-operator object (ServiceMonitor, PrometheusRule), as annotations: their project
# (NO_PROJECT when they name none) and clusters (comma-separated). Several settings files writing into one namespace
# write objects of the same names, and `kubectl apply` of one replaces the other's: verify reads these to tell a live
# object of another project, or of another settings file of the project (no cluster in common), before that happens.
KUBERNETES_PROJECT, KUBERNETES_CLUSTERS = "gpudash.io/project", "gpudash.io/clusters"
# On the sidecar ConfigMap of a dashboard gpudash cut into parts (dashboard_parts): "<k> of <n>", its part number and
# how many there are. verify names a part no longer made for deletion on this evidence (kept by server-side apply as
# by client-side apply, whose last-applied-configuration is the other evidence it reads).
KUBERNETES_PART = "gpudash.io/dashboard-part"


def part_note(part: tuple[int, int]) -> str:
    """The text of a part's KUBERNETES_PART annotation: "k of n"."""
    return f"{part[0]} of {part[1]}"


def part_noted(note: str) -> tuple[int, int] | None:
    """(k, n) of a KUBERNETES_PART annotation's text (part_note), else None."""
    said = re.fullmatch(r"([1-9][0-9]*) of ([1-9][0-9]*)", note)
    return (int(said[1]), int(said[2])) if said is not None and int(said[1]) <= int(said[2]) else None


def kubernetes_publisher(project: str | None, clusters) -> dict[str, str]:
    """The annotations that record the settings of `project` and `clusters` on an object they write."""
    return {KUBERNETES_PROJECT: project or NO_PROJECT, KUBERNETES_CLUSTERS: ",".join(clusters)}

# Prometheus alerting rules: the label that names the rule an alert comes from.
PROMETHEUS_RULE_LABEL = "gpudash_rule"

# The CloudWatch dimension that carries the cluster (the agent's `cluster_name`, the add-on's too).
CLUSTER_DIMENSION = "ClusterName"
# The dimensions gpudash's scrape job gives a GPU (the Kubernetes node it attaches, the exporter's index) and a
# pod (the workload's labels), and what each settable set must hold to tell pods and GPUs apart in a cluster
# (every widget and alarm reads one cluster by ClusterName); settings refuse a set without them.
NODE_DIMENSION, GPU_DIMENSION = "node", "gpu"
NAMESPACE_DIMENSION, POD_DIMENSION = "namespace", "pod"
REQUIRED_DIMENSIONS = {"dimensions": (CLUSTER_DIMENSION, NAMESPACE_DIMENSION, POD_DIMENSION),
                       "gpu_dimensions": (CLUSTER_DIMENSION, NODE_DIMENSION, GPU_DIMENSION)}
