"""How the DCGM exporter looks in each deployment style: the one table of those facts.

Used by the scrape job (which pods to scrape), the ServiceMonitor, and `verify`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .promql_text import one_of, pod_label_meta, regex_literal

EXPORTER_PORT = 9400
METRICS_PATH = "/metrics"


@dataclass(frozen=True)
class ExporterStyle:
    """What the DCGM exporter's objects are called in one way of deploying it."""
    key: str
    daemonset: str
    container: str
    pod_label: tuple[str, str]  # (name, value) that selects the exporter's pods
    service: str  # Service name (the static manifest and Helm default; the operator's own)
    service_port: str  # name of the Service port serving 9400

    @property
    def pod_label_meta(self) -> str:
        """The Kubernetes SD meta label that carries `pod_label` on a pod target."""
        return pod_label_meta(self.pod_label[0])


def style_for(settings, cluster=None) -> ExporterStyle:
    """The style `cluster`'s exporter is deployed in: its clusters[].exporter.deployment, else exporter.deployment.
    Without a cluster: the fleet's (the global setting's)."""
    return STYLES[(cluster and cluster.exporter_deployment) or settings.exporter.deployment]


def exporter_namespace(settings, cluster=None) -> str:
    """The namespace of `cluster`'s exporter DaemonSet (and of the names its more_daemonsets write without one): its
    clusters[].exporter.namespace, else exporter.namespace."""
    return (cluster and cluster.exporter_namespace) or settings.exporter.namespace


def exporter_daemonset(settings, cluster=None) -> str:
    """The exporter DaemonSet's name in `cluster`: its `clusters[].exporter.daemonset`, else `exporter.daemonset` where
    the cluster's deployment is the fleet's (it names a DaemonSet of exporter.deployment's style), else the fixed one of
    its deployment style (the chart's is `<release>-dcgm-exporter` unless the release name holds `dcgm-exporter` or
    fullnameOverride is set, so a Helm install names it in the settings). Without a cluster: the fleet's (the global
    setting's)."""
    if cluster and cluster.exporter_daemonset:
        return cluster.exporter_daemonset
    style = style_for(settings, cluster)
    own = style.key == settings.exporter.deployment
    return (own and settings.exporter.daemonset) or style.daemonset


def named_daemonsets(settings, cluster=None) -> tuple[tuple[str, str], ...]:
    """(namespace, name) of every exporter DaemonSet of `cluster`: exporter_daemonset in its exporter_namespace first,
    then its clusters[].exporter.more_daemonsets, else exporter.more_daemonsets (`name` in that namespace, or
    `namespace/name`), each once. Read once per settings and cluster (`Settings.memo`: every alarm, rule and scrape
    config of a cluster asks)."""
    known = settings.memo.setdefault("named_daemonsets", {})
    if cluster not in known:
        known[cluster] = _named_daemonsets(settings, cluster)
    return known[cluster]


def daemonset_key(settings, cluster, first: bool) -> list:
    """The settings key (a path: setting_place's) naming `cluster`'s first exporter DaemonSet (`first`: the one of
    exporter_daemonset) or its others (more_daemonsets), as _named_daemonsets reads them: the cluster's own
    clusters[<index>].exporter.<key> where it sets one, else exporter.<key>."""
    name = "daemonset" if first else "more_daemonsets"
    own = cluster is not None and (bool(cluster.exporter_daemonset) if first else
                                   cluster.exporter_more_daemonsets is not None)
    if not own:
        return ["exporter", name]
    return ["clusters", next(i for i, c in enumerate(settings.clusters) if c.name == cluster.name), "exporter", name]


def _named_daemonsets(settings, cluster) -> tuple[tuple[str, str], ...]:
    more = cluster.exporter_more_daemonsets if cluster and cluster.exporter_more_daemonsets is not None else \
        settings.exporter.more_daemonsets
    namespace = exporter_namespace(settings, cluster)
    found = [(namespace, exporter_daemonset(settings, cluster))]
    found += [tuple(entry.split("/", 1)) if "/" in entry else (namespace, entry) for entry in more]
    return tuple(dict.fromkeys(found))


# Kubernetes names a DaemonSet's pod `<DaemonSet>-` and five characters of its generated names' alphabet
# (k8s.io/apimachinery util/rand), the prefix cut to 58 characters so that the name fits in 63 (apiserver's
# names.SimpleNameGenerator).
GENERATED_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
# ... as ranges, the same characters (test_exporter_styles): 6 bytes less in each of the 148 places the multi-region
# all-metrics dashboard matches a node spelling against an exporter pod's name
GENERATED_SUFFIX = "[b-df-hj-np-tv-xz24-9]{5}"
GENERATED_PREFIX_LENGTH = 58


def exporter_pod_names(settings) -> str:
    """An RE2 pattern of the names Kubernetes gives the pods of every exporter DaemonSet the settings name (the
    fleet's and each cluster's, named_daemonsets): what an exporter given no NODE_NAME writes for its node (its pod's
    hostname), the evidence promql.gpus_named ranks such a name by."""
    names = dict.fromkeys(name for cluster in (None, *settings.clusters)
                          for _, name in named_daemonsets(settings, cluster))
    prefixes = "|".join(dict.fromkeys(regex_literal(f"{name}-"[:GENERATED_PREFIX_LENGTH]) for name in names))
    return f"({prefixes}){GENERATED_SUFFIX}"


def exporter_namespaces(settings, cluster=None) -> list[str]:
    """The namespaces the exporter pods are scraped in: the cluster's exporter namespace, and those of its other
    exporter DaemonSets (exporter.more_daemonsets); without a cluster, exporter.namespace and every cluster's."""
    clusters = [cluster] if cluster else settings.clusters
    first = [exporter_namespace(settings, cluster)] if cluster else [settings.exporter.namespace]
    return list(dict.fromkeys([*first, *(namespace for c in clusters for namespace, _ in named_daemonsets(settings, c))]))


def namespace_matcher(settings) -> str:
    """PromQL matcher of the exporter pods' namespaces (exporter_namespaces, every cluster's): `namespace="ns"`, or a
    regex of several."""
    return one_of("namespace", exporter_namespaces(settings))


def fleet_styles(settings) -> tuple[ExporterStyle, ...]:
    """The deployment styles of the fleet's exporters: exporter.deployment's first, then each other a cluster's
    clusters[].exporter.deployment names (read once per settings: Settings.memo)."""
    memo = settings.memo
    if "fleet_styles" not in memo:
        keys = dict.fromkeys([settings.exporter.deployment, *(c.exporter_deployment for c in settings.clusters
                                                              if c.exporter_deployment)])
        memo["fleet_styles"] = tuple(STYLES[key] for key in keys)
    return memo["fleet_styles"]


def several_daemonsets(settings) -> bool:
    """Whether a cluster names more than one exporter DaemonSet: the CloudWatch agent then publishes kube-state-metrics'
    counts per DaemonSet (data_missing.DAEMONSET_SET) in every cluster, and each DaemonSet has a data-missing alarm.
    Asked for every alarm of every cluster, it reads the clusters once per settings (`Settings.memo`): read anew each
    time, 1,000 clusters took 2,000,000 readings (2.1 s of a 2.6 s build)."""
    memo = settings.memo
    if "several_daemonsets" not in memo:
        memo["several_daemonsets"] = any(len(named_daemonsets(settings, cluster)) > 1 for cluster in settings.clusters)
    return memo["several_daemonsets"]


STYLES = {style.key: style for style in (
    ExporterStyle("gpu-operator", daemonset="nvidia-dcgm-exporter", container="nvidia-dcgm-exporter",
                  pod_label=("app", "nvidia-dcgm-exporter"), service="nvidia-dcgm-exporter",
                  service_port="gpu-metrics"),
    ExporterStyle("helm", daemonset="dcgm-exporter", container="exporter",
                  pod_label=("app.kubernetes.io/name", "dcgm-exporter"), service="dcgm-exporter",
                  service_port="metrics"),
    ExporterStyle("static", daemonset="dcgm-exporter", container="dcgm-exporter",
                  pod_label=("app.kubernetes.io/name", "dcgm-exporter"), service="dcgm-exporter",
                  service_port="metrics"),
)}

# The labels that identify a DCGM exporter's DaemonSet (and its pods), whatever its name: the GPU operator's `app`,
# the Helm chart's and the static manifest's `app.kubernetes.io/name` (fullnameOverride keeps it).
EXPORTER_LABELS = tuple(dict.fromkeys(style.pod_label for style in STYLES.values()))


def is_exporter(labels: dict[str, str]) -> bool:
    """Whether an object's labels identify it as a DCGM exporter's (EXPORTER_LABELS)."""
    return any(labels.get(key) == value for key, value in EXPORTER_LABELS)
