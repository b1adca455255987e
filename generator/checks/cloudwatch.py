"""CloudWatch checks: the expected metrics arrive, recently, in the declared namespace and dimensions."""

from __future__ import annotations

from typing import Iterator

from ..catalog import MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL, MIG_UNSUPPORTED
from ..cloudwatch_query import dimension_sets
from ..markers import CLUSTER_DIMENSION
from ..output import ADDON_FILE, agent_file, built
from ..errors import RemoteError
from ..project import Project
from ..clients.answer import Answer, OddAnswer
from ..clients.cloudwatch import for_verify, list_metrics_page
from ..clients.http import SlowAnswer
from ..clients.options import Options
from .result import FAIL, NO_DATA, OK, SKIP, UNREACHABLE, WARN, Check, step

GROUP = "cloudwatch"
SAMPLE = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE")
# ListMetrics lists a new metric up to 15 minutes after its first data point (CloudWatch API reference).
LISTING_DELAY_MINUTES = 15


def checks(project: Project, options: Options) -> Iterator[Check]:
    settings = project.settings
    used = project.used_metrics()
    if not settings.clusters:
        yield Check(GROUP, "clusters", SKIP, "no cluster in the settings: no CloudWatch metrics to look for")
        return
    cloudwatch = for_verify(options)
    from ..container_insights import enabled
    from ..data_missing import on_addon, reads_daemonset

    signals, counts = on_addon(project), reads_daemonset(project)
    # the metrics each cluster's agent publishes, sampled (sampled_metrics), and the sets its generated agent config
    # declares (artifacts.agents: alike for the clusters that read alike)
    if enabled(settings):
        sampled, declared = {}, {}
    else:  # (what each cluster's widgets and alarms read, worked out once for both)
        from ..render.cloudwatch import reads_by_cluster

        reads = reads_by_cluster(project.cloudwatch_definitions(), project.alarms, project.catalog, settings)
        sampled = sampled_metrics(project, used, reads)
        declared = published_sets(project, settings, sampled, reads)
    for cluster in settings.clusters:
        declared_sets = declared.get(cluster.name, [])
        metrics = sampled.get(cluster.name, []) if sampled else _sample(used)
        if not metrics:
            yield Check(GROUP, f"{cluster.name} metrics", OK,
                        f"no CloudWatch widget or alarm of {cluster.name} reads a DCGM metric, so its agent publishes "
                        f"none: nothing to look for")
        named = [(f"{cluster.name} metrics", _cluster,
                  (cloudwatch, settings, cluster, metrics, declared_sets, options))] if metrics else []
        if signals:
            named.append((f"{cluster.name} data-missing signals", _addon_signals, (cloudwatch, cluster, options)))
        if counts:
            named.append((f"{cluster.name} data-missing signals", _daemonset_counts,
                          (cloudwatch, settings, cluster, options)))
        for name, check, args in named:
            try:
                yield from step(GROUP, name, check, *args)
            except RemoteError as exc:
                yield Check(GROUP, name, FAIL, exc.what, exc.hint or "", cause=UNREACHABLE)


def _listed(cloudwatch, namespace: str, cluster, declared: list[str], wanted: set[str],
            options: Options, metric_name: str | None = None,
            values: tuple[tuple[str, str], ...] = (), every_page: bool = False) -> dict[str, list[list[str]]]:
    """Dimension names of each wanted metric listed for the cluster (recently active), pages read until all
    are found (`every_page`: to the last, for every dimension set of each) or the deadline passes; `metric_name` lists
    that metric only, `values` (dimension, value) those with these dimension values too."""
    kwargs = {"Namespace": namespace, "RecentlyActive": "PT3H", **({"MetricName": metric_name} if metric_name else {})}
    if CLUSTER_DIMENSION in declared:
        kwargs["Dimensions"] = [{"Name": CLUSTER_DIMENSION, "Value": cluster.name},
                                *({"Name": name, "Value": value} for name, value in values)]
    found: dict[str, list[list[str]]] = {}
    source = f"CloudWatch ListMetrics in {cluster.region}"
    pages = 0
    while True:
        if options.remaining() <= 0 and not pages:  # nothing asked yet: the run's other work took the time
            raise SlowAnswer(f"{source} was not asked: the run's deadline ({options.timeout:g} s) had passed "
                             "before its first page", hint="raise --timeout")
        if options.remaining() <= 0:
            left = sorted(wanted - set(found))
            raise SlowAnswer(f"{source} was still paging at the deadline ({options.timeout:g} s): {pages} page(s) "
                             f"read, not yet found: {', '.join(left) or 'every dimension set of ' + ', '.join(sorted(wanted))}",
                             hint="raise --timeout, or narrow cloudwatch.dimensions")
        answer = Answer(list_metrics_page(cloudwatch, cluster.region, namespace, source, kwargs), source)
        pages += 1
        for item in answer.items("Metrics", required=True):
            name = item.get("MetricName", str)
            if name in wanted:
                found.setdefault(name, []).append(sorted(d.get("Name", str) for d in item.items("Dimensions")))
        token = answer.get("NextToken", str, "")
        if not token or (wanted <= set(found) and not every_page):
            return found
        if token == kwargs.get("NextToken"):  # the same page again: paging would never end
            raise OddAnswer(source, "NextToken", token, "a token for the next page",
                            said=f"NextToken {token!r} repeats the token just sent")
        kwargs["NextToken"] = token


# The add-on's GPU metrics sampled: node metrics exist for every GPU, held by a pod or idle.
ADDON_SAMPLE = ("node_gpu_utilization", "node_gpu_temperature", "node_gpu_memory_used", "node_gpu_power_draw")


def _addon_cluster(cloudwatch, cluster, options: Options) -> Check:
    """ContainerInsights GPU metrics arrive for the cluster, with dimension sets the add-on publishes them with."""
    from ..container_insights_table import CLUSTER, NAMESPACE, published_sets

    published = published_sets()
    found = _listed(cloudwatch, NAMESPACE, cluster, [CLUSTER], set(ADDON_SAMPLE), options)
    name = f"{cluster.name} metrics"
    missing = [m for m in ADDON_SAMPLE if m not in found]
    if len(missing) == len(ADDON_SAMPLE):
        return Check(GROUP, name, FAIL, f"no GPU metrics in {NAMESPACE} for {cluster.name} in the last 3 h",
                     f"turn on enhanced observability and accelerated compute metrics: aws eks update-addon "
                     f"--cluster-name {cluster.name} --addon-name amazon-cloudwatch-observability "
                     f"--configuration-values file://{built(ADDON_FILE)} (clusters[].name must be the EKS name)",
                     cause=NO_DATA)
    if missing:
        return Check(GROUP, name, FAIL, f"missing in {NAMESPACE}: {', '.join(missing)}",
                     "check the add-on's DCGM exporter pods and the cloudwatch-agent logs")
    expected = {metric: [sorted(d) for d in published[metric]] for metric in ADDON_SAMPLE}
    odd = sorted({f"{metric} [{', '.join(names)}]" for metric, listed in found.items() for names in listed
                  if names not in expected[metric]})
    if odd:
        return Check(GROUP, name, FAIL, f"published with dimensions the add-on's table does not list: {'; '.join(odd)}",
                     "compare the add-on's version with generator/container_insights_table.py")
    return Check(GROUP, name, OK, f"{len(ADDON_SAMPLE)} sampled GPU metrics arriving in {NAMESPACE}")


def _daemonset_counts(cloudwatch, settings, cluster, options: Options) -> Check:
    """The data-missing alarm's expected signal arrives: kube-state-metrics' desired count of the exporter DaemonSet
    the settings name, which the agent publishes with [ClusterName] (with [ClusterName, namespace, daemonset] for each
    of several: exporter.more_daemonsets); without it the alarm is in ALARM for good. And the agent alarm's: the first
    DaemonSet's desired count per kube-state-metrics pod (data_missing.agent_set), without which it never fires."""
    from ..data_missing import DESIRED, agent_set, ksm_dimensions, ksm_set
    from ..exporter_styles import named_daemonsets

    namespace = settings.cloudwatch.namespace
    name = f"{cluster.name} data-missing signals"
    dims = sorted(ksm_set(settings))
    missing, named, per_pod = [], named_daemonsets(settings, cluster), False
    for index, each in enumerate(named):
        values = tuple((d["Name"], d["Value"]) for d in ksm_dimensions(settings, cluster, each)
                       if d["Name"] != CLUSTER_DIMENSION)
        # the first DaemonSet's every set: the agent alarm reads its count per kube-state-metrics pod
        sets = _listed(cloudwatch, namespace, cluster, [CLUSTER_DIMENSION], {DESIRED}, options, DESIRED,
                       values, every_page=not index).get(DESIRED, [])
        if dims not in sets:
            missing.append(f"{each[0]}/{each[1]}")
        per_pod = per_pod or (not index and sorted(agent_set(settings)) in sets)
    daemonset = ", ".join(missing) or ", ".join(f"{ns}/{n}" for ns, n in named)
    if not missing and not per_pod:
        return Check(GROUP, name, WARN,
                     f"no {DESIRED} [{', '.join(agent_set(settings))}] in {namespace} for {cluster.name} in the last "
                     f"3 h (the exporter DaemonSet {named[0][0]}/{named[0][1]}), though it arrives with "
                     f"[{', '.join(ksm_set(settings))}]: the agent alarm counts the agent's reads of each "
                     f"kube-state-metrics pod in it and never fires without it, an agent in a crash loop unseen "
                     f"(ListMetrics lists a new metric up to {LISTING_DELAY_MINUTES} minutes late)",
                     f"apply {built(agent_file(cluster.name))} (its kube-state-metrics job writes the pod into "
                     f"kube_state_metrics_pod; the agent publishes the count with it) and restart the "
                     f"{settings.agent.namespace} cwagent-prometheus Deployment")
    if not missing:
        return Check(GROUP, name, OK, f"{DESIRED} [{', '.join(ksm_set(settings))}] arriving (the exporter "
                     f"DaemonSet{'s' if len(named) > 1 else ''} {daemonset})")
    if dims != [CLUSTER_DIMENSION]:
        return Check(GROUP, name, WARN,
                     f"no {DESIRED} [{', '.join(ksm_set(settings))}] in {namespace} for {cluster.name} in the last 3 h "
                     f"of the exporter DaemonSet{'s' if len(missing) > 1 else ''} {daemonset}: the data-missing "
                     f"alarm of each reads it as its desired count and is in ALARM without it (ListMetrics lists a new "
                     f"metric up to {LISTING_DELAY_MINUTES} minutes late)",
                     "check that exporter.more_daemonsets (or the cluster's own) names the exporter DaemonSets as "
                     "namespace/name (the kube group names them) and that the agent scrapes kube-state-metrics "
                     "(kube_state_metrics.namespace, .pod_label, .port)")
    return Check(GROUP, name, WARN,
                 f"no {DESIRED} [{CLUSTER_DIMENSION}] in {namespace} for {cluster.name} in the last 3 h: the "
                 f"data-missing alarm reads it as the desired count of the exporter DaemonSet {daemonset} and is in "
                 f"ALARM without it (ListMetrics lists a new metric up to {LISTING_DELAY_MINUTES} minutes late)",
                 "check that exporter.daemonset names the exporter DaemonSet (or the cluster's own "
                 "clusters[].exporter.daemonset; the kube group names it) and that the "
                 "agent scrapes kube-state-metrics (kube_state_metrics.namespace, .pod_label, .port), or write "
                 "alarms.expected_gpus: none")


def _addon_signals(cloudwatch, cluster, options: Options) -> Check:
    """What the data-missing alarm reads on the add-on arrives: the GPU nodes' capacity next to their GPU
    metrics, and the cluster's node count (the agent runs)."""
    from ..container_insights_table import (CLUSTER, CLUSTER_NODE_COUNT, NAMESPACE, NODE_GPU_LIMIT, WORKLOAD_SET,
                                            by_field, metric_name)
    from ..data_missing import ADDON_REPORTED

    reported = metric_name("node", by_field()[ADDON_REPORTED])
    wanted = {CLUSTER_NODE_COUNT, NODE_GPU_LIMIT, reported}
    found = {m for m, sets in _listed(cloudwatch, NAMESPACE, cluster, [CLUSTER], wanted, options).items()
             if [CLUSTER] in sets}
    name = f"{cluster.name} data-missing signals"
    if CLUSTER_NODE_COUNT not in found:
        return Check(GROUP, name, FAIL, f"no {CLUSTER_NODE_COUNT} [{CLUSTER}] in {NAMESPACE} in the last 3 h: the "
                     "data-missing alarm reads it as the add-on's agent running and alarms without it",
                     "check the cloudwatch-agent pods and their logs (its elected leader publishes the cluster's "
                     "metrics), or write alarms.expected_gpus: none", cause=NO_DATA)
    if NODE_GPU_LIMIT not in found and reported in found:
        return Check(GROUP, name, WARN, f"GPU metrics arrive but no {NODE_GPU_LIMIT} [{CLUSTER}]: the data-missing "
                     "alarm expects no GPU and stays OK when their metrics stop",
                     "the agent publishes a node's nvidia.com/gpu capacity when it is not 0: check that the NVIDIA "
                     "device plugin advertises nvidia.com/gpu on the GPU nodes")
    if NODE_GPU_LIMIT not in found:
        return Check(GROUP, name, WARN, f"no {NODE_GPU_LIMIT} [{CLUSTER}] in the last 3 h: no GPU node is counted "
                     "(a GPU node group at zero is OK)", "")
    if not _exporter_daemonset_counted(cloudwatch, cluster, options):
        return Check(GROUP, name, WARN, f"no DaemonSet pod counts [{', '.join(WORKLOAD_SET)}] in {NAMESPACE} in the "
                     "last 3 h: the data-missing alarm cannot see the agent stop on one GPU node",
                     f"the add-on's leader publishes them with enhanced observability, which {built(ADDON_FILE)} "
                     "turns on: configure the add-on with it")
    return Check(GROUP, name, OK, f"{CLUSTER_NODE_COUNT}, {NODE_GPU_LIMIT} and DaemonSet pod counts arriving: the "
                 "data-missing alarm expects the GPUs the kubelet counts on the nodes the exporter runs on")


def _exporter_daemonset_counted(cloudwatch, cluster, options: Options) -> bool:
    """The leader publishes DaemonSet pod counts (under either name) with [ClusterName, Namespace, PodName]."""
    from ..container_insights_table import DAEMONSET_COUNTS, DAEMONSET_COUNTS_EARLIER, NAMESPACE, WORKLOAD_SET

    for metric in (DAEMONSET_COUNTS[0], DAEMONSET_COUNTS_EARLIER[0]):
        sets = _listed(cloudwatch, NAMESPACE, cluster, [CLUSTER_DIMENSION], {metric}, options, metric).get(metric, [])
        if sorted(WORKLOAD_SET) in sets:
            return True
    return False


def _all_mig(cloudwatch, namespace: str, cluster, declared: list[str], found: dict[str, list[list[str]]],
             options: Options) -> bool:
    """Whether the cluster's published metrics show MIG instances (a set naming MIG_PROFILE_LABEL) and no whole GPU
    (no series whose MIG_INSTANCE_LABEL the scrape job wrote "none"); without the per-instance dimension or the
    cluster's, no whole GPU cannot be told: False."""
    if not any(MIG_PROFILE_LABEL in names for listed in found.values() for names in listed):
        return False
    if MIG_INSTANCE_LABEL not in declared or CLUSTER_DIMENSION not in declared:
        return False
    whole = _listed(cloudwatch, namespace, cluster, declared, set(found), options,
                    values=((MIG_INSTANCE_LABEL, "none"),))
    return not whole


def _sample(names) -> list[str]:
    """The metrics looked for among `names`: the usual four (SAMPLE) where read, else the first four."""
    return [m for m in SAMPLE if m in names] or sorted(names)[:4]


def sampled_metrics(project: Project, used, reads: dict[str, dict[str, set[tuple[str, ...]]]]) \
        -> dict[str, list[str]]:
    """{cluster name: the DCGM metrics looked for in it}: those its agent publishes, sampled (_sample): the DCGM fields
    its own widgets and alarms read (render/cloudwatch.reads_by_cluster, as it reads them there: an alarm's rule's own
    condition where no GPU is split; artifacts.agents publishes those alone), with agent.metric_selection: all every
    field used (each is published then). `reads`: reads_by_cluster's."""
    settings = project.settings
    if settings.agent.metric_selection == "all":
        return {cluster.name: _sample(used) for cluster in settings.clusters}
    return {name: _sample([m for m in read if m in project.catalog]) for name, read in reads.items()}


def published_sets(project: Project, settings, sampled: dict[str, list[str]],
                   reads: dict[str, dict[str, set[tuple[str, ...]]]]) -> dict[str, list[list[str]]]:
    """{cluster name: the dimension sets its generated agent configuration publishes its `sampled` metrics with}: the
    per-pod and per-GPU sets and those derived from them (dimension_sets), and the sets its dashboards and alarms read besides (the
    data-missing alarm's per cluster, the idle alarm's per pod and GPU, ...), as render/agent.published gives them to
    the agent (artifacts.agents: what each cluster's own widgets and alarms read, `reads`: render/cloudwatch.
    reads_by_cluster's)."""
    from ..render.agent import published

    ordered = [sorted(d) for d in dimension_sets(settings)]  # the usual sets first, in their order
    worked: dict[tuple[int, tuple[str, ...]], list[list[str]]] = {}
    result = {}
    for name, queried in reads.items():
        metrics = tuple(sampled.get(name, ()))
        if (id(queried), metrics) not in worked:
            sets = {tuple(sorted(dims)) for dims, names in published(project.catalog, settings, queried).sets().items()
                    if any(m in names for m in metrics)}
            worked[id(queried), metrics] = ordered + [list(d) for d in sorted(sets - {tuple(d) for d in ordered})]
        result[name] = worked[id(queried), metrics]
    return result


def _cluster(cloudwatch, settings, cluster, metrics: list[str], declared_sets: list[list[str]],
             options: Options) -> Check:
    from ..container_insights import enabled

    if enabled(settings):
        return _addon_cluster(cloudwatch, cluster, options)
    namespace = settings.cloudwatch.namespace
    declared = sorted({d for dims in declared_sets for d in dims})
    found = _listed(cloudwatch, namespace, cluster, declared, set(metrics), options)
    name = f"{cluster.name} metrics"
    missing = [m for m in metrics if m not in found]
    wrong = sorted({", ".join(names) for listed in found.values() for names in listed if names not in declared_sets})
    if len(missing) == len(metrics):
        return Check(GROUP, name, FAIL, f"no DCGM metrics in {namespace} for {cluster.name} in the last 3 h",
                     f"apply {built(agent_file(cluster.name))} and check the cwagent-prometheus logs",
                     cause=NO_DATA)
    # DCGM does not report these on MIG instances and the agent's scrape job drops what the exporter writes there: a
    # cluster whose GPUs are all split into MIG instances publishes none of them, and is healthy — only where what is
    # published shows MIG instances and no whole GPU; elsewhere they are missing
    not_on_mig = [m for m in missing if m in MIG_UNSUPPORTED]
    if not_on_mig and not _all_mig(cloudwatch, namespace, cluster, declared, found, options):
        not_on_mig = []
    missing = [m for m in missing if m not in not_on_mig]
    if missing:
        return Check(GROUP, name, FAIL, f"missing in {namespace}: {', '.join(missing)}",
                     "check the agent's metric_selectors (gpudash verify's kube group shows the drift)")
    if wrong:
        return Check(GROUP, name, FAIL, f"published with dimensions [{'; '.join(wrong)}], declared "
                     f"{'; '.join('[' + ', '.join(d) + ']' for d in declared_sets)}",
                     "apply the generated agent ConfigMap, or set cloudwatch.dimensions to what is published")
    if not_on_mig:
        return Check(GROUP, name, WARN, f"{len(metrics) - len(not_on_mig)} sampled metrics arriving in {namespace}, "
                     f"no {', '.join(not_on_mig)} in the last 3 h: DCGM does not report it on MIG instances (the "
                     "agent's scrape job drops it there), so a cluster whose GPUs are all split into MIG instances "
                     "publishes none",
                     "nothing, when every GPU of the cluster is split into MIG instances; else check the agent's "
                     "metric_selectors (gpudash verify's kube group shows the drift)")
    return Check(GROUP, name, OK, f"{len(metrics)} sampled metrics arriving in {namespace}")
