"""Prometheus checks: DCGM targets up, series present, which label carries the workload pod.

Series are found by name pattern (`DCGM_FI_...`), not by one field, so a fleet whose GPUs are all
split into MIG instances (no DCGM_FI_DEV_GPU_UTIL) is recognised as reporting.

A target's series are read now or one scrape interval and its timeout ago (`recent`, `tolerant_up`): one failed
scrape marks every series of its target stale and its `up` 0 until the next, so an instant read now said "no
DCGM_FI_* series" (or a target down) for a whole scrape interval; an exporter stopped or failing every scrape is
still found within two intervals."""

from __future__ import annotations

import math
import re
import time
from typing import Iterator

from .. import data_missing
from ..clients.answer import OddAnswer
from ..clients.http import SlowAnswer
from ..clients.prometheus import HINT, NoRuleListing, Prometheus
from ..errors import RemoteError
from ..exporter_styles import exporter_namespaces
from ..markers import KUBERNETES_SELECTOR, PROMETHEUS_RULE_LABEL
from ..names import ALERT_PREFIX, CLUSTERS_GROUP, WATCHED_CLUSTER, is_counter_group, prometheus_rule_name, shown
from ..output import ADDITIONAL_SCRAPE_FILE, PROMETHEUS_RULE_FILE, RULES_FILE, SERVICE_MONITOR_FILE, built
from ..agent_timing import scrape_timeout
from ..project import Project
from ..promql import COUNTED_PARTS, counted_name
from ..promql_alike import alike
from ..promql_text import matcher, quoted
from ..render.alarms import counter_of
from ..clients.options import Options
from .built import rule_groups
from .result import FAIL, NO_DATA, NOT_DEPLOYED, ODD_ANSWER, ODD_FIX, OK, UNREACHABLE, WARN, Check, step

GROUP = "prometheus"


def _dcgm(label: str | None = None) -> str:
    """Every DCGM field's series, optionally only those carrying `label`."""
    extra = f', {label}!=""' if label else ""
    return f'{{__name__=~"DCGM_FI_.+"{extra}}}'


def looked_back(project: Project) -> int:
    """Seconds before now verify also reads a target's series at: gpudash's scrape interval and its timeout, so the
    read falls before a failed scrape whose staleness markers (stamped at the scrape's start, written at its timeout)
    the read now meets, and after the scrape before it."""
    interval = project.settings.scrape.seconds
    return interval + scrape_timeout(interval)


NAME_COPY = "gpudash_name"  # the metric's name as a label: `or` matches series by their labels without the name


def recent(selector: str, within: int) -> str:
    """The series of `selector` (an instant selector) sampled now, and those not sampled now (marked stale by one
    failed scrape) that were `within` seconds ago, each once."""
    named = [f'label_replace({read}, "{NAME_COPY}", "$1", "__name__", "(.+)")'
             for read in (selector, f"{selector} offset {within}s")]
    return f"({' or '.join(named)})"


def tolerant_up(selector: str, within: int) -> str:
    """One series per target `selector` (of `up`) lists now: 1 where it is up now or was `within` seconds ago (one
    failed scrape), else 0 (down at both)."""
    return f"(({selector} == 1 or {selector} offset {within}s == 1) and {selector}) or {selector}"


SCRAPE_JOB = "Prometheus scrape job"


def scrape_job(project: Project, options: Options) -> Check:
    """The additional-scrape-configs path deployed: Prometheus has gpudash's scrape job configured and it
    has discovered exporter targets, whether or not it has scraped them yet."""
    job = project.settings.scrape.job_name
    if not options.prometheus_url:
        return Check(GROUP, SCRAPE_JOB, FAIL, "no Prometheus URL given to look for the scrape job",
                     "pass --prometheus-url (or PROMETHEUS_URL)")
    try:
        with Prometheus(options.prometheus_url, options) as prometheus:
            targets = prometheus.job_targets(job)
    except RemoteError as exc:
        return Check(GROUP, SCRAPE_JOB, FAIL, f"cannot list the targets of Prometheus: {exc.what}", HINT,
                     cause=UNREACHABLE)
    except OddAnswer as odd:
        return Check(GROUP, SCRAPE_JOB, FAIL, f"odd answer from {odd}", ODD_FIX, cause=ODD_ANSWER)
    if not targets:
        return Check(GROUP, SCRAPE_JOB, FAIL, f"Prometheus has no target for scrape job {job!r}",
                     f"apply {built(ADDITIONAL_SCRAPE_FILE)} (or {built(SERVICE_MONITOR_FILE)})",
                     cause=NOT_DEPLOYED)
    return Check(GROUP, SCRAPE_JOB, OK, f"scrape job {job!r} with {len(targets)} targets: {', '.join(targets[:3])}"
                 + (" ..." if len(targets) > 3 else ""))


def checks(project: Project, options: Options) -> Iterator[Check]:
    if not options.prometheus_url:
        yield Check(GROUP, "reachable", FAIL, "no Prometheus URL given",
                    "pass --prometheus-url (or PROMETHEUS_URL), or --skip prometheus")
        return
    with Prometheus(options.prometheus_url, options) as prometheus:
        yield from _checks(prometheus, project)


def _checks(prometheus: Prometheus, project: Project) -> Iterator[Check]:
    targets: list = []
    yield from step(GROUP, "DCGM targets", _targets, prometheus, project, targets)
    reporting: list = []
    yield from step(GROUP, "DCGM series", _series, prometheus, bool(targets), reporting, looked_back(project))
    yield from step(GROUP, PINNED, pinned_queries, prometheus)
    yield from step(GROUP, ALERTS_ALIKE, alerts_alike, prometheus, project)
    if reporting:
        yield from step(GROUP, COUNTER_RECORDINGS, counter_recordings, prometheus, project,
                        published_anyway=COUNTER_RECORDINGS_LATER)
        if project.settings.shared_prometheus:
            yield from step(GROUP, WATCHED_CLUSTERS, watched_clusters, prometheus, project,
                            published_anyway=WATCHED_CLUSTERS_LATER)
        yield from step(GROUP, "workload pod label", _pod_label, prometheus, project)
        yield from step(GROUP, "node label", _node_label, prometheus, project)
        if data_missing.expected(project.settings):
            yield from step(GROUP, EXPECTED_SIGNAL, _expected_signal, prometheus, project)
    windows = [data_missing.window_seconds(a.period_seconds, a.evaluation_periods) for a in project.alarms if a.absent]
    if targets and windows and data_missing.expected(project.settings):
        yield from step(GROUP, POD_NODES, _pod_nodes, prometheus, project, min(windows))


ALERTS_ALIKE = "alert rules loaded once"
# Why a publish goes ahead where an alert is loaded by another condition alone: the rules are deployed apart from a
# publish, often just before it (kubectl apply, then push: Prometheus loads them a reload later)
ALERTS_LATER = "the alert follows these settings once their rules are loaded"


def alerts_alike(prometheus: Prometheus, project: Project) -> Check:
    """Whether Prometheus evaluates one of gpudash's alerts (Gpudash..., of any settings) from several rule files with
    different conditions: two projects' rules judging one cluster's series, or a file an earlier build deployed left
    beside the new one (another threshold, or an alarm since removed or changed). Their alerts carry the same name
    and labels, and Alertmanager takes those for one alert, so it fires at whichever condition holds: each team is
    notified at the other's thresholds. Rules loaded twice alike notify once, as one. On a Prometheus of several
    clusters each settings file's rules read their own clusters, whose conditions differ rightly: there, a cluster
    two settings' rules both watch (their watched-clusters recordings, rule group CLUSTERS_GROUP, of two cluster lists
    that differ) is what is judged twice."""
    try:
        if project.settings.shared_prometheus:
            return _clusters_watched_once(prometheus.recording_rules())
        rules = prometheus.alerting_rules()
    except SlowAnswer:  # the run's deadline: the group's own failure
        raise
    except NoRuleListing as exc:  # a server that lists no rules (an API of queries alone): nothing to judge by
        return Check(GROUP, ALERTS_ALIKE, OK, f"not judged: the server lists no rules ({exc.what})")
    except RemoteError as exc:  # a listing it failed to answer (a 503, an auth proxy's 403): rules unread, not none
        return Check(GROUP, ALERTS_ALIKE, FAIL, f"cannot tell: {exc.what}", exc.hint or HINT, cause=UNREACHABLE)
    conditions: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, set[str]]] = {}
    for file, name, labels, query in rules:
        if name.startswith(ALERT_PREFIX):
            conditions.setdefault((name, tuple(sorted(labels.items()))), {}).setdefault(query, set()).add(file)
    split = {key: queries for key, queries in conditions.items() if len(queries) > 1}
    if split:
        (name, labels), queries = min(split.items())
        files = sorted({file for found in queries.values() for file in found})
        alerts = sorted({alert for alert, _ in split})
        severity = dict(labels).get("severity")
        return Check(GROUP, ALERTS_ALIKE, FAIL,
                     f"Prometheus evaluates {name}" + (f" ({severity})" if severity else "") + f" from {len(files)} "
                     f"rule files with {len(queries)} different conditions ({shown(files)})"
                     + (f", and {len(alerts) - 1} more alerts so" if len(alerts) > 1 else "") + ": Alertmanager "
                     "takes alerts of one name and labels for one, so it fires at whichever condition holds",
                     "delete the rules no settings deploy now (a file or PrometheusRule of an earlier build: kubectl "
                     f"get prometheusrules -A -l {KUBERNETES_SELECTOR}); where another project judges this cluster, "
                     "judge it from one settings file")
    stale = _stale_alerts(conditions, project)
    if stale:
        (name, labels), files = stale[0]
        severity = dict(labels).get("severity")
        return Check(GROUP, ALERTS_ALIKE, FAIL,
                     f"Prometheus evaluates {name}" + (f" ({severity})" if severity else "") + " by a condition other "
                     f"than these settings' ({shown(files)})" + (f", and {len(stale) - 1} more alerts so"
                                                                 if len(stale) > 1 else "")
                     + ": it fires as that condition says (an earlier build's rules, or another settings file's, or "
                     "edited), not as these settings do",
                     f"apply {built(PROMETHEUS_RULE_FILE)} (or put {built(RULES_FILE)} in place of the rules file "
                     "Prometheus loads); where another project's rules judge this cluster, judge it from one settings "
                     "file", published_anyway=ALERTS_LATER)
    loaded = len({key[0] for key in conditions})
    return Check(GROUP, ALERTS_ALIKE, OK, f"{loaded} of gpudash's alerts loaded, each with one condition: these "
                 "settings'" if loaded else "none of gpudash's alerts loaded")


def _stale_alerts(conditions: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, set[str]]], project: Project
                  ) -> list[tuple[tuple[str, tuple[tuple[str, str], ...]], list[str]]]:
    """The alerts of this build (name and labels) Prometheus evaluates by one condition (`conditions`, as
    alerts_alike reads them) that is not the build's (promql_alike), each with the files it is loaded from. An alert
    of the build not loaded at all is not one: its rules may be deployed elsewhere, or not used."""
    stale = []
    for group in rule_groups(project)["groups"]:
        for rule in group["rules"]:
            key = (rule.get("alert", ""), tuple(sorted(rule.get("labels", {}).items())))
            queries = conditions.get(key, {})
            if queries and not any(alike(query, rule["expr"]) for query in queries):
                stale.append((key, sorted({file for found in queries.values() for file in found})))
    return stale


def _clusters_watched_once(recordings: list[tuple[str, str, dict[str, str], str]]) -> Check:
    """On a Prometheus of several clusters: whether a cluster is watched by the rules of two settings (two rule files
    recording it as watched, with cluster lists that differ; one list in two files is one settings' rules loaded
    twice, or two settings of the same clusters, whose alerts' conditions read alike but for their definitions)."""
    lists: dict[str, set[str]] = {}
    for file, name, labels, _ in recordings:
        if name == WATCHED_CLUSTER:
            lists.setdefault(file, set()).update(value for key, value in labels.items() if key != PROMETHEUS_RULE_LABEL)
    twice = {}
    for first, clusters in lists.items():
        for second, others in lists.items():
            if first < second and clusters != others and clusters & others:
                twice[(first, second)] = clusters & others
    if twice:
        (first, second), clusters = min(twice.items())
        return Check(GROUP, ALERTS_ALIKE, FAIL,
                     f"clusters {shown(sorted(clusters))} are watched by the rules of two settings ({first}, {second}"
                     + (f"; and {len(twice) - 1} more pairs of rule files" if len(twice) > 1 else "") + "): each "
                     "judges them, with alerts of the same names and labels, which Alertmanager takes for one alert "
                     "(it fires at whichever condition holds)",
                     "judge each cluster from one settings file: remove it from the other's clusters, or delete the "
                     f"rules no settings deploy now (kubectl get prometheusrules -A -l {KUBERNETES_SELECTOR})")
    return Check(GROUP, ALERTS_ALIKE, OK, f"each of the {len({c for s in lists.values() for c in s})} clusters watched "
                 "is watched by one settings' rules")


PINNED = "PromQL @ and negative offset"
# The range bars' constructs at their smallest: a subquery pinned with `@ end()` and read one second later (a negative
# offset). At an instant T (a whole second) Prometheus evaluates its one step at T + 1 s, whose timestamp() is T + 1:
# the answer shows the server applied both, not only that it parsed them. It selects no series.
PINNED_PROBE = "last_over_time(timestamp(vector(0))[1ms:1ms] @ end() offset -1s)"
STABLE_FROM = (2, 33)  # Prometheus made both stable in 2.33 (before: --enable-feature flags, 2.25 and 2.26 on)
PINNED_USERS = ("the range bars (a counter's increase over the dashboard's time range, such as Rows remapped on "
                "gpudash-health) use both")
PINNED_FIX = ("upgrade Prometheus to 2.33 or later (2.26 to 2.32: run it with "
              "--enable-feature=promql-at-modifier,promql-negative-offset); behind another PromQL back-end, enable "
              "both there")


def server_version(prometheus: Prometheus) -> str:
    """What /api/v1/status/buildinfo says the server is, in words; an unknown or odd version is said to be unknown,
    and a version that is not Prometheus' (Mimir names its own application) is not compared to Prometheus'."""
    try:
        info = prometheus.build_info()
        if info is None:
            return "version unknown: it has no /api/v1/status/buildinfo (HTTP 404)"
        version, application = info.get("version", str, ""), info.get("application", str, "")
    except SlowAnswer:
        raise
    except RemoteError as exc:
        return f"version unknown: {exc.what}"
    except OddAnswer as odd:
        return f"version unknown: its build information is not the API's ({odd.path or 'the answer'} is odd)"
    if not version:
        return "version unknown: its build information names none"
    if application:
        return f"{application} {version}, whose version is not Prometheus'"
    match = re.match(r"v?(\d+)\.(\d+)\.", version)
    if match is None or int(match.group(1)) < 2:  # Prometheus has answered buildinfo since 2.x: 0.x is another's
        return f"version {version!r}, not one of Prometheus'"
    if (int(match.group(1)), int(match.group(2))) >= STABLE_FROM:
        return f"Prometheus {version}"
    return f"it reports version {version}, before Prometheus 2.33"


def pinned_queries(prometheus: Prometheus, now: float | None = None) -> Check:
    """Whether the server answers a query pinned with `@ end()` and shifted by a negative offset as Prometheus does:
    the feature proven, whatever the version string says (VictoriaMetrics reports 2.24.0, Mimir and Thanos their
    own); the version read beside it for the message."""
    at = float(int(time.time() if now is None else now))
    version = server_version(prometheus)
    try:
        samples, refusal = prometheus.parses(PINNED_PROBE, at)
    except SlowAnswer:
        raise
    except RemoteError as exc:
        return Check(GROUP, PINNED, FAIL, f"cannot tell whether the server takes `@ end()` and a negative offset "
                     f"({version}): {exc.what}", "run `gpudash verify` again once Prometheus answers queries (see "
                     "its log for the failure)", cause=UNREACHABLE)
    if samples is None:
        return Check(GROUP, PINNED, FAIL, f"{prometheus.source} ({version}) refuses a query with `@ end()` and a "
                     f"negative offset ({refusal}): a panel whose query uses either shows an error; {PINNED_USERS}",
                     PINNED_FIX)
    values = [value for _, value in samples]
    if len(values) != 1 or not math.isclose(values[0], at + 1, abs_tol=1e-3):
        read = ", ".join(f"{value:.3f}" for value in values) or "nothing"
        return Check(GROUP, PINNED, WARN, f"{prometheus.source} ({version}) answers a query with `@ end()` and a "
                     f"negative offset otherwise than Prometheus: {read} where Prometheus reads {at + 1:.3f}; "
                     f"a panel whose query uses them may count other scrapes than its range's; {PINNED_USERS}",
                     PINNED_FIX)
    return Check(GROUP, PINNED, OK, f"a query with `@ end()` and a negative offset is answered as Prometheus answers "
                 f"it ({version})")


POD_NODES = "exporter pods in kube_pod_info"
JOINED = "gpudash_join"  # the label the one query tells its parts apart by


def _pod_nodes(prometheus: Prometheus, project: Project, window: int) -> Check:
    """Which judgement the data-missing rule gives the exporter targets without `node` (the GPU operator's
    ServiceMonitor as shipped): per node where kube-state-metrics' kube_pod_info names each target's pod (joined on
    namespace and pod, as the rule does), else per target alone. One query: the targets found and not found in
    kube_pod_info, and how many kube_pod_info series there are, and how many renamed (exported_pod)."""
    settings = project.settings
    targets = data_missing.operator_targets(settings, node=False)
    keys, pods = data_missing.pod_join_keys(settings), data_missing.exporter_pods(settings)

    def tagged(expression: str, part: str) -> str:
        return f'label_replace({expression}, "{JOINED}", "{part}", "", "")'
    every, renamed = f"count({data_missing.POD_INFO})", f'count({data_missing.POD_INFO}{{exported_pod!=""}})'
    rows = prometheus.query(f"{tagged(targets, 'found')} and on({keys}) {pods} "
                            f"or {tagged(targets, 'missing')} unless on({keys}) {pods} "
                            f"or {tagged(every, 'all')} or {tagged(renamed, 'renamed')}")
    parts: dict[str, list[dict[str, str]]] = {}
    counts: dict[str, float] = {}
    for labels, value in rows:
        part = labels.get(JOINED, "")
        if part in ("all", "renamed"):
            counts[part] = value
        elif part in ("found", "missing"):
            parts.setdefault(part, []).append(labels)
        else:
            raise OddAnswer(prometheus.source, f"data.result[].metric.{JOINED}", part, "found, missing, all or renamed")
    found, missing = parts.get("found", []), parts.get("missing", [])
    total = len(found) + len(missing)
    if not total:
        return Check(GROUP, POD_NODES, OK, "no exporter target without `node` (the GPU operator's ServiceMonitor as "
                     "shipped): the data-missing rule takes no node from kube_pod_info")
    if not missing:
        return Check(GROUP, POD_NODES, OK, f"the pod of each of the {total} exporter targets without `node` is in "
                     "kube_pod_info: the data-missing rule judges each node")
    names = sorted(f"{labels.get('namespace', '?')}/{labels.get('pod', '?')}" for labels in missing)
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    ksm_monitor = ("honorLabels: true on kube-state-metrics' ServiceMonitor (Helm values: "
                   "kube-state-metrics.prometheus.monitor.honorLabels: true)")
    if not counts.get("all"):
        why = "this Prometheus holds no kube_pod_info (kube-state-metrics is not scraped)"
        fix = (f"install kube-state-metrics and scrape it with this Prometheus (kube-prometheus-stack does), with "
               f"{ksm_monitor}")
    elif counts.get("renamed"):
        why = ("kube_pod_info carries exported_pod: kube-state-metrics is scraped without honorLabels, so the pod it "
               "describes is renamed")
        fix = f"set {ksm_monitor}"
    else:
        where = ", ".join(exporter_namespaces(settings))
        why = f"kube_pod_info names no such pod in {where}"
        fix = (f"check that kube-state-metrics lists the pods of namespace {where} (its "
               "--namespaces and --resources) and is ready")
    return Check(GROUP, POD_NODES, WARN, f"{len(missing)} of {total} exporter targets without `node` have no "
                 f"kube_pod_info of their pod ({shown}): {why}; the data-missing rule judges each of them alone, so "
                 f"an exporter pod replaced more often than every {window // 60} minutes is never judged", fix)


def pinned_panels(dashboards: dict[str, dict]) -> list[str]:
    """The panels of these dashboards (uid -> dashboard JSON, as published) whose query uses the `@` modifier or a
    negative offset, as `'<dashboard title>' panel '<panel title>'`; the dashboards' own JSON is read, nothing is
    rendered."""
    from ..lint.promql_checks import pins_time

    found = []
    for uid, model in dashboards.items():
        for panel in model.get("panels", []):
            for shown in [panel, *panel.get("panels", [])]:  # a collapsed row holds its panels
                if any(pins_time(target.get("expr") or "") for target in shown.get("targets", [])):
                    found.append(f"{model.get('title', uid)!r} panel {shown.get('title', '?')!r}")
    return found


EXPECTED_SIGNAL = "exporter DaemonSet in kube-state-metrics"
# kube-state-metrics series of any DaemonSet named like a DCGM exporter (the operator's, a Helm release's)
EXPORTER_LIKE = 'daemonset=~".*dcgm-exporter.*"'


def _by_daemonset(rows: list[tuple[dict[str, str], float]], cluster: str | None, source: str,
                  what: str) -> dict[tuple[str, str, str], int]:
    """(cluster, namespace, daemonset) -> count, from kube-state-metrics series: every DaemonSet (one per
    cluster on a shared Prometheus), each once however many kube-state-metrics targets report it."""
    counts: dict[tuple[str, str, str], int] = {}
    for labels, value in rows:
        if not (math.isfinite(value) and value >= 0 and value == int(value)):
            raise OddAnswer(source, "data.result[].value[1]", value, f"a whole number of {what}")
        key = (labels.get(cluster, "") if cluster else "", labels.get("namespace", "?"), labels.get("daemonset", "?"))
        counts[key] = max(counts.get(key, 0), int(value))
    return counts


def _named(key: tuple[str, str, str]) -> str:
    cluster, namespace, daemonset = key
    return f"{namespace}/{daemonset}" + (f" in {cluster}" if cluster else "")


def _expected_signal(prometheus: Prometheus, project: Project) -> Check:
    """The series the data-missing rule reads to know how many exporters should report: every DaemonSet
    kube-state-metrics reports with an identifying label (data_missing.exporter_label_matchers), summed (one or
    more per cluster: the operator's, a Helm release per node pool); a DaemonSet named like an exporter that
    carries none of those labels there (kube-state-metrics' allowlist unset, or other labels) is named."""
    settings = project.settings
    cluster = settings.labels.cluster if settings.shared_prometheus else None
    source = prometheus.source
    each = f"on({cluster}, namespace, daemonset)" if cluster else "on(namespace, daemonset)"
    found = data_missing.exporter_daemonsets()
    desired = _by_daemonset(prometheus.query(f"{data_missing.DESIRED} and {each} {found}"), cluster, source, "pods")
    exporter_like = _by_daemonset(prometheus.query(f"{data_missing.DESIRED}{{{EXPORTER_LIKE}}}"), cluster, source,
                                  "pods")
    unread = {key: count for key, count in exporter_like.items() if key not in desired}
    others = ", ".join(f"{_named(key)} ({count} desired)" for key, count in sorted(unread.items()))
    labels = data_missing.exporter_labels_text()
    unread_fix = (f"run kube-state-metrics with --metric-labels-allowlist={data_missing.KSM_ALLOWLIST} "
                  f"(kube-prometheus-stack: kube-state-metrics.metricLabelsAllowlist: "
                  f"['{data_missing.KSM_ALLOWLIST}']), and label each exporter DaemonSet {labels}")
    if not desired:
        detail = (f"no {data_missing.DESIRED} of a DaemonSet labelled {labels} ({data_missing.LABELS}): the "
                  "data-missing alert fires until it arrives")
        if unread:
            return Check(GROUP, EXPECTED_SIGNAL, FAIL, f"{detail}; kube-state-metrics reports exporter DaemonSets "
                         f"without those labels: {others}", unread_fix)
        return Check(GROUP, EXPECTED_SIGNAL, WARN, detail,
                     "scrape kube-state-metrics with this Prometheus (kube-prometheus-stack does by default) and "
                     f"run it with --metric-labels-allowlist={data_missing.KSM_ALLOWLIST}, or set "
                     "alarms.expected_gpus: none")
    available = _by_daemonset(prometheus.query(f"{data_missing.AVAILABLE} and {each} {found}"), cluster, source,
                              "pods")
    ready = {key: min(available.get(key, 0), count) for key, count in desired.items()}
    detail = f"{sum(ready.values())} of {sum(desired.values())} exporter pods available"
    if len(desired) > 1:
        detail += " (" + ", ".join(f"{_named(key)}: {ready[key]} of {count}" for key, count in
                                   sorted(desired.items())) + ")"
    short = [key for key, count in desired.items() if ready[key] < count]
    if unread:
        return Check(GROUP, EXPECTED_SIGNAL, WARN, f"{detail}; the data-missing rule reads DaemonSets labelled "
                     f"{labels}, and not these exporter DaemonSets without those labels: {others}", unread_fix)
    if short:
        return Check(GROUP, EXPECTED_SIGNAL, WARN, detail,
                     "; ".join(f"kubectl -n {key[1]} rollout status daemonset/{key[2]}" for key in sorted(short)))
    return Check(GROUP, EXPECTED_SIGNAL, OK, detail)


def _targets(prometheus: Prometheus, project: Project, found: list) -> Check:
    settings = project.settings
    job = settings.scrape.job_name
    within = looked_back(project)
    targets = prometheus.query(tolerant_up(f"up{{{matcher('job', job)}}}", within)) or \
        prometheus.query(f"({tolerant_up('up', within)}) and on (job) group by (job) ({recent(_dcgm(), within)})")
    found.extend(targets)
    down = [labels for labels, value in targets if value == 0]
    if not targets:
        return Check(GROUP, "DCGM targets", FAIL, f"no scrape target for job {job!r} and no job with DCGM series",
                     f"apply {built(ADDITIONAL_SCRAPE_FILE)} or {built(SERVICE_MONITOR_FILE)}",
                     cause=NO_DATA)
    if down:
        instances = ", ".join(labels.get("instance", "?") for labels in down)
        # the job's Namespace label: the exporter pod's (a mixed fleet's clusters keep them in different ones)
        namespace = next((labels["Namespace"] for labels in down if labels.get("Namespace")),
                         settings.exporter.namespace)
        return Check(GROUP, "DCGM targets", FAIL, f"{len(down)} of {len(targets)} targets down (now and {within} s "
                     f"before): {instances}",
                     f"check the exporter pods on those nodes (kubectl -n {namespace} get pods -o wide)")
    return Check(GROUP, "DCGM targets", OK, f"{len(targets)} targets up")


def gpus_reporting(within: int) -> str:
    """The GPUs with a DCGM series (now, or `within` seconds ago: `recent`), by both names of a GPU's UUID: `uuid`
    where the exporter runs with --use-old-namespace (by UUID alone, every GPU of such a fleet was one), `UUID`
    otherwise, and both in a fleet moving from one to the other."""
    return f"count(count by (UUID, uuid) ({recent(_dcgm(), within)}))"


def _series(prometheus: Prometheus, have_targets: bool, reporting: list, within: int) -> Check:
    gpus = prometheus.query(gpus_reporting(within))
    count = gpus[0][1] if gpus else 0
    if not (math.isfinite(count) and count >= 0):
        raise OddAnswer(prometheus.source, "data.result[0].value[1]", count, "a count of GPUs")
    count = int(count)
    if not count:
        return Check(GROUP, "DCGM series", FAIL, f"no DCGM_FI_* series (now or {within} s before)",
                     "check the scrape job's metric_relabel_configs keep DCGM_.* and the exporter's CSV",
                     cause="" if have_targets else NO_DATA)
    reporting.append(count)
    return Check(GROUP, "DCGM series", OK, f"{count} GPUs with a DCGM series")  # any value: not the panel's count


COUNTER_RECORDINGS = "counter recording rules"
# Why a publish goes ahead without them: the rule group is deployed with the rules file, not by a publish, often in
# the same change as the dashboards, and every other panel draws
COUNTER_RECORDINGS_LATER = "they draw once the group is loaded"


def counter_recordings(prometheus: Prometheus, project: Project) -> Check:
    """Whether Prometheus writes the recordings Grafana's counter rate panels read (promql.counted_rules, the rule groups
    of render.alarms.counter_groups) for every such counter it holds series of: a panel reading a recording the server does not write
    (its rules not loaded, or failing, or their group stopped) shows no data and no error."""
    fields = project.counted_fields()
    if not fields:
        return Check(GROUP, COUNTER_RECORDINGS, OK, "no panel reads a counter's recording")
    names = "|".join(fields)
    within = looked_back(project)

    def written(pattern: str) -> set[str]:
        return {labels.get(NAME_COPY, "") for labels, _ in
                prometheus.query(f"count by ({NAME_COPY}) ({recent(f'{{__name__=~{quoted(pattern)}}}', within)})")}
    held = written(names)
    recorded = written(f"gpudash:({names}):({'|'.join(COUNTED_PARTS)})")
    # each recording of a counter Prometheus holds series of that it does not write, by the group (and the
    # PrometheusRule, names.prometheus_rule_name) that holds it (render.alarms.counter_groups: cut into several, each
    # counter's two recordings in one; taken from the build's rule groups, made once a run: checks.built)
    written_by = [group for group in rule_groups(project)["groups"] if is_counter_group(group["name"])]
    group_of = {counter_of(rule): g["name"] for g in written_by for rule in g["rules"]}
    missing = [name for name in fields
               if name in held and any(counted_name(name, part) not in recorded for part in COUNTED_PARTS)]
    unwritten: dict[str, list[str]] = {}
    for recording in (counted_name(name, part) for name in missing for part in COUNTED_PARTS):
        if recording not in recorded:
            unwritten.setdefault(group_of[counter_of({"record": recording})], []).append(recording)

    def groups(counters: list[str]) -> str:
        named = list(dict.fromkeys(group_of[counter_of({"record": counted_name(name)})] for name in counters))
        return f"rule group{'s' if len(named) > 1 else ''} {', '.join(map(repr, named))}"
    if missing:
        objects = [prometheus_rule_name(group) for group in unwritten]
        return Check(GROUP, COUNTER_RECORDINGS, FAIL,
                     "Prometheus writes no " + "; ".join(f"{', '.join(recordings)} (rule group {group!r})"
                                                          for group, recordings in unwritten.items())
                     + f": not loaded, failing or stopped; the Grafana rate panels of {', '.join(missing)} show no "
                     "data",
                     f"apply {built(PROMETHEUS_RULE_FILE)}, whose PrometheusRule{'s' if len(objects) > 1 else ''} "
                     f"{', '.join(objects)} hold{'' if len(objects) > 1 else 's'} them (kubectl apply goes on past an "
                     "object it may not create: a role that may update PrometheusRules but not create them leaves the "
                     f"new ones out), or add {built(RULES_FILE)} to Prometheus' rule_files; the panels' history "
                     "starts with the rules (docs/grafana-panels.md, \"Counter rates\": backfill)",
                     cause=NOT_DEPLOYED)
    held_fields = [name for name in fields if name in held]
    said = (f"{len(held_fields)} counters recorded"
            + (f" ({len(fields) - len(held_fields)} have no series)" if len(held_fields) < len(fields) else "")
            + (f" by {groups(held_fields)}" if held_fields else ""))
    return _recorded_as_built(prometheus, said, written_by, [counted_name(name, part) for name in held_fields
                                                             for part in COUNTED_PARTS])


def _recorded_as_built(prometheus: Prometheus, said: str, groups: list[dict], recordings: list[str]) -> Check:
    """counter_recordings where every recording is written (`said`): whether the rules Prometheus writes `recordings`
    by are this build's (`groups`, render.alarms.counter_groups), as its rule listing gives them back (promql_alike:
    the expression read alike, the labels the same). A rule of an earlier build (another scrape interval, an older
    way of reading a counter) left loaded writes the same series: the rate panels then show what it computes, with
    no sign of it. A recording no listed rule writes (a ruler elsewhere writing into this server) is not compared."""
    built_rules = {rule["record"]: rule for group in groups for rule in group["rules"]}
    try:
        loaded = prometheus.recording_rules()
    except SlowAnswer:  # the run's deadline: the group's own failure
        raise
    except NoRuleListing as exc:  # a server that lists no rules: nothing to compare with
        return Check(GROUP, COUNTER_RECORDINGS, OK, f"{said}; whether by this build's rules is not told ({exc.what})")
    except RemoteError as exc:  # a listing it failed to answer: rules unread, not none
        return Check(GROUP, COUNTER_RECORDINGS, FAIL, f"cannot tell whether the counters' recordings are this "
                     f"build's rules: {exc.what}", exc.hint or HINT, cause=UNREACHABLE)
    live: dict[str, list[tuple[str, dict[str, str], str]]] = {}
    for file, name, labels, query in loaded:
        if name in built_rules:
            live.setdefault(name, []).append((file, labels, query))
    differ = [name for name in recordings if name in live and not any(
        labels == built_rules[name].get("labels", {}) and alike(query, built_rules[name]["expr"])
        for _, labels, query in live[name])]
    if differ:
        files = sorted({file for name in differ for file, _, _ in live[name]})
        counters = list(dict.fromkeys(counter_of({"record": name}).removeprefix("gpudash:") for name in differ))
        return Check(GROUP, COUNTER_RECORDINGS, FAIL,
                     f"Prometheus records {shown(differ)} by rules other than this build's (expression or labels "
                     f"differ; loaded from {shown(files)}): the Grafana rate panels of {', '.join(counters)} show what "
                     "those rules compute",
                     f"apply {built(PROMETHEUS_RULE_FILE)} (or put {built(RULES_FILE)} in place of the rules file "
                     "Prometheus loads); where another settings file's rules record these counters on this "
                     "Prometheus, judge its clusters from one settings file; where the rules are this build's as "
                     "applied, something rewrote them on load (prometheus-operator's enforcedNamespaceLabel adds a "
                     "namespace matcher to every selector and label to every rule of a PrometheusRule: list the "
                     "PrometheusRules' namespace in the Prometheus' prometheusRulesExcludedFromEnforce)")
    unlisted = [name for name in recordings if name not in live]
    return Check(GROUP, COUNTER_RECORDINGS, OK, f"{said}, " + (
        f"{len(recordings) - len(unlisted)} recordings by this build's rules, {len(unlisted)} by no rule the server "
        "lists (not compared)" if unlisted else "each by this build's rules"))


WATCHED_CLUSTERS = "watched clusters recording"
WATCHED_CLUSTERS_LATER = "their GPUs show once the group is loaded"


def watched_clusters(prometheus: Prometheus, project: Project) -> Check:
    """On a Prometheus holding several clusters, whether it records each of the settings' clusters as watched (the
    rule group CLUSTERS_GROUP, render.alarms.watched_clusters): the dashboards' cluster variable lists those alone, so
    a cluster it does not record is in no panel (its All reads none of its GPUs)."""
    settings = project.settings
    cluster = settings.labels.cluster
    recorded = {labels.get(cluster, "") for labels, _ in prometheus.query(f"count by ({cluster}) ({WATCHED_CLUSTER})")}
    missing = [c.prometheus_label for c in settings.clusters if c.prometheus_label not in recorded]
    if missing:
        return Check(GROUP, WATCHED_CLUSTERS, FAIL,
                     f"Prometheus writes no {WATCHED_CLUSTER} of cluster {', '.join(map(repr, missing))} (rule group "
                     f"{CLUSTERS_GROUP!r} not loaded, failing or stopped): the dashboards' cluster variable does not "
                     f"list it, and no panel shows its GPUs",
                     f"apply {built(PROMETHEUS_RULE_FILE)} (or add {built(RULES_FILE)} to Prometheus' rule_files)",
                     cause=NOT_DEPLOYED)
    return Check(GROUP, WATCHED_CLUSTERS, OK,
                 f"rule group {CLUSTERS_GROUP!r} records the {len(settings.clusters)} clusters as watched")


CARRIED = "gpudash_label"  # which label a series of `_carried` was counted for


def _carried(prometheus: Prometheus, within: int) -> set[str]:
    """Which of the workload labels, in either spelling (`<label>`, `exported_<label>`), any DCGM series carries
    (`recent`): one query for the six (a run asked them one by one, a round trip and a query's fixed cost each)."""
    names = [f"{prefix}{label}" for label in ("pod", "namespace", "container") for prefix in ("exported_", "")]
    counted = " or ".join(f'label_replace({recent(_dcgm(name), within)}, "{CARRIED}", "{name}", "", "")'
                          for name in names)
    return {labels.get(CARRIED, "") for labels, _ in prometheus.query(f"count by ({CARRIED}) ({counted})")}


def _arrives_as(carried: set[str], label: str) -> str | None:
    """The name a workload label (`pod`, `namespace`, `container`) arrives under on the DCGM series: `exported_<label>`
    when any series carries it (the scrape target's own label won), else `<label>` when any series carries that,
    else None (no GPU held by a pod)."""
    if f"exported_{label}" in carried:
        return f"exported_{label}"
    return label if label in carried else None


def _pod_label(prometheus: Prometheus, project: Project) -> Check:
    labels = project.settings.labels
    carried = _carried(prometheus, looked_back(project))
    detected = _arrives_as(carried, "pod")
    if detected is None:
        return Check(GROUP, "workload pod label", WARN, "no series carries a workload pod label",
                     "run again while a pod uses a GPU; check the exporter's pod labels")
    if detected != labels.pod:
        if detected == "exported_pod":
            fix = ("set labels.pod: exported_pod, labels.namespace: exported_namespace and labels.container: "
                   "exported_container in gpudash.yaml, or scrape with gpudash's job or ServiceMonitor "
                   "(honorLabels: true)")
        else:
            fix = "set labels.pod: pod, labels.namespace: namespace and labels.container: container in gpudash.yaml"
        return Check(GROUP, "workload pod label", FAIL,
                     f"the workload pod arrives as {detected!r}, settings say {labels.pod!r}", fix)
    # The pod's twins: a path that renames the pod renames them too (the scrape target carries its own
    # namespace and container), so a pod setting that matches alone would still show every pod in the
    # exporter's namespace and container.
    wrong = [(key, getattr(labels, key), arrived) for key, arrived in
             ((key, _arrives_as(carried, key)) for key in ("namespace", "container"))
             if arrived is not None and arrived != getattr(labels, key)
             and getattr(labels, key) in (key, f"exported_{key}")]  # pod_namespace (--use-old-namespace) aside
    if wrong:
        return Check(GROUP, "workload pod label", FAIL,
                     "; ".join(f"the workload's {key} arrives as {arrived!r}, settings say {setting!r}"
                               for key, setting, arrived in wrong),
                     " and ".join(f"set labels.{key}: {arrived}" for key, _, arrived in wrong) + " in gpudash.yaml")
    targets_own = _targets_own_pods(prometheus, project)
    if targets_own:
        gpus = sum(targets_own.values())
        shown = ", ".join(f"{pod} ({count} GPU{'s' * (count != 1)})" for pod, count in sorted(targets_own.items())[:3])
        carry = "s carry their" if gpus != 1 else " carries its"
        more = " ..." if len(targets_own) > 3 else ""
        return Check(GROUP, "workload pod label", WARN,
                     f"{gpus} GPU{carry} scrape target's own pod as the workload's {labels.pod!r}: {shown}{more}: a "
                     "GPU no pod holds gets the exporter pod's labels (a ServiceMonitor that honors labels and keeps "
                     "its target's pod, or one that does not honor them); gpudash's panels and alerts read it as held "
                     "by no pod (by the exporter DaemonSets' pod names, whatever the namespace: a workload pod so "
                     "named reads as none too), any other query of this Prometheus shows the exporter pod holding it",
                     f"apply {built(SERVICE_MONITOR_FILE)} in place of that ServiceMonitor (it honors labels and drops "
                     "its target's pod, namespace and container); or, in yours, set honorLabels: true and add the "
                     "relabeling {action: labeldrop, regex: pod|namespace|container}")
    return Check(GROUP, "workload pod label", OK, f"{detected!r} as configured")


def _targets_own_pods(prometheus: Prometheus, project: Project) -> dict[str, int]:
    """{namespace/pod: GPUs} of the DCGM series whose workload pod (labels.pod, labels.namespace) is a pod of an
    exporter DaemonSet the settings name (by its name: an exporter run as a sidecar of the workload's pod is scraped as
    that pod, which does hold the GPU): a GPU no pod holds, scraped by a job whose targets carry the exporter pod's
    labels and that writes them where the exporter wrote none (honor_labels with the target's pod kept, or a job that
    does not honor labels, read as `pod`). The series' own `up` is not asked for: a Prometheus federating that one
    holds the same series under its federation job's `up`, and its panels show the exporter pod alike. A GPU is its
    UUID: a MIG GPU's instances, and its copies scraped twice, are one."""
    labels = project.settings.labels
    pod, namespace = labels.pod, labels.namespace
    gpu = ", ".join((namespace, pod, labels.uuid))
    exporters = f'{{__name__=~"DCGM_FI_.+", {pod}=~{quoted(labels.exporter_pods)}}}'
    found = prometheus.query(f"count by ({namespace}, {pod}) (group by ({gpu}) "
                             f"({recent(exporters, looked_back(project))}))")
    return {f"{row.get(namespace, '')}/{row.get(pod, '')}": int(value) for row, value in found}


def _node_label(prometheus: Prometheus, project: Project) -> list[Check]:
    sources = project.settings.labels.node_sources
    within = looked_back(project)
    unnamed = "{" + ", ".join(['__name__=~"DCGM_FI_.+"', *(f'{source}=""' for source in sources)]) + "}"
    result = []
    for spelling in ("Hostname", "hostname"):
        if spelling not in sources and prometheus.query(f"count({recent(_dcgm(spelling), within)})") \
                and prometheus.query(f"count({recent(unnamed, within)})"):
            result.append(Check(GROUP, "node label", FAIL, f"series carry {spelling!r}, settings say "
                                f"{' or '.join(map(repr, sources))}", f"add {spelling} to labels.node in gpudash.yaml"))
    return result
