"""Every name gpudash gives what it generates, and how it recognises those names when it meets them again.

Renderers ask here for alarm, alert, dashboard, uid, ConfigMap, object and logical-id names; the
publishers ask here whether a name they find is in a form gpudash makes before they consider
pruning it. The prefixes come from the settings (`alarms.name_prefix`, `cloudwatch.dashboard_prefix`,
`grafana.uid_prefix`), so a name is a function of them and of the definition's id.
"""

from __future__ import annotations

import hashlib
import re

from . import printed

# The id of a dashboard or alarm definition (model checks it): generated names end in it.
DEFINITION_ID_LENGTH = 31  # the most characters of a definition id
DEFINITION_ID = rf"[a-z0-9][a-z0-9-]{{0,{DEFINITION_ID_LENGTH - 1}}}"

# --- CloudWatch alarms ----------------------------------------------------------------------

FLEET = "fleet"  # stands for the cluster in the name of an alarm over every cluster


def alarm_name(prefix: str, cluster: str | None, rule: str, severity: str, pod: tuple[str, str] | None = None) -> str:
    """<prefix>-<cluster or fleet>-<rule>-<severity>[-<namespace>-<pod>] (a static per-pod alarm names its pod)."""
    parts = [prefix, cluster if cluster is not None else FLEET, rule, severity]
    return "-".join(parts + ([f"{pod[0]}-{pod[1]}"] if pod else []))


def regional_alarm_name(name: str, region: str, regions: int) -> str:
    """A fleet alarm is made once per Region; with more than one Region, its name ends in the Region."""
    return name + (f"-{region}" if regions > 1 else "")


def alarm_name_start(prefix: str) -> str:
    """What every alarm name gpudash makes with `prefix` starts with (DescribeAlarms' AlarmNamePrefix)."""
    return prefix + "-"


def is_alarm_name(prefix: str, name: str) -> bool:
    """Whether `name` could be an alarm gpudash made with `prefix` (ownership is decided by its tags)."""
    return name.startswith(alarm_name_start(prefix))


def names_cluster(prefix: str, name: str, clusters: frozenset[str] | set[str],
                  known: frozenset[str] | set[str] = frozenset()) -> bool:
    """Whether the alarm or CloudWatch dashboard `name` is in the form gpudash gives one of `clusters`
    (<prefix>-<cluster>-...), read exactly: a cluster's name may continue another's with a dash (`prod`,
    `prod-eu`), so the name is read with the longest cluster it starts with among `clusters` and `known`
    (the other clusters names are seen for, `clusters_named`); it is theirs when that one is of `clusters`.
    `gpudash-prod-eu-x` is `prod-eu`'s, never `prod`'s, once `prod-eu` is seen."""
    return cluster_tail(prefix, name, clusters, known) is not None


def cluster_tail(prefix: str, name: str, clusters: frozenset[str] | set[str],
                 known: frozenset[str] | set[str] = frozenset()) -> str | None:
    """What follows <prefix>-<cluster>- in `name` when `names_cluster` reads it as one of `clusters`'; else None.
    Whether a cluster that continues that one (`prod-eu` beside `prod`) could own the name too is for the tail
    to tell: `gpudash-prod-eu-inference` has the tail `eu-inference`, read as `prod-eu`'s `inference` as well."""
    head = _longest_head(name, {f"{prefix}-{cluster}" for cluster in {*clusters, *known}})
    if head is None or head[len(prefix) + 1:] not in clusters:
        return None
    return name[len(head) + 1:]


def name_tails(prefix: str, names, clusters) -> frozenset[str]:
    """What follows <prefix>-<cluster>- in the names gpudash gives `clusters`' objects (a rule and severity,
    a dashboard id), each name read with the longest of `clusters` it starts with."""
    tails = set()
    for name in names:
        head = _longest_head(name, {f"{prefix}-{cluster}" for cluster in clusters})
        if head is not None:
            tails.add(name[len(head) + 1:])
    return frozenset(tails)


def clusters_named(prefix: str, names, tails: frozenset[str]) -> frozenset[str]:
    """Every cluster one of `names` is named for in gpudash's form with one of `tails` (<prefix>-<cluster>-<tail>):
    the clusters, this file's or not, whose objects are seen."""
    start = prefix + "-"
    return frozenset(head[len(start):] for head in _heads(names, tails) if head.startswith(start) and head != prefix)


def _heads(names, tails) -> set[str]:
    """What comes before -<tail> in each of `names` that ends in one of `tails`."""
    return {name[:-len(tail) - 1] for name in names for tail in tails
            if name.endswith("-" + tail) and len(name) > len(tail) + 1}


def _longest_head(name: str, heads) -> str | None:
    """The longest of `heads` that `name` starts with, followed by a dash."""
    starts = [head for head in heads if name.startswith(head + "-")]
    return max(starts, key=len) if starts else None


# --- CloudWatch dashboards ------------------------------------------------------------------

DASHBOARD_NAME_LENGTH = 255  # CloudWatch's limit


def cloudwatch_dashboard_name(prefix: str, cluster: str, dashboard_id: str) -> str:
    """<prefix>-<cluster>-<dashboard id>, cut at CloudWatch's limit."""
    return f"{prefix}-{cluster}-{dashboard_id}"[:DASHBOARD_NAME_LENGTH]


def cloudwatch_dashboard_name_start(prefix: str) -> str:
    """What every dashboard name gpudash makes with `prefix` starts with (ListDashboards' DashboardNamePrefix)."""
    return prefix + "-"


def is_cloudwatch_dashboard_name(prefix: str, name: str) -> bool:
    """Whether `name` has the form cloudwatch_dashboard_name gives: <prefix>-<cluster>-<dashboard id>."""
    return len(name) <= DASHBOARD_NAME_LENGTH and re.fullmatch(
        re.escape(prefix) + r"-[A-Za-z0-9][A-Za-z0-9_-]*-[A-Za-z0-9_-]+", name) is not None


# --- Grafana --------------------------------------------------------------------------------

def grafana_uid(uid_prefix: str, dashboard_id: str) -> str:
    return f"{uid_prefix}-{dashboard_id}"


def is_grafana_uid(uid: str, uid_prefix: str, seen: frozenset[str] | set[str] = frozenset()) -> bool:
    """Whether gpudash would generate this uid (`<uid_prefix>-<dashboard id>`), read exactly: not when it
    is in the form of a longer uid prefix `seen` (`grafana_uid_prefixes`), as `gpudash-eu-overview` of
    the prefix `gpudash-eu` is, though `eu-overview` could be a dashboard id of the prefix `gpudash`."""
    return re.fullmatch(rf"{re.escape(uid_prefix)}-{DEFINITION_ID}", uid) is not None \
        and _longest_head(uid, {uid_prefix, *seen}) == uid_prefix


def grafana_uid_prefixes(uid_prefix: str, uids, defined) -> frozenset[str]:
    """The uid prefixes the dashboards `uids` (anyone's) are seen with: what comes before -<dashboard id> in
    each that ends in the id of one of the uids `defined` (`<uid_prefix>-<dashboard id>`)."""
    start = uid_prefix + "-"
    ids = {uid[len(start):] for uid in defined if uid.startswith(start)}
    return frozenset(_heads(uids, ids))


def grafanalib_uid(title: str) -> str:
    """The uid of a grafanalib dashboard that sets none: its title, lower-case, dashes for the rest."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40] or "dashboard"


def dashboard_configmap_name(uid: str) -> str:
    """The sidecar ConfigMap that carries one Grafana dashboard."""
    return f"{uid}-dashboard"


def dashboard_configmap_key(uid: str) -> str:
    return f"{uid}.json"


PROVISIONING_PROVIDER = "gpudash"  # the provider in Grafana's provisioning/dashboards file

# --- Prometheus and Kubernetes objects ------------------------------------------------------

ALERT_GROUP = "gpudash-gpu"  # the group of alerting rules
COUNTER_GROUP = "gpudash-counters"  # the recording rules of the counters Grafana's rate panels read
# ... cut into this many groups at least, each an object (render.alarms.counter_groups), as the alerts are (ALERT_GROUPS):
# 205,797 bytes in one object for the multi-region example's five counters (before 14978afd), past the quarter of
# kubectl's limit kept for growth; in three, each about a third (a counter's two recordings, ~41 KB there, in one
# group). More only past 3 x GROUP_BYTES (393 KB) of them.
COUNTER_GROUPS = 3
# On a Prometheus holding several clusters (clusters[].prometheus_label): a series per cluster gpudash watches, which
# the dashboards' cluster variable lists (its All: those clusters, not every cluster on the Prometheus)
CLUSTERS_GROUP, WATCHED_CLUSTER = "gpudash-clusters", "gpudash:cluster:watched"
PROMETHEUS_RULE = "gpudash-gpu-alerts"  # the PrometheusRule of the alerts' (first) group, once the one of every group


def prometheus_rule_name(group: str) -> str:
    """The PrometheusRule holding rule group `group` (one object per group, render.alarms.prometheus_rule_resources):
    ALERT_GROUP's is PROMETHEUS_RULE, a group's next part (`<group>-2`) is its object's name with that suffix, any
    other group's is the group's name."""
    base, _, number = group.rpartition("-")
    if base and number.isdigit():
        return f"{prometheus_rule_name(base)}-{number}"
    return PROMETHEUS_RULE if group == ALERT_GROUP else group


_PART = "(-[2-9]|-[1-9][0-9]+)?"  # a group's next parts' suffix (render.alarms.size_bounded): -2, -3...


def is_prometheus_rule_name(name: str) -> bool:
    """Whether `name` is one prometheus_rule_name gives: the alerts' objects, the counters' or the clusters'."""
    return re.fullmatch(f"{re.escape(PROMETHEUS_RULE)}{_PART}|{re.escape(COUNTER_GROUP)}{_PART}|"
                        f"{re.escape(CLUSTERS_GROUP)}", name) is not None


def is_counter_group(name: str) -> bool:
    """Whether rule group `name` holds counters' recordings: COUNTER_GROUP or one of its next parts."""
    return re.fullmatch(f"{re.escape(COUNTER_GROUP)}{_PART}", name) is not None
SERVICE_MONITOR = "gpudash-dcgm-exporter"
KUBE_STATE_METRICS_JOB = "gpudash-kube-state-metrics"  # the agent's scrape job for the exporter DaemonSet counts
# The CloudWatch agent's ConfigMaps, with the names (and keys) its deployment mounts.
AGENT_CONFIGMAP = "prometheus-cwagentconfig"
SCRAPE_CONFIGMAP = "prometheus-config"


ALERT_PREFIX = "Gpudash"  # what every alert gpudash writes is named with first


def alert_name(rule: str) -> str:
    """The Prometheus alert of a rule id: Gpudash + the id in CamelCase (gpu-idle: GpudashGpuIdle)."""
    return ALERT_PREFIX + "".join(part.capitalize() for part in re.split(r"[-_]", rule))


def agent_log_group(cluster: str) -> str:
    """The EMF log group the agent writes for a cluster (its default name, set explicitly)."""
    return f"/aws/containerinsights/{cluster}/prometheus"


# --- CloudFormation -------------------------------------------------------------------------

LOGICAL_WORDS = 200  # the most of a name's words a logical id holds (CloudFormation takes 255 characters)


def logical_id(kind: str, name: str) -> str:
    """A template's logical id (letters and digits, unique in its template): the kind (Dashboard, Alarm, LogGroup),
    then the name's words capitalised (`gpudash-eks-a-gpu-idle-warning`: AlarmGpudashEksAGpuIdleWarning). It depends
    on the kind and the name alone, never on the other names of the template: CloudFormation knows a resource by its
    logical id, and one that changes is created anew under the same name and the old one deleted (an alarm or
    dashboard is then gone, a log group's creation fails), so which alarms a template holds, or how a cluster's are
    split over templates, changes no id.

    Capitalised words drop what separates them, their case and where a word of digits starts (`trainer-1`,
    `trainer1`, `trainer_1` and `Trainer-1` are all Trainer1), so an id is read back as one spelling (`spelled`):
    lower-case words joined by `-`, a word's trailing digits a word of their own (`trainer-1`, `ml-train-0`,
    `us-east-1`; a log group `/aws/containerinsights/<that>/prometheus`). The name spelled so, with at most
    LOGICAL_WORDS of words, has that id; any other name (`trainer1`, `a_b`, `aB`, a longer one) has its words, cut
    at LOGICAL_WORDS, and the first 10 hex digits of its sha256, upper-case: the ids of two names are equal only
    where their digests are, or where a name spelled as above ends in another's digest."""
    if kind != "LogGroup" and _LOWER.fullmatch(name):  # the common case, told without reading the id back
        words = "".join(map(str.capitalize, name.split("-")))
        if len(words) <= LOGICAL_WORDS and _SPELLED.fullmatch(name):
            return kind + words
    else:
        words = "".join(part.capitalize() for part in _NOT_WORD.split(name) if part)
        if len(words) <= LOGICAL_WORDS and spelled(kind, words) == name:
            return kind + words
    return kind + words[:LOGICAL_WORDS] + hashlib.sha256(name.encode()).hexdigest()[:10].upper()


def plain_logical_id(kind: str, name: str) -> str:
    """The logical id of `name` without a digest: the kind and the name's words capitalised, cut at LOGICAL_WORDS (what
    gpudash gave every name before logical_id read ids back, unless two names of one template shared it)."""
    return kind + "".join(part.capitalize() for part in _NOT_WORD.split(name) if part)[:LOGICAL_WORDS]


def spelled(kind: str, words: str) -> str:
    """The one name whose logical id is `kind` + `words` as it is (logical_id): the words lower-case, joined by `-`,
    a word's trailing digits a word of their own; a log group's in the agent's form (agent_log_group)."""
    if kind == "LogGroup":
        group = _LOG_GROUP_WORDS.fullmatch(words)
        if group:
            return agent_log_group(spelled("", group[1]))
    return "-".join(_TRAILING_DIGITS.sub(r"\1-\2", word.lower()) for word in _ID_WORD.findall(words))


_NOT_WORD = re.compile(r"[^A-Za-z0-9]+")
_ID_WORD = re.compile(r"[A-Z][a-z0-9]*|[a-z0-9]+")  # a capitalised word (or the digits an id's words start with)
_TRAILING_DIGITS = re.compile(r"^(.*[a-z])([0-9]+)$")
_LOG_GROUP_WORDS = re.compile(r"AwsContainerinsights(.+)Prometheus")
# Of the names of lower-case letters, digits and `-` (_LOWER), those `spelled` gives: words joined by single `-`, each
# ending in a letter but the first (it may be digits alone) and any of digits alone that follows one ending in a letter
_LOWER = re.compile(r"[a-z0-9-]*")
_SPELLED = re.compile(r"(?:[a-z0-9]*[a-z](?:-[0-9]+)?|[0-9]+)(?:-[a-z](?:[a-z0-9]*[a-z])?(?:-[0-9]+)?)*")


STACK_NAME_LENGTH = 128  # CloudFormation's stack names: a letter, then letters, digits and hyphens


def cluster_stack(cluster: str, project: str | None = None, part: int = 1) -> str:
    """The CloudFormation stack (and template file, `<stack>.json`) of one cluster's dashboards, alarms and log group:
    `gpudash-cluster-<cluster>`, or `gpudash-<project>-cluster-<cluster>` for settings that name their project. It
    depends on the project and the cluster's name alone, so adding or removing clusters moves no resource between
    stacks. A stack name takes only letters, digits and `-`: a name holding anything else has it as `-` and ends in a
    digest of the exact name (a_b and a-b stay two stacks).

    A cluster whose resources are over CloudFormation's quotas for one template has more parts
    (render/cloudformation.py): part k > 1 is `gpudash-cluster<k>-<cluster>` (`gpudash-<project>-cluster<k>-<cluster>`),
    a kind word no other stack's name holds (a project's name holding `cluster<k>` between hyphens ends in its
    digest), sorted after every cluster's first stack."""
    return _stack(_stack_kind("cluster" if part == 1 else f"cluster{part}", project), cluster)


def region_stack(region: str, project: str | None = None) -> str:
    """The stack of a Region's fleet alarms (Alarm(scope="fleet"): one per Region, of no one cluster):
    `gpudash-region-<region>`, or `gpudash-<project>-region-<region>`. Two projects of one account (a project's name
    is unique in it) in one Region deploy two stacks: deployed under one name, the second project's template would
    replace the first's and CloudFormation would delete the alarms it no longer declares."""
    return _stack(_stack_kind("region", project), region)


def _stack_kind(kind: str, project: str | None) -> str:
    """The stack name's start. A project's name holding a word that parts a stack's name (`cluster`, `region`)
    ends in its digest: ml-cluster-train's cluster a and ml's cluster train-cluster-a, or project cluster's x and
    the cluster-x of settings without a project, would otherwise name one stack."""
    if project is None:
        return f"gpudash-{kind}-"
    parting = _PARTING.search(f"-{project}-") is not None
    return f"gpudash-{_spelled(project, 64, parting)}-{kind}-"


_PARTING = re.compile(r"-(?:cluster[0-9]*|region)-", re.IGNORECASE)


def _spelled(name: str, room: int, digest_anyway: bool = False) -> str:
    """`name` in a stack name's letters (letters, digits, `-`) within `room` characters: where it is not already
    (or `digest_anyway`), its other characters as `-`, cut to fit, and a digest of the exact name."""
    spelled = _NOT_STACK.sub("-", name)
    if digest_anyway or spelled != name or len(name) > room:
        digest = hashlib.sha256(name.encode()).hexdigest()[:10]
        spelled = f"{spelled[:room - len(digest) - 1]}-{digest}"
    return spelled


_NOT_STACK = re.compile(r"[^A-Za-z0-9-]")


def _stack(kind: str, name: str) -> str:
    return kind + _spelled(name, STACK_NAME_LENGTH - len(kind))


def is_stack_name(name: str) -> bool:
    """Whether `name` is a stack name cluster_stack or region_stack gives."""
    return len(name) <= STACK_NAME_LENGTH and re.fullmatch(
        r"gpudash-(?:[A-Za-z0-9][A-Za-z0-9-]*-)?(cluster(?:[2-9]|[1-9][0-9]+)?|region)-[A-Za-z0-9][A-Za-z0-9-]*",
        name) is not None


def shown(names: list[str]) -> str:
    """The first five names, and how many more (for a message); a name holding a control character escaped
    (printed.path)."""
    return ", ".join(map(printed.path, names[:5])) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
