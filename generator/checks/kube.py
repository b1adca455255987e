"""Kubernetes checks: exporter DaemonSet, GPU node coverage, Service, pod labels setting, counters
CSV, the CloudWatch agent and its ConfigMaps, the ServiceMonitor.

Objects are read through `clients.kube.Kube` as `Answer`s, so an object shaped unlike its API is a
failed check, not a crash."""

from __future__ import annotations

import functools
import json
import re
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple

import yaml

from .. import container_insights_table as ci, data_missing
from ..data_missing import exporter_labels_text
from ..catalog import load_counters, parse_counters
from ..container_insights import enabled as addon_source
from ..errors import InputError
from ..exporter_styles import (EXPORTER_LABELS, EXPORTER_PORT, STYLES, ExporterStyle, exporter_daemonset,
                               exporter_namespace, fleet_styles, is_exporter, named_daemonsets, several_daemonsets,
                               style_for)
from ..project import Project
from ..promql import LABEL_LOOKBACK_SCRAPES
from ..reading import yaml_loader
from ..settings import Cluster, Settings, rollout_percentage
from ..markers import (KUBERNETES_CLUSTERS, KUBERNETES_MANAGED_BY, KUBERNETES_PART, KUBERNETES_PROJECT,
                       KUBERNETES_SELECTOR, NO_PROJECT, part_noted)
from ..names import AGENT_CONFIGMAP, SCRAPE_CONFIGMAP, dashboard_configmap_name, shown
from ..build_folder import BUILD
from ..output import (ADDON_FILE, KUBECTL_APPLY, MANIFEST, PROMETHEUS_RULE_FILE, SERVICE_MONITOR_FILE, SIDECAR_FILE,
                      agent_file, built, gpudash_manifest)
from ..render.agent import AGENT_KEY, SCRAPE_KEY
from ..render.agent_otel import EXPORTER, FILTER, MIN_AGENT_VERSION, OTEL_KEY, READS_YAML_VERSION, RECEIVER, publishing
from ..resources import default_counters
from ..clients.answer import NOT_JSON, Answer, OddAnswer, json_value
from ..clients.kube import Kube, KubeAnswered, KubeRefused, for_run
from ..clients.options import Options
from .gpu_resources import (GPU_RESOURCE, MIG_RESOURCE_PREFIX, RESOURCE_NAMES_ENV, capacity, gpu_resources,
                            has_gpus, listed_names, lists_gpus, unattributed)
from .result import FAIL, NOT_DEPLOYED, OK, SKIP, UNREACHABLE, WARN, Check, cannot_tell, step, steps

GROUP = "kube"
AGENT_DEPLOYMENT = "cwagent-prometheus"
NO_GPU_NODE = "no GPU node now: none needs an exporter pod"  # "exporter pods ready" of a node group at zero
# Counters files that ship inside the exporter image and hold the operator's default set.
IMAGE_DEFAULTS = ("/etc/dcgm-exporter/dcp-metrics-included.csv", "/etc/dcgm-exporter/default-counters.csv")
# The checks that show the exporter, and the agent, deployed and ready (the publish preflight reads them).
COVERAGE_CHECK, PODS_READY = "GPU node coverage", "exporter pods ready"
EXPORTER_READY = ("exporter rollout", PODS_READY)
AGENT_READY = ("CloudWatch agent", f"ConfigMap {AGENT_CONFIGMAP}", f"ConfigMap {SCRAPE_CONFIGMAP}")
SCRAPE_READY = ("Prometheus scrape config",)
ADDON_AGENT, ADDON_EXPORTER, ADDON_COVERAGE = "add-on agent", "add-on DCGM exporter", "add-on GPU node coverage"
ADDON_READY = (ADDON_AGENT, ADDON_EXPORTER, ADDON_COVERAGE)


def checks(project: Project, options: Options) -> Iterator[Check]:
    kube = for_run(options)
    settings = project.settings
    nodes = _read_once(lambda: kube.listing("/api/v1/nodes", "Nodes"))
    if addon_source(settings):
        yield from addon_checks(kube, nodes)
        if data_missing.on_addon(project):
            yield from step(GROUP, ADDON_SHARING, _addon_sharing, kube, nodes)
        if not options.prometheus_in_use:
            return  # the add-on's own exporter feeds CloudWatch; the GPU operator's matters to Prometheus only
    configmap = agent_configmaps(kube, options, settings.agent.namespace)
    # The cluster this context is (--cluster, else the one its agent's config names): it matters only when the
    # clusters' exporters differ (deployment, namespace, DaemonSets)
    # (the same in every cluster: the first cluster's, which may be its clusters[].exporter settings)
    this, unknown = this_cluster(configmap, project, options.cluster)
    style, namespace = style_for(settings, this), exporter_namespace(settings, this)
    services = _read_once(lambda: _labelled_services(kube, namespace, style.pod_label))
    found: list[Answer] = []
    absent = ""  # the DaemonSet the settings name, where it is absent and the one exporter DaemonSet there is read
    if unknown:  # never judged by another cluster's DaemonSet: the one exporter DaemonSet there is read on
        yield from step(GROUP, DAEMONSET_CHECK, _unknown_daemonset, kube, settings, unknown, found)
        daemonset, style, namespace = _the_one_found(found, settings, style, namespace)
        name = daemonset.get("metadata.name", str) if daemonset is not None else ""
    else:
        name = exporter_daemonset(settings, this)
        what = f"DaemonSet {namespace}/{name}"
        daemonset, refused = _read_unless_refused(kube, f"/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}", what)
        if refused is None:
            yield from step(GROUP, DAEMONSET_CHECK, _named_daemonset, kube, settings, daemonset, found, this, nodes)
        else:  # the checks that read it cannot tell, each naming the refusal; those that do not are made
            yield from (cannot_tell(GROUP, check, refused) for check in (DAEMONSET_CHECK, *EXPORTER_READY))
        if daemonset is None and len(found) == 1:  # the one exporter DaemonSet there: its checks are worth reading
            daemonset, name, absent = found[0], found[0].get("metadata.name", str), name
    if daemonset is None:  # refused, or none there: the Service and the ServiceMonitor, which need no DaemonSet
        yield from step(GROUP, "exporter Service", _service, services, namespace, style)
        if options.prometheus_in_use:
            yield from step(GROUP, SCRAPE_CHECK, _service_monitor, kube, services, project, style, namespace)
    else:
        yield from step(GROUP, "exporter rollout", _rollout, daemonset, namespace, name)
        if data_missing.expected(settings):
            yield from step(GROUP, ROLLOUT_STRATEGY, _rollout_strategy, daemonset, settings)
        if not addon_source(settings):
            yield from step(GROUP, ROLLOUT_OVERLAP, _rollout_overlap, ROLLOUT_OVERLAP, daemonset, settings)
        # the exporter DaemonSets the settings name (more_daemonsets' too); of a cluster that cannot be told, the one
        # read (another cluster's settings would look for its pods elsewhere)
        # (the one found in place of an absent DaemonSet the settings name stands for it: what its pods are is told
        # against the settings' style, not as a DaemonSet no setting names)
        named = ((namespace, name),) + (() if unknown else named_daemonsets(settings, this)[1:])
        namespaces = list(dict.fromkeys(ns for ns, _ in named))
        yield from steps(GROUP, (COVERAGE_CHECK, PODS_READY), _coverage, kube, nodes, namespaces, style, named,
                         settings, this, absent, daemonset)
        # the named DaemonSet's pods of another style than the settings say: the setting to write, not its Service's
        restyle = "" if unknown else _restyled(settings, this, daemonset, name)[1]
        yield from step(GROUP, "exporter Service", _service, services, namespace, style, restyle, daemonset)
        yield from step(GROUP, "pod labels setting", _exporter_settings("pod labels setting", _pod_labels), daemonset,
                        style)
        yield from step(GROUP, VIRTUAL_CHECK, _exporter_settings(VIRTUAL_CHECK, _virtual_gpus), daemonset, style,
                        settings.exporter.virtual_gpus)
        yield from step(GROUP, SLICED_CHECK, _exporter_settings(SLICED_CHECK, _sliced_gpus), daemonset, style, nodes)
        yield from step(GROUP, RESOURCE_NAMES_CHECK, _exporter_settings(RESOURCE_NAMES_CHECK, _resource_names),
                        daemonset, style, nodes)
        if data_missing.expected(settings) and not addon_source(settings):  # the add-on's counts nvidia.com/gpu alone
            yield from step(GROUP, COUNTED_CHECK, _counted_resources, daemonset, style, nodes, settings)
        yield from step(GROUP, "counters CSV", _exporter_settings("counters CSV", _counters), daemonset, style, kube,
                        project, namespace)
        if options.prometheus_in_use:
            yield from step(GROUP, SCRAPE_CHECK, _service_monitor, kube, services, project, style,
                            namespace, restyle)
        if options.prometheus_in_use and data_missing.expected(settings):
            alike = ("", "") if unknown or restyle else _styled_alike(settings, this, daemonset, name)
            yield from step(GROUP, CONTAINER_CHECK, _exporter_settings(CONTAINER_CHECK, _container_name), daemonset,
                            style, restyle, alike)
    if not unknown:  # the other exporter DaemonSets the settings name (exporter.more_daemonsets), each with its alarm
        yield from _more_rollouts(kube, settings, named_daemonsets(settings, this)[1:])
    if options.prometheus_in_use:
        yield from step(GROUP, RULES_CHECK, _prometheus_rules, kube, settings, _rule_object_names(project))
        yield from step(GROUP, MONITORS_CHECK, _service_monitors, kube, settings)
    yield from step(GROUP, DASHBOARDS_CHECK, _dashboard_configmaps, kube, project, published_anyway=DASHBOARDS_APART)
    if not addon_source(settings):
        yield from _agent_checks(kube, project, configmap, options.cluster)
    if data_missing.expected(settings) and (options.prometheus_in_use or not addon_source(settings)):
        yield from step(GROUP, KSM_CHECK, _kube_state_metrics, kube, settings)


DAEMONSET_CHECK = "exporter DaemonSet"
RULES_CHECK = "PrometheusRules of other settings"


def _rule_object_names(project: Project) -> frozenset[str]:
    """The names of the PrometheusRules the build writes (one per rule group: names.prometheus_rule_name)."""
    from ..names import prometheus_rule_name
    from .built import rule_groups

    return frozenset(prometheus_rule_name(group["name"]) for group in rule_groups(project)["groups"])


def _prometheus_rules(kube: Kube, settings: Settings, names: frozenset[str]) -> Check:
    """Whether a live PrometheusRule of a name the build writes (`names`), in the namespace it writes them to, was
    applied from other settings: another project, or another settings file of this one with none of these clusters
    (the annotations render.scrape.publisher_annotations writes). Every settings file names its objects alike, so
    `kubectl apply` of this build would replace that one's rules: its alerts and recordings would stop, silently. One
    of gpudash's name form that the build does not write (gpudash-gpu-alerts-9 where it writes three) is not
    replaced by it, and not said to be."""
    namespace = settings.prometheus_stack.namespace or settings.exporter.namespace
    listed = _operator_objects(kube, "prometheusrules", "PrometheusRules", namespace)
    if listed is None:  # prometheus-operator's resources not served: no PrometheusRule here to replace
        return Check(GROUP, RULES_CHECK, OK, "the cluster serves no PrometheusRules (prometheus-operator not installed)")
    rules = built(PROMETHEUS_RULE_FILE)
    # one of gpudash's names without gpudash's label: a person's or another tool's, which applying the build replaces
    foreign = [f"{namespace}/{name}" for item in listed if not _gpudash_s(item)
               and (name := item.get("metadata.name", str)) in names]
    if foreign:
        their = "their" if len(foreign) > 1 else "its"
        return _not_gpudash_s_named(RULES_CHECK, foreign, rules, f"{their} rules stop being evaluated",
                                    "rename those PrometheusRules, or set prometheus_stack.namespace to a namespace "
                                    "the Prometheus reads PrometheusRules from where none is named so, and apply "
                                    f"{rules} there")
    items = [item for item in listed if _gpudash_s(item)]
    others: dict[Writer, list[str]] = {}
    unrecorded = []
    for item in items:
        name = item.get("metadata.name", str)
        writer = _writer(item, settings) if name in names else THESE
        if writer == UNRECORDED:
            unrecorded.append(f"{namespace}/{name}")
        elif writer != THESE:
            others.setdefault(writer, []).append(f"{namespace}/{name}")
    if others:
        said = "; ".join(f"{shown(names)} of {writer.said}" for writer, names in sorted(others.items()))
        clusters = {cluster.name for cluster in settings.clusters}
        apart = settings.shared_prometheus and all(clusters.isdisjoint(writer.clusters) for writer in others)
        fix = ("give these settings PrometheusRules of their own: set prometheus_stack.namespace to a namespace no "
               "other settings file writes to and the Prometheus reads PrometheusRules from (its ruleNamespaceSelector), "
               f"generate and apply {rules} there" if apart else
               "judge these clusters from one settings file: two settings' rules for one cluster on one Prometheus "
               "raise alerts of the same names and labels, which Alertmanager takes for one alert (each team would be "
               f"notified at the other's thresholds); put both's alarms in one project's definitions and apply only "
               f"its {rules} here")
        return Check(GROUP, RULES_CHECK, FAIL,
                     f"gpudash's PrometheusRules here were applied from other settings: {said}; these settings write "
                     f"objects of the same names, and applying {rules} replaces them: their alerts and recording rules "
                     "stop being evaluated", _renamed_first(others, fix, rules))
    if unrecorded:
        return Check(GROUP, RULES_CHECK, WARN,
                     f"{shown(unrecorded)} {'were' if len(unrecorded) > 1 else 'was'} applied by a gpudash that "
                     "recorded no settings: whether these settings applied them cannot be told, and applying "
                     f"{rules} replaces them",
                     f"if they hold other clusters' or other alarms' rules (kubectl get prometheusrules -n {namespace} "
                     f"-l {KUBERNETES_SELECTOR} -o yaml), give these settings their own "
                     f"prometheus_stack.namespace; else apply {rules}, which records these settings")
    return Check(GROUP, RULES_CHECK, OK, f"none in {namespace} was applied from other settings")


def _not_gpudash_s_named(check: str, names: list[str], file: str, lost: str, fix: str) -> Check:
    """The failure of live objects named as the build names its own that do not carry gpudash's label (a person's or
    another tool's): applying `file` replaces them, and `lost` (what of theirs then stops)."""
    are, them = ("are", "them") if len(names) > 1 else ("is", "it")
    return Check(GROUP, check, FAIL, f"{shown(names)} here {are} not gpudash's (no {KUBERNETES_SELECTOR} label: a "
                 f"person's or another tool's) and named as these settings name theirs: applying {file} replaces "
                 f"{them}, and {lost}", fix)


MONITORS_CHECK = "ServiceMonitors of other settings"


def _service_monitors(kube: Kube, settings: Settings) -> Check:
    """Whether a live ServiceMonitor of a name the build writes, where it writes it, was applied from other settings
    (as _prometheus_rules tells) and scrapes the exporter otherwise than this build's would: applying the build would
    change how the other settings' series are scraped (their interval, which the counters' recordings are evaluated
    at; the labels kept). One that scrapes alike is either build's; one of a gpudash that recorded no settings is
    taken for these settings' own (an upgrade changes its spec)."""
    from ..render.scrape import service_monitors

    objects: dict[str, dict[str, Any]] = {}
    for monitor in service_monitors(settings):
        objects.setdefault(monitor["metadata"]["namespace"], {})[monitor["metadata"]["name"]] = monitor["spec"]
    differing, writers, foreign = [], [], []
    for namespace, specs in objects.items():
        listed = _operator_objects(kube, "servicemonitors", "ServiceMonitors", namespace)
        if listed is None:
            return Check(GROUP, MONITORS_CHECK, OK, "the cluster serves no ServiceMonitors (prometheus-operator not "
                         "installed)")
        # one of the build's names without gpudash's label: a person's or another tool's, which applying replaces
        foreign += [f"{namespace}/{name}" for item in listed
                    if not _gpudash_s(item) and (name := item.get("metadata.name", str)) in specs]
        for item in (item for item in listed if _gpudash_s(item)):
            name = item.get("metadata.name", str)
            writer = _writer(item, settings) if name in specs else THESE
            live = _monitor(kube, namespace, name) if writer not in (THESE, UNRECORDED) else None
            keys = _differing(live.value.get("spec"), specs[name], "spec") if live is not None else []
            if keys:
                differing.append(f"{namespace}/{name} of {writer.said} ({shown(keys)} differ)")
                writers.append(writer)
    monitors = built(SERVICE_MONITOR_FILE)
    if foreign:
        return _not_gpudash_s_named(
            MONITORS_CHECK, foreign, monitors, "the exporter is then scraped as these settings say",
            f"if it is a ServiceMonitor of the exporter made by hand, delete it and apply {monitors} (two of them "
            "scrape every series twice); else rename it, or set prometheus_stack.namespace to a namespace the "
            f"Prometheus reads ServiceMonitors from where none is named so, and apply {monitors} there")
    if differing:
        return Check(GROUP, MONITORS_CHECK, FAIL,
                     f"a ServiceMonitor here was applied from other settings and scrapes the exporter otherwise: "
                     f"{'; '.join(differing)}; these settings write one of the same name, and applying {monitors} "
                     "replaces it: the other settings' panels and alarms then read series scraped as these say",
                     _renamed_first(writers, "make the two settings scrape alike (the same scrape.interval, labels "
                                    "and counters CSV), so that either build writes the ServiceMonitor as it is; a "
                                    "second one of the exporter, in another namespace, would scrape every series twice",
                                    monitors))
    return Check(GROUP, MONITORS_CHECK, OK, "none applied from other settings scrapes otherwise")


def _monitor(kube: Kube, namespace: str, name: str) -> Answer | None:
    """The ServiceMonitor `namespace/name` whole (the listing held its metadata alone); None where it is gone since."""
    what = f"ServiceMonitor {namespace}/{name}"
    monitor = kube.read(f"/apis/monitoring.coreos.com/v1/namespaces/{namespace}/servicemonitors/{name}", what)
    if monitor is not None and monitor.get("metadata.name", str) != name:
        raise OddAnswer(what, "metadata.name", monitor.get("metadata.name", str), f"{name!r}, the name asked for")
    return monitor


DASHBOARDS_CHECK = "dashboard ConfigMaps of other settings"
# Why a failure of DASHBOARDS_CHECK stops no publish: it is about `kubectl apply` of the dashboards' ConfigMaps, which
# a publish does not make
DASHBOARDS_APART = f"it concerns kubectl apply of {SIDECAR_FILE}, which publishing does not make"


def _built_dashboards(project: Project) -> tuple[list[str], dict[str, int]]:
    """The uids of the dashboards the build writes, each naming its ConfigMap for Grafana's sidecar
    (render.grafana_files.configmap), and {uid: how many dashboards it is cut into} of each dashboard defined. A
    dashboard too large for a ConfigMap is cut into parts, each named for its own uid (dashboard_parts), which only its
    rendering tells: the uids are read from the build in the default output folder where it was made from what these
    settings make (grafana_inputs.recorded_uids: the same gpudash, settings, counters CSV and definitions), else the
    dashboards are rendered."""
    from ..dashboard_parts import part_counts
    from ..grafana_inputs import defined_uids

    uids = _recorded_uids(project, Path(BUILD))
    if uids is None:
        from ..artifacts import grafana_uids

        uids = grafana_uids(project)
    return uids, part_counts(defined_uids(project), set(uids), project.settings.grafana.uid_prefix)


def _recorded_uids(project: Project, folder: Path) -> list[str] | None:
    """The uids of the Grafana dashboards the build in `folder` writes, as its manifest records them, where this
    gpudash made it from what `project` is made from (grafana_inputs.made_from); else None (no build there, another
    tool's, an older one, one of other settings, definitions or counters CSV)."""
    from .. import __version__
    from ..grafana_inputs import made_from

    manifest = gpudash_manifest(folder / MANIFEST)
    record = manifest.get("artifacts") if manifest is not None else None
    if manifest is None or manifest.get("generator") != f"gpudash {__version__}" or not isinstance(record, dict):
        return None
    uids = record.get("grafana")
    if not isinstance(uids, list) or not all(isinstance(uid, str) and uid for uid in uids) \
            or record.get("grafana_made_from") != made_from(project):
        return None
    return uids


DASHBOARD_PAGE = 500  # ConfigMaps a page of the check's reads scans at most: kubectl's --chunk-size


def _configmaps_named(kube: Kube, name: str) -> list[Answer]:
    """The ConfigMaps named `name` in every namespace, their metadata alone, every page read. One of another name is
    no answer to the query (something in front of the API server dropped it): never read as holding a build's name."""
    what = f"ConfigMaps named {name} in every namespace"
    found = kube.metadata("/api/v1/configmaps", what, {"fieldSelector": f"metadata.name={name}"}, DASHBOARD_PAGE)
    if found is None:
        raise OddAnswer(what, "", "404 Not Found", "a list (an empty one when there is none)")
    for item in found:
        if (named := item.get("metadata.name", str)) != name:
            where = f"{item.get('metadata.namespace', str, '')}/{named}"
            raise OddAnswer(what, f"{item.path}.metadata.name", named, f"{name!r}, the name asked for",
                            said=f"it lists {where}, which is not named {name}: the field selector asked for was not "
                                 "applied (something in front of the API server may drop the query)")
    return found


def _labelled_dashboard_configmaps(kube: Kube) -> list[Answer]:
    """The ConfigMaps carrying gpudash's label and the sidecar's (render.grafana_files.configmap: any gpudash's
    dashboard, of any settings), in every namespace, their metadata alone, every page read: one list. One without
    those labels is no answer to the query (something in front of the API server dropped the selector): never read as
    gpudash's."""
    from ..render.grafana_files import SIDECAR_LABEL

    selector = ",".join([*(f"{key}={value}" for key, value in KUBERNETES_MANAGED_BY.items()), SIDECAR_LABEL])
    what = f"ConfigMaps labelled {selector} in every namespace"
    found = kube.metadata("/api/v1/configmaps", what, {"labelSelector": selector}, DASHBOARD_PAGE)
    if found is None:
        raise OddAnswer(what, "", "404 Not Found", "a list (an empty one when there is none)")
    for item in found:
        if not (_gpudash_s(item) and SIDECAR_LABEL in item.string_map("metadata.labels")):
            where = f"{item.get('metadata.namespace', str, '')}/{item.get('metadata.name', str, '')}"
            raise OddAnswer(what, f"{item.path}.metadata.labels", item.string_map("metadata.labels"),
                            f"the labels {selector}",
                            said=f"it lists {where}, which does not carry the labels {selector}: the label selector "
                                 "asked for was not applied (something in front of the API server may drop the query)")
    return found


def _parts_no_longer_made(labelled: list[Answer], names: list[str], counts: dict[str, int],
                          project: Project) -> dict[str, list[tuple[str, str, int]]]:
    """{namespace: [(ConfigMap, its dashboard, its part number)]} of the ConfigMaps of `labelled` (gpudash's, for the
    sidecar) that these settings applied (their annotations: _writer) for a part beyond those a dashboard of theirs is
    cut into now (dashboard_parts.part_no_longer_made): the dashboard went from n parts to fewer by data alone (the
    counters CSV's fields, label names, clusters), and `kubectl apply` of the build leaves the part, which Grafana's
    sidecar goes on loading, with that build's queries. Only a name the build does not write, of a part of a dashboard
    it writes, on an object of gpudash's labels and of these settings: never a person's, nor another settings'."""
    from ..dashboard_parts import part_no_longer_made
    from ..names import dashboard_configmap_name

    written, prefix = set(names), project.settings.grafana.uid_prefix
    found: dict[str, list[tuple[str, str, int]]] = {}
    for item in labelled:
        name = item.get("metadata.name", str)
        if name in written or not name.endswith(suffix := dashboard_configmap_name("")) \
                or _writer(item, project.settings) != THESE:
            continue
        uid = name[:-len(suffix)]
        if (part := part_no_longer_made(uid, counts, prefix)) is not None and _applied_as_part(item, uid, part[1]):
            found.setdefault(item.get("metadata.namespace", str), []).append((name, *part))
    return {namespace: sorted(parts) for namespace, parts in sorted(found.items())}


def _applied_as_part(item: Answer, uid: str, number: int) -> bool:
    """Whether `item` is dashboard `uid` as part `number` of a dashboard gpudash cut into parts: its annotation says
    so (markers.KUBERNETES_PART, "k of n", written by the build on each part's ConfigMap, kept by server-side apply
    too), or what kubectl applied as it does (client-side apply's last-applied-configuration: its title ends ", part k
    of n", dashboard_parts._frame; the record of a build before that annotation). Its name alone is not: another
    settings file of the project sharing a cluster (these settings' by its annotations) may define a dashboard
    `<id>-2`, and these settings may have defined one and removed it. Without either (applied server-side by a build
    before the annotation, or edited since) or not a part: False, never named for deletion."""
    from ..dashboard_parts import part_said
    from ..last_applied import LAST_APPLIED
    from ..names import dashboard_configmap_key

    annotations = item.string_map("metadata.annotations")
    if (noted := part_noted(annotations.get(KUBERNETES_PART, ""))) is not None and noted[0] == number:
        return True
    text = annotations.get(LAST_APPLIED)
    try:
        applied = json.loads(text) if text else None
        data = applied.get("data") if isinstance(applied, dict) else None
        dashboard = data.get(dashboard_configmap_key(uid)) if isinstance(data, dict) else None
        model = json.loads(dashboard) if isinstance(dashboard, str) else None
    except ValueError:  # (a record edited by hand: no evidence)
        return False
    title = model.get("title") if isinstance(model, dict) and model.get("uid") == uid else None
    return (part := part_said(title)) is not None and part[0] == number


def _dashboard_configmaps(kube: Kube, project: Project) -> Check:
    """Whether a live ConfigMap named as this build's dashboard ConfigMaps (k8s/grafana-dashboards.yaml, for Grafana's
    sidecar), in any namespace, is not gpudash's (a person's or another tool's) or was applied from other settings (as
    _prometheus_rules tells, by the annotations render.grafana_files.configmap writes). Every settings file of the same
    grafana.uid_prefix names its dashboards' ConfigMaps alike: `kubectl apply` of this build where one is replaces it,
    and a Grafana sidecar reading both namespaces loads two dashboards of one uid.

    Looked for by name in every namespace (the build names none: it goes where `kubectl apply -n` puts it), labelled
    for the sidecar or not: `kubectl apply` replaces a ConfigMap of the name whatever its labels, and a team's own of
    that name (no sidecar label, no gpudash mark) is what it must not replace unsaid. One read per dashboard
    (fieldSelector metadata.name, in pages of DASHBOARD_PAGE, metadata alone: each of gpudash's carries a whole
    dashboard), not one listing of every ConfigMap's metadata: a big cluster holds thousands (a kube-root-ca.crt in
    every namespace, each item's metadata some 500 bytes with its managedFields), a build tens of dashboards, and the
    answers hold the ConfigMaps of those names alone. A user who may not list ConfigMaps at the cluster scope is told
    it was not judged, not warned: the check matters only to one who applies the file, and most publish through
    Grafana's API. A list cut short (a page's continue token refused) or an API error is a failure of this check: never
    the pages read taken for the whole list."""
    from ..render.grafana_files import SIDECAR_LABEL

    uids, counts = _built_dashboards(project)
    names = [dashboard_configmap_name(uid) for uid in uids]
    file = built(SIDECAR_FILE)
    listed: list[Answer] = []
    try:
        for name in names:
            listed += _configmaps_named(kube, name)
        stale = _parts_no_longer_made(_labelled_dashboard_configmaps(kube), names, counts, project)
    except KubeRefused as refused:
        return Check(GROUP, DASHBOARDS_CHECK, SKIP, f"not judged (it concerns kubectl apply of {file} alone): "
                     f"{refused.what}",
                     f"if you apply {file}, look first: kubectl get configmaps -n NAMESPACE --ignore-not-found "
                     f"{' '.join(names)} (each it lists there is replaced), or grant list on configmaps at the cluster "
                     "scope")
    except KubeAnswered as failed:  # (an API server's error, or a list cut short at a page: never read as none)
        return Check(GROUP, DASHBOARDS_CHECK, FAIL, "cannot tell whether a ConfigMap named as these settings' "
                     f"dashboards' is another's: {failed.what}", failed.hint or "run verify again", cause=UNREACHABLE)
    placed = sorted(((f"{item.get('metadata.namespace', str)}/{item.get('metadata.name', str)}", item)
                     for item in listed), key=lambda pair: pair[0])
    if foreign := [(where, item) for where, item in placed if not _gpudash_s(item)]:
        # (one labelled for the sidecar carries a dashboard; another, whatever a team keeps in it)
        dashboards = all(SIDECAR_LABEL in item.string_map("metadata.labels") for _, item in foreign)
        return _not_gpudash_s_named(DASHBOARDS_CHECK, [where for where, _ in foreign], f"{file} in that namespace",
                                    "the dashboard it carries is lost" if dashboards else "the data it holds is lost", (
            "rename that ConfigMap, or give these settings' dashboards other uids (grafana.uid_prefix), so that "
            f"their ConfigMaps are named otherwise; generate and apply {file}"))
    others: dict[Writer, list[str]] = {}
    unrecorded = []
    for where, item in placed:
        writer = _writer(item, project.settings)
        if writer == UNRECORDED:
            unrecorded.append(where)
        elif writer != THESE:
            others.setdefault(writer, []).append(where)
    if others:
        said = "; ".join(f"{shown(objects)} of {writer.said}" for writer, objects in sorted(others.items()))
        return Check(GROUP, DASHBOARDS_CHECK, FAIL,
                     f"gpudash's dashboard ConfigMaps were applied from other settings: {said}; these settings name "
                     f"theirs alike, and applying {file} in that namespace replaces them (their dashboards become "
                     "these settings'); in another, a Grafana sidecar reading both loads two dashboards of one uid",
                     _renamed_first(others, "give these settings' dashboards other uids (grafana.uid_prefix), so "
                                    f"that their ConfigMaps are named otherwise; generate and apply {file}", file))
    namespaces = sorted({item.get("metadata.namespace", str) for _, item in placed} | set(stale))
    if len(namespaces) > 1:  # (each of these settings', or of a gpudash that recorded none)
        # which namespace's parts are these settings' applies cannot be told (another settings file of the project
        # sharing a cluster may cut a dashboard otherwise there): parts named, none for deletion
        parts = "".join(f"; {namespace}/{name} (part {number} of {dashboard})" for namespace, found in stale.items()
                        for name, dashboard, number in found)
        return Check(GROUP, DASHBOARDS_CHECK, WARN,
                     f"these settings' dashboard ConfigMaps are applied in {len(namespaces)} namespaces "
                     f"({shown(namespaces)}: {shown([where for where, _ in placed])}{parts}): a Grafana sidecar "
                     "reading more than one of them loads two dashboards of one uid and writes both to one file, the "
                     "last it read shown (an older build's panels, where one copy is)",
                     f"delete the copies where no Grafana should read them (kubectl delete configmap -n NAMESPACE "
                     f"{' '.join(names)}), and apply {file} where one does; where each namespace feeds a Grafana of "
                     "its own, nothing to do")
    if stale:
        parts = [(f"{namespace}/{name}", dashboard, number) for namespace, found in stale.items()
                 for name, dashboard, number in found]
        said = "; ".join(f"{where} (part {number} of {dashboard}, now {_parts_said(counts[dashboard])})"
                         for where, dashboard, number in parts)
        return Check(GROUP, DASHBOARDS_CHECK, WARN,
                     f"these settings applied dashboard parts they no longer make: {said}. kubectl apply of {file} "
                     "leaves each, and Grafana's sidecar goes on loading it, with the queries of the build that made "
                     "it (a dashboard is cut into parts by its size: the counters CSV's fields, label names and "
                     "clusters change their number)",
                     "delete them: " + "; ".join(f"kubectl delete configmap -n {namespace} "
                                                 + " ".join(name for name, _, _ in found)
                                                 for namespace, found in stale.items()))
    if unrecorded:
        return Check(GROUP, DASHBOARDS_CHECK, WARN,
                     f"{shown(unrecorded)} {'were' if len(unrecorded) > 1 else 'was'} applied by a gpudash that "
                     f"recorded no settings: whether these settings applied them cannot be told, and applying {file} "
                     "in that namespace replaces them",
                     f"if they are these settings' dashboards, apply {file}, which records these settings; else give "
                     "these settings' dashboards other uids (grafana.uid_prefix)")
    return Check(GROUP, DASHBOARDS_CHECK, OK, "none was applied from other settings" if placed else
                 "none is applied (in any namespace)")


def _parts_said(count: int) -> str:
    return "whole" if count == 1 else f"cut into {count}"


class Writer(NamedTuple):
    """Who applied a live object gpudash wrote, as its annotations say: `said` of other settings, '' these
    settings', UNRECORDED's where none is recorded; the clusters they name; whether their project is these settings'
    (another settings file of it, or these settings before every one of their clusters was renamed: the object
    cannot tell the two apart)."""
    said: str
    clusters: frozenset[str] = frozenset()
    same_project: bool = False


THESE, UNRECORDED = Writer(""), Writer("?")


def _writer(item: Answer, settings: Settings) -> Writer:
    """Who applied `item`: these settings (their project, and a cluster in common: one settings file of a project may
    drop or add clusters), other settings, or none recorded (a gpudash before render.scrape.publisher_annotations)."""
    notes = item.string_map("metadata.annotations")
    if KUBERNETES_PROJECT not in notes or KUBERNETES_CLUSTERS not in notes:
        return UNRECORDED
    project, named = notes[KUBERNETES_PROJECT], frozenset(filter(None, notes[KUBERNETES_CLUSTERS].split(",")))
    ours = settings.project or NO_PROJECT
    if project == ours and not named.isdisjoint(cluster.name for cluster in settings.clusters):
        return THESE
    # (an empty clusters annotation, edited by hand: nothing ties it to these settings' clusters, and it is said so)
    clusters = f"clusters {', '.join(sorted(named))}" if named else f"its {KUBERNETES_CLUSTERS} annotation names none"
    return Writer(("other settings naming no project" if project == ours == NO_PROJECT else
                   f"another settings file of project {project}" if project == ours else
                   "settings naming no project" if project == NO_PROJECT else f"project {project}")
                  + f" ({clusters})", named, project == ours)


def _renamed_first(writers, fix: str, file: str) -> str:
    """`fix`, after what to do where the other settings may be these before their clusters were renamed."""
    if any(writer.same_project for writer in writers):
        return f"if these settings renamed every one of those clusters since, apply {file}; else {fix}"
    return fix


def _operator_objects(kube: Kube, resource: str, what: str, namespace: str) -> list[Answer] | None:
    """The prometheus-operator objects of `resource` in `namespace`, their metadata alone (Kube.metadata: a
    kube-prometheus-stack namespace holds some 30 PrometheusRules of large specs, none of which the checks read); None
    where the API server serves no such resource (404: prometheus-operator not installed). All of them, not those of
    gpudash's label: one of the build's names without it (a person's) is what applying the build replaces."""
    items = kube.metadata(f"/apis/monitoring.coreos.com/v1/namespaces/{namespace}/{resource}", f"{what} in {namespace}")
    for item in items or ():  # one of another namespace is no answer (a cluster-wide listing in its place): never read
        # as this namespace's, holding one of the build's names here
        if (placed := item.get("metadata.namespace", str)) != namespace:
            raise OddAnswer(f"{what} in {namespace}", f"{item.path}.metadata.namespace", placed,
                            f"{namespace!r}, the namespace asked for")
    return items


def _gpudash_s(item: Answer) -> bool:
    """Whether a live object carries gpudash's label (KUBERNETES_MANAGED_BY)."""
    return KUBERNETES_MANAGED_BY.items() <= item.string_map("metadata.labels").items()


def _differing(live: Any, built_value: Any, path: str) -> list[str]:
    """Where `live` differs from `built_value`, read over what the build writes (a key the API server or
    prometheus-operator adds is not a difference)."""
    if isinstance(built_value, dict):
        if not isinstance(live, dict):
            return [path]
        return [where for key, value in built_value.items() for where in _differing(live.get(key), value, f"{path}.{key}")]
    if isinstance(built_value, list):
        if not isinstance(live, list) or len(live) != len(built_value):
            return [path]
        return [where for index, (one, value) in enumerate(zip(live, built_value))
                for where in _differing(one, value, f"{path}[{index}]")]
    return [] if live == built_value else [path]


def _read_unless_refused(kube: Kube, path: str, what: str) -> tuple[Answer | None, Any]:
    """(the object, None); where RBAC refuses the read (403), (None, the refusal: clients.kube.KubeRefused)."""
    from ..clients.kube import KubeRefused

    try:
        return kube.read(path, what), None
    except KubeRefused as exc:
        return None, exc


def exporters_differ(settings: Settings) -> bool:
    """Whether the clusters' exporters differ: their deployment style (clusters[].exporter.deployment) or the exporter
    DaemonSets they name (clusters[].exporter.namespace, .daemonset, .more_daemonsets)."""
    return len({(style_for(settings, c).key, named_daemonsets(settings, c)) for c in settings.clusters}) > 1


def this_cluster(configmap: Callable[[str], Answer | None], project: Project,
                 chosen: str | None) -> tuple[Cluster | None, str]:
    """The entry of clusters whose exporter this kube context is judged by, with why it cannot be told (_this_cluster)
    where --cluster names it or the clusters' exporters differ; else the first cluster that writes its own exporter
    settings (None: none does, the global settings hold)."""
    if chosen is not None or exporters_differ(project.settings):
        return _this_cluster(configmap, project, chosen)
    return next((c for c in project.settings.clusters if c.exporter_daemonset or c.exporter_deployment
                 or c.exporter_namespace or c.exporter_more_daemonsets is not None), None), ""


def _unknown_daemonset(kube: Kube, settings: Settings, unknown: str, found: list[Answer]) -> Check:
    """The clusters name different exporter DaemonSets and which cluster this context is cannot be told: a warning
    naming them, never a judgement by one of them. `found` receives the exporter DaemonSets in the namespace."""
    namespaces = _clusters_namespaces(settings)
    namespace = ", ".join(namespaces)
    for each in namespaces:
        found += _exporter_daemonsets(kube, each)
    def of(cluster: Cluster) -> str:  # with exporter.more_daemonsets or namespaces apart, namespace/name of each
        if not several_daemonsets(settings) and len(namespaces) == 1:
            return exporter_daemonset(settings, cluster)
        return " + ".join(f"{ns}/{n}" for ns, n in named_daemonsets(settings, cluster))
    named = shown([f"{c.name}: {of(c)}" for c in settings.clusters])
    here = ", ".join(sorted(d.get("metadata.name", str) for d in found)) or "none"
    return Check(GROUP, DAEMONSET_CHECK, WARN,
                 f"{unknown}; the clusters name different exporter DaemonSets ({named}), so which is this "
                 f"cluster's is not judged; the exporter DaemonSets in {namespace} (labelled {exporter_labels_text()})"
                 f": {here}", CLUSTER_FIX)


CLUSTER_FIX = "pass --cluster NAME (the entry of clusters this kube context is)"


def _clusters_namespaces(settings: Settings) -> list[str]:
    """The clusters' exporter namespaces: where a cluster that cannot be told has its exporter DaemonSet."""
    return list(dict.fromkeys(exporter_namespace(settings, c) for c in settings.clusters))


def _named_daemonset(kube: Kube, settings: Settings, daemonset: Answer | None, found: list[Answer],
                     cluster: Cluster | None = None, nodes: Callable[[], list[Answer]] | None = None) -> list[Check]:
    """The DaemonSet exporter.daemonset (or `cluster`'s clusters[].exporter.daemonset, or the deployment) names is an
    exporter DaemonSet, labelled as the data-missing rule finds one (exporter_styles.EXPORTER_LABELS), and the only one
    in its namespace but those exporter.more_daemonsets lists, each of which is there; else the exporter DaemonSets
    are named with the setting to write (the CloudWatch agent reads kube-state-metrics' counts of the named ones only).
    `found` receives the exporter DaemonSets in the namespace that no setting names."""
    namespace, name = exporter_namespace(settings, cluster), exporter_daemonset(settings, cluster)
    deployment = style_for(settings, cluster).key
    named = named_daemonsets(settings, cluster)  # and exporter.more_daemonsets: each read by its own alarm
    found += [d for d in _exporter_daemonsets(kube, namespace) if (namespace, d.get("metadata.name", str)) not in named]
    names = sorted(d.get("metadata.name", str) for d in found)
    others = ", ".join(names)
    if cluster and cluster.exporter_daemonset:
        setting = f"cluster {cluster.name}'s exporter.daemonset"
    elif settings.exporter.daemonset and deployment == settings.exporter.deployment:
        setting = "exporter.daemonset" + (f", cluster {cluster.name}" if cluster else "")
    else:
        setting = f"exporter.daemonset unset: {deployment}'s name"
    labels = exporter_labels_text()
    alarm = data_missing.expected(settings) and not addon_source(settings)
    place = f" (in cluster {cluster.name}'s entry of clusters)" if cluster else ""
    write = (f"write exporter.daemonset: {names[0]}{place}{' (or another of them)' if len(names) > 1 else ''} in "
             "gpudash.yaml, generate and apply again" + (
                 " (the CloudWatch agent reads kube-state-metrics' counts of that DaemonSet for the data-missing "
                 "alarm, which stays in ALARM without them)" if alarm else "")) if names else ""
    if daemonset is None and names:
        # the one there, of another deployment style than the settings say: the style to write, not only its name
        restyled, restyle = _restyled(settings, cluster, found[0], names[0]) if len(found) == 1 else ("", "")
        return [Check(GROUP, DAEMONSET_CHECK, FAIL, f"no DaemonSet {namespace}/{name} ({setting}); the exporter "
                      f"DaemonSet{'s' if len(names) > 1 else ''} in {namespace} (labelled {labels}): {others}"
                      + (f"; {restyled}" if restyled else ""), restyle or write)]
    if daemonset is None:
        from ..clients.kube import KubeRefused

        try:
            styled = _exporters_by_style(kube)
        except KubeRefused as exc:
            # absent where the settings say is known (the namespace's reads answered); elsewhere cannot be looked for
            return [Check(GROUP, DAEMONSET_CHECK, FAIL, f"no DaemonSet {namespace}/{name} ({setting}), and none in "
                          f"{namespace} labelled {labels}; exporter DaemonSets in other namespaces could not be looked "
                          f"for: the Kubernetes API refused listing DaemonSets in every namespace ({exc.status})",
                          "point exporter.namespace and exporter.daemonset at the DCGM exporter's DaemonSet, or "
                          f"install it ({deployment}); or grant the kubeconfig user list on daemonsets in every "
                          "namespace (a ClusterRole) to have it looked for")]
        elsewhere = sorted(styled)
        if elsewhere:
            where, _, other = elsewhere[0].partition("/")
            found_styles = styled[elsewhere[0]]
            if deployment not in {s.key for s in found_styles.styles} and len(settings.clusters) > 1:
                # another deployment style than the settings say: the cluster's own exporter settings to write
                written = {"deployment": found_styles.keys, "namespace": where,
                           **({"daemonset": other} if any(other != s.daemonset for s in found_styles.styles) else {})}
                entry = f"cluster {cluster.name}'s entry of clusters" if cluster else "this cluster's entry of clusters"
                known = found_styles.known
                why = (f"its exporter is the {known.key} style's, labelled {'='.join(known.pod_label)}" if known else
                       f"its exporter is {found_styles.unknown()}")
                write_fix = (f"write exporter: {{{', '.join(f'{k}: {v}' for k, v in written.items())}}} in {entry} "
                             f"(clusters[].exporter: {why}, not {deployment}'s)")
            else:
                write_fix = f"write exporter.namespace: {where} and exporter.daemonset: {other}"
            return [Check(GROUP, DAEMONSET_CHECK, FAIL, f"no DaemonSet {namespace}/{name} ({setting}), and none in "
                          f"{namespace} labelled {labels}; exporter DaemonSets elsewhere: {', '.join(elsewhere)}",
                          f"{write_fix}{' (or another of them)' if len(elsewhere) > 1 else ''} in gpudash.yaml, "
                          "generate and apply again")]
        own_names = settings.exporter.resource_names
        if deployment == "gpu-operator" and nodes is not None and not any(lists_gpus(n, own_names) for n in nodes()):
            # the GPU operator creates no DaemonSet while no node carries its GPU labels (data_missing.NODES)
            return [Check(GROUP, DAEMONSET_CHECK, WARN, f"no DaemonSet {namespace}/{name} ({setting}), and none in any "
                          f"namespace labelled {labels}; no node lists a GPU resource ({GPU_RESOURCE}, "
                          f"{GPU_RESOURCE}.*, {MIG_RESOURCE_PREFIX}*{_named_too(settings)}): the GPU operator creates its exporter DaemonSet when the first GPU "
                          "node joins (no GPU data is missing until then)",
                          "nothing to do until a GPU node joins, where the GPU operator is installed (`kubectl get "
                          "clusterpolicies`); run verify again once one has")]
        return [Check(GROUP, DAEMONSET_CHECK, FAIL, f"no DaemonSet {namespace}/{name} ({setting}), and none in any "
                      f"namespace labelled {labels}",
                      f"install the DCGM exporter ({deployment}), or set exporter.deployment, "
                      "exporter.namespace and exporter.daemonset in gpudash.yaml", cause=NOT_DEPLOYED)]
    if not is_exporter(daemonset.string_map("metadata.labels")):
        return [Check(GROUP, DAEMONSET_CHECK, FAIL if alarm or names else WARN,
                      f"DaemonSet {namespace}/{name} ({setting}) is not labelled as a DCGM exporter ({labels})"
                      + (f"; the exporter DaemonSets in {namespace}: {others}" if names else ""),
                      write or f"label the exporter DaemonSet {labels} (the data-missing rule finds exporter "
                               "DaemonSets by these labels, and reads none without them), or point exporter.daemonset "
                               "at the exporter's")]
    everywhere, unlisted = _exporters_readable(kube, named)
    abroad = [d for d in everywhere if not d.startswith(f"{namespace}/") and tuple(d.split("/", 1)) not in named]
    more = [f"{ns}/{n}" for ns, n in named[1:]]
    absent = [d for d in more if d not in everywhere]
    if absent:
        return [Check(GROUP, DAEMONSET_CHECK, FAIL if alarm else WARN,
                      f"no exporter DaemonSet (labelled {labels}) {', '.join(absent)}, which exporter.more_daemonsets"
                      + (f" (cluster {cluster.name})" if cluster else "") + " names"
                      + (": the data-missing alarm of each reads no counts and stays in ALARM" if alarm else "")
                      + (f"; exporter DaemonSets there are: {', '.join(everywhere)}" if everywhere else ""),
                      "write exporter.more_daemonsets (or the cluster's clusters[].exporter.more_daemonsets) as "
                      "namespace/name of the exporter DaemonSets beside exporter.daemonset, generate and apply again")]
    warnings, fixes = ([unlisted], [f"grant the kubeconfig user list on daemonsets in every namespace (a ClusterRole) "
                                    "to have them looked for"]) if unlisted else ([], [])
    if names and alarm:
        warnings.append(f"exporter DaemonSets in {namespace}: {name} ({setting}) and {others}: the CloudWatch "
                        f"data-missing alarms read kube-state-metrics' counts of {_shown_named(named)} only, so an "
                        f"exporter pod gone from a node of {others} is not seen there (the Prometheus rule reads each)")
        fixes.append(f"name them in exporter.more_daemonsets ({others}), generate and apply again: each gets its "
                     "data-missing alarm")
    if abroad:
        listed = ", ".join(abroad)
        warnings.append(
            f"exporter DaemonSets outside exporter.namespace ({namespace}): {listed}: the CloudWatch agent scrapes "
            f"exporter pods in {', '.join(dict.fromkeys(ns for ns, _ in named))} only" + (
                f", the CloudWatch data-missing alarms read kube-state-metrics' counts of {_shown_named(named)} only, "
                f"and the Prometheus data-missing rule reads every DaemonSet labelled {labels} in any namespace, "
                f"{namespace}/{name} and {listed} alike: the two forms judge different DaemonSets (an exporter pod "
                f"gone from a node of {abroad[0]} fires the rule, not the alarm)" if alarm else
                f": the GPUs of nodes only {listed} covers publish nothing to CloudWatch"))
        fixes.append(f"name {listed} in exporter.more_daemonsets (as namespace/name) when it runs on other GPU nodes "
                     "than the rest, generate and apply again; else run one DCGM exporter per GPU node: uninstall "
                     f"{listed}, or point exporter.namespace and exporter.daemonset at the one to keep and uninstall "
                     "the others")
    restyled, restyle = _restyled(settings, cluster, daemonset, name)
    own = style_for(settings, cluster).pod_label
    template = daemonset.string_map("spec.template.metadata.labels")
    if not restyled and template.get(own[0]) != own[1]:  # pods of no exporter label: none is kept or selected
        restyled = (f"it runs pods labelled {', '.join(f'{k}={v}' for k, v in sorted(template.items())) or 'nothing'}"
                    f", not {'='.join(own)} as exporter.deployment {deployment}'s are: the agent's exporter job keeps "
                    "pods, and the generated ServiceMonitor selects Services, by that label")
        restyle = _relabel_fix((namespace, name), style_for(settings, cluster))
    if restyled:
        return [Check(GROUP, DAEMONSET_CHECK, FAIL, f"DaemonSet {namespace}/{name} ({setting}): {restyled}"
                      + (f"; {'; '.join(warnings)}" if warnings else ""), "; ".join([restyle, *fixes]))]
    if warnings:
        return [Check(GROUP, DAEMONSET_CHECK, WARN, "; ".join(warnings), "; ".join(fixes))]
    return [Check(GROUP, DAEMONSET_CHECK, OK, f"{_shown_named(named)} labelled as a DCGM exporter")]


def _shown_named(named: tuple[tuple[str, str], ...]) -> str:
    """namespace/name of the exporter DaemonSets the settings name, joined."""
    return ", ".join(f"{ns}/{n}" for ns, n in named)


def _exporter_daemonsets(kube: Kube, namespace: str) -> list[Answer]:
    """The DaemonSets in `namespace` labelled as a DCGM exporter (exporter_styles.EXPORTER_LABELS)."""
    listed = kube.listing(f"/apis/apps/v1/namespaces/{namespace}/daemonsets", f"DaemonSets in {namespace}")
    return [d for d in listed if is_exporter(d.string_map("metadata.labels"))]


def _exporters_everywhere(kube: Kube) -> list[str]:
    """`namespace/name` of every DaemonSet labelled as a DCGM exporter (EXPORTER_LABELS), in any namespace, as the
    data-missing rule finds them: one label-selector read per label."""
    return sorted(_exporters_by_style(kube))


def _exporters_readable(kube: Kube, named: tuple[tuple[str, str], ...]) -> tuple[list[str], str]:
    """(_exporters_everywhere, ''); where RBAC refuses listing DaemonSets in every namespace (403), the exporter
    DaemonSets in the namespaces of those the settings name, and what could not be looked for."""
    from ..clients.kube import KubeRefused

    try:
        return _exporters_everywhere(kube), ""
    except KubeRefused as exc:
        namespaces = list(dict.fromkeys(ns for ns, _ in named))
        found = sorted(f"{ns}/{d.get('metadata.name', str)}" for ns in namespaces for d in _exporter_daemonsets(kube, ns))
        return found, (f"exporter DaemonSets outside {', '.join(namespaces)} could not be looked for: the Kubernetes "
                       f"API refused listing DaemonSets in every namespace ({exc.status}), so one there that no "
                       "setting names (the agent would not scrape it, the Prometheus rule would judge it) is not told")


def _exporters_by_style(kube: Kube) -> dict[str, Styled]:
    """{`namespace/name`: the deployment styles it may be of (_styled)} of every DaemonSet labelled as a DCGM
    exporter."""
    found = {}
    for key, value in EXPORTER_LABELS:
        for d in kube.listing("/apis/apps/v1/daemonsets", "DaemonSets in every namespace",
                              {"labelSelector": f"{key}={value}"}):
            found.setdefault(f"{d.get('metadata.namespace', str)}/{d.get('metadata.name', str)}", _daemonset_styled(d))
    return found


class Styled(NamedTuple):
    """The deployment styles an exporter object may be of, and the names of the containers it runs."""
    styles: tuple[ExporterStyle, ...]  # one: known; several: its labels and containers do not tell which
    containers: tuple[str, ...]

    @property
    def known(self) -> ExporterStyle | None:
        return self.styles[0] if len(self.styles) == 1 else None

    @property
    def keys(self) -> str:
        """exporter.deployment's value: the one known, else `<helm or static>`."""
        return self.styles[0].key if len(self.styles) == 1 else f"<{' or '.join(s.key for s in self.styles)}>"

    def unknown(self) -> str:
        """What is not known, and why: '' when the style is known."""
        if len(self.styles) < 2:
            return ""
        label = "=".join(self.styles[0].pod_label)
        return (f"labelled {label}, which both the {' and the '.join(s.key for s in self.styles)} styles write, and "
                f"running {', '.join(self.containers) or 'no container'}, none of their exporter containers "
                f"({', '.join(f'{s.key}: {s.container}' for s in self.styles)}): which of them it is cannot be told "
                "(helm where the dcgm-exporter chart installed it)")


CHART_LABEL, CHART = "helm.sh/chart", "dcgm-exporter-"  # the dcgm-exporter chart labels its objects dcgm-exporter-<version>


def _styled(labels: dict[str, str], containers: list[str], chart: str = "") -> Styled:
    """The deployment styles of an exporter object of `labels` running `containers`: those whose pod label it carries,
    narrowed to the one whose exporter container it runs when one does (the Helm chart and the static manifest share
    app.kubernetes.io/name=dcgm-exporter and differ by the container's name: exporter, dcgm-exporter), else to the
    chart's where `chart` (the object's helm.sh/chart label) says the dcgm-exporter chart installed it. Never a guess:
    where neither tells, both styles."""
    labelled = tuple(s for s in STYLES.values() if labels.get(s.pod_label[0]) == s.pod_label[1])
    running = tuple(s for s in labelled if s.container in containers)
    if len(running) != 1 and chart.startswith(CHART):
        running = tuple(s for s in labelled if s.key == "helm")
    return Styled(running if len(running) == 1 else labelled, tuple(containers))


def _daemonset_styled(daemonset: Answer) -> Styled:
    labels = daemonset.string_map("metadata.labels")
    return _styled(labels, [c.get("name", str, "") for c in daemonset.items("spec.template.spec.containers")],
                   labels.get(CHART_LABEL, ""))


def _pod_styled(pod: Answer) -> Styled:
    return _styled(pod.string_map("metadata.labels"), [c.get("name", str, "") for c in pod.items("spec.containers")])


def _the_one_found(found: list[Answer], settings: Settings, style: ExporterStyle,
                   namespace: str) -> tuple[Answer | None, ExporterStyle, str]:
    """(DaemonSet, style, namespace) to read where the cluster this context is cannot be told: the one exporter
    DaemonSet `found` in the clusters' exporter namespaces, read as what it is (its namespace; the style its labels
    and containers say, _styled, else the first of those the fleet uses), else none and `style`, `namespace`."""
    if len(found) != 1:
        return None, style, namespace
    styled = _daemonset_styled(found[0])
    fleet = [s for s in fleet_styles(settings) if s in styled.styles]
    return (found[0], styled.known or (fleet or list(styled.styles) or [style])[0],
            found[0].get("metadata.namespace", str) or namespace)


KSM_CHECK = "kube-state-metrics"


def _kube_state_metrics(kube: Kube, settings: Settings) -> Check:
    """The data-missing alarm's expected signal: a ready kube-state-metrics pod serving its port."""
    ksm = settings.kube_state_metrics
    namespace, port = ksm.namespace, ksm.port
    path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
    where = f"in {namespace}" if namespace else "in any namespace"
    pods = kube.listing(path, f"kube-state-metrics pods {where}", {"labelSelector": ksm.pod_label})
    fix = ("install kube-state-metrics (kube-prometheus-stack does) or point kube_state_metrics.namespace, "
           ".pod_label and .port at it; without it the data-missing alarm fires (it cannot tell whether GPUs "
           "should report): alarms.expected_gpus: none leaves that alarm out")
    if not pods:
        return Check(GROUP, KSM_CHECK, FAIL, f"no pod labelled {ksm.pod_label} {where}", fix, cause=NOT_DEPLOYED)
    serving = [pod for pod in pods if any(p.get("containerPort", int, 0) == port for c in pod.items("spec.containers")
                                          for p in c.items("ports"))]
    if not serving:
        return Check(GROUP, KSM_CHECK, FAIL, f"no kube-state-metrics pod {where} declares port {port}", fix)
    ready = [pod for pod in serving if _ready(pod)]
    if not ready:
        return Check(GROUP, KSM_CHECK, FAIL, f"kube-state-metrics not ready ({len(serving)} pod(s) {where})",
                     "kubectl describe the kube-state-metrics pod; look at its events and logs")
    names = ", ".join(sorted(f"{p.get('metadata.namespace', str, '?')}/{p.get('metadata.name', str, '?')}"
                             for p in ready))
    return Check(GROUP, KSM_CHECK, OK, f"{names} ready, port {port} (the data-missing alarm's expected signal)")


# --- cloudwatch.source: container-insights: the add-on's agent and DCGM exporter -------------

def addon_checks(kube: Kube, nodes: Callable[[], list[Answer]]) -> Iterator[Check]:
    """The add-on's agent and DCGM exporter DaemonSets rolled out and ready on every GPU node, and the
    exporter's Service the agent discovers by its label."""
    namespace = ci.ADDON_NAMESPACE
    for check, name in ((ADDON_AGENT, ci.AGENT_DAEMONSET), (ADDON_EXPORTER, ci.EXPORTER_DAEMONSET)):
        what = f"DaemonSet {namespace}/{name}"
        daemonset = kube.read(f"/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}", what)
        if daemonset is None:
            yield Check(GROUP, check, FAIL, f"no {what}",
                        f"install the {ci.ADDON_NAME} EKS add-on with {built(ADDON_FILE)} as its configuration values "
                        "(docs/container-insights.md)", cause=NOT_DEPLOYED)
            continue
        yield from step(GROUP, check, _named_rollout, check, daemonset, namespace, name)
    yield from step(GROUP, ADDON_COVERAGE, _addon_coverage, kube, nodes, namespace)
    yield from step(GROUP, "add-on exporter Service", _addon_service, kube, namespace)


def _named_rollout(check: str, daemonset: Answer, namespace: str, name: str) -> Check:
    return replace(_rollout(daemonset, namespace, name), name=check)


def _addon_coverage(kube: Kube, nodes: Callable[[], list[Answer]], namespace: str) -> Check:
    gpu_nodes = sorted(n.get("metadata.name", str) for n in nodes() if _gpu_count(n) > 0)
    if not gpu_nodes:
        return Check(GROUP, ADDON_COVERAGE, WARN, f"no node has {GPU_RESOURCE} capacity",
                     "install the NVIDIA device plugin on GPU nodes")
    problems = []
    for component, what in ((ci.AGENT_COMPONENT, "agent"), (ci.EXPORTER_COMPONENT, "DCGM exporter")):
        pods = kube.listing(f"/api/v1/namespaces/{namespace}/pods", f"{what} pods in {namespace}",
                            {"labelSelector": f"{ci.COMPONENT_LABEL}={component}"})
        ready = {pod.get("spec.nodeName", str, "") for pod in pods if _ready(pod)}
        missing = [node for node in gpu_nodes if node not in ready]
        if missing:
            problems.append(f"no ready {what} pod on {', '.join(missing)}")
    if problems:
        return Check(GROUP, ADDON_COVERAGE, FAIL, "; ".join(problems),
                     f"kubectl -n {namespace} get pods -o wide; the DCGM exporter runs only on nodes its "
                     "DaemonSet's affinity selects (GPU instance types)", cause=NOT_DEPLOYED)
    return Check(GROUP, ADDON_COVERAGE, OK, f"agent and DCGM exporter ready on all {len(gpu_nodes)} GPU nodes")


ADDON_SHARING = "add-on data-missing GPU count"
# GPU feature discovery's node labels: the GPUs (or MIG devices, MIG's single strategy) on the node, and the
# sharing strategy (time-slicing and MPS advertise each GPU as several nvidia.com/gpu unless renamed).
GPU_COUNT_LABEL, SHARING_LABEL, SHARED = "nvidia.com/gpu.count", "nvidia.com/gpu.sharing-strategy", ("time-slicing", "mps")
PRODUCT_LABEL = "nvidia.com/gpu.product"


def _addon_sharing(kube: Kube, nodes: Callable[[], list[Answer]]) -> Check:
    """The data-missing alarm on the add-on expects one DCGM observation per nvidia.com/gpu and collection: a node
    that advertises each GPU several times (time-slicing or MPS without renameByDefault) keeps it below 1 for good
    whenever a replica is free, so the alarm would fire with every GPU reporting; so does a node of MIG devices (the
    single strategy), whose GPU the add-on publishes once, and a GPU the mixed strategy splits beside whole GPUs,
    published but not counted, hides a GPU missing elsewhere (_mig_nodes)."""
    shared = _sharing_nodes(nodes())
    if shared:
        return Check(GROUP, ADDON_SHARING, FAIL,
                     "; ".join(shared) + ": the data-missing alarm expects one GPU per nvidia.com/gpu and would "
                     "stay in ALARM while any share is free",
                     "write alarms.expected_gpus: none (docs/alarms.md: GPU data missing)")
    split = _mig_nodes(nodes())
    if split:
        return Check(GROUP, ADDON_SHARING, FAIL,
                     "; ".join(split) + ": the per-GPU data-missing alarm expects one GPU per nvidia.com/gpu, and the "
                     "add-on publishes a GPU split into MIG instances once: the single strategy's instances keep it in "
                     "ALARM with every GPU reporting, the mixed strategy's GPUs hide a GPU missing elsewhere",
                     "write alarms.expected_gpus: none (docs/alarms.md: GPU data missing)")
    uncounted = _uncounted_exporter_nodes(kube, nodes())
    if uncounted:
        return Check(GROUP, ADDON_SHARING, FAIL,
                     "; ".join(uncounted) + ": the data-missing alarm counts such a node among the GPU nodes the "
                     "exporter DaemonSet runs on, but never among those reporting nvidia.com/gpu, and would stay in "
                     "ALARM", "install the NVIDIA device plugin where none counts the GPUs; for GPUs split into MIG "
                     "instances (either strategy) write alarms.expected_gpus: none (docs/alarms.md: GPU data missing)")
    return Check(GROUP, ADDON_SHARING, OK, f"no GPU node shares its GPUs as {GPU_RESOURCE} or splits them into MIG "
                 f"instances (as far as {SHARING_LABEL}, {GPU_COUNT_LABEL}, {PRODUCT_LABEL} and the nodes' "
                 f"capacity tell)")


def _sharing_nodes(nodes, listed: tuple[str, ...] = ()) -> list[str]:
    """The nodes that share their GPUs by time-slicing or MPS as several nvidia.com/gpu, or as several of a renamed
    resource the exporter lists (`listed`: its NVIDIA_RESOURCE_NAMES), each with why it is known."""
    shared = []
    for node in nodes:
        resources = {r: n for r, n in gpu_resources(node, listed).items()
                     if r == GPU_RESOURCE or (r in listed and not r.startswith(MIG_RESOURCE_PREFIX))}
        advertised = sum(resources.values())
        labels = node.get("metadata", dict).get("labels")
        labels = labels if isinstance(labels, dict) else {}
        count, strategy = str(labels.get(GPU_COUNT_LABEL, "")), str(labels.get(SHARING_LABEL, ""))
        if not advertised or not (strategy in SHARED or (count.isdigit() and advertised > int(count))):
            continue
        why = f"{SHARING_LABEL} {strategy}" if strategy in SHARED else f"{GPU_COUNT_LABEL} {count}"
        shared.append(f"{node.get('metadata.name', str)} advertises "
                      f"{', '.join(f'{n} {r}' for r, n in sorted(resources.items()))} ({why})")
    return shared


MIG_PRODUCT = "-MIG-"  # GPU feature discovery's product of a MIG device (MIG's single strategy): <GPU>-MIG-<profile>


def _mig_nodes(nodes) -> list[str]:
    """The nodes that advertise nvidia.com/gpu beside GPUs split into MIG instances: MIG devices themselves (the single
    strategy, as GPU feature discovery's nvidia.com/gpu.product names a MIG profile), or whole GPUs beside the mixed
    strategy's nvidia.com/mig-* (a node of the mixed strategy's alone is _uncounted_exporter_nodes'). The add-on
    publishes a split GPU's DCGM data once per collection, which the kubelet counts as its instances (single) or not
    at all (mixed): data_missing.MIG_SENTENCE."""
    result = []
    for node in nodes:
        resources = gpu_resources(node)
        if not resources.get(GPU_RESOURCE):
            continue
        labels = node.get("metadata", dict).get("labels")
        product = str((labels if isinstance(labels, dict) else {}).get(PRODUCT_LABEL, ""))
        mig = sorted(r for r in resources if r.startswith(MIG_RESOURCE_PREFIX))
        if MIG_PRODUCT in product:
            why = f"MIG devices ({PRODUCT_LABEL} {product}, MIG's single strategy)"
        elif mig:
            why = f"beside {', '.join(f'{resources[r]} {r}' for r in mig)} (MIG's mixed strategy)"
        else:
            continue
        result.append(f"{node.get('metadata.name', str)} advertises {resources[GPU_RESOURCE]} {GPU_RESOURCE} {why}")
    return result


def _uncounted_exporter_nodes(kube: Kube, nodes) -> list[str]:
    """Nodes the add-on's DCGM exporter runs on that advertise no nvidia.com/gpu: every GPU split by MIG's mixed
    strategy (nvidia.com/mig-* instead), or no device plugin. Their agent publishes no node_gpu_limit."""
    pods = kube.listing(f"/api/v1/namespaces/{ci.ADDON_NAMESPACE}/pods", f"DCGM exporter pods in {ci.ADDON_NAMESPACE}",
                        {"labelSelector": f"{ci.COMPONENT_LABEL}={ci.EXPORTER_COMPONENT}"})
    running = {pod.get("spec.nodeName", str, "") for pod in pods}
    result = []
    for node in nodes:
        name = node.get("metadata.name", str)
        if name not in running or _gpu_count(node):
            continue
        capacity = node.get("status", dict).get("capacity") or {}
        mig = sorted(k for k in capacity if isinstance(k, str) and k.startswith(MIG_RESOURCE_PREFIX))
        why = f"{', '.join(mig)} (MIG's mixed strategy)" if mig else "no device plugin counting its GPUs"
        result.append(f"{name} runs the add-on's DCGM exporter and advertises no {GPU_RESOURCE}: {why}")
    return result


def _addon_service(kube: Kube, namespace: str) -> Check:
    return _labelled_service(_labelled_services(kube, namespace, ci.EXPORTER_SERVICE_LABEL), namespace,
                             ci.EXPORTER_SERVICE_LABEL, "add-on exporter Service",
                             "the agent finds the DCGM exporter through it", "reinstall or update the add-on",
                             "restore the add-on's DCGM exporter Service")


def _labelled_services(kube: Kube, namespace: str, label: tuple[str, str]) -> dict[str, Answer]:
    """{name: the Service} of the Services in `namespace` labelled `label`."""
    key, value = label
    services = kube.listing(f"/api/v1/namespaces/{namespace}/services", f"Services in {namespace}",
                            {"labelSelector": f"{key}={value}"})
    return {service.get("metadata.name", str): service for service in services}


def _port_numbers(services: dict[str, Answer]) -> dict[str, list[int]]:
    return {name: [p.get("port", int) for p in service.items("spec.ports")] for name, service in services.items()}


def _labelled_service(services: dict[str, Answer], namespace: str, label: tuple[str, str], check: str,
                      why: str, create: str, expose: str) -> Check:
    """A Service labelled `label` in `namespace` (`services`, as _labelled_services reads them) exposes the exporter's
    port (found by its label, whatever its name: `why` it matters, `create` and `expose` the fixes)."""
    ports = _port_numbers(services)
    key, value = label
    if not ports:
        return Check(GROUP, check, FAIL, f"no Service labelled {key}={value} in {namespace}: {why}", create,
                     cause=NOT_DEPLOYED)
    serving = [name for name, exposed in ports.items() if EXPORTER_PORT in exposed]
    if not serving:
        listed = "; ".join(f"Service {name} exposes {exposed}" for name, exposed in ports.items())
        return Check(GROUP, check, FAIL, f"{listed}, not {EXPORTER_PORT}", expose)
    return Check(GROUP, check, OK, f"{', '.join(serving)} exposes {EXPORTER_PORT}")


def exporter_service(kube: Kube, namespace: str, style) -> str | None:
    """The Service to read an exporter through: labelled as the exporter's pods are (style.pod_label, which the
    generated ServiceMonitor selects) and exposing its port, the deployment's own name first (a Helm release's is
    <release>-dcgm-exporter); None when there is none."""
    serving = [name for name, ports in _port_numbers(_labelled_services(kube, namespace, style.pod_label)).items()
               if EXPORTER_PORT in ports]
    return min(serving, key=lambda name: (name != style.service, name), default=None)


def unready_service(kube: Kube, namespace: str, service: str) -> tuple[str, str] | None:
    """(what, fix) where the Service has no ready endpoint, as its EndpointSlices say (the API server's service proxy
    then answers 503 "no endpoints available"), or where they cannot be read, saying so; None where one is ready (a
    503 is then the API server's own)."""
    from ..clients.kube import KubeRefused

    where = f"Service {namespace}/{service}"
    look = f"kubectl -n {namespace} get endpointslices -l kubernetes.io/service-name={service}"
    try:
        slices = kube.listing(f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
                              f"EndpointSlices of Service {namespace}/{service}",
                              {"labelSelector": f"kubernetes.io/service-name={service}"})
    except KubeRefused as exc:
        return (f"the API server's proxy to {where} answered 503: the Service has no ready endpoint, or the API "
                f"server is unavailable; its EndpointSlices, which tell which, could not be read ({exc.status})",
                f"{look}, or grant the kubeconfig user list on endpointslices.discovery.k8s.io in {namespace}")
    endpoints = [e for s in slices for e in s.items("endpoints")]
    # conditions.ready: a null (unknown) readiness is read as ready, as the API documents
    ready = [e for e in endpoints if e.get("conditions.ready", bool, True)]
    port = _port_name(kube, namespace, service)
    # the proxy reads the endpoints of the Service port asked (9400), by its name: those of slices that list it
    if port is None or any(e.get("conditions.ready", bool, True) for s in slices
                           if port in [p.get("name", str, "") for p in s.items("ports")] for e in s.items("endpoints")):
        if ready:
            return None
    elif ready:
        pods = sorted(f"{e.get('targetRef.name', str, '?')} on {e.get('nodeName', str, '?')}" for e in ready)
        return (f"{where} has no endpoint for its port {EXPORTER_PORT}{f' ({port})' if port else ''}: its "
                f"{len(pods)} ready pod{'s' if len(pods) > 1 else ''} ({', '.join(pods)}) ha{'ve' if len(pods) > 1 else 's'}"
                " no port its targetPort names, so the API server has no exporter to read /metrics from (and "
                "Prometheus none to scrape through it)",
                f"the kube group's exporter Service check names the targetPort to set ({look})")
    if not endpoints:
        return (f"{where} has no endpoints: no running pod matches its selector, so the API server has no exporter "
                "to read /metrics from (and Prometheus none to scrape through it)",
                "the kube group's GPU node coverage and exporter pods ready say whether exporter pods run (none while "
                "a GPU node group is scaled to zero); where they do, make the Service's spec.selector match their "
                f"labels ({look})")
    # conditions.terminating: a pod being deleted (a rollout replacing it, a node drained), whatever its readiness
    ending = [e for e in endpoints if e.get("conditions.terminating", bool, False)]
    waiting = [e for e in endpoints if e not in ending]
    said = "; ".join(f"{_pods_said(group)} {verb}" for group, verb in (
        (waiting, "not ready"), (ending, "terminating (being deleted: by a rollout that replaces them, or a node drain)"))
        if group)
    fix = (f"kubectl -n {namespace} describe pod {waiting[0].get('targetRef.name', str, '<pod>')}; look at its events "
           f"and logs ({look})" if waiting else
           f"wait for the pods that replace them (kubectl -n {namespace} get pods -o wide), then verify again ({look})")
    return (f"{where} has no ready endpoints: its {said}, so the API server has no exporter to read /metrics from (and "
            "Prometheus none to scrape through it)", fix)


def _pods_said(endpoints: list[Answer]) -> str:
    """"exporter pod a on n1 is" / "2 exporter pods (a on n1, b on n2) are", as EndpointSlice endpoints name them."""
    pods = sorted(f"{e.get('targetRef.name', str, '?')} on {e.get('nodeName', str, '?')}" for e in endpoints)
    return (f"{len(pods)} exporter pods ({', '.join(pods)}) are" if len(pods) > 1 else
            f"1 exporter pod ({pods[0]}) is")


def _port_name(kube: Kube, namespace: str, service: str) -> str | None:
    """The name of the Service's port 9400 ('' unnamed); None where it has none or it cannot be read."""
    from ..clients.kube import KubeRefused

    try:
        found = kube.read(f"/api/v1/namespaces/{namespace}/services/{service}", f"Service {namespace}/{service}")
    except KubeRefused as exc:
        return None
    return next((p.get("name", str, "") for p in found.items("spec.ports") if p.get("port", int) == EXPORTER_PORT),
                None) if found is not None else None


def _rollout(daemonset: Answer, namespace: str, name: str) -> Check:
    """Rolled out as `kubectl rollout status daemonset` judges it: the controller has observed the DaemonSet's
    generation (else its counts are an earlier spec's), every scheduled pod runs the current template
    (updatedNumberScheduled), and every one is available (numberAvailable: ready for minReadySeconds). 0 of 0 is rolled
    out (a node group at zero). Under OnDelete, pods of an older template stay until deleted: a warning, not a
    rollout. The API leaves out observedGeneration, numberAvailable and updatedNumberScheduled when 0."""
    status = daemonset.at("status")
    desired = status.get("desiredNumberScheduled", int)
    ready = status.get("numberReady", int)
    available = status.get("numberAvailable", int, 0)
    updated = status.get("updatedNumberScheduled", int, 0)
    generation = daemonset.get("metadata.generation", int, 0)
    observed = status.get("observedGeneration", int, 0)
    on_delete = daemonset.at("spec.updateStrategy", required=False).get("type", str, "RollingUpdate") == "OnDelete"
    wait = f"kubectl -n {namespace} rollout status daemonset/{name}"
    cause = NOT_DEPLOYED if not available else ""
    if generation > observed:
        return Check(GROUP, "exporter rollout", FAIL,
                     f"rolling out: the DaemonSet controller has not yet observed generation {generation} (observed "
                     f"{observed or 'none'}), so its counts ({ready}/{desired} pods ready) are an earlier spec's",
                     f"wait for it: {wait}", cause=cause)
    if updated < desired and not on_delete:
        return Check(GROUP, "exporter rollout", FAIL,
                     f"rolling out: {updated} of {desired} pods run the current pod template, {available}/{desired} "
                     "available", f"wait for it: {wait}", cause=cause)
    if available < desired:
        return Check(GROUP, "exporter rollout", FAIL, f"{available}/{desired} pods available ({ready} ready), "
                     f"{updated} of {desired} on the current pod template",
                     f"{wait}; kubectl describe the exporter pods that are not ready", cause=cause)
    if updated < desired:  # OnDelete: the rest are replaced as they are deleted
        return Check(GROUP, "exporter rollout", WARN, f"{available}/{desired} pods available; {updated} of {desired} "
                     "run the current pod template (updateStrategy OnDelete: the others keep the older one until "
                     "they are deleted)", f"delete the exporter pods of the older template (kubectl -n {namespace} "
                     "delete pod ...) to replace them")
    return Check(GROUP, "exporter rollout", OK, f"{ready}/{desired} pods ready" + (
        "" if desired else " (no node the DaemonSet schedules on now: GPU node coverage says whether one lacks it)"))


ROLLOUT_STRATEGY = "exporter rollout strategy"


def _more_rollouts(kube: Kube, settings: Settings, more: tuple[tuple[str, str], ...]) -> Iterator[Check]:
    """Each other exporter DaemonSet (exporter.more_daemonsets) rolled out, and its maxUnavailable the one
    exporter.max_unavailable says (its data-missing alarm reads it so), as the first one's; one that is not there is
    the exporter DaemonSet check's failure."""
    for namespace, name in more:
        daemonset, refused = _read_unless_refused(kube, f"/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}",
                                                  f"DaemonSet {namespace}/{name}")
        check = f"exporter rollout {namespace}/{name}"
        if refused is not None:
            yield cannot_tell(GROUP, check, refused)
        if daemonset is None:
            continue
        yield from step(GROUP, check, _named_rollout, check, daemonset, namespace, name)
        if data_missing.expected(settings):
            check = f"{ROLLOUT_STRATEGY} {namespace}/{name}"
            yield from step(GROUP, check, _named_strategy, check, daemonset, settings)
        if not addon_source(settings):
            check = f"{ROLLOUT_OVERLAP} {namespace}/{name}"
            yield from step(GROUP, check, _rollout_overlap, check, daemonset, settings)


def _named_strategy(check: str, daemonset: Answer, settings: Settings) -> Check:
    return replace(_rollout_strategy(daemonset, settings), name=check)


def _max_unavailable(value: Any, source: str, path: str) -> int | str:
    """A DaemonSet's maxUnavailable (or maxSurge) as settings write it: pods (an int) or a percentage ("25%")."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if rollout_percentage(value):
        return 0 if value == "0%" else value  # no pods at any node count
    raise OddAnswer(source, path, value, "a number of pods or a percentage")


def _rollout_strategy(daemonset: Answer, settings: Settings) -> Check:
    """The exporter DaemonSet's RollingUpdate maxUnavailable is the one exporter.max_unavailable says: the data-missing
    alarm and rule read up to that many exporter pods unavailable during a rollout as the rollout's own
    (kube-state-metrics does not publish it, so only the DaemonSet tells). More deployed than set: every rollout pages;
    fewer: a pod lost during a rollout is hidden."""
    strategy = daemonset.at("spec.updateStrategy", required=False)
    kind = strategy.get("type", str, "RollingUpdate")
    written = settings.exporter.max_unavailable
    if kind == "OnDelete":
        return Check(GROUP, ROLLOUT_STRATEGY, OK, f"OnDelete: pods are replaced as they are deleted; the data-missing "
                     f"alarm reads up to {written} unavailable while updated pods move (exporter.max_unavailable)")
    if kind != "RollingUpdate":
        raise OddAnswer(daemonset.source, f"{daemonset.path}.spec.updateStrategy.type", kind,
                        "RollingUpdate or OnDelete")
    rolling = strategy.at("rollingUpdate", required=False)
    # The API server writes maxUnavailable 1 and maxSurge 0 where the manifest left them out (the DaemonSet defaults).
    where = f"{daemonset.path}.spec.updateStrategy.rollingUpdate"
    deployed = _max_unavailable(rolling.get("maxUnavailable", object, 1), daemonset.source, f"{where}.maxUnavailable")
    surge = _max_unavailable(rolling.get("maxSurge", object, 0), daemonset.source, f"{where}.maxSurge")
    both_zero = ""
    if deployed == 0 and surge == 0:
        # the DaemonSet controller reads maxUnavailable 1 where both are 0 (the API refuses the pair on writes; an
        # object stored otherwise still rolls out), one pod at a time
        deployed, both_zero = 1, " (maxUnavailable and maxSurge both 0: the DaemonSet controller rolls out with 1)"
    if str(deployed) == str(0 if written == "0%" else written):
        return Check(GROUP, ROLLOUT_STRATEGY, OK, f"RollingUpdate, maxUnavailable {deployed}{both_zero} as "
                     "exporter.max_unavailable says (the data-missing alarm's rollout allowance)")
    nodes = daemonset.get("status.desiredNumberScheduled", int, 0)
    if not nodes:  # a percentage and a number cannot be compared on no node; they are again once nodes come
        return Check(GROUP, ROLLOUT_STRATEGY, WARN,
                     f"the exporter DaemonSet rolls out with maxUnavailable {deployed}, gpudash.yaml says "
                     f"exporter.max_unavailable: {written}; no node runs the exporter now to tell whether they agree",
                     f"write exporter.max_unavailable: {_yaml_value(deployed)} in gpudash.yaml, generate and apply "
                     "again (or change the DaemonSet's updateStrategy)")
    deployed_pods, written_pods = _pods(deployed, nodes), _pods(written, nodes)
    fix = (f"write exporter.max_unavailable: {_yaml_value(deployed)} in gpudash.yaml, generate and apply again "
           "(or change the DaemonSet's updateStrategy)")
    if deployed_pods == written_pods:
        return Check(GROUP, ROLLOUT_STRATEGY, WARN,
                     f"the exporter DaemonSet rolls out with maxUnavailable {deployed}, gpudash.yaml says "
                     f"exporter.max_unavailable: {written}: the same {deployed_pods} pod(s) at today's {nodes} nodes, "
                     "not once the node count changes", fix)
    effect = ("a rollout's own unavailable pods as data missing" if deployed_pods > written_pods else
              "a pod lost during a rollout as the rollout's own (not data missing)")
    return Check(GROUP, ROLLOUT_STRATEGY, FAIL,
                 f"the exporter DaemonSet rolls out with maxUnavailable {deployed} ({deployed_pods} of {nodes} "
                 f"nodes){both_zero}, gpudash.yaml says exporter.max_unavailable: {written} ({written_pods}): the data-missing "
                 f"alarm and rule read {effect}", fix)


ROLLOUT_OVERLAP = "exporter rollout overlap"
# agent.pipeline classic: a pod's totals are every GPU reading of the period published per scrape, summed, so both
# exporter pods' readings count (tests/unit/test_cloudwatch_exporter_overlap.py, the JSON path's pod totals)
_CLASSIC_TOTALS_TWICE = ("; on agent.pipeline classic each pod's totals (framebuffer used, power draw and PCIe "
                         "traffic by pod) and the GPUs \"Pods on GPUs\" counts read twice their value too")


def _rollout_overlap(check: str, daemonset: Answer, settings: Settings) -> Check:
    """Whether a rollout runs a node's old and new exporter pods at once (RollingUpdate with maxSurge above 0: the new
    pod starts first, the old one is deleted once the new one is available). The CloudWatch agent publishes a
    counter's increase per exporter pod revision (the OTel pipeline; the JSON path per exporter pod): while both run,
    both pods' increases are published, so counter widgets and alarms read the seconds the two run together twice.
    Every reading of either pod is an observation, so a gauge's mean weighs the overlap twice (a period the two share
    in part: tests/unit/test_cloudwatch_overlap_gauge_weights.py); a Prometheus rule's reads the copy read 10 minutes
    before alone, but both where neither was (tests/integration/test_prometheus_overlap_gauge_weights.py). On the JSON
    path a pod's totals are sums of every GPU reading published per scrape, so they read twice too."""
    strategy = daemonset.at("spec.updateStrategy", required=False)
    kind = strategy.get("type", str, "RollingUpdate")
    if kind == "OnDelete":
        return Check(GROUP, check, OK, "OnDelete: a node's exporter pod is replaced once deleted, never beside it")
    if kind != "RollingUpdate":
        raise OddAnswer(daemonset.source, f"{daemonset.path}.spec.updateStrategy.type", kind,
                        "RollingUpdate or OnDelete")
    where = f"{daemonset.path}.spec.updateStrategy.rollingUpdate.maxSurge"
    surge = _max_unavailable(strategy.at("rollingUpdate", required=False).get("maxSurge", object, 0),
                             daemonset.source, where)
    if not surge:
        return Check(GROUP, check, OK, "RollingUpdate, maxSurge 0: a node's new exporter pod starts after the old one "
                     "stops, so no rollout's counter increase is published twice")
    classic = settings.agent.pipeline == "classic"
    series = "pod" if classic else "revision"
    return Check(GROUP, check, WARN,
                 f"RollingUpdate with maxSurge {surge}: a rollout runs a node's new exporter pod beside the old one "
                 "until the new one is available, and the CloudWatch agent publishes both pods' counter increases "
                 f"(one delta series per exporter {series}): for the seconds the two run together the counter "
                 "widgets and alarms (energy, PCIe replays, rows remapped) read twice the increase, so a "
                 "counter alarm can fire at half its threshold during a rollout; a gauge's mean over a period the "
                 "two share in part weighs their overlap twice (a GPU at 100 W through a two-minute overlap, then "
                 "300 W, read 171.4 W for 220; the Prometheus rules of a gauge's mean or total over a period read "
                 "the old pod alone there, 220, but where neither pod was read 10 minutes before, as in a second "
                 "rollout within 10 minutes: 185.7 W for 220)" + _CLASSIC_TOTALS_TWICE * classic,
                 "set the exporter DaemonSet's updateStrategy.rollingUpdate.maxSurge to 0 (and maxUnavailable to 1 "
                 "or more); each node's counters then lose only the increase between the old pod's last reading "
                 "and the new pod's first (docs/cloudwatch.md, \"Two exporter pods on one node\"; docs/alarms.md)")


def _pods(allowance: int | str, nodes: int) -> int:
    """The pods an allowance keeps unavailable at `nodes` nodes: a percentage scaled and rounded up, as the DaemonSet
    controller does."""
    return allowance if isinstance(allowance, int) else -(-nodes * int(allowance[:-1]) // 100)


def _yaml_value(value: int | str) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def _gpu_count(node: Answer) -> int:
    """The node's nvidia.com/gpu (the add-on's agent counts that resource alone)."""
    return gpu_resources(node).get(GPU_RESOURCE, 0)


def _named_too(settings: Settings) -> str:
    named = settings.exporter.resource_names
    return f", nor {', '.join(named)} (exporter.resource_names)" if named else ""


def _coverage(kube: Kube, nodes: Callable[[], list[Answer]], namespaces: list[str], style,
              named: tuple[tuple[str, str], ...], settings: Settings, cluster: Cluster | None,
              absent: str = "", first: Answer | None = None) -> list[Check]:
    """Every GPU node runs a ready exporter pod the scrape jobs keep, in the namespaces of the exporter DaemonSets the
    settings name (`named`): one of the deployment's pod label, or one of a DaemonSet exporter.more_daemonsets lists,
    whatever its label (render/scrape.exporter_pods_rule keeps those by their owner). Pods of another label are listed
    only where a GPU node has none of the first kind: those of the first DaemonSet named (`named[0]`) are of another
    deployment style than the settings say (exporter.deployment is the setting to write), the others' of a DaemonSet
    no setting names (exporter.more_daemonsets is). `absent`: the name the settings give, where that DaemonSet is
    absent and `named[0]` is the one exporter DaemonSet found in its place; `first`: that DaemonSet, whose pods are
    listed by its pod template's labels where those are of no exporter (read by none of EXPORTER_LABELS)."""
    def listed(label: tuple[str, str]) -> list[Answer]:
        return [pod for namespace in namespaces for pod in kube.listing(
            f"/api/v1/namespaces/{namespace}/pods", f"exporter pods in {namespace}",
            {"labelSelector": f"{label[0]}={label[1]}"})]
    from ..clients.kube import KubeRefused

    try:
        gpu_nodes = sorted(n.get("metadata.name", str) for n in nodes() if has_gpus(n, settings.exporter.resource_names))
    except KubeRefused as refused:  # which nodes have GPUs is not known; whether the exporter pods the scrape jobs
        # keep are ready is: the deployment's label, and the DaemonSets exporter.more_daemonsets names of another one
        kept = {(pod.get("metadata.namespace", str, ""), pod.get("metadata.name", str, "")): pod
                for pod in listed(style.pod_label)}
        for label in (label for label in EXPORTER_LABELS if label != style.pod_label):
            kept.update(((pod.get("metadata.namespace", str, ""), pod.get("metadata.name", str, "")), pod)
                        for pod in listed(label) if _owner(pod) in named[1:])
        return _ready_without_nodes(list(kept.values()), refused)
    by_node: dict[str, list[Answer]] = {}

    def place(pods: list[Answer]) -> None:
        for pod in pods:  # a node may run two exporter pods for a while (a rolling update that surges)
            if node := pod.get("spec.nodeName", str, ""):
                by_node.setdefault(node, []).append(pod)
    place(listed(style.pod_label))
    unkept: dict[str, Answer] = {}  # a GPU node's exporter pod of another label, of a DaemonSet no setting names
    if any(n not in by_node for n in gpu_nodes):
        for label in (label for label in EXPORTER_LABELS if label != style.pod_label):
            others = listed(label)
            place([pod for pod in others if _owner(pod) in named[1:]])
            unkept.update((pod.get("spec.nodeName", str, ""), pod) for pod in others if _owner(pod) not in named[1:])
        selector = first.string_map("spec.template.metadata.labels") if first is not None else {}
        if selector and not _styled(selector, []).styles:
            unkept.update((pod.get("spec.nodeName", str, ""), pod) for pod in kube.listing(
                f"/api/v1/namespaces/{named[0][0]}/pods", f"pods of DaemonSet {'/'.join(named[0])}",
                {"labelSelector": ",".join(f"{k}={v}" for k, v in sorted(selector.items()))})
                if _owner(pod) == named[0] and pod.get("spec.nodeName", str, "") not in by_node)
    uncovered = [n for n in gpu_nodes if n not in by_node]
    unscraped = [n for n in uncovered if n in unkept]
    uncovered = [n for n in uncovered if n not in unkept]
    serving = {node for node, on_node in by_node.items() if any(_ready(pod) for pod in on_node)}
    not_ready = sorted(node for node in by_node if node in gpu_nodes and node not in serving)
    result = []
    if not gpu_nodes:
        result.append(Check(GROUP, "GPU node coverage", WARN, f"no node has {GPU_RESOURCE} capacity (nor "
                            f"{GPU_RESOURCE}.* or {MIG_RESOURCE_PREFIX}*{_named_too(settings)})", "none while the GPU node group is scaled to zero; otherwise install the NVIDIA device "
                            "plugin (the GPU operator does) on GPU nodes"))
    elif unscraped:
        restyled = [n for n in unscraped if _owner(unkept[n]) == named[0]]  # the named DaemonSet's, of another style

        def said(node: str) -> str:
            pod = unkept[node]
            labels = pod.string_map("metadata.labels")
            label = next((f"{k}={v}" for k, v in EXPORTER_LABELS if labels.get(k) == v), None) or \
                ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "nothing"
            owner = _owner(pod)
            which = (f"the one exporter DaemonSet in {named[0][0]}, there in place of {absent}, which the settings "
                     "name" if absent else "the exporter DaemonSet the settings name")
            named_as = (f"{which}, labelled {label}, not {'='.join(style.pod_label)} "
                        f"as exporter.deployment {style.key}'s pods are" if node in restyled else
                        f"labelled {label}, not {'='.join(style.pod_label)}, and not a DaemonSet the settings name")
            return (f"{node} ({pod.get('metadata.namespace', str)}/{pod.get('metadata.name', str)} of "
                    f"{'DaemonSet ' + '/'.join(owner) if owner else 'no DaemonSet'}, {named_as})")
        owners = list(dict.fromkeys("/".join(_owner(unkept[n])) for n in unscraped
                                    if _owner(unkept[n]) and n not in restyled))
        styled = _pod_styled(unkept[restyled[0]]) if restyled else None
        fixes = ([_deployment_fix(settings, cluster, styled, named[0][1]) if styled.styles else
                  _relabel_fix(named[0], style)] if styled else [])
        if len(restyled) < len(unscraped):
            fixes.append(f"name {', '.join(owners) or 'its DaemonSet'} in exporter.more_daemonsets (or the cluster's "
                         "clusters[].exporter.more_daemonsets), then generate and apply again")
        result.append(Check(GROUP, "GPU node coverage", FAIL,
                            "GPU nodes whose exporter pod the scrape jobs do not keep: "
                            + ", ".join(said(n) for n in unscraped)
                            + (f"; GPU nodes without an exporter pod: {', '.join(uncovered)}" if uncovered else ""),
                            "; ".join(fixes)))
    elif uncovered:
        result.append(Check(GROUP, "GPU node coverage", FAIL,
                            f"GPU nodes without an exporter pod: {', '.join(uncovered)}",
                            "check the DaemonSet's nodeSelector and tolerations (the operator needs the label "
                            "nvidia.com/gpu.deploy.dcgm-exporter=true)"))
    elif doubled := _served_twice(by_node, gpu_nodes, settings):
        result.append(doubled)
    else:
        result.append(Check(GROUP, "GPU node coverage", OK, f"all {len(gpu_nodes)} GPU nodes run the exporter"))
    if gpuless := _on_nodes_without_gpus(by_node, gpu_nodes, nodes(), settings):
        result.append(gpuless)
    if not_ready:
        result.append(Check(GROUP, "exporter pods ready", FAIL, f"exporter not ready on {', '.join(not_ready)}",
                            "kubectl describe the exporter pod on that node; look at its events and logs"))
    elif not gpu_nodes:  # a GPU node group scaled to zero: its exporter pods come with its nodes, none is missing
        result.append(Check(GROUP, "exporter pods ready", OK, NO_GPU_NODE))
    else:
        ready = sum(1 for node in gpu_nodes for pod in by_node.get(node, []) if _ready(pod))
        if ready:
            result.append(Check(GROUP, "exporter pods ready", OK, f"{ready} exporter pods ready"))
        else:  # none the scrape jobs keep: nothing will be published (it read "ok: 0 exporter pods ready")
            result.append(Check(GROUP, "exporter pods ready", FAIL, f"no exporter pod the scrape jobs keep runs on the "
                                f"{len(gpu_nodes)} GPU node{'s' if len(gpu_nodes) > 1 else ''}: none will publish GPU "
                                "metrics (GPU node coverage says why)", result[0].fix,
                                cause="" if unscraped else NOT_DEPLOYED))
    return result


GPULESS_CHECK = "exporter pods on nodes without GPUs"
GPU_PRESENT_LABELS = ("nvidia.com/gpu.present", "feature.node.kubernetes.io/pci-10de.present")


def _on_nodes_without_gpus(by_node: dict[str, list[Answer]], gpu_nodes: list[str], nodes: list[Answer],
                           settings: Settings) -> Check | None:
    """A failure naming each node that advertises no GPU where the exporter DaemonSet runs a pod none of which is
    ready: the dcgm-exporter chart's defaults (values.yaml `nodeSelector: {}`, `affinity: {}`) schedule it on every
    node, and on one without GPUs it cannot start DCGM, so the DaemonSet's available count stays below its desired
    one for good (with the GPU node group at zero too). A node labelled as holding an NVIDIA device
    (GPU_PRESENT_LABELS) is told apart: its device plugin advertises none. None where there is no such pod."""
    labels = {n.get("metadata.name", str): n.string_map("metadata.labels") for n in nodes}
    waiting = sorted(node for node, pods in by_node.items()
                     if node not in gpu_nodes and not any(_ready(pod) for pod in pods))
    if not waiting:
        return None
    present = [n for n in waiting if any(labels.get(n, {}).get(k) == "true" for k in GPU_PRESENT_LABELS)]
    gpuless = [n for n in waiting if n not in present]

    def said(node: str) -> str:
        return f"{node} ({', '.join(sorted(p.get('metadata.name', str) for p in by_node[node]))})"
    parts, fixes = [], []
    if gpuless:
        parts.append(f"exporter pods not ready on nodes without GPUs: {', '.join(said(n) for n in gpuless)}")
        fixes.append("keep the exporter DaemonSet off nodes without GPUs: a nodeSelector (the dcgm-exporter chart's "
                     "`nodeSelector`, e.g. nvidia.com/gpu.present: \"true\" where the GPU operator or GPU feature "
                     "discovery labels GPU nodes, feature.node.kubernetes.io/pci-10de.present: \"true\" with node "
                     "feature discovery alone) or a node affinity on them (the chart's `affinity`)")
    if present:
        parts.append("exporter pods not ready on nodes labelled as holding an NVIDIA GPU that advertise none "
                     f"({GPU_RESOURCE}, {GPU_RESOURCE}.*, {MIG_RESOURCE_PREFIX}*): {', '.join(said(n) for n in present)}")
        fixes.append("check the NVIDIA driver and device plugin on those nodes (kubectl describe node; the device "
                     "plugin pod's logs)")
    alarm = (": gpudash's GPU data missing alarm and rule read that as missing GPU data"
             if data_missing.expected(settings) else "")
    return Check(GROUP, GPULESS_CHECK, FAIL, "; ".join(parts) + "; the DaemonSet counts them as desired and they "
                 f"never become available, so its rollout never completes{alarm}", "; ".join(fixes))


def _ready_without_nodes(pods: list[Answer], refused: Any) -> list[Check]:
    """Where the Nodes cannot be read (`refused`): the coverage cannot tell; exporter pods ready counts the exporter's
    pods that are ready, wherever they run (whether each GPU node has one is the coverage's), and cannot tell where
    none is."""
    ready = [pod for pod in pods if _ready(pod)]
    if not ready:
        return [cannot_tell(GROUP, COVERAGE_CHECK, refused), cannot_tell(GROUP, PODS_READY, refused)]
    serving = {pod.get("spec.nodeName", str, "") for pod in ready}
    waiting = sorted({node for pod in pods if (node := pod.get("spec.nodeName", str, "")) and node not in serving})
    if waiting:  # a node whose exporter pods are none ready: a GPU node's is a failure, and which it is is unread
        told = cannot_tell(GROUP, PODS_READY, refused)
        return [cannot_tell(GROUP, COVERAGE_CHECK, refused),
                Check(GROUP, PODS_READY, FAIL, f"exporter not ready on {', '.join(waiting)} (whether "
                      f"{'they are GPU nodes' if len(waiting) > 1 else 'it is a GPU node'}: {told.detail})",
                      "kubectl describe the exporter pod on that node; look at its events and logs",
                      cause=told.cause)]
    nodes = len({pod.get("spec.nodeName", str, "") for pod in ready})
    return [cannot_tell(GROUP, COVERAGE_CHECK, refused),
            Check(GROUP, PODS_READY, OK, f"{len(ready)} exporter pod{'s' if len(ready) > 1 else ''} ready on {nodes} "
                  f"node{'s' if nodes > 1 else ''} (whether every GPU node runs one: {COVERAGE_CHECK} cannot tell)")]


def _served_twice(by_node: dict[str, list[Answer]], gpu_nodes: list[str], settings: Settings) -> Check | None:
    """A warning where a GPU node runs exporter pods of two DaemonSets at once (exporter.more_daemonsets naming one
    that also schedules where another runs): the CloudWatch agent keeps both, each its own delta series (its own
    revision; its own pod on the JSON path), so every counter reads twice its increase there for as long as both run,
    and on agent.pipeline classic each pod's totals twice (as in a surge rollout, docs/cloudwatch.md
    "Two exporter pods on one node"). Grafana and the Prometheus rules read one copy per GPU. None where no node is so
    served, or on the Container Insights add-on (gpudash's agent publishes nothing)."""
    if addon_source(settings):
        return None
    def owner(pod: Answer) -> str:
        found = _owner(pod)
        return "/".join(found) if found else "none"
    twice = {node: owners for node in gpu_nodes if len(owners := sorted({owner(p) for p in by_node.get(node, [])})) > 1}
    if not twice:
        return None
    totals = (" and each pod's totals (framebuffer, power, PCIe by pod, Pods on GPUs)"
              if settings.agent.pipeline == "classic" else "")
    return Check(GROUP, COVERAGE_CHECK, WARN,
                 f"all {len(gpu_nodes)} GPU nodes run the exporter, but "
                 + ", ".join(f"{node} runs pods of DaemonSets {' and '.join(owners)}" for node, owners in twice.items())
                 + f": on CloudWatch every counter (energy, PCIe replays, rows remapped){totals} reads twice "
                 "its value on such a node while both run (Grafana reads one copy per GPU)",
                 "keep one exporter DaemonSet per GPU node: exclude those nodes from one of them (its nodeSelector "
                 "or affinity), or remove it")


def _relabel_fix(daemonset: tuple[str, str], style) -> str:
    """The fix where the exporter DaemonSet the settings name runs pods of no exporter label: its pod template's."""
    return (f"add {'='.join(style.pod_label)} to the pod template labels of DaemonSet {'/'.join(daemonset)} "
            "(spec.template.metadata.labels: the agent's exporter job keeps pods, and the generated ServiceMonitor "
            "selects Services, by it), then let it roll out")


def _deployment_fix(settings: Settings, cluster: Cluster | None, styled: Styled, name: str) -> str:
    """The exporter settings to write where the exporter DaemonSet the settings name (`name`) runs pods of another
    deployment style than they say: exporter.deployment, in the cluster's entry of clusters where the fleet has more
    than one or the entry writes its own (with the DaemonSet's name where the new style's would differ)."""
    if cluster is not None and (len(settings.clusters) > 1 or cluster.exporter_deployment or cluster.exporter_daemonset):
        kept = cluster.exporter_daemonset == name or all(s.daemonset == name for s in styled.styles)
        written = {"deployment": styled.keys, **({} if kept else {"daemonset": name})}
        place = f"in cluster {cluster.name}'s entry of clusters"
        setting = f"exporter: {{{', '.join(f'{k}: {v}' for k, v in written.items())}}}"
    else:
        kept = settings.exporter.daemonset == name or all(s.daemonset == name for s in styled.styles)
        place = "in gpudash.yaml"
        setting = f"exporter.deployment: {styled.keys}" + ("" if kept else f" and exporter.daemonset: {name}")
    why = f" (its pods are {styled.unknown()})" if styled.unknown() else ""
    return f"write {setting} {place}{why}, then generate and apply again"


def _restyled(settings: Settings, cluster: Cluster | None, daemonset: Answer, name: str) -> tuple[str, str]:
    """(what, fix) where the exporter DaemonSet the settings name (`name`) runs pods without the pod label of the
    deployment style the settings say (its pod template's labels) and with another style's: the agent's exporter job
    and the generated ServiceMonitor select by that label, so its pods and Service are not found; ('', '') else."""
    own = style_for(settings, cluster)
    labels = daemonset.string_map("spec.template.metadata.labels")
    styled = _styled(labels, [c.get("name", str, "") for c in daemonset.items("spec.template.spec.containers")])
    if not styled.styles or labels.get(own.pod_label[0]) == own.pod_label[1]:
        return "", ""
    style = styled.known.key + " style's" if styled.known else f"{' or '.join(s.key for s in styled.styles)} styles'"
    what = (f"it runs pods labelled {'='.join(styled.styles[0].pod_label)}, the {style}, not "
            f"{'='.join(own.pod_label)} as exporter.deployment {own.key}'s are: the agent's exporter job keeps pods, "
            "and the generated ServiceMonitor selects Services, by that label")
    return what, _deployment_fix(settings, cluster, styled, name)


def _styled_alike(settings: Settings, cluster: Cluster | None, daemonset: Answer, name: str) -> tuple[str, str]:
    """(why, fix) where the exporter DaemonSet the settings name carries the pod label of the deployment style they say,
    which another style shares (the chart's and the static manifest's app.kubernetes.io/name=dcgm-exporter), and its
    exporter container, or the chart's helm.sh/chart label, tells it is of that other style: its pods are kept and
    selected alike, only the container name the data-missing rule reads differs, and the setting to write is
    exporter.deployment, not a container to rename. ('', '') else (_restyled tells a DaemonSet of another label)."""
    own = style_for(settings, cluster)
    template = daemonset.string_map("spec.template.metadata.labels")
    if template.get(own.pod_label[0]) != own.pod_label[1]:
        return "", ""
    containers = [c.get("name", str, "") for c in daemonset.items("spec.template.spec.containers")]
    chart = daemonset.string_map("metadata.labels").get(CHART_LABEL, "")
    styled = _styled(template, containers, chart)
    if styled.known is None or styled.known == own:
        return "", ""
    told = [f"container {styled.known.container}"] if styled.known.container in containers else []
    told += [f"{CHART_LABEL}={chart}"] if chart.startswith(CHART) else []
    return (f"DaemonSet {daemonset.get('metadata.namespace', str, '')}/{name} is the {styled.known.key} style's "
            f"({', '.join(told)}), not {own.key}'s", _deployment_fix(settings, cluster, styled, name))


def _owner(pod: Answer) -> tuple[str, str] | None:
    """(namespace, name) of the DaemonSet that controls `pod`, from its ownerReferences; None for another owner."""
    for owner in pod.items("metadata.ownerReferences"):
        if owner.get("controller", bool, False) and owner.get("kind", str, "") == "DaemonSet":
            return pod.get("metadata.namespace", str, ""), owner.get("name", str, "")
    return None


def _ready(pod: Answer) -> bool:
    status = pod.at("status")
    statuses = list(status.items("containerStatuses"))
    return bool(statuses) and all(s.get("ready", bool) for s in statuses) and status.get("phase", str, "") == "Running"


def _service(services: Callable[[], dict[str, Answer]], namespace: str, style, restyle: str = "",
             daemonset: Answer | None = None) -> Check:
    """The exporter's Service, found by the label the generated ServiceMonitor selects it by, whatever its name
    (`restyle`: the settings to write instead of a Service to create, _restyled), and its spec.selector selecting the
    pods of the exporter `daemonset` (its pod template's labels): one selecting none has no endpoint, so Prometheus
    discovers no target through it and the service proxy answers 503, however ready the pods are."""
    key, value = style.pod_label
    found = services()
    check = _labelled_service(found, namespace, style.pod_label, "exporter Service",
                              "ServiceMonitors select the exporter through it, and verify reads /metrics through it",
                              restyle or f"create the exporter's Service (port {EXPORTER_PORT}, labelled {key}={value})",
                              f"expose port {EXPORTER_PORT} on the Service")
    if check.status != OK or daemonset is None:
        return check
    pods = daemonset.string_map("spec.template.metadata.labels")
    serving = {name: s.string_map("spec.selector") for name, s in found.items()
               if EXPORTER_PORT in [p.get("port", int) for p in s.items("spec.ports")]}
    if not pods or any(not selector for selector in serving.values()):
        return check  # one without a selector has endpoints written by hand: not judged here
    selecting = [name for name, selector in serving.items() if _matches({"matchLabels": selector}, pods)]
    if selecting:
        return _target_port(found, selecting, namespace, daemonset) or check
    listed = "; ".join(f"{name} selects {', '.join(f'{k}={v}' for k, v in sorted(selector.items()))}"
                       for name, selector in sorted(serving.items()))
    shown_pods = ", ".join(f"{k}={v}" for k, v in sorted(pods.items()))
    return Check(GROUP, "exporter Service", FAIL,
                 f"{listed}, none of the pods of DaemonSet {namespace}/{daemonset.get('metadata.name', str, '?')} "
                 f"(labelled {shown_pods}): the Service has no endpoint, so Prometheus discovers no target through it "
                 "and verify cannot read /metrics",
                 "make the Service's spec.selector labels its pods carry (the pod template's spec.template.metadata."
                 "labels)", cause=NOT_DEPLOYED)


def _target_port(services: dict[str, Answer], selecting: list[str], namespace: str, daemonset: Answer) -> Check | None:
    """The exporter Service's failure where the targetPort of its port 9400 names a port no container of the
    DaemonSet's pods names (the EndpointSlice controller then finds that port on no pod: no endpoint serves it);
    None where one of the `selecting` Services reaches the pods (a number is taken as it is, as the controller does)."""
    named = [(p.get("name", str, ""), p.get("containerPort", int)) for c in daemonset.items("spec.template.spec.containers")
             for p in c.items("ports")]
    names = {name for name, _ in named} - {""}
    unreached = []
    for service in sorted(selecting):
        for port in services[service].items("spec.ports"):
            target = port.get("targetPort", object, port.get("port", int))
            if port.get("port", int) != EXPORTER_PORT:
                continue
            if not isinstance(target, str) or target in names:
                return None
            unreached.append(f"{service}'s port {EXPORTER_PORT} targets port {target}")
    if not unreached:
        return None
    ours = next((name for name, number in named if number == EXPORTER_PORT and name), "")
    return Check(GROUP, "exporter Service", FAIL,
                 f"{'; '.join(unreached)}, which no container of DaemonSet {namespace}/"
                 f"{daemonset.get('metadata.name', str, '?')}'s pods names (they name: "
                 f"{', '.join(f'{n} {number}' for n, number in named if n) or 'none'}): the Service has no endpoint for "
                 "it, so Prometheus discovers no target through it and verify cannot read /metrics",
                 f"set the Service port's targetPort to {f'{ours} (or {EXPORTER_PORT})' if ours else EXPORTER_PORT}",
                 cause=NOT_DEPLOYED)


class NoExporterContainer(Exception):
    """The DaemonSet has no container that is recognisably the exporter: its settings cannot be read."""


def _container(daemonset: Answer, style) -> Answer:
    """The exporter's container: the one the style names, else the one declaring the exporter's port, else the
    only container. Never a container picked by its place: a sidecar's settings are not the exporter's."""
    containers = list(daemonset.items("spec.template.spec.containers", required=True))
    if not containers:
        raise OddAnswer(daemonset.source, "spec.template.spec.containers", [], "at least one container")
    named = [c for c in containers if c.get("name", str, "") == style.container]
    serving = [c for c in containers if any(p.get("containerPort", int, 0) == EXPORTER_PORT for p in c.items("ports"))]
    found = named or (serving if len(serving) == 1 else []) or (containers if len(containers) == 1 else [])
    if not found:
        names = ", ".join(c.get("name", str, "?") for c in containers)
        raise NoExporterContainer(f"no container named {style.container} or alone declaring port {EXPORTER_PORT} "
                                  f"among {names}: the exporter's settings cannot be read")
    return found[0]


def _exporter_settings(check: str, read: Callable[..., Check]) -> Callable[..., Check]:
    """A check that reads the exporter container's settings; a DaemonSet without a recognisable exporter
    container is that check's failure, saying so, not a judgement of another container's settings."""
    def run(daemonset: Answer, style, *args: Any) -> Check:
        try:
            return read(daemonset, style, *args)
        except NoExporterContainer as exc:
            return Check(GROUP, check, FAIL, str(exc),
                         f"set exporter.deployment to how the exporter is deployed (its container is named "
                         f"{style.container} there), or name the exporter's container so")
    return run


CONTAINER_CHECK = "exporter container name"


def _container_name(daemonset: Answer, style, restyle: str = "", alike: tuple[str, str] = ("", "")) -> list[Check]:
    """The exporter's container carries the name its deployment gives it: the data-missing rule tells the exporter
    targets of the GPU operator's or the chart's own ServiceMonitor (which give each target its pod's `container`) by
    it (data_missing.operator_targets). Nothing is said when it does. `restyle`: the settings to write where the
    exporter is of another deployment style than the settings say (_restyled), instead of a container to rename;
    `alike`: (why, fix) where it is of another style sharing the settings' pod label (_styled_alike)."""
    name = _container(daemonset, style).get("name", str, "?")
    if name == style.container:
        return []
    why, fix = alike
    return [Check(GROUP, CONTAINER_CHECK, WARN,
                  f"the exporter's container is named {name}, not {style.container} (exporter.deployment: "
                  f"{style.key}): the data-missing rule tells the targets of the GPU operator's or the chart's own "
                  f"ServiceMonitor by container=\"{style.container}\", so their scrapes without GPU data are not "
                  f"counted for this exporter" + (f"; {why}" if why else ""),
                  restyle or fix or f"scrape the exporter with {built(SERVICE_MONITOR_FILE)} or gpudash's scrape job (their "
                  f"targets are told by exporter_pod, whatever the container's name), or name its container "
                  f"{style.container}")]


def _env(container: Answer) -> dict[str, str]:
    return {e.get("name", str): e.get("value", str, "") for e in container.items("env")}


def _pod_labels(daemonset: Answer, style) -> Check:
    container = _container(daemonset, style)
    if _env(container).get("DCGM_EXPORTER_KUBERNETES", "").lower() == "true":
        return Check(GROUP, "pod labels setting", OK, "DCGM_EXPORTER_KUBERNETES=true")
    return Check(GROUP, "pod labels setting", FAIL, "DCGM_EXPORTER_KUBERNETES is not true: series carry no workload pod",
                 f"set DCGM_EXPORTER_KUBERNETES=true on container {container.get('name', str, '?')} and mount "
                 "/var/lib/kubelet/pod-resources")


VIRTUAL_CHECK = "virtual GPUs setting"
_GO_TRUE = ("1", "t", "true")  # strconv.ParseBool's true, which the exporter's flags library reads a variable with


def _virtual_gpus(daemonset: Answer, style, read_apart: bool) -> list[Check]:
    """KUBERNETES_VIRTUAL_GPUS (or --kubernetes-virtual-gpus) on the exporter against exporter.virtual_gpus: with it
    on, dcgm-exporter 4.5.3+ writes GPU utilization and framebuffer used as the device's series and each pod's share,
    which the queries read apart only with exporter.virtual_gpus (nothing is said when both are off)."""
    on = _virtual_on(_container(daemonset, style))
    if on and not read_apart:
        return [Check(GROUP, VIRTUAL_CHECK, FAIL,
                      f"the exporter runs with KUBERNETES_VIRTUAL_GPUS=true but exporter.virtual_gpus is not set: "
                      f"per-GPU utilization and framebuffer mix the device's value with its pods' shares",
                      "set exporter.virtual_gpus: true in gpudash.yaml and generate again")]
    if read_apart:
        state = "on" if on else "off on this DaemonSet (the queries read exporters either way)"
        return [Check(GROUP, VIRTUAL_CHECK, OK, f"KUBERNETES_VIRTUAL_GPUS {state}; exporter.virtual_gpus is set")]
    return []


def _virtual_on(container: Answer) -> bool:
    """Whether the exporter runs with KUBERNETES_VIRTUAL_GPUS (or --kubernetes-virtual-gpus) on."""
    flags = [a for a in container.strings("args") + container.strings("command")
             if a.lstrip("-").split("=", 1)[0] == "kubernetes-virtual-gpus"]
    return _env(container).get("KUBERNETES_VIRTUAL_GPUS", "").lower() in _GO_TRUE or any(
        "=" not in flag or flag.split("=", 1)[1].lower() in _GO_TRUE for flag in flags)


SLICED_CHECK = "GPUs shared by pods"


def _sliced_gpus(daemonset: Answer, style, nodes: Callable[[], list[Answer]]) -> list[Check]:
    """Without KUBERNETES_VIRTUAL_GPUS, dcgm-exporter labels a GPU that device-plugin replicas share (time-slicing,
    MPS) with ONE of the pods holding it per scrape, the last that kubelet lists (its order is not fixed): Grafana's
    per-pod panels look back over LABEL_LOOKBACK_SCRAPES scrape intervals (a rate: over its window) for the pods
    named (promql.label_lookback), and so do the per-pod rules of gauges and counts; CloudWatch reads a pod at the
    scrapes naming it alone. With the setting
    each pod gets a copy. Nothing is said when the setting is on or no node shares its GPUs (as far as GPU feature
    discovery's labels and the node's nvidia.com/gpu capacity tell)."""
    container = _container(daemonset, style)
    if _virtual_on(container):
        return []
    shared = _sharing_nodes(nodes(), _listed_resources(container))
    if not shared:
        return []
    return [Check(GROUP, SLICED_CHECK, WARN,
                  "; ".join(shared) + ": the exporter runs without KUBERNETES_VIRTUAL_GPUS, so it labels a GPU pods "
                  "share with one of them per scrape (the last kubelet lists): Grafana's per-pod panels show each "
                  f"pod a scrape of the last {LABEL_LOOKBACK_SCRAPES} scrape intervals (a rate: of its window) named, "
                  "as do the per-pod Prometheus rules of gauges and counts, but CloudWatch's per-pod alarms and widgets "
                  "read a pod only at the scrapes that name it",
                  "for a copy per pod, run dcgm-exporter 4.5.3 or later with KUBERNETES_VIRTUAL_GPUS=true and set "
                  "exporter.virtual_gpus: true in gpudash.yaml (docs/cloudwatch.md: per-process copies)")]


RESOURCE_NAMES_CHECK = "GPU resource names"


def _listed_resources(container: Answer) -> tuple[str, ...]:
    return listed_names(_env(container), container.strings("command") + container.strings("args"))


def _resource_names(daemonset: Answer, style, nodes: Callable[[], list[Answer]]) -> list[Check]:
    """A node advertising GPUs under a resource the exporter gives no pod (the device plugin's renamed shares,
    nvidia.com/gpu.shared with `renameByDefault: true`; a `rename:`) fails, naming it and the setting: the series
    of its GPUs carry no pod, so every per-pod panel, widget and alarm misses the pods holding them. Nothing is said
    where every GPU resource is nvidia.com/gpu or nvidia.com/mig-*."""
    if not unattributed(nodes(), ()):  # nvidia.com/gpu and nvidia.com/mig-* alone: the exporter's settings do not matter
        return []
    container = _container(daemonset, style)
    listed = _listed_resources(container)
    missed = unattributed(nodes(), listed)
    if not missed:
        renamed = sorted({r for n in nodes() for r in gpu_resources(n, listed) if r in listed})
        return [Check(GROUP, RESOURCE_NAMES_CHECK, OK, f"the exporter gives pods the GPUs of {', '.join(renamed)} "
                      f"({RESOURCE_NAMES_ENV} / --nvidia-resource-names)")]
    resources = sorted({r for n in nodes() for r in gpu_resources(n) if r not in listed
                        and not r.startswith(MIG_RESOURCE_PREFIX) and r != GPU_RESOURCE})
    now = f" (now {', '.join(listed)})" if listed else ""
    return [Check(GROUP, RESOURCE_NAMES_CHECK, FAIL,
                  "; ".join(missed) + ": the exporter gives a pod only the devices of nvidia.com/gpu, "
                  f"nvidia.com/mig-* and the resources its --nvidia-resource-names lists{now}, so the series of these "
                  "GPUs carry no pod and every per-pod panel, widget and alarm (both forms) misses the pods holding "
                  "them",
                  f"set {RESOURCE_NAMES_ENV}={','.join(listed + tuple(resources))} on container "
                  f"{container.get('name', str, '?')} of the exporter DaemonSet (or --nvidia-resource-names), or "
                  "advertise them as nvidia.com/gpu (the device plugin's sharing config: renameByDefault: false)")]


COUNTED_CHECK = "GPU nodes the data-missing alarm counts"
VENDOR_PREFIX = "nvidia.com/"  # the domain of the NVIDIA device plugin's resources


def _counted_resources(daemonset: Answer, style, nodes: Callable[[], list[Answer]], settings: Settings) -> list[Check]:
    """A node whose GPUs are advertised only under resources the data-missing alarm and rule do not count (they count
    the device plugin's names and those exporter.resource_names names: data_missing.gpu_resources_pattern) is no GPU
    node to them: where no other node is, a stopped exporter raises nothing. It fails where the exporter lists such a
    resource (NVIDIA_RESOURCE_NAMES: a name of the device plugin's config, nvidia.com/a100), and is a warning where a
    node advertises an nvidia.com resource that nothing names (a GPU resource the exporter does not list either, or
    another NVIDIA device's, such as a network adapter's). A node counted by any of its resources is counted. Nothing
    is said where no node has such resources (the exporter's container not found: the checks of its settings say so)."""
    try:
        listed = _listed_resources(_container(daemonset, style))
    except NoExporterContainer:
        return []
    counted = re.compile(data_missing.gpu_resources_pattern(settings))
    named = settings.exporter.resource_names
    missed: dict[str, list[str]] = {}
    unnamed: dict[str, list[str]] = {}
    for node in nodes():
        vendor = tuple(r for r in capacity(node) if isinstance(r, str) and r.startswith(VENDOR_PREFIX))
        held = gpu_resources(node, (*listed, *named, *vendor))
        if not held or any(counted.fullmatch(data_missing.ksm_resource(r)) for r in held):
            continue
        for resource in held:
            (missed if resource in listed else unnamed).setdefault(resource, []).append(node.get("metadata.name", str))
    if not missed and not unnamed:
        said = sorted(set(listed) & set(named))
        return [Check(GROUP, COUNTED_CHECK, OK, f"a node advertising {', '.join(said)} counts as a GPU node "
                      "(exporter.resource_names)")] if said else []
    found = missed or unnamed
    names = sorted(set(named) | set(found))
    return [Check(GROUP, COUNTED_CHECK, FAIL if missed else WARN,
                  "; ".join(f"{shown(sorted(nodes_of))} advertise{'' if missed else ' only'} "
                            f"{'GPUs as ' if missed else ''}{resource}" for resource, nodes_of in sorted(found.items()))
                  + ": the data-missing alarm and rule count a node as a GPU node by its capacity in nvidia.com/gpu, "
                  "nvidia.com/gpu.*, nvidia.com/mig-* and the resources exporter.resource_names names, so these "
                  "nodes are no GPU node to them: where no other node is, an exporter that stops raises nothing"
                  + ("" if missed else f"; the exporter's {RESOURCE_NAMES_ENV} does not list it either, so if these "
                     "are GPUs no pod is named on their series"),
                  f"set exporter.resource_names: [{', '.join(names)}] in gpudash.yaml and generate again"
                  + ("" if missed else f" (and {RESOURCE_NAMES_ENV}={','.join((*listed, *sorted(found)))} on the "
                     "exporter), if these are GPUs"))]


def _collectors_path(container: Answer, env: dict[str, str]) -> str:
    args = container.strings("args") + container.strings("command")
    for flag in ("-f", "--collectors"):
        if flag in args and args.index(flag) + 1 < len(args):
            return args[args.index(flag) + 1]
    return env.get("DCGM_EXPORTER_COLLECTORS") or IMAGE_DEFAULTS[0]


def _counters(daemonset: Answer, style, kube: Kube, project: Project, namespace: str) -> Check:
    container = _container(daemonset, style)
    path = _collectors_path(container, _env(container))
    catalog = None
    source = path
    for mount in container.items("volumeMounts"):
        mount_path = mount.get("mountPath", str)
        if not mount_path.startswith("/"):
            raise OddAnswer(mount.source, f"{mount.path}.mountPath", mount_path, "an absolute path")
        if not path.startswith(mount_path.rstrip("/") + "/"):
            continue
        name = mount.get("name", str)
        volume = next((v for v in daemonset.items("spec.template.spec.volumes") if v.get("name", str, "") == name),
                      None)
        if volume is None or volume.get("configMap", dict, None) is None:
            continue
        configmap_name = volume.get("configMap.name", str)
        key = path[len(mount_path.rstrip("/")) + 1:]
        for item in volume.items("configMap.items"):
            if item.get("path", str) == key:
                key = item.get("key", str)
        what = f"ConfigMap {namespace}/{configmap_name}"
        configmap = kube.read(f"/api/v1/namespaces/{namespace}/configmaps/{configmap_name}", what)
        data = configmap.string_map("data") if configmap is not None else {}
        if key not in data:
            return Check(GROUP, "counters CSV", FAIL, f"ConfigMap {configmap_name} (key {key}) behind {path} is missing",
                         f"create ConfigMap {configmap_name} with key {key} from your counters CSV", cause=NOT_DEPLOYED)
        source = f"{what} key {key}"
        try:
            catalog = parse_counters(data[key], source)
        except InputError as exc:
            return Check(GROUP, "counters CSV", FAIL, f"{source} is invalid: {exc.what}", exc.hint or "")
    if catalog is None:
        if path not in IMAGE_DEFAULTS:
            return Check(GROUP, "counters CSV", WARN, f"cannot read {path} from outside the image",
                         "mount the counters CSV from a ConfigMap so gpudash can check it")
        catalog = load_counters(default_counters())  # the image's default set, as bundled
        source = f"{path} (the image's default set)"
    missing = sorted(project.queried_metrics() - {m.name for m in catalog})
    if missing:
        return Check(GROUP, "counters CSV", FAIL, f"{source} lacks {', '.join(missing)}",
                     "add those fields to the exporter's counters CSV, or stop using them in definitions")
    return Check(GROUP, "counters CSV", OK, f"{source} has every field the definitions use")


MONITORING = "/apis/monitoring.coreos.com/v1"


class Listed(NamedTuple):
    """prometheus-operator objects of one kind as far as RBAC lets them be read."""
    items: list[Answer]
    refused: list[str]  # where listing them was refused, each with the API's status (empty: read everywhere)
    read_in: tuple[str, ...]  # where they were read, when every namespace was refused (empty: every namespace)


def _listed_everywhere(kube: Kube, resource: str, what: str, namespaces: Callable[[], list[str]],
                       version: str = "v1") -> Listed:
    """The `resource` objects (monitoring.coreos.com/`version`) in every namespace; where RBAC refuses that list (403:
    a user with namespace-only rights), those in each of `namespaces()` it lets be read, with what was refused. 404:
    the resource is not installed, none."""
    from ..clients.kube import KubeRefused

    api = MONITORING.removesuffix("/v1") + f"/{version}"
    try:
        answer = kube.read(f"{api}/{resource}", f"{what} in every namespace")
        return Listed(list(answer.items("items", required=True)) if answer is not None else [], [], ())
    except KubeRefused as exc:
        refused = [f"every namespace ({exc.status})"]
    items, read_in = [], []
    for namespace in dict.fromkeys(namespaces()):
        try:
            answer = kube.read(f"{api}/namespaces/{namespace}/{resource}", f"{what} in {namespace}")
        except KubeRefused as exc:
            refused.append(f"{namespace} ({exc.status})")
            continue
        read_in.append(namespace)
        items += answer.items("items", required=True) if answer is not None else []
    return Listed(items, refused, tuple(read_in))


def _named_namespaces(selector: Any) -> list[str]:
    """The namespaces a namespace label selector names by kubernetes.io/metadata.name (which the API server writes on
    every namespace), in matchLabels or an In expression."""
    if not isinstance(selector, dict):
        return []
    match = selector.get("matchLabels")
    names = [match[NAMESPACE_NAME]] if isinstance(match, dict) and isinstance(match.get(NAMESPACE_NAME), str) else []
    return names + [v for e in selector.get("matchExpressions") or [] if isinstance(e, dict)
                    and e.get("key") == NAMESPACE_NAME and e.get("operator") == "In" for v in e.get("values") or []
                    if isinstance(v, str)]


NAMESPACE_NAME = "kubernetes.io/metadata.name"
SCRAPE_CHECK = "Prometheus scrape config"
NO_PROMETHEUS_OBJECT = ("no Prometheus object of prometheus-operator in the cluster: which Prometheus reads it is not "
                        "checked")


def _service_monitor(kube: Kube, services: Callable[[], dict[str, Answer]], project: Project, style, namespace: str,
                     restyle: str = "") -> Check:
    """A ServiceMonitor that selects the exporter's Service, a Prometheus that selects that ServiceMonitor, and whether
    it keeps the workload's labels: read in every namespace (kube-prometheus-stack's users keep theirs in its own,
    watching the exporter's by namespaceSelector); where RBAC refuses that, in the namespaces that matter (the
    exporter's, prometheus_stack.namespace, the Prometheus objects' own and those their serviceMonitorNamespaceSelector
    names), saying what could not be read: a refusal is never "no ServiceMonitor". One selects the exporter when it
    watches the exporter's namespace and its selector matches the labels of a Service labelled as the exporter's pods
    are, as prometheus-operator selects Services. One asking for that label and matching no such Service is named,
    failed: Prometheus scrapes nothing through it (`restyle`: the settings to write where the exporter is of another
    deployment style than they say, _restyled)."""
    name, value = style.pod_label
    stack = project.settings.prometheus_stack.namespace
    prometheuses: list[Listed] = []  # read once, by the first that needs them

    def prometheus_objects() -> Listed:
        """The Prometheus and PrometheusAgent objects (an agent selects ServiceMonitors alike, remote-writing what it
        scrapes), as far as they can be read."""
        if not prometheuses:
            homes = lambda: [namespace, *([stack] if stack else [])]  # noqa: E731
            servers = _listed_everywhere(kube, "prometheuses", "Prometheus objects", homes)
            agents = _listed_everywhere(kube, "prometheusagents", "PrometheusAgent objects", homes, "v1alpha1")
            prometheuses.append(Listed(servers.items + agents.items, list(dict.fromkeys(servers.refused + [
                f"{r} (PrometheusAgent)" for r in agents.refused])), servers.read_in))
        return prometheuses[0]

    def wanted() -> list[str]:  # namespace-only rights: the namespaces that matter
        objects = prometheus_objects().items
        return [namespace, *([stack] if stack else []), *(p.get("metadata.namespace", str, "") for p in objects),
                *(n for p in objects for n in _named_namespaces(
                    p.at("spec", required=False).get("serviceMonitorNamespaceSelector", dict, None)))]

    listing = _listed_everywhere(kube, "servicemonitors", "ServiceMonitors", wanted)
    refused_in = f"the Kubernetes API refused listing them in {', '.join(listing.refused)}"
    unread = ("" if not listing.refused else f"; ServiceMonitors were read in {', '.join(listing.read_in)} only: "
              f"{refused_in}" if listing.read_in else f"; no ServiceMonitor could be read: {refused_in}")
    rights = ("grant the kubeconfig user list on servicemonitors.monitoring.coreos.com in every namespace (a "
              "ClusterRole), or in the namespace of the ServiceMonitor meant to select the exporter")
    watching = [m for m in listing.items if _watches(m, m.get("metadata.namespace", str, ""), namespace)]
    exporter_services = services()
    labelled = {service: found.string_map("metadata.labels") for service, found in exporter_services.items()}
    monitors = [m for m in watching if any(_selects(m, labels) for labels in labelled.values())]
    if not monitors:
        asking = [m for m in watching if m.at("spec").get("selector.matchLabels", dict, {}).get(name) == value]
        if asking:
            shown_services = "; ".join(f"{service}: {', '.join(f'{k}={v}' for k, v in sorted(labels.items()))}"
                                       for service, labels in sorted(labelled.items()))
            return Check(GROUP, SCRAPE_CHECK, FAIL,
                         f"ServiceMonitor {', '.join(m.get('metadata.name', str) for m in asking)} selects "
                         f"{' / '.join(_selector_text(m) for m in asking)}, which no Service in {namespace} carries "
                         + (f"(the Services labelled {name}={value}: {shown_services})" if labelled else
                            f"(none there is labelled {name}={value})") + ": Prometheus scrapes nothing through it"
                         + unread,
                         restyle or (f"create the exporter's Service (port {EXPORTER_PORT}, labelled {name}={value})"
                                     if not labelled else "label the exporter's Service as the ServiceMonitor's "
                                     f"selector asks, or apply {built(SERVICE_MONITOR_FILE)} in its place"))
        if listing.refused:  # not "no ServiceMonitor": one where it could not be read may select the exporter
            return Check(GROUP, SCRAPE_CHECK, WARN, "cannot tell whether a ServiceMonitor selects the exporter"
                         + (f": none in {', '.join(listing.read_in)} does" if listing.read_in else "") + unread,
                         f"{rights}; or, where none does, apply {built(SERVICE_MONITOR_FILE)}", cause=UNREACHABLE)
        return Check(GROUP, SCRAPE_CHECK, WARN, "no ServiceMonitor selects the exporter"
                     + (f" as the settings' style labels it ({name}={value})" if restyle else ""),
                     restyle or f"apply {built(SERVICE_MONITOR_FILE)}, unless Prometheus scrapes the exporter through "
                     "additionalScrapeConfigs (the prometheus group checks its targets)")
    honoring = [m for m in monitors if all(e.get("honorLabels", bool, False) for e in m.items("spec.endpoints"))]
    names = ", ".join(m.get("metadata.name", str) for m in monitors)
    # an endpoint selects a Service port by its name: one no Service of the exporter names scrapes nothing
    ports = {service: [(p.get("name", str, ""), p.get("port", int)) for p in found.items("spec.ports")]
             for service, found in exporter_services.items()}
    named = {port for exposed in ports.values() for port, _ in exposed} - {""}
    # prometheus-operator scrapes the Service port of the endpoint's name: the exporter's only where that is 9400
    exporters = {port for exposed in ports.values() for port, number in exposed if number == EXPORTER_PORT} - {""}

    def unmatched(monitor: Answer) -> str:
        """The port names a ServiceMonitor's endpoints select when every one is named and none names a Service's
        exporter port."""
        wanted = [e.get("port", str, "") for e in monitor.items("spec.endpoints")]
        return ", ".join(wanted) if wanted and all(w and w not in exporters for w in wanted) else ""
    blind = {m.get("metadata.name", str): why for m in monitors if (why := unmatched(m))}
    if blind and ports:
        exposed = "; ".join(service + ": " + ", ".join(f"{port or '(unnamed)'} {number}" for port, number in listed)
                            for service, listed in sorted(ports.items()))
        blind_text = ", ".join(f"{monitor} (port {port})" for monitor, port in sorted(blind.items()))
        other = any(port in named for ports_of in blind.values() for port in ports_of.split(", "))
        return Check(GROUP, SCRAPE_CHECK, FAIL if len(blind) == len(monitors) else WARN,
                     f"ServiceMonitor {blind_text} selects a Service port that "
                     + (f"is not the exporter's {EXPORTER_PORT} on any Service" if other else "no Service")
                     + f" labelled {name}={value}" + ("" if other else " names") + f" ({exposed}): Prometheus "
                     + ("scrapes another port than the exporter's through it" if other else "scrapes nothing through it"),
                     f"point the ServiceMonitor's endpoint at port {', '.join(sorted(exporters))} (the Service's "
                     f"{EXPORTER_PORT}), or apply {built(SERVICE_MONITOR_FILE)} in its place" if other and exporters
                     else f"name the Service's {EXPORTER_PORT} port {style.service_port} (the port "
                     f"{built(SERVICE_MONITOR_FILE)} selects for exporter.deployment: {style.key}), or point the "
                     "ServiceMonitor's endpoint at the Service's port name")
    if not honoring and project.settings.labels.pod == "pod":
        return Check(GROUP, SCRAPE_CHECK, FAIL,
                     f"ServiceMonitor {names} does not honor labels: the workload pod arrives as exported_pod",
                     f"apply {built(SERVICE_MONITOR_FILE)} (honorLabels: true) in its place, or set labels.pod: "
                     "exported_pod in gpudash.yaml")
    return _read_by_prometheus(kube, monitors, prometheus_objects(), project, namespace, names, unread)


def _read_by_prometheus(kube: Kube, monitors: list[Answer], prometheuses: Listed, project: Project, namespace: str,
                        names: str, unread: str) -> Check:
    """Whether a Prometheus object (prometheus-operator's) selects one of `monitors`: its serviceMonitorSelector
    matches the ServiceMonitor's labels (null: none) and its serviceMonitorNamespaceSelector takes in the
    ServiceMonitor's namespace (null: its own only; {}: every one; else by the namespace's labels), and with
    ignoreNamespaceSelectors a ServiceMonitor watches its own namespace only. Found none where Prometheus objects
    exist: failed, with each one's reason; none in the cluster: said, not judged."""
    found = prometheuses.items
    if not found:
        if prometheuses.refused:
            return Check(GROUP, SCRAPE_CHECK, WARN,
                         f"ServiceMonitor {names} selects the exporter; cannot tell whether a Prometheus selects it: "
                         f"the Kubernetes API refused listing Prometheus objects in {', '.join(prometheuses.refused)}"
                         + unread, "grant the kubeconfig user list on prometheuses.monitoring.coreos.com in the "
                         "Prometheus' namespace (or every namespace)", cause=UNREACHABLE)
        return Check(GROUP, SCRAPE_CHECK, OK, f"ServiceMonitor {names} ({NO_PROMETHEUS_OBJECT})" + unread)
    labels_of: dict[str, dict[str, str] | None] = {}

    def namespace_labels(place: str) -> dict[str, str] | None:
        """A namespace's labels (None: RBAC refuses reading it)."""
        from ..clients.kube import KubeRefused

        if place not in labels_of:
            try:
                read = kube.read(f"/api/v1/namespaces/{place}", f"Namespace {place}")
                labels_of[place] = read.string_map("metadata.labels") if read is not None else {}
            except KubeRefused as exc:
                labels_of[place] = None
        return labels_of[place]

    def reads(prometheus: Answer, monitor: Answer) -> tuple[bool | None, str]:
        """(whether `prometheus` selects `monitor`, None where a namespace's labels could not be read; why not)."""
        spec = prometheus.at("spec", required=False)
        home = prometheus.get("metadata.namespace", str, "")
        place = monitor.get("metadata.namespace", str, "")
        selector = spec.get("serviceMonitorSelector", dict, None)
        if selector is None:
            return False, "selects no ServiceMonitor (serviceMonitorSelector unset)"
        if not _matches(selector, monitor.string_map("metadata.labels")):
            return False, f"selects ServiceMonitors labelled {_selector_words(selector)}"
        if spec.get("ignoreNamespaceSelectors", bool, False) and place != namespace:
            return False, (f"ignores ServiceMonitors' namespaceSelector (ignoreNamespaceSelectors), so one in {place} "
                           f"watches {place} only, not {namespace}")
        among = spec.get("serviceMonitorNamespaceSelector", dict, None)
        if among is None:
            return place == home, f"reads ServiceMonitors in its own namespace {home} only"
        if not among:
            return True, ""
        named = {NAMESPACE_NAME: place}  # the label the API server writes on every namespace: known without a read
        keys = set(among.get("matchLabels") or {}) | {e.get("key") for e in among.get("matchExpressions") or []
                                                       if isinstance(e, dict)}
        labels = named if keys == {NAMESPACE_NAME} else namespace_labels(place)
        if labels is None:
            return None, f"reads ServiceMonitors in namespaces labelled {_selector_words(among)}"
        return _matches(among, labels), f"reads ServiceMonitors in namespaces labelled {_selector_words(among)}"

    judged = [(m, p, *reads(p, m)) for m in monitors for p in found]
    selected = [f"{m.get('metadata.namespace', str, '')}/{m.get('metadata.name', str)} by {_named_object(p)}"
                for m, p, yes, _ in judged if yes]
    if selected:
        return Check(GROUP, SCRAPE_CHECK, OK, f"ServiceMonitor {names} (selected: {', '.join(selected)})" + unread)
    whys = "; ".join(dict.fromkeys(f"{_named_object(p)} {why}" for _, p, _, why in judged))
    if any(yes is None for *_, yes, _ in judged):
        return Check(GROUP, SCRAPE_CHECK, WARN, f"ServiceMonitor {names} selects the exporter; cannot tell whether a "
                     f"Prometheus selects it: {whys}, and the Kubernetes API refused reading the namespace's labels"
                     + unread, "grant the kubeconfig user get on namespaces", cause=UNREACHABLE)
    if prometheuses.refused:  # one that could not be read may select it
        return Check(GROUP, SCRAPE_CHECK, WARN, f"ServiceMonitor {names} selects the exporter; cannot tell whether a "
                     f"Prometheus selects it: {whys}, and the Kubernetes API refused listing Prometheus objects in "
                     f"{', '.join(prometheuses.refused)}" + unread, "grant the kubeconfig user list on "
                     "prometheuses.monitoring.coreos.com in every namespace", cause=UNREACHABLE)
    return Check(GROUP, SCRAPE_CHECK, FAIL, f"ServiceMonitor {names} selects the exporter, but no Prometheus selects "
                 f"it: {whys}: Prometheus scrapes nothing through it" + unread,
                 _selected_fix(monitors[0], [p for _, p, *_ in judged], project))


def _named_object(prometheus: Answer) -> str:
    """`Prometheus namespace/name` (or `PrometheusAgent ...`), as its list gave it."""
    return (f"{prometheus.get('kind', str, 'Prometheus')} {prometheus.get('metadata.namespace', str, '')}/"
            f"{prometheus.get('metadata.name', str)}")


def _selected_fix(monitor: Answer, prometheuses: list[Answer], project: Project) -> str:
    """The fix where no Prometheus selects the ServiceMonitor: for gpudash's own, under kube-prometheus-stack's
    selector (release=<release>, in every namespace), prometheus_stack.release; else label it as one asks."""
    first = prometheuses[0]
    spec = first.at("spec", required=False)
    selector = spec.get("serviceMonitorSelector", dict, None) or {}
    release = (selector.get("matchLabels") or {}).get("release") if isinstance(selector.get("matchLabels"), dict) \
        else None
    own = _gpudash_s(monitor)
    where = f"{monitor.get('metadata.namespace', str, '')}/{monitor.get('metadata.name', str)}"
    among = spec.get("serviceMonitorNamespaceSelector", dict, None)
    home = first.get("metadata.namespace", str, "")
    place = (f" and prometheus_stack.namespace: {home} (it reads ServiceMonitors in its own namespace only)"
             if among is None and monitor.get("metadata.namespace", str, "") != home else "")
    if own and isinstance(release, str) and set(selector) == {"matchLabels"} and len(selector["matchLabels"]) == 1:
        return (f"write prometheus_stack.release: {release}{place} in gpudash.yaml (gpudash labels its ServiceMonitor "
                f"release=<prometheus_stack.release>), generate and apply {built(SERVICE_MONITOR_FILE)} again")
    asked = _selector_words(selector) if selector else "(it selects none: set its serviceMonitorSelector)"
    return (f"label ServiceMonitor {where} {asked} as {_named_object(first)}'s "
            "serviceMonitorSelector asks" + (f", in a namespace it reads ({home})" if place else ""))


def _selector_words(selector: dict) -> str:
    """A label selector as text: its matchLabels, then its matchExpressions; `{}` selects everything."""
    match = selector.get("matchLabels")
    terms = [f"{k}={v}" for k, v in sorted(match.items())] if isinstance(match, dict) else []
    terms += [f"{e.get('key')} {e.get('operator')} {e.get('values') or ''}".strip()
              for e in selector.get("matchExpressions") or [] if isinstance(e, dict)]
    return ", ".join(terms) or "anything"


def _selector_text(monitor: Answer) -> str:
    """A ServiceMonitor's Service selector as labels: its matchLabels, then its matchExpressions."""
    words = _selector_words(monitor.at("spec").get("selector", dict, {}))
    return "every Service" if words == "anything" else words


def _selects(monitor: Answer, labels: dict[str, str]) -> bool:
    """Whether a ServiceMonitor's selector matches a Service of `labels` (_matches)."""
    return _matches(monitor.at("spec").get("selector", dict, {}), labels)


def _matches(selector: dict, labels: dict[str, str]) -> bool:
    """Whether a Kubernetes label selector matches `labels`: every matchLabels pair, and every matchExpressions term
    (In, NotIn, Exists, DoesNotExist; NotIn matches an object without the key); an empty selector matches everything.
    A term of another operator matches nothing (the API refuses such a selector)."""
    match = selector.get("matchLabels") or {}
    if not isinstance(match, dict) or any(labels.get(k) != v for k, v in match.items()):
        return False
    for term in selector.get("matchExpressions") or []:
        if not isinstance(term, dict):
            return False
        key, operator, values = term.get("key"), term.get("operator"), term.get("values") or []
        if operator == "In" and labels.get(key) not in values or operator == "NotIn" and labels.get(key) in values \
                or operator == "Exists" and key not in labels or operator == "DoesNotExist" and key in labels \
                or operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def _watches(monitor: Answer, place: str, namespace: str) -> bool:
    """Whether a ServiceMonitor in `place` selects Services in `namespace`, as prometheus-operator reads its
    namespaceSelector (getNamespacesFromNamespaceSelector): `any: true` every namespace; else matchNames, when it
    lists any, those namespaces only (its own among them only if listed); else its own namespace."""
    selector = monitor.at("spec").get("namespaceSelector", dict, {})
    if selector.get("any") is True:
        return True
    names = selector.get("matchNames")
    if isinstance(names, list) and names:
        return namespace in names
    return place == namespace


def _read_once(read: Callable[[], Any]) -> Callable[[], Any]:
    """`read` made by the first check that asks, its answer shared by the checks after it; a read that fails is made
    again by the next check (each check reports its own failure)."""
    answers: list[Any] = []

    def once() -> Any:
        if not answers:
            answers.append(read())
        return answers[0]

    return once


_SHARING = threading.Lock()


def agent_configmaps(kube: Kube, options: Options, namespace: str) -> Callable[[str], Answer | None]:
    """The run's reader of the agent's ConfigMaps in `namespace`, shared by the groups that read them (the kube
    group's cluster probe and ConfigMap checks, the exporter group's cluster probe): each is read once a run, and
    every group judges the cluster from the same answer. A read that fails is made again by the next asker."""
    key = f"agent configmaps in {namespace}"
    with _SHARING:
        if key not in options.clients:
            answers: dict[str, Answer | None] = {}
            lock = threading.Lock()

            def configmap(name: str) -> Answer | None:
                with lock:  # one read, whichever group asks first; the other waits for its answer
                    if name not in answers:
                        answers[name] = kube.read(f"/api/v1/namespaces/{namespace}/configmaps/{name}",
                                                  f"ConfigMap {namespace}/{name}")
                    return answers[name]

            options.clients[key] = configmap
        return options.clients[key]


def _agent_checks(kube: Kube, project: Project, configmap: Callable[[str], Answer | None],
                  chosen: str | None) -> Iterator[Check]:
    from ..artifacts import agents

    namespace = project.settings.agent.namespace
    yield from step(GROUP, "CloudWatch agent", _agent, kube, namespace, project.settings.agent.pipeline == "otel")
    this, unknown = _this_cluster(configmap, project, chosen)
    built_agents = agents(project)
    agent = next((a for a in built_agents if this is not None and a.cluster == this.name), built_agents[0])
    path = agent_file(this.name if this is not None else "<cluster>")
    keys = [(AGENT_CONFIGMAP, AGENT_KEY, agent.config), (SCRAPE_CONFIGMAP, SCRAPE_KEY, agent.scrape)]
    if agent.otel is not None:
        keys.insert(1, (AGENT_CONFIGMAP, OTEL_KEY, agent.otel))
    jobs = frozenset(job["job_name"] for job in agent.scrape["scrape_configs"])
    for name, key, generated in keys:
        check = f"ConfigMap {name}" + (f" key {key}" if key == OTEL_KEY else "")
        if unknown:
            yield from step(GROUP, check, _unknown_configmap, configmap, namespace, name, key, unknown, project)
        else:
            yield from step(GROUP, check, _agent_configmap, configmap, namespace, name, key, generated, path, jobs,
                            project.settings)
    if agent.otel is None:
        yield from step(GROUP, f"ConfigMap {AGENT_CONFIGMAP} key {OTEL_KEY}", _no_pipeline_left, configmap,
                        namespace, path)


def _unknown_configmap(configmap: Callable[[str], Answer | None], namespace: str, name: str, key: str, unknown: str,
                       project: Project) -> Check:
    """An agent ConfigMap of a cluster that cannot be told: missing is still missing; present, it is compared with
    no cluster's generated config (another cluster's file applied here would break this one)."""
    check = f"ConfigMap {name}" + (f" key {key}" if key == OTEL_KEY else "")
    clusters = shown([c.name for c in project.settings.clusters])
    live = configmap(name)
    if key not in (live.string_map("data") if live is not None else {}):
        return Check(GROUP, check, FAIL, f"{namespace}/{name} (key {key}) is missing",
                     f"{KUBECTL_APPLY} -f {built(agent_file('<cluster>'))} with <cluster> the entry of clusters this "
                     f"kube context is (one of {clusters}; then restart {AGENT_DEPLOYMENT}), and verify --cluster "
                     "<cluster>", cause=NOT_DEPLOYED)
    return Check(GROUP, check, WARN, f"{unknown}: not compared with any cluster's generated config",
                 f"{CLUSTER_FIX}: one of {clusters}")


@functools.lru_cache(maxsize=4)
def _safe_load(text: str) -> Any:
    """yaml.safe_load through libyaml's safe loader where PyYAML has it (about seven times faster), once per text:
    verify reads the live collector configuration (about 240 lines, a few ms of building Python objects even so)
    twice, for the cluster it names and for its drift. What it gives is only read (compared, looked up), never
    changed; a text that is not YAML raises at every call (nothing is kept)."""
    return yaml.load(text, Loader=yaml_loader())


class ExporterRead(NamedTuple):
    """Where the exporter group reads /metrics: the exporter of the cluster this kube context is."""
    style: ExporterStyle
    namespace: str
    unknown: str  # why the cluster cannot be told ('' when it can)
    basis: str  # what the exporter read was taken from, where the cluster cannot be told
    # the cluster whose exporter.mig the series are judged by (every cluster's alike: the first); None where the
    # clusters differ in it and which one this context is cannot be told (mig_unknown says why)
    mig_cluster: Cluster | None = None
    mig_unknown: str = ""


def mig_cluster(configmap: Callable[[str], Answer | None], project: Project,
                chosen: str | None) -> tuple[Cluster | None, str]:
    """The cluster whose exporter.mig this context's exporter is judged by (clusters[].exporter.mig): where the
    clusters differ in it, the one this context is (_this_cluster: --cluster, else the live agent config's, else the
    only one), with why it cannot be told; else any (the first)."""
    settings = project.settings
    if len(settings.mig_groups()) > 1 or chosen is not None:
        return _this_cluster(configmap, project, chosen)
    return settings.clusters[0], ""


def exporter_to_read(kube: Kube, project: Project, options: Options) -> ExporterRead:
    """The exporter of the cluster this kube context is (this_cluster, from the agent ConfigMap the kube group reads
    too); where that cannot be told, the one exporter DaemonSet in the clusters' exporter namespaces read as what it
    is, as the kube group reads it, else the fleet's exporter settings, with why and from what."""
    settings = project.settings
    configmap = agent_configmaps(kube, options, settings.agent.namespace)
    this, unknown = this_cluster(configmap, project, options.cluster)
    mig = mig_cluster(configmap, project, options.cluster)
    style, namespace = style_for(settings, this), exporter_namespace(settings, this)
    if not unknown:
        return ExporterRead(style, namespace, "", "", *mig)
    namespaces = _clusters_namespaces(settings)
    found = [d for each in namespaces for d in _exporter_daemonsets(kube, each)]
    daemonset, style, namespace = _the_one_found(found, settings, style, namespace)
    basis = (f"the one exporter DaemonSet in {', '.join(namespaces)}, {namespace}/"
             f"{daemonset.get('metadata.name', str)}, read as the {style.key} style's" if daemonset is not None else
             f"{len(found) or 'no'} exporter DaemonSets in {', '.join(namespaces)}: the fleet's exporter settings "
             f"(exporter.deployment {style.key}, exporter.namespace {namespace})")
    return ExporterRead(style, namespace, unknown, basis, *mig)


def _this_cluster(configmap: Callable[[str], Answer | None], project: Project,
                  chosen: str | None) -> tuple[Cluster | None, str]:
    """The entry of clusters this kube context is: --cluster's, else the one the live agent config names
    (cluster_name), else the only one; with several and none of them named, None and why it cannot be told."""
    clusters = project.settings.clusters
    if chosen is not None:
        picked = next((c for c in clusters if c.name == chosen), None)
        return picked, "" if picked else f"--cluster {chosen} is none of clusters ({shown([c.name for c in clusters])})"
    name = _live_cluster_name(configmap)
    named = next((c for c in clusters if c.name == name), None)
    if named is not None or len(clusters) == 1:
        return named or clusters[0], ""
    where = f"the live agent config ({project.settings.agent.namespace}/{AGENT_CONFIGMAP})"
    seen = (f"{where} names cluster {name}, none of clusters ({shown([c.name for c in clusters])})" if name else
            f"{where} names no cluster (missing or unread), and there are {len(clusters)} clusters")
    return None, f"cannot tell which cluster this kube context is: {seen}"


def _live_cluster_name(configmap: Callable[[str], Answer | None]) -> str | None:
    """The cluster_name the live agent config publishes under, when it can be read."""
    try:
        live = configmap(AGENT_CONFIGMAP)
        data = live.string_map("data") if live is not None else {}
        if OTEL_KEY in data:
            name = publishing(_safe_load(data[OTEL_KEY])).get("cluster_name")
        else:
            name = json.loads(data.get(AGENT_KEY, "{}"))["logs"]["metrics_collected"]["prometheus"].get("cluster_name")
    except Exception:  # noqa: BLE001 - only a probe: the ConfigMap check reports what is wrong
        return None
    return name if isinstance(name, str) and name else None


def _no_pipeline_left(configmap: Callable[[str], Answer | None], namespace: str, path: str) -> Check:
    """agent.pipeline: classic: a pipeline gpudash wrote earlier would publish every metric a second time."""
    check = f"ConfigMap {AGENT_CONFIGMAP} key {OTEL_KEY}"
    live = configmap(AGENT_CONFIGMAP)
    if OTEL_KEY in (live.string_map("data") if live is not None else {}):
        return Check(GROUP, check, FAIL, f"{namespace}/{AGENT_CONFIGMAP} still holds {OTEL_KEY}: with the JSON path "
                     "(agent.pipeline: classic) the agent would publish every metric twice",
                     f"kubectl replace -f {built(path)} (then restart {AGENT_DEPLOYMENT})")
    return Check(GROUP, check, OK, "absent (agent.pipeline: classic)")


def _agent_version(deployment: Answer) -> Check:
    """The agent's release, from its container's image tag: the OTel pipeline needs MIN_AGENT_VERSION or later
    (the JSON holds no pipeline: an agent older than READS_YAML_VERSION ignores gpudash-otel.yaml and publishes
    nothing; up to MIN_AGENT_VERSION it reads it but exits at start, failing to load the default YAML its
    translator does not write for a JSON without a pipeline)."""
    name = "CloudWatch agent version"
    images = [c.get("image", str, "") for c in deployment.at("spec.template.spec", required=False).items("containers")]
    image = next((i for i in images if "cloudwatch-agent" in i), images[0] if images else "")
    tag = image.rsplit("/", 1)[-1].partition("@")[0].partition(":")[2]
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", tag)
    needed = tuple(int(part) for part in MIN_AGENT_VERSION.split("."))
    fix = (f"run the agent image {MIN_AGENT_VERSION} or later, or set agent.pipeline: classic (DCGM's blank "
           "values then reach CloudWatch)")
    if found is None:
        return Check(GROUP, name, WARN, f"cannot tell the release from the image {image or '(none)'}: the OTel "
                     f"pipeline (agent.pipeline: otel) needs {MIN_AGENT_VERSION} or later", fix)
    release = tuple(int(part) for part in found.groups())
    if release < tuple(int(part) for part in READS_YAML_VERSION.split(".")):
        return Check(GROUP, name, FAIL, f"{tag} is older than {MIN_AGENT_VERSION}: it does not read "
                     f"{OTEL_KEY}, so the agent publishes nothing", fix)
    if release < needed:
        return Check(GROUP, name, FAIL, f"{tag} is older than {MIN_AGENT_VERSION}: it reads {OTEL_KEY} but, its "
                     "JSON holding no pipeline, finds no amazon-cloudwatch-agent.yaml and exits at start "
                     "(failed to load OTEL configs), so the agent publishes nothing", fix)
    return Check(GROUP, name, OK, f"{tag} reads {OTEL_KEY} (needs {MIN_AGENT_VERSION} or later)")


def _agent(kube: Kube, namespace: str, otel: bool) -> list[Check]:
    what = f"Deployment {namespace}/{AGENT_DEPLOYMENT}"
    deployment = kube.read(f"/apis/apps/v1/namespaces/{namespace}/deployments/{AGENT_DEPLOYMENT}", what)
    if deployment is None:
        return [Check(GROUP, "CloudWatch agent", FAIL, f"no {what}",
                      "deploy the CloudWatch agent for Prometheus (cwagent-prometheus)", cause=NOT_DEPLOYED)]
    versions = [_agent_version(deployment)] if otel else []
    wanted = deployment.get("spec.replicas", int, 1)
    available = deployment.at("status").get("availableReplicas", int, 0)
    scale = f"kubectl -n {namespace} scale deployment {AGENT_DEPLOYMENT} --replicas=1"
    if not wanted:  # read "0/0 replicas available": ok, while nothing scrapes or publishes
        return [Check(GROUP, "CloudWatch agent", FAIL, f"{what} is scaled to 0 replicas: nothing scrapes the exporter "
                      "or publishes to CloudWatch", scale, cause=NOT_DEPLOYED), *versions]
    replicas = [] if wanted == 1 else [Check(
        GROUP, AGENT_REPLICAS, FAIL,
        f"{what} asks for {wanted} replicas (spec.replicas): each scrapes every exporter pod and publishes every "
        f"reading, and CloudWatch keeps them all, so a Sum or a SampleCount reads {wanted} times its truth: counter "
        "increases (PCIe replays, rows remapped, XID errors, energy) and counts of data points, and an alarm on a "
        f"sum fires at 1/{wanted} of its threshold (PCIe replays); Average, Minimum and Maximum hold",
        f"{scale}, and keep replicas: 1 in its manifest (one agent per cluster scrapes the whole cluster)")]
    if available >= wanted:
        return [Check(GROUP, "CloudWatch agent", OK, f"{available}/{wanted} replicas available"), *replicas, *versions]
    return [Check(GROUP, "CloudWatch agent", FAIL, f"{available}/{wanted} replicas available",
                  f"kubectl -n {namespace} describe deployment {AGENT_DEPLOYMENT}", cause=NOT_DEPLOYED), *replicas,
            *versions]


AGENT_REPLICAS = "CloudWatch agent replicas"


def _agent_configmap(configmap: Callable[[str], Answer | None], namespace: str, name: str, key: str,
                     generated: dict[str, Any], path: str, jobs: frozenset[str], settings: Settings) -> Check:
    """One key of an agent ConfigMap against the build's. A ConfigMap holding what gpudash does not write (a person's
    or the CloudWatch agent's stock scrape jobs and metric declarations, `_not_gpudash_s`) is never one to apply the
    build over without a word: `kubectl apply` replaces each key's whole text, so the agent would stop scraping and
    publishing them. Where gpudash's own part matches, the check warns; where it differs, it fails saying both. One
    applied from other settings (another project of the cluster: _writer) that differs is theirs to lose: one agent
    config serves a cluster, and each project's apply would drop what only the other publishes."""
    check = f"ConfigMap {name}" + (f" key {key}" if key == OTEL_KEY else "")
    fix = f"{KUBECTL_APPLY} -f {built(path)} (then restart {AGENT_DEPLOYMENT})"
    live = configmap(name)
    data = live.string_map("data") if live is not None else {}
    try:  # what it holds is compared as Python objects, however deep a person (or an attacker) nested them
        return _agent_configmap_read(live, data, namespace, name, key, generated, path, jobs, settings)
    except RecursionError:
        return Check(GROUP, check, FAIL, f"{namespace}/{name} holds a text nested deeper than gpudash reads: not "
                     "compared with what gpudash generates", f"look at it (kubectl -n {namespace} get configmap {name} "
                     f"-o yaml); if gpudash's, {fix}")


def _agent_configmap_read(live: Answer | None, data: dict[str, str], namespace: str, name: str, key: str,
                          generated: dict[str, Any], path: str, jobs: frozenset[str], settings: Settings) -> Check:
    """_agent_configmap, of the ConfigMap read (`live`, its `data`)."""
    check = f"ConfigMap {name}" + (f" key {key}" if key == OTEL_KEY else "")
    fix = f"{KUBECTL_APPLY} -f {built(path)} (then restart {AGENT_DEPLOYMENT})"
    theirs, kept = _not_gpudash_s(data, jobs)
    if theirs:
        replaced = (f"{namespace}/{name} holds what gpudash does not write ({'; '.join(theirs)}): applying "
                    f"{built(path)} replaces the ConfigMap's texts whole, and the agent stops scraping and publishing "
                    "them")
        keep = (f"before applying {built(path)}, move them to an agent of their own (a second CloudWatch agent "
                "Deployment mounting ConfigMaps of other names), or add them back to the file after each generate")
        if _gpudash_s(live):
            # gpudash's ConfigMap: what it holds of no build of these settings may be an earlier build's (another
            # scrape.job_name) or a person's edit, which nothing in it tells apart
            keep = f"if a gpudash build of earlier settings wrote them, apply {built(path)}; if a person added them, {keep}"
    if key not in data:
        if theirs:
            return Check(GROUP, check, FAIL, f"{namespace}/{name} (key {key}) is missing; {replaced}", keep,
                         cause=NOT_DEPLOYED)
        return Check(GROUP, check, FAIL, f"{namespace}/{name} (key {key}) is missing", fix, cause=NOT_DEPLOYED)
    drift = _config_drift(key, kept.get(key, data[key]), generated)
    if drift and theirs:
        return Check(GROUP, check, FAIL, "differs from what gpudash generates: " + "; ".join(drift) + f"; {replaced}",
                     keep)
    # (one of these settings' project for another cluster name is these settings before the cluster was renamed: the
    # agent's config is the cluster's alone)
    writer = _writer(live, settings) if live is not None else THESE
    if drift and writer not in (THESE, UNRECORDED) and not writer.same_project:
        return Check(GROUP, check, FAIL, f"{namespace}/{name} was applied from {writer.said} and differs from what "
                     f"these settings generate: {'; '.join(drift)}; one agent config serves a cluster: applying "
                     f"{built(path)} replaces that one, and its next apply replaces this one, each dropping what only "
                     "the other publishes", "publish this cluster's CloudWatch metrics from one settings file (one "
                     "project's definitions holding both's dashboards and alarms)")
    if drift and live is not None and not _gpudash_s(live):
        return Check(GROUP, check, FAIL, "differs from what gpudash generates: " + "; ".join(drift) + f"; {namespace}/"
                     f"{name} is not gpudash's (no {KUBERNETES_SELECTOR} label: AWS's or a person's): applying "
                     f"{built(path)} replaces it whole", fix)
    if drift:
        return Check(GROUP, check, FAIL, "differs from what gpudash generates: " + "; ".join(drift), fix)
    if theirs and key in kept:
        return Check(GROUP, check, WARN, f"gpudash's part matches what gpudash generates; {replaced}", keep)
    return Check(GROUP, check, OK, "matches what gpudash generates")


def _not_gpudash_s(data: dict[str, str], jobs: frozenset[str]) -> tuple[list[str], dict[str, str]]:
    """What an agent ConfigMap's `data` holds that no gpudash build writes, said (scrape jobs of names other than the
    build's `jobs`; metric declarations of the agent's JSON that select no job of those names, as gpudash's select
    theirs: source_labels [job], label_matcher ^<job>$), and the texts of the keys that hold it with it left out
    (what gpudash's part is then compared by). gpudash-otel.yaml is gpudash's key: all of it is its own."""
    theirs: list[str] = []
    kept: dict[str, str] = {}
    if isinstance(data.get(SCRAPE_KEY), str):
        try:
            config = _safe_load(data[SCRAPE_KEY])
        except yaml.YAMLError:
            config = None
        listed = config.get("scrape_configs") if isinstance(config, dict) else None
        if isinstance(listed, list):
            other = [job for job in listed if not (isinstance(job, dict) and job.get("job_name") in jobs)]
            if other:
                names = [str(job.get("job_name")) if isinstance(job, dict) else "?" for job in other]
                theirs.append(f"scrape job{'s' if len(names) > 1 else ''} {shown(names)}")
                kept[SCRAPE_KEY] = yaml.safe_dump({**config, "scrape_configs": [j for j in listed if j not in other]})
    if isinstance(data.get(AGENT_KEY), str):
        config = json_value(data[AGENT_KEY])
        try:
            emf = config["logs"]["metrics_collected"]["prometheus"]["emf_processor"]
            declarations = emf["metric_declaration"]
        except (KeyError, TypeError):  # (NOT_JSON is not subscriptable either)
            declarations = None
        if isinstance(declarations, list):
            matchers = {f"^{re.escape(job)}$" for job in jobs}
            other = [d for d in declarations if not (isinstance(d, dict) and d.get("source_labels") == ["job"]
                                                     and d.get("label_matcher") in matchers)]
            if other:
                selectors = list(dict.fromkeys(s for d in other if isinstance(d, dict)
                                               for s in d.get("metric_selectors") or [] if isinstance(s, str)))
                theirs.append(f"{len(other)} metric declaration{'s' if len(other) > 1 else ''} of "
                              f"{len(selectors)} metric selector{'s' if len(selectors) != 1 else ''} "
                              f"({shown(selectors)})")
                emf["metric_declaration"] = [d for d in declarations if d not in other]
                if not emf["metric_declaration"]:  # a pipeline of none of gpudash's: compared without it
                    del config["logs"]["metrics_collected"]["prometheus"]
                    if not config["logs"]["metrics_collected"]:
                        del config["logs"]
                kept[AGENT_KEY] = json.dumps(config)
    return theirs, kept


def _selectors(config: Answer) -> tuple[set[str], list]:
    declarations = config.items("logs.metrics_collected.prometheus.emf_processor.metric_declaration")
    declarations = list(declarations)
    selectors = {s for d in declarations for s in d.strings("metric_selectors")}
    dimensions = [d.get("dimensions", list, None) for d in declarations]
    return selectors, dimensions


def _otel_drift(live_text: str, generated: dict[str, Any]) -> list[str]:
    """How the live collector configuration differs from the one of the artifact set."""
    try:
        live = _safe_load(live_text) or {}
    except yaml.YAMLError:
        return [f"{OTEL_KEY} is not YAML"]
    if live == generated:
        return []
    try:
        emf_live, emf_new = publishing(live)["emf_processor"], publishing(generated)["emf_processor"]
        filters = [c.get("processors", {}).get(FILTER) for c in (live, generated)]
    except (KeyError, TypeError, AttributeError, IndexError, StopIteration):
        return [f"{OTEL_KEY} is not the pipeline gpudash writes (no {RECEIVER}, {FILTER} or {EXPORTER})"]
    selectors = [{s for d in emf["metric_declaration"] for s in d.get("metric_selectors") or []}
                 for emf in (emf_live, emf_new)]
    drift = [f"metric selector missing: {s}" for s in sorted(selectors[1] - selectors[0])]
    drift += [f"metric selector extra: {s}" for s in sorted(selectors[0] - selectors[1])]
    dims = [[d.get("dimensions") for d in emf["metric_declaration"]] for emf in (emf_live, emf_new)]
    if dims[0] != dims[1]:
        drift.append(f"dimensions {dims[0]} → {dims[1]}")
    if filters[0] != filters[1]:
        drift.append("the filter that drops DCGM's blank values differs")
    return drift or ["other settings differ"]


def _config_drift(key: str, live_text: str, generated: dict[str, Any]) -> list[str]:
    """How the live ConfigMap's text differs from the config of the artifact set."""
    if key == OTEL_KEY:
        return _otel_drift(live_text, generated)
    if key == AGENT_KEY:
        live = json_value(live_text)
        if live is NOT_JSON:
            return ["cwagentconfig.json is not JSON"]
        if live == generated:
            return []
        source = f"ConfigMap {AGENT_CONFIGMAP} key {AGENT_KEY}"
        if "logs" not in generated:  # the OTel pipeline publishes; the JSON holds no pipeline
            if Answer(live, source).get("logs", dict, None) is not None:
                return ["it holds a pipeline of its own (the agent would publish twice)"]
            return ["other settings differ"]
        (live_selectors, live_dims), (new_selectors, new_dims) = \
            _selectors(Answer(live, source)), _selectors(Answer(generated, "gpudash"))
        drift = [f"metric selector missing: {s}" for s in sorted(new_selectors - live_selectors)]
        drift += [f"metric selector extra: {s}" for s in sorted(live_selectors - new_selectors)]
        if live_dims != new_dims:
            drift.append(f"dimensions {live_dims} → {new_dims}")
        return drift or ["other settings differ"]
    try:
        live = _safe_load(live_text) or {}
    except yaml.YAMLError:
        return ["prometheus.yaml is not YAML"]
    if live == generated:
        return []
    live_jobs = {j.get("job_name", str, ""): j.value
                 for j in Answer(live, f"ConfigMap {SCRAPE_CONFIGMAP} key {SCRAPE_KEY}").items("scrape_configs")}
    drift = []
    for job in generated["scrape_configs"]:
        if job["job_name"] not in live_jobs:
            drift.append(f"scrape job {job['job_name']} missing")
        elif live_jobs[job["job_name"]] != job:
            keys = sorted(k for k in set(job) | set(live_jobs[job["job_name"]])
                          if job.get(k) != live_jobs[job["job_name"]].get(k))
            drift.append(f"scrape job {job['job_name']} differs in {', '.join(keys)}")
    return drift or ["other settings differ"]
