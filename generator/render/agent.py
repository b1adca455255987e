"""The CloudWatch agent's two ConfigMaps (cwagent-prometheus), one pair per cluster. Pure.

The namespace and dimension sets come from settings.cloudwatch, declared once; the
metric selectors from the counters CSV (or what the CloudWatch dashboards and alarms
query). How the agent applies this (its awsemf exporter, metric_declaration.go):

* a declaration applies to a sample when `label_matcher`, an unanchored regex, matches
  the values of `source_labels` joined by ';', and a `metric_selectors` regex matches
  the metric name; declarations without source_labels or selectors are dropped;
* each dimension set of a matching declaration is emitted only when every dimension is
  a label on the sample, so the per-pod set appears only for GPUs a pod holds, while
  the per-GPU set appears for every GPU, the per-instance set (GPU_I_ID, which the scrape
  job sets to "none" on whole GPUs) once per GPU instance, and the MIG sets (GPU_I_PROFILE)
  for MIG instances only;
* `ClusterName` is `cluster_name` from this config (set explicitly: otherwise the agent
  reads the node's EC2 tag, which needs ec2:DescribeTags and may name another cluster).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from .. import container_insights, data_missing, stopped_gpus
from ..catalog import Catalog
from ..cloudwatch_query import NODE_MEAN, NODE_MEAN_KEY, NODE_MEAN_KINDS, dimension_sets, explored_sets
from ..markers import CLUSTER_DIMENSION, KUBERNETES_MANAGED_BY
from ..names import AGENT_CONFIGMAP, KUBE_STATE_METRICS_JOB as KSM_JOB, SCRAPE_CONFIGMAP, agent_log_group
from ..settings import Cluster, Settings
from .agent_otel import escaped

AGENT_KEY = "cwagentconfig.json"
SCRAPE_KEY = "prometheus.yaml"
SCRAPE_MOUNT = "/etc/prometheusconfig/prometheus.yaml"
KEPT_KINDS = ("gauge", "counter", "summary")  # the agent drops histograms

DimensionSets = Mapping[str, set[tuple[str, ...]]]  # metric -> dimension sets the CloudWatch side queries


def log_group(cluster: Cluster) -> str:
    """The EMF log group the agent writes for a cluster (its default name, set explicitly)."""
    return agent_log_group(cluster.name)


def unexpiring_log_groups(settings: Settings) -> list[str]:
    """The EMF log groups no generated artifact gives a retention: on agent.pipeline: classic the agent's JSON has no
    retention for the group it creates (its translator maps none to awsemf's log_retention, which stays 0: the group
    never expires, internal/aws/cwlogs/cwlog_client.go CreateStream), so only the CloudFormation stack sets one, and
    with agent.log_group_in_stack false no stack creates the group. The otel pipeline writes awsemf's log_retention;
    the Container Insights add-on manages its own groups."""
    if settings.agent.pipeline != "classic" or settings.agent.log_group_in_stack or container_insights.enabled(settings):
        return []
    return [log_group(cluster) for cluster in settings.clusters]


def selected_metrics(catalog: Catalog, settings: Settings, used: Iterable[str]) -> list[str]:
    """The DCGM fields the agent ships: all series in the CSV, or only those used. On agent.pipeline: classic, not the
    states the exporter serves as counters (catalog.Metric.retyped): that path publishes a counter's differences
    (lint CW018, AL016)."""
    wanted = set(used) if settings.agent.metric_selection == "used" else None
    classic = settings.agent.pipeline == "classic"
    return [m.name for m in catalog if m.kind in KEPT_KINDS and (wanted is None or m.name in wanted)
            and not (classic and m.retyped)]


def metric_selectors(names: Iterable[str]) -> list[str]:
    return [f"^{re.escape(name)}$" for name in names]


def declaration(job: str, dimensions: Iterable[str], metrics: Iterable[str], **more: Any) -> dict[str, Any]:
    """The agent's metric declaration of `metrics` (each name whole) of the scrape job `job`, published with the one
    dimension set `dimensions` (`more`: further keys, NODE_MEAN_KEY)."""
    return {"source_labels": ["job"], "label_matcher": f"^{re.escape(job)}$", "dimensions": [list(dimensions)],
            "metric_selectors": metric_selectors(metrics), **more}


def published_sets(catalog: Catalog, settings: Settings, queried: DimensionSets) -> dict[tuple[str, ...], list[str]]:
    """{dimension set: metrics published with it}.

    `used`: exactly the (metric, set) pairs the CloudWatch dashboards and alarms query.
    `all`: every shipped field with every set, for exploring in the console.
    """
    sets = [tuple(d) for d in dimension_sets(settings)]
    shipped = selected_metrics(catalog, settings, queried.keys())
    # Other sets (the cluster's own, for the data-missing alarm) carry only what is queried with them.
    extra = sorted({dims for wanted in queried.values() for dims in wanted} - set(sets))
    result = {dims: [m for m in shipped if dims in queried.get(m, set())] for dims in sets + extra}
    if settings.agent.metric_selection == "all":  # the MIG sets carry only what is queried with them
        result.update({tuple(dims): list(shipped) for dims in explored_sets(settings)})
    return result


@dataclass(frozen=True)
class Published:
    """Everything the agent publishes, by where it comes from: the one answer the agent config (emf_processor,
    and through its declarations the OTel pipeline's filter), `cost` and `lint` read."""

    fields: dict[tuple[str, ...], list[str]]  # the DCGM fields: {dimension set: fields} (published_sets)
    ksm: bool  # the exporter DaemonSets' three kube-state-metrics series, with ksm_set, and its node series per cluster
    no_data: bool  # each exporter target's scrapes as a flag of no GPU data, with data_missing.SAMPLES_SET (one metric
    # per GPU node, published at every scrape)
    ksm_set: tuple[str, ...] = data_missing.CLUSTER_SET  # per cluster, or per DaemonSet (data_missing.ksm_set)
    # each node's GPUs unread below its highest index at each scrape (stopped_gpus.UNREAD: the GPU stopped reporting
    # rule's alarm), with data_missing.SAMPLES_SET (one metric per GPU node, published at every scrape)
    unread: bool = False
    # {field: the kinds of a node's (its total, its count of GPUs read) published in the NODE_MEAN set}: those the
    # widgets read (render/cloudwatch.node_mean_kinds); a field the set publishes that is missing here, every kind
    node_kinds: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def kinds(self, name: str) -> tuple[str, ...]:
        """The kinds of a node's of `name` the NODE_MEAN set publishes."""
        return tuple(self.node_kinds.get(name, NODE_MEAN_KINDS))

    def sets(self) -> dict[tuple[str, ...], list[str]]:
        """{dimension set: metrics} of every source together."""
        result = {dims: list(metrics) for dims, metrics in self.fields.items()}
        if self.ksm:
            result.setdefault(self.ksm_set, []).extend(data_missing.KSM_METRICS)
            result.setdefault(data_missing.CLUSTER_SET, []).extend(data_missing.NODE_METRICS)
            result.setdefault((*self.ksm_set, data_missing.KSM_TARGET), []).append(data_missing.DESIRED)
        if self.no_data:
            result.setdefault(data_missing.SAMPLES_SET, []).append(data_missing.SAMPLES)
        if self.unread:
            result.setdefault(data_missing.SAMPLES_SET, []).append(stopped_gpus.UNREAD)
        return result


def reads_ksm(settings: Settings, queried: DimensionSets) -> bool:
    """Whether the agent scrapes and publishes kube-state-metrics' counts: GPUs are expected and a data-missing alarm
    its cluster's widgets and alarms hold (`queried`: render/cloudwatch.queried_sets) reads them."""
    return data_missing.expected(settings) and any(name in queried for name in data_missing.KSM_METRICS)


def published(catalog: Catalog, settings: Settings, queried: DimensionSets,
              node_kinds: Mapping[str, tuple[str, ...]] | None = None) -> Published:
    """What the agent publishes: the DCGM fields' sets, the data-missing alarm's expected signal (kube-state-metrics,
    when GPUs are expected and the cluster's data-missing alarm reads it: render/cloudwatch.queried_sets) and, for its second alarm, each target's scrapes without DCGM
    samples per node (when that alarm reads them: the OTel pipeline, data_missing.per_node)."""
    return Published(
        fields=published_sets(catalog, settings, queried),
        ksm=reads_ksm(settings, queried),
        no_data=data_missing.SAMPLES_SET in queried.get(data_missing.SAMPLES, set()),
        ksm_set=data_missing.ksm_set(settings), node_kinds=dict(node_kinds or {}),
        unread=data_missing.SAMPLES_SET in queried.get(stopped_gpus.UNREAD, set()))


# The one declaration of an agent whose cluster's widgets and alarms read nothing: it selects no metric (no metric is
# named the empty string), so awsemf publishes none (with no declaration it would publish every metric it gets).
NOTHING_DECLARED = {"source_labels": ["job"], "label_matcher": "^$", "dimensions": [[CLUSTER_DIMENSION]],
                    "metric_selectors": ["^$"]}


def emf_processor(catalog: Catalog, settings: Settings, queried: DimensionSets,
                  node_kinds: Mapping[str, tuple[str, ...]] | None = None) -> dict[str, Any]:
    """What the agent publishes, and how: the same for every cluster. The NODE_MEAN set's declarations, one per kinds
    a field's widgets read (`node_kinds`: render/cloudwatch.node_mean_kinds), name them (NODE_MEAN_KEY): the OTel
    pipeline makes and publishes those kinds alone (render/agent_otel.node_means)."""
    names = selected_metrics(catalog, settings, queried.keys())
    units = {name: catalog.get(name).unit.cloudwatch for name in names
             if catalog.get(name).unit.cloudwatch != "None"}
    job = settings.scrape.job_name
    what = published(catalog, settings, queried, node_kinds)
    declarations = []
    for dims, metrics in what.fields.items():
        by_kinds = {(): metrics} if NODE_MEAN not in dims else \
            {kinds: [m for m in metrics if what.kinds(m) == kinds] for kinds in dict.fromkeys(map(what.kinds, metrics))}
        declarations += [declaration(job, dims, each, **({NODE_MEAN_KEY: list(kinds)} if kinds else {}))
                         for kinds, each in by_kinds.items() if each]
    if what.ksm:  # the data-missing alarm's expected signal: the three series, per cluster or DaemonSet (ksm_set)
        declarations += [declaration(KSM_JOB, data_missing.ksm_set(settings), data_missing.KSM_METRICS),
                         # and whether a GPU node exists (kube_node_info, the GPU resources' capacity), per cluster
                         declaration(KSM_JOB, data_missing.CLUSTER_SET, data_missing.NODE_METRICS),
                         # and the agent's reads of each target: the desired count per kube-state-metrics pod
                         declaration(KSM_JOB, data_missing.agent_set(settings), [data_missing.DESIRED])]
    # per GPU node of each scrape of its exporter target: the data-missing rule's second alarm (each target's scrapes
    # without DCGM samples) and the GPU stopped reporting rule's (each node's GPUs unread below its highest index)
    declarations += [declaration(job, data_missing.SAMPLES_SET, [metric]) for metric, wanted in
                     ((data_missing.SAMPLES, what.no_data), (stopped_gpus.UNREAD, what.unread)) if wanted]
    if not declarations:
        # (awsemf without any declaration publishes every metric it gets, each point's labels its dimensions: a custom
        # metric of every series, new ones at each pod and exporter rollout; one that selects no metric name
        # publishes none)
        declarations.append(NOTHING_DECLARED)
    return {"metric_namespace": settings.cloudwatch.namespace, "metric_unit": units,
            "metric_declaration": declarations}


def agent_config(catalog: Catalog, settings: Settings, cluster: Cluster, queried: DimensionSets,
                 emf: dict[str, Any] | None = None) -> dict[str, Any]:
    """One cluster's agent config; `emf`: emf_processor(catalog, settings, queried), when already made."""
    return {
        "logs": {
            "metrics_collected": {
                "prometheus": {
                    "cluster_name": cluster.name,  # read by the agent's scraper, not expanded (no `$`: the schema)
                    "log_group_name": escaped(log_group(cluster)),
                    "prometheus_config_path": SCRAPE_MOUNT,
                    "emf_processor": _namespace_escaped(emf or emf_processor(catalog, settings, queried)),
                }
            },
            "force_flush_interval": settings.agent.force_flush_interval,
        }
    }


def _namespace_escaped(emf: dict[str, Any]) -> dict[str, Any]:
    """The JSON path's emf_processor with its namespace escaped: the agent's translator copies it into the
    collector configuration it writes (its awsemf exporter), which the collector reads with the two passes that
    expand `$` (agent_otel.escaped); the declarations' regexes are read by the agent's JSON translator, not
    expanded."""
    return {**emf, "metric_namespace": escaped(emf["metric_namespace"])}


def configmaps(namespace: str, agent_json: str | bytes, scrape_yaml: str | bytes,
               otel: tuple[str, str | bytes] | None = None, publisher: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The two ConfigMaps the cwagent-prometheus Deployment mounts, holding the configs as the
    texts a ConfigMap carries (encoded by output.py; as text, or as UTF-8 bytes serialize.to_yaml writes as that
    text); `otel`: (key, text) of the collector configuration the agent reads beside its JSON (render/agent_otel.py);
    `publisher`: the annotations recording the settings that write them (markers.kubernetes_publisher: their project
    and this cluster; two projects of one cluster write the same ConfigMaps, and verify tells the other's)."""
    data = {AGENT_KEY: agent_json, **dict([otel] if otel else [])}
    notes = {"annotations": dict(publisher)} if publisher else {}
    return [
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": AGENT_CONFIGMAP, "namespace": namespace, "labels": dict(KUBERNETES_MANAGED_BY), **notes},
         "data": data},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": SCRAPE_CONFIGMAP, "namespace": namespace, "labels": dict(KUBERNETES_MANAGED_BY), **notes},
         "data": {SCRAPE_KEY: scrape_yaml}},
    ]
