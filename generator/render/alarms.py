"""Neutral alarms -> CloudWatch PutMetricAlarm requests and Prometheus alerting rules. Pure."""

from __future__ import annotations

import hashlib
import math
import re
import sys
from collections import Counter
from dataclasses import dataclass, replace
from itertools import groupby
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..catalog import (MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL, MIG_UNSUPPORTED, PER_PROCESS_COPIES_ADDED,
                       PER_PROCESS_COPIES_ADDED_ALARM, Catalog)
from ..blanks import UNREAD_AT_ZERO
from ..cloudwatch_query import (ALARM_WINDOW_SECONDS, CLASSIC_COUNTER_ALARM, CLASSIC_COUNTER_ALARM_ONE_SERIES,
                                COPIES_COUNTED, COUNT_MOST, COUNT_MOST_ONE_SCRAPE, GAP_SHORT, GAP_TEXTS,
                                INSTANCE_CONTRIBUTORS, evaluation_limit,
                                WHOLE_COPIES_COUNTED, MIG_COPIES_COUNTED, INSTANCES_JUDGED, MI_FUNCTIONS,
                                copies_counted_note, NAMED_EXTREME,
                                failed_scrape_note, partly_blank, NAMED_PART, NAMED_PART_ONE_SCRAPE, NAMED_SHARE,
                                NAMED_WEIGHED, NAMESPACE_WEIGHED, SHARED_INSTANCE_WEIGHS, BLANK_WEIGHED,
                                NAMED_WEIGHED_COLLECTIONS, NAMESPACE_WEIGHED_COLLECTIONS,
                                NAMED_TURNS, NAMED_TURNS_ALARM, STATISTICS, UNREAD_ZERO_OPENING, Plan, per_scrape_read,
                                read_weighed,
                                read_by_stand_in,
                                instance_contributors,
                                LEVEL_WORDS, gap_kind, level_plan, otel_gap, reads_gap_growth, unused_plan,
                                NoMigInstances, Unsupported, dimension_for, gpu_dimensions, mig_only_set, number,
                                pod_dimensions, pod_gpu_dimensions, quote_identifier, quote_string,
                                scrape_seconds)
from .. import data_missing, stopped_gpus
from ..data_missing import counted
from ..container_insights_table import NAMESPACE as ADDON_NAMESPACE, by_field, metric_name
from ..container_insights import (ALARM_BLANKS, ALARM_MIG_ONE_INSTANCE, ALARM_MIG_ONE_INSTANCE_SHORT,
                                  ALARM_MIG_UNREPORTED, ALARM_MIG_UNREPORTED_SHORT, one_instance_fields,
                                  reads_one_instance, NotPublished, condition as source_condition, enabled as addon_source,
                                  gpu_interval, node_interval, source_plan)
from ..errors import InputError
from ..derived_sets import mig_only
from ..exporter_styles import daemonset_key, exporter_namespace, named_daemonsets, style_for
from ..go_template import as_alert_text
from ..last_applied import APPLY_LIMIT, encoded_bytes
from ..markers import (ALARM_OWNER_TAG, ALARM_PROJECT_TAG, ALARM_RULE_TAG, CLUSTER_DIMENSION,
                       GPU_DIMENSION, NODE_DIMENSION, POD_DIMENSION,
                       PROMETHEUS_RULE_LABEL)
from ..model import WORKLOAD_KEYS, Alarm, Condition, charted_unit
from ..names import (ALERT_GROUP, CLUSTERS_GROUP, COUNTER_GROUP, COUNTER_GROUPS, WATCHED_CLUSTER,
                     prometheus_rule_name, alarm_name as _name, alert_name, regional_alarm_name)
from ..ownership import publication_tags
from ..promql import (PERIOD_LABEL, PREVIOUS_WITHIN, COUNTED_PARTS, REGION_LABEL, NotCombined, Regions, Scope,
                      by_region, counted_name,
                      counted_rules, expression, group_keys, kinds_apart, label_lookback, label_name,
                      named_pods_looked_back, settings_clusters, with_cluster)
from ..promql_text import quoted
from .. import mean_sign
from ..series_labels import MAX_DIMENSIONS
from .alarm_text import Note, about_notes, described, own_cut
from .fleet_parts import WHERE, said_where
from ..settings import (AGENT_SCRAPES, Cluster, Settings, longest_interval, mig_of, scrape_intervals, setting_place,
                        written_intervals)
from ..units import Unit

if TYPE_CHECKING:
    from ..artifacts import AlarmRequest

COMPARISON_OPERATORS = {">": "GreaterThanThreshold", ">=": "GreaterThanOrEqualToThreshold",
                        "<": "LessThanThreshold", "<=": "LessThanOrEqualToThreshold"}
# "You can have as many as 200 Metrics Insights alarms per Region" (user guide, Metrics Insights quotas,
# cloudwatch-metrics-insights-limits.html; alarm-limits.html: a default, raised on request)
METRICS_INSIGHTS_ALARM_QUOTA = 200  # per Region


def cloudwatch_condition(alarm: Alarm, settings: Settings | None = None) -> Condition:
    """The condition CloudWatch evaluates (with settings: on the configured source). Where no GPU is split
    (exporter.mig: none), the rule's own condition in place of a `cloudwatch=` one per MIG instance that it is not:
    such a condition reads MIG instances alone, none there, while the rule watches every GPU (a framebuffer rule per
    GPU, whose CloudWatch form where GPUs may be split is per MIG instance)."""
    if settings is None:
        return alarm.cloudwatch or alarm.condition
    chosen = source_condition(alarm, settings)
    if settings.no_mig and chosen is alarm.cloudwatch and "mig_instance" in chosen.query.by \
            and "mig_instance" not in alarm.condition.query.by:
        return alarm.condition
    return chosen


MIG_SUFFIX = "-mig"  # the rule's second alarm, on the field that stands in on MIG instances (mig_plan)
# a fleet rule's alarm of the clusters saying exporter.mig: none, in a Region whose others it judges apart
# (_kinds_apart); its alarm of the others keeps the rule's name, the one a Region of one kind has
WHOLE_SUFFIX = "-whole"


def alarm_name(settings: Settings, cluster: Cluster | None, alarm: Alarm, pod: tuple[str, str] | None = None,
               mig: bool = False, whole: bool = False) -> str:
    return _name(settings.alarms.name_prefix, cluster.name if cluster else None,
                 alarm.id + (MIG_SUFFIX if mig else "") + (WHOLE_SUFFIX if whole else ""), alarm.severity, pod)


def _description(alarm: Alarm, *notes: Note) -> str:
    """The description of a rule's own alarm: its definition's title, description and runbook, and `notes`
    (alarm_text.described)."""
    return described(alarm, notes)


def stale(alarm: Alarm, catalog: Catalog, settings: Settings, plan_: Plan | None = None) -> Note:
    """What a rule's CloudWatch alarm does where its twin cannot follow: a contributor whose data stops while in ALARM
    is judged on its last real datapoints of the evaluation range (user guide, "How alarm state is evaluated when data
    is missing"; TreatMissingData is not used while the range holds enough of them), and no math can fill a GROUP BY
    query's contributors (tests/integration/test_stale_alarm_twins.py). The range's length is published only by the
    page's example (RANGE_EXTRA_PERIODS): the rule judges that length (_of_range) and clears with the alarm there; a
    longer range keeps the alarm in ALARM longer. A rule that reads the pods a scrape within the per-pod look-back
    named (left_lookback) clears up to that much later for a pod that left a GPU its exporter still reports. An alarm
    whose plan `plan_` reads a count or sum over the scrapes a period holds (per_scrape_read) says what its latest
    datapoints do instead (_per_scrape_stale). A clause of the description's notes, the last (the first to give way to
    its short form)."""
    who = _who(alarm, settings)
    if alarm.missing_data == "breaching":  # the periods it misses breach: _of_range's `fewer` and `nothing`
        return Note(f"{who} whose data stops (exporter, node or pod gone) "
                    f"is judged with its missing periods breaching while its last datapoints are in the alarm's "
                    f"evaluation range, and with none in it the alarm is in ALARM; the rule judges the range of AWS's "
                    f"example ({RANGE_EXTRA_PERIODS} periods more than the alarm's), fires so and, with no reading of "
                    f"the alarm's {'cluster' if alarm.scope == 'cluster' else 'Region'} in it, fires once for it",
                    f"{who} whose data stops is judged with its missing periods breaching: it fires, and with no "
                    f"reading in the range the alarm is in ALARM")
    lookback = left_lookback(alarm, catalog, settings)
    if plan_ is not None and per_scrape_read(plan_):
        return _per_scrape_stale(alarm, settings, lookback)
    left = "" if not lookback else (
        f"; a pod that left a GPU its exporter still reports (another pod's now, or idle) is read by the rule for up "
        f"to the per-pod look-back ({lookback} s) after the last scrape naming it, where the alarm has no datapoint "
        f"of it then: the rule clears up to {lookback} s after the alarm there")
    return Note(f"{who} whose data stops in ALARM (exporter, node or pod "
                f"gone) stays so while its last datapoints are in the alarm's evaluation range; the rule judges the "
                f"range of AWS's example ({RANGE_EXTRA_PERIODS} periods more than the alarm's{_cut(alarm, settings)}) "
                f"and clears {_spoken(rule_clears(alarm, settings))} after the last reading, as the alarm does there (a "
                f"longer range, its "
                f"length unpublished, holds it longer){left}", _stale_clause(alarm, settings, lookback))


def _per_scrape_stale(alarm: Alarm, settings: Settings, lookback: int) -> Note:
    """stale's note of an alarm whose datapoint is a period's count or sum of observations over the scrapes the period
    holds (per_scrape_read): a contributor's latest datapoint at most evaluations is of a period that ends after its
    last reading (the evaluation window slides with each evaluation), and reads only the part of it the contributor
    had data for. Above a level (`>`), the alarm can leave ALARM from a scrape after the last reading, is in ALARM
    again while a period ending at the last reading is its latest (part of each later period), and is out of ALARM
    for good from up to a period before its rule clears (a pod at 250 W for a 200 W level, 30 s scrapes, 5-minute
    periods: a sum out at 70-300 s, 370-600 s and from 670 s after the last reading, a count from 760 s, the rule at
    900 s, 1,020 s with the look-back; tests/integration/test_pod_left_twins.py). Below a level (`<`), the part read
    is read low: the alarm can be in ALARM at such evaluations until the readings leave its range, where its rule
    does not fire (a sum below 240 W of a pod at 250 W: 40-900 s after the last reading)."""
    who, period = _who(alarm, settings), _spoken(alarm.period_seconds)
    clears = _spoken(rule_clears(alarm, settings))
    later = (f"; for a pod that left a GPU still reported, up to {lookback} s later, or earlier where the next pod "
             f"takes the GPU at its next scrape (the rule reads that pod's first readings as the one that left)"
             if lookback else "")
    latest = (f"{who} whose data stops (exporter, node or pod gone) is judged on its latest datapoints in the alarm's "
              f"evaluation range, each the readings of its period over the scrapes the period holds: at most "
              f"evaluations the latest is of a period ending after the last reading, which reads only the part of it "
              f"the {who.split()[1]} had data for, ")
    if cloudwatch_condition(alarm, settings).comparison in ("<", "<="):
        return Note(latest + "read low: the alarm can be in ALARM at such evaluations until its readings leave the "
                             "range, where the rule does not fire",
                    f"{who} whose data stops can be in ALARM after, its last periods read in part (low), where the "
                    f"rule does not fire")
    return Note(latest + f"so the alarm can leave ALARM from a scrape after the last reading, is in ALARM again while "
                         f"a period ending at the last reading is its latest (part of each period after), and is out "
                         f"of it for good up to {period} before the rule clears ({clears} after the last reading"
                         f"{later})",
                f"{who} whose data stops in ALARM can leave it early, its last period read in part (for good up to "
                f"{period} before the rule clears, at {clears})")


def _who(alarm: Alarm, settings: Settings) -> str:
    """What one contributor of the alarm CloudWatch evaluates is, in words (its condition's grouping there:
    cloudwatch_condition): a pod, a namespace or a container (its workload group), a GPU instance, a GPU, a node, else
    its cluster (a fleet's alarm: its Region)."""
    by = cloudwatch_condition(alarm, settings).query.by
    keys = group_keys(by)
    whole = "a Region" if alarm.scope == "fleet" else "a cluster"
    if "mig_instance" in by and not any(key in keys for key in WORKLOAD_KEYS):
        return "a GPU instance"
    return next((f"a {key}" for key in (*WORKLOAD_KEYS, "gpu", "node") if key in keys), whole).replace("a gpu", "a GPU")


def left_lookback(alarm: Alarm, catalog: Catalog, settings: Settings) -> int:
    """Seconds a rule may read a pod on a GPU after the last scrape that named it there (0: none): the per-pod
    look-back (promql.label_lookback) of a rule of gauges by pod, namespace or container (named_pods_looked_back),
    which reads a pod the exporter names in turn with others on a GPU they share at every step. A pod that left a GPU
    still reported reads the same there until the look-back has passed, so its rule (a pod's, or its namespace's or
    container's) keeps a period with its data up to that long after the last scrape naming it, where CloudWatch,
    which has a pod's datapoints only from the scrapes naming it, has none: to the rule's last step with a reading
    within it, a count (_Device.named_in_period) as its total, mean, largest or smallest (at 30 s scrapes off the
    rule's 5 s steps, 90-95 s; tests/integration/test_pod_left_twins.py); 0 for others."""
    if not named_pods_looked_back(_alert_query(alarm, settings), catalog):
        return 0
    return int(label_lookback(settings.scrape.seconds).removesuffix("s"))


def _spoken(seconds: int) -> str:
    """`seconds` in words: whole minutes as such (a minute alone singular), else seconds."""
    if seconds % 60:
        return f"{seconds} s"
    return "1 minute" if seconds == 60 else f"{seconds // 60} minutes"


def _cut(alarm: Alarm, settings: Settings) -> str:
    """`, cut at the 3 hours ...` where range_extra cuts the rule's range short of AWS's example, else ''."""
    extra = range_extra(alarm, settings)
    return "" if extra == RANGE_EXTRA_PERIODS else \
        f", cut at the 3 hours a Metrics Insights alarm reads: {extra} more"


def rule_clears(alarm: Alarm, settings: Settings) -> int:
    """Seconds after a contributor's last reading (all breaching) at which its rule no longer fires. Judged over the
    range (_of_range): once its latest N - M + 1 + E periods hold no reading (E: range_extra, AWS's example's
    RANGE_EXTRA_PERIODS where 3 hours hold them), fewer than M readings are left in the N + E it judges; with
    `missing` and M > 1, not before its latest N hold none (premature alarm state: a breaching period at least M
    periods old, none newer). Judged per period (_of_periods): once its latest N - M + 1 periods hold no reading."""
    periods = alarm.evaluation_periods
    needed = alarm.datapoints_to_alarm or periods
    if not range_judged(alarm):
        return (periods - needed + 1) * alarm.period_seconds
    extra = range_extra(alarm, settings)
    empty = periods - needed + 1 + extra
    if alarm.missing_data == "breaching":  # its last readings all breaching: it fires while any is in the range
        empty = periods + extra
    if alarm.missing_data == "missing" and needed > 1:
        empty = max(empty, periods)
    return empty * alarm.period_seconds


def range_judged(alarm: Alarm) -> bool:
    """Whether the rule judges CloudWatch's evaluation range (_of_range): every alarm whose missing data is `missing`
    or `notBreaching`, a counter's increase too (its period has a value only where it holds a reading of its own,
    promql.summed_deltas' `held`, as CloudWatch's period has a datapoint only where the agent sent a delta), at any
    M of N (every pattern checked for 1 of 1, 2 of 2, 2 of 3 and 3 of 3: test_evaluation_range_rules.py)."""
    return alarm.missing_data in RANGE_JUDGED


def _stale_clause(alarm: Alarm, settings: Settings, lookback: int = 0) -> str:
    """stale's note in a few words (its short form): how long it stays in ALARM, and when its rule clears (`lookback`:
    left_lookback's seconds, the rule's lag for a pod that left a GPU still reported)."""
    left = (f"; for a pod that left a GPU still reported, up to {lookback} s after the alarm, or before it where the "
            f"next pod takes the GPU at once" if lookback else "")
    return f"{_who(alarm, settings)} whose data stops in ALARM stays so while its last datapoints " \
           f"are in the evaluation range (the rule clears {_spoken(rule_clears(alarm, settings))} after the last " \
           f"reading{left})"


def _common(alarm: Alarm, settings: Settings, name: str, description: str | None = None) -> dict[str, Any]:
    condition = cloudwatch_condition(alarm, settings)
    actions = list(getattr(settings.alarms.actions, alarm.severity))
    request: dict[str, Any] = {
        "AlarmName": name,
        "AlarmDescription": description or described(alarm),
        "ActionsEnabled": True,
        "AlarmActions": actions,
        "OKActions": actions,
        "ComparisonOperator": COMPARISON_OPERATORS[condition.comparison],
        "Threshold": float(condition.threshold),
        "EvaluationPeriods": alarm.evaluation_periods,
        "DatapointsToAlarm": alarm.datapoints_to_alarm or alarm.evaluation_periods,
        "TreatMissingData": alarm.missing_data,
        "Tags": ownership_tags(settings, alarm.id),
    }
    return request


def ownership_tags(settings: Settings, rule: str) -> list[dict[str, str]]:
    """What marks an alarm as this project's when it is made, whoever makes it (apply's PutMetricAlarm or a
    CloudFormation stack): the owner, the rule, and when the settings name a project, the project and the
    clusters of the settings (which of the project's settings files published it). The hash of its
    content is added only by apply, once it has read the alarm back (ownership.alarm_tags)."""
    tags = [dict(ALARM_OWNER_TAG), {"Key": ALARM_RULE_TAG, "Value": rule}]
    if not settings.project:
        return tags
    return [*tags, {"Key": ALARM_PROJECT_TAG, "Value": settings.project},
            *publication_tags([cluster.name for cluster in settings.clusters])]


ORDER = {">": "DESC", ">=": "DESC", "<": "ASC", "<=": "ASC"}  # the series nearest the threshold first


def alarm_plan(alarm: Alarm, catalog: Catalog, settings: Settings) -> Plan:
    """The Metrics Insights query of an alarm. Alarms take no metric math: a normalisation
    (observations per period, scrape interval) scales the threshold instead."""
    query = cloudwatch_condition(alarm, settings).query
    if alarm.absent:  # GPU data of the cluster (held by a pod or not) against the expected signal
        if not data_missing.expected(settings):
            raise Unsupported(data_missing.left_out_reason(settings))  # left out of both backends, with a note
        if addon_source(settings):  # the add-on's own capacity and GPU metrics of the cluster
            return Plan(metric=_addon_reported(), function="COUNT", dims=data_missing.CLUSTER_SET, group=(),
                        series=(), namespace=ADDON_NAMESPACE)
        return Plan(metric=query.metric, function="COUNT", dims=data_missing.CLUSTER_SET, group=(), series=())
    return source_plan(query, catalog, settings, alarm.period_seconds, alarm=True)


def judges_pod_gpus(alarm: Alarm, settings: Settings) -> bool:
    """The rule judges each GPU a pod holds on its own (the idle rule: a pod using one of its two GPUs alarms for the
    other). A classic alarm names every dimension value of its one metric, and the GPUs a pod will hold are not known
    when it is made: its static per-pod form is a Metrics Insights alarm on the pod, each of its GPUs a contributor
    (Form kind "pod"), not a classic alarm on the pod's mean over its GPUs (which a pod busy on one GPU and idle on
    the other reads 50 %: never idle, where the rule fires)."""
    query = cloudwatch_condition(alarm, settings).query
    return query.per_pod and "gpu" in query.by


def static_plan(alarm: Alarm, catalog: Catalog, settings: Settings) -> Plan:
    """The query of a static per-pod alarm (alarms.per_pod: static) on a classic metric: one pod's series, named
    ahead (a rule judging each GPU of a pod is not one: judges_pod_gpus)."""
    query = cloudwatch_condition(alarm, settings).query
    return source_plan(query, catalog, settings, alarm.period_seconds, alarm=True, pod_gpus=False)


def second_plan(alarm: Alarm, settings: Settings) -> Plan:
    """The data-missing rule's second alarm, a GROUP BY alarm: on the OTel pipeline each node's exporter scrapes that
    brought no GPU data, counted over the rule's window (the SUM of each scrape's flag, 1 for such a scrape, 0 else), the most first (data_missing.per_node_description); on the
    JSON path, which drops the scrape's own series, each GPU's observations of the field, the lowest first
    (data_missing.per_gpu_description); on the Container Insights add-on each GPU's DCGM observations. A GROUP BY
    alarm judges each series apart: a node removed in one period and another added in the next are two
    contributors, never one."""
    if addon_source(settings):  # each GPU's DCGM observations in the add-on's per-GPU set
        return Plan(metric=_addon_reported(), function="COUNT", dims=data_missing.ADDON_GPU_SET,
                    group=data_missing.ADDON_GPU_GROUP, series=data_missing.ADDON_GPU_GROUP,
                    namespace=ADDON_NAMESPACE)
    if data_missing.per_node(settings):
        return _node_plan(data_missing.SAMPLES, "SUM")
    dims = tuple(gpu_dimensions(settings))
    group = tuple(d for d in dims if d != CLUSTER_DIMENSION)
    return Plan(metric=cloudwatch_condition(alarm, settings).query.metric, function="COUNT", dims=dims, group=group,
                series=group)


def unread_plan() -> Plan:
    """The GPU stopped reporting rule's alarm (stopped_gpus.UNREAD), a GROUP BY alarm per node: the fewest GPUs unread
    below the node's highest index at one of its scrapes in each period, the most first (a node with a hole at every
    scrape of the window ranks before one that had it once)."""
    return _node_plan(stopped_gpus.UNREAD, "MIN")


def _node_plan(metric: str, function: str) -> Plan:
    """A GROUP BY alarm's query per GPU node of `metric`, which the agent makes per node of each scrape of its exporter
    (render/agent.emf_processor)."""
    group = (data_missing.NODE_LABEL,)
    return Plan(metric=metric, function=function, dims=data_missing.SAMPLES_SET, group=group, series=group)


def _unread_request(alarm: Alarm, settings: Settings, plan_: Plan, cluster: Cluster) -> dict[str, Any]:
    """The GPU stopped reporting rule's CloudWatch alarm in `cluster`: each node a contributor in ALARM where every
    scrape of each of the rule's periods read a GPU below its highest index unread (at least 1 at its least), no data
    not breaching (a node removed, an exporter away: no hole)."""
    about = stopped_gpus.unread_description(settings, alarm.period_seconds, alarm.evaluation_periods)
    label = f"{alarm.title} (GPUs unread per node)"
    request = _common(alarm, settings, _name(settings.alarms.name_prefix, cluster.name, alarm.id, alarm.severity),
                      _about(alarm, about, label))
    request.update({"ComparisonOperator": COMPARISON_OPERATORS[">="], "Threshold": 1.0,
                    "EvaluationPeriods": alarm.evaluation_periods, "DatapointsToAlarm": alarm.evaluation_periods,
                    "TreatMissingData": "notBreaching",
                    "Metrics": [{"Id": "q1", "Expression": plan_.expression(settings, cluster, "DESC"),
                                 "Period": alarm.period_seconds, "ReturnData": True, "Label": label}]})
    return request


COMPARED = {**LEVEL_WORDS, "<": "below", "<=": "at or below"}  # a threshold's comparison in words
# (aggregation, comparison) over a group's whole GPUs alone that can only miss what the group's every GPU would fire
# for, never fire where they do not: a count or a sum (of readings of 0 or more) of part of the GPUs is at most the
# whole's, a maximum of part at most the whole's, a minimum of part at least the whole's (its mean is neither)
ONLY_MISSES = frozenset({("count", ">"), ("count", ">="), ("sum", ">"), ("sum", ">="), ("max", ">"), ("max", ">="),
                         ("min", "<"), ("min", "<=")})


class HalfAlarm(Unsupported):
    """A rule whose CloudWatch alarm could judge only part of its group's GPUs (the whole GPUs, without the MIG GPUs'
    stand-in), or whose two alarms (whole GPUs, MIG instances) with missing data breaching would leave one in ALARM
    for good, and so fire where its Prometheus rule, which reads every GPU, does not: generate refuses it, and makes
    it only in the clusters that say no GPU is split (exporter.mig: none) where the fleet's clusters differ."""


def _one_gpu(plan_: Plan) -> bool:
    """Each group of the plan is one GPU (a node's GPU, a pod's GPU): a whole GPU or a MIG GPU, never both."""
    return GPU_DIMENSION in plan_.series and (NODE_DIMENSION in plan_.series or POD_DIMENSION in plan_.series)


def mig_plan(alarm: Alarm, catalog: Catalog, settings: Settings) -> tuple[Plan, str] | None:
    """(plan, stand-in field) of the rule's second alarm, for a field MIG does not report (GPU utilization):
    the field that stands in for it on MIG instances (graphics engine activity, a ratio: the threshold is
    divided by its factor, 100), over a set only MIG instances publish (the rule's set and GPU_I_PROFILE; per pod
    and GPU, GPU_I_ID too, grouped by both: each instance of a pod's GPU judged on its own, as the rule's MIG
    branch judges it).
    The first alarm reads the field itself, which the agent's scrape job drops on MIG instances: together
    they watch every pod or GPU with the meaning of the Prometheus rule, which takes the stand-in on MIG
    instances. None when the field is reported under MIG, the CSV collects no stand-in, or the source is
    the Container Insights add-on.
    The two alarms are the rule only where the rule itself judges a pod's whole GPUs and its MIG instances apart
    (promql.kinds_apart: per pod, but a count), or where each group is one GPU's mean (its instances' mean is the
    MIG GPU's reading). Elsewhere (a namespace, a node or the cluster where no set reads each GPU once) the rule reads
    each GPU of the group, a MIG GPU by its instances' mean, and no half judges that: the MIG instances' alarm reads
    instances, not GPUs (a node's GPU of two instances at 80 and 40 % is at 60 %: its largest instance fired for
    `max > 70`), and each alarm judges part of the group against the whole threshold (`min by namespace > 19` fired
    for a namespace of a whole GPU at 2 %, its MIG instance at 80 %). There the whole GPUs' alarm alone is made where
    it can only miss (ONLY_MISSES: Unsupported, noted by lint AL012), else the rule is refused (HalfAlarm).
    None with exporter.mig: none (of every cluster the settings hold for: Settings.for_clusters): no GPU is split, so
    the field itself reads every GPU as the rule does."""
    if alarm.absent or addon_source(settings) or settings.no_mig:
        return None
    condition = cloudwatch_condition(alarm, settings)
    query = condition.query
    substitute = catalog.mig_substitute(query.metric)
    if substitute is None:
        return None
    stand_in, factor = substitute
    first = alarm_plan(alarm, catalog, settings)
    if read_by_stand_in(first, query, catalog):  # a GPU's reading once, a namespace's use of a GPU, hold a MIG GPU's
        return None  # stand-in: the alarm reads every GPU (once_plan, namespace_plan)
    one_gpu = _one_gpu(first)
    if not (kinds_apart(query, catalog) or (one_gpu and query.aggregation == "avg")):
        where = f"by {', '.join(query.by)}" if query.by else "over the cluster"
        why = (f"a GPU split into MIG instances reads their mean {stand_in}, which no CloudWatch set holds per GPU on "
               f"agent.pipeline: {settings.agent.pipeline} (an alarm over the instances would take the "
               f"{query.aggregation} of instances, not of the GPU's mean)") if one_gpu else (
               f"its {query.aggregation} {where} reads each GPU of a group, a GPU split into MIG instances by their "
               f"mean {stand_in}, and no CloudWatch set reads that on agent.pipeline: {settings.agent.pipeline} (the "
               f"MIG instances' alarm reads instances, not GPUs, and each alarm would judge part of the group "
               f"against the whole threshold)")
        if one_gpu or (query.aggregation, condition.comparison) in ONLY_MISSES:
            raise Unsupported(why)  # the whole GPUs' alarm alone: it can miss a MIG GPU, not fire falsely (AL012)
        raise HalfAlarm(f"{why}; judged on the whole GPUs alone it would fire where its Prometheus rule does not "
                        f"({query.aggregation} {COMPARED[condition.comparison]} {condition.threshold:g} of part of a "
                        f"group's GPUs)", fix=_half_alarm_fix(query, settings))
    if query.aggregation in ("count", "sum"):
        # a pod's count or sum: the rule judges a pod's whole GPUs and MIG instances together for a count, apart for
        # a sum, but a count is no share to divide by the factor and the sum of instances is no sum of GPUs
        raise Unsupported(f"its {query.aggregation} over GPUs cannot be split between the whole GPUs' {query.metric} "
                          f"and the MIG instances' {stand_in} (each alarm would judge part of the GPUs against the "
                          f"whole threshold)")
    # (over the MIG instances the pod holds, as the rule's MIG branch judges them: not the pod's totals per GPU)
    result = source_plan(replace(query, metric=stand_in), catalog, settings, alarm.period_seconds, alarm=True,
                         pod_gpus=False)
    if list(result.dims) not in (pod_dimensions(settings), pod_gpu_dimensions(settings), gpu_dimensions(settings)):
        raise Unsupported(f"on MIG instances {stand_in} stands in for {query.metric}, which CloudWatch cannot "
                          f"alarm on with this grouping")
    if list(result.dims) == pod_gpu_dimensions(settings):  # each MIG instance of a pod's GPU judged on its own
        def instance(names: tuple[str, ...]) -> tuple[str, ...]:  # GPU_I_ID once, where the per-pod set names it
            return tuple(dict.fromkeys((*names, MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL)))
        _within_agent_limit(alarm, instance(result.dims), settings)
        return replace(result, dims=instance(result.dims), group=instance(result.group),
                       series=instance(result.series), divisor=result.divisor / factor), stand_in
    return replace(result, dims=tuple(mig_only(result.dims)), divisor=result.divisor / factor), stand_in


def _half_alarm_fix(query, settings: Settings) -> str:
    """What builds instead of a HalfAlarm."""
    fixes = []
    if settings.agent.pipeline == "classic" and not set(query.by) - {"node", "gpu", "cluster"}:
        fixes.append("agent.pipeline: otel (it reads every GPU once, a MIG GPU by its instances' mean)")
    elif "pod" not in query.by:
        fixes.append("group it by node or by pod (a pod's whole GPUs and MIG instances judged apart)")
    if query.aggregation == "count":
        fixes.append("count a field MIG reports (DCGM_FI_DEV_FB_USED)")
    fixes.append("set exporter.mig: none if no GPU of the fleet is split into MIG instances (every GPU then reports "
                 "it; clusters[].exporter.mig: none for a cluster whose GPUs none is split)")
    return ", or ".join(fixes)


def _within_agent_limit(alarm: Alarm, dims: tuple[str, ...], settings: Settings) -> None:
    """Refuses a MIG set per pod and instance that the agent would drop (more than MAX_DIMENSIONS names: awsemf's
    metric_declaration.go drops it with a line in the agent's log only, and the alarm would never see a MIG pod).
    Judged here, where the set is derived, so only a build holding such an alarm is refused."""
    if len(dims) <= MAX_DIMENSIONS:
        return
    pods = pod_dimensions(settings)
    added = [name for name in dims if name not in pods]
    raise InputError(
        f"alarm {alarm.id!r} ({alarm.defined_at}) judges each MIG instance a pod holds under cloudwatch.dimensions "
        f"and {', '.join(added)}: {len(dims)} dimensions, and the CloudWatch agent drops a set of more than "
        f"{MAX_DIMENSIONS} (its log says so, nothing else does): the alarm would never see a pod on a MIG instance",
        where=setting_place(settings, ["cloudwatch", "dimensions"]),
        hint=f"name at most {MAX_DIMENSIONS - len(added)} dimensions in cloudwatch.dimensions, or group alarm "
             f"{alarm.id!r} by pod alone (a pod's mean over its GPUs)")


def mig_left_out(project) -> list[tuple[str, str]]:
    """(where, message) of each CloudWatch alarm that does not evaluate the MIG GPUs or pods its Prometheus rule
    evaluates: its field is not reported under MIG, and the stand-in's second alarm cannot be made (its
    grouping, or a static per-pod alarm, which names no MIG instance's profile). Read for the clusters whose GPUs may
    be split (exporter.mig, clusters[].exporter.mig), named where others say none."""
    catalog = project.catalog
    split = [(settings, clusters) for settings, clusters in project.settings.mig_groups() if not settings.no_mig]
    if not split or addon_source(project.settings):
        return []
    settings, clusters = split[0]
    where = "" if len(clusters) == len(project.settings.clusters) else \
        f" in cluster{'s' if len(clusters) > 1 else ''} {', '.join(c.name for c in clusters)}"

    def made_where(alarm: Alarm) -> str:
        """Where a rule does not see MIG GPUs: the clusters whose GPUs may be split; a fleet rule's, their Regions
        (nothing said where every cluster's may be)."""
        if alarm.scope != "fleet" or not where:
            return where
        regions = sorted({c.region for c in clusters})
        return f" in Region{'s' if len(regions) > 1 else ''} {', '.join(regions)}"

    result = []
    for alarm in project.alarms:
        if alarm.absent or alarm.stopped or \
                catalog.mig_substitute(cloudwatch_condition(alarm, settings).query.metric) is None:
            continue
        start = f"alarm {alarm.id!r} does not evaluate GPUs split into MIG instances on CloudWatch" \
                f"{made_where(alarm)} (its Prometheus rule does)"
        try:
            unseen = mig_unseen(alarm, catalog, settings, alarm_forms(alarm, catalog, settings))
        except HalfAlarm as exc:
            if len(split) == len(project.settings.mig_groups()):
                continue  # generate refuses it
            # made only in the clusters that say exporter.mig: none (cloudwatch_alarms)
            result.append((alarm.defined_at, f"alarm {alarm.id!r} is not made on CloudWatch{made_where(alarm)} "
                                             f"(its Prometheus rule watches it): {exc}; clusters[].exporter.mig: none "
                                             f"says where no GPU is split"))
            continue
        except Unsupported as exc:
            result.append((alarm.defined_at, f"{start}: {exc}"))
            continue
        if unseen is not None:
            result.append((alarm.defined_at, f"{start}: {unseen}"))
    return result + _judged_apart(project) + _whole_gpus_unread(project)


def _judged_apart(project) -> list[tuple[str, str]]:
    """(where, message) of each fleet-scope rule judged in two alarms in a Region (_kinds_apart: its `cloudwatch=`
    condition per MIG instance, its own where no GPU is split): which alarm judges which clusters, and on what. The
    Region's one alarm read MIG instances alone, and saw no GPU of the clusters saying exporter.mig: none."""
    settings = project.settings
    regions = sorted({c.region for c in settings.clusters})
    result = []
    for alarm in project.alarms:
        if alarm.scope != "fleet":
            continue
        for region in regions:
            members = tuple(c for c in settings.clusters if c.region == region)
            kinds = _kinds_apart(alarm, settings, members)
            if len(kinds) == 1:
                continue
            split, whole = (", ".join(c.name for c in kind) for kind in kinds)
            names = [regional_alarm_name(alarm_name(settings, None, alarm, whole=w), region, len(regions))
                     for w in (False, True)]
            plural = "s" if len(kinds[1]) > 1 else ""
            result.append((alarm.defined_at, f"alarm {alarm.id!r} is judged in two alarms in Region {region}: "
                                             f"{names[0]} per MIG instance (its `cloudwatch=` condition) over {split}, "
                                             f"and {names[1]} on the rule's own condition over the GPUs of cluster"
                                             f"{plural} {whole}, which say{'' if plural else 's'} no GPU is split "
                                             f"(exporter.mig: none): one alarm's query reads one dimension set, and "
                                             f"the MIG instances' holds no whole GPU"))
    return result


def _whole_gpus_unread(project) -> list[tuple[str, str]]:
    """(where, message) of each rule whose `cloudwatch=` condition is per MIG instance where its own is not (a
    framebuffer rule per GPU, which generate refuses where GPUs may be split), made for clusters whose GPUs may be
    split: the condition reads the MIG-only set, which holds no whole GPU, so a whole GPU of theirs over the level
    that its Prometheus rule fires for is evaluated by no alarm (where they say exporter.mig: none, the alarm reads the
    rule's own condition: cloudwatch_condition)."""
    catalog, settings = project.catalog, project.settings
    if addon_source(settings):
        return []
    result = []
    for alarm in project.alarms:
        if alarm.cloudwatch is None or "mig_instance" not in alarm.cloudwatch.query.by \
                or "mig_instance" in alarm.condition.query.by:
            continue
        told = [(f"alarm {alarm.id!r} does not evaluate whole GPUs on CloudWatch{WHERE} (its Prometheus rule does): "
                 f"its `cloudwatch=` condition reads MIG instances alone, so a whole GPU of a cluster whose GPUs may "
                 f"be split is evaluated by no alarm; where no GPU is split, exporter.mig: none (or "
                 f"clusters[].exporter.mig: none) makes the alarm read the rule's own condition", clusters, region)
                for held, clusters, region in made_parts(alarm, catalog, settings)
                if not held.no_mig and cloudwatch_condition(alarm, held) is alarm.cloudwatch]
        result += [(alarm.defined_at, message) for message in said_where(settings, told)]
    return result


# What an alarm's description says where its MIG GPUs go unseen (mig_unseen): short, so that the runbook of a
# description near CloudWatch's limit stays (lint AL012 says why)
MIG_UNSEEN = "GPUs split into MIG instances are not evaluated (lint AL012)"
MIG_UNSEEN_SHORT = "MIG GPUs are not evaluated: it never fires for them (lint AL012)"


def mig_unseen(alarm: Alarm, catalog: Catalog, settings: Settings, forms: tuple[Form, ...]) -> str | None:
    """Why a rule's CloudWatch alarms (`forms`) do not evaluate GPUs split into MIG instances that its Prometheus rule
    evaluates (its field is one MIG does not report, and no alarm can judge the stand-in), None where they do or no
    GPU is split."""
    if settings.no_mig or alarm.absent or \
            catalog.mig_substitute(cloudwatch_condition(alarm, settings).query.metric) is None:
        return None
    kinds = {form.kind for form in forms}
    if "static" in kinds:
        return "a static per-pod alarm cannot name a MIG instance's profile ahead; alarms.per_pod: group_by watches " \
               "MIG pods too"
    if "insights" in kinds or "pod" in kinds:
        try:
            mig_plan(alarm, catalog, settings)
        except Unsupported as exc:
            return str(exc)
    return None


def ranked_past_500(project) -> list[tuple[str, str]]:
    """(where, message) of each CloudWatch GROUP BY alarm judged over several periods whose ranking, past the 500
    series a multi-time-series alarm evaluates, can leave out a series that breaches in every period: it ranks by its
    own function over the window (cloudwatch_query.unused_plan and level_plan rank the series breaching all along
    first, on the OTel pipeline, for a share's mean below a level and every reading past one), so series that came
    within the window (no reading on the other side yet, or fewer observations) can rank before it, and 500 of them
    leave it out; the data-missing rule's alarm per GPU (agent.pipeline: classic) ranks by the observations, fewest
    first, where a GPU that came within the window has few. Each alarm as it is made where it is (_said_per_part)."""
    def said(alarm: Alarm, form: Form, settings: Settings) -> list[str]:
        ranked = ranked_by_own_function(alarm, form, settings)
        if ranked is None:
            return []
        rank, why = ranked
        per_gpu = form.kind == "second"
        what = f"{alarm.id!r}{' (MIG instances)' if form.kind == 'mig' else ' (per GPU)' if per_gpu else ''}"
        return [f"alarm {what}{WHERE} ranks its series by {rank}() over its {alarm.evaluation_periods} periods: past "
                f"500 series, series that came within the window can rank before one that breaches all along, and "
                f"500 of them leave it unevaluated on CloudWatch ({why})"]
    return _said_per_part(project, said)


def ranked_by_own_function(alarm: Alarm, form: Form, settings: Settings) -> tuple[str, str] | None:
    """(the function it ranks by, why no other form) of a GROUP BY alarm form judged over several periods that ranks
    its series by its own function over the window (ranked_past_500), None for any other."""
    plan_ = form.plan
    per_gpu = form.kind == "second" and not addon_source(settings) and plan_.metric != data_missing.SAMPLES
    if alarm.evaluation_periods < 2 or (form.kind not in ("insights", "mig") and not per_gpu) or not plan_.group \
            or plan_.complement is not None or plan_.flagged:
        return None
    comparison = cloudwatch_condition(alarm, settings).comparison
    why = ("the Container Insights add-on publishes its own metrics" if addon_source(settings) else
           "agent.pipeline: classic publishes each reading as scraped (no processor to flag or turn it)"
           if settings.agent.pipeline == "classic" else
           f"its set [{', '.join(plan_.dims)}] has no room for a mark within the agent's {MAX_DIMENSIONS} names"
           if len(plan_.dims) >= MAX_DIMENSIONS else
           f"no published form ranks {plan_.function}() {comparison} a level by the periods it holds")
    return (plan_.function if per_gpu else _judged(alarm, plan_, settings)[2] or plan_.function), why


# What such an alarm's description says of it (its short form: RANKED_SHORT)
RANKED_PAST_500 = ("past 500 series it judges the 500 its {rank}() over the {periods} periods ranks first: series that "
                   "came within the window can rank before one that breaches all along and leave it unjudged (lint "
                   "AL017)")
RANKED_SHORT = "past 500 series, newcomers can leave one breaching all along unjudged (lint AL017)"


def ranked_note(alarm: Alarm, form: Form, settings: Settings) -> Note:
    """The note of a form ranked by its own function (ranked_by_own_function); an empty one for any other."""
    ranked = ranked_by_own_function(alarm, form, settings)
    if ranked is None:
        return Note("")
    return Note(RANKED_PAST_500.format(rank=ranked[0], periods=alarm.evaluation_periods), RANKED_SHORT)


def _said_per_part(project, said: Callable[[Alarm, Form, Settings], list[str]]) -> list[tuple[str, str]]:
    """(where, message) of what `said(alarm, form, settings)` says of each CloudWatch alarm form of the project's
    rules (none of a rule generate refuses), planned on the settings of each part of the fleet it is made for
    (made_parts: the clusters alike in exporter.mig, a fleet-scope rule's Regions), never on the fleet's as a whole:
    in a fleet whose clusters differ the alarm of one part reads another condition or set than another's. A message
    holds WHERE, where it names the part it is said of (fleet_parts.said_where: nothing where it holds for every
    cluster)."""
    catalog, settings = project.catalog, project.settings
    result = []
    for alarm in project.alarms:
        told = []
        forms_of: dict[int, tuple[Form, ...] | None] = {}  # a fleet-scope rule's Regions alike are planned once
        for held, clusters, region in made_parts(alarm, catalog, settings):
            if id(held) not in forms_of:
                try:
                    forms_of[id(held)] = alarm_forms(alarm, catalog, held)
                except Unsupported:
                    forms_of[id(held)] = None  # generate refuses it
            told += [(message, clusters, region) for form in forms_of[id(held)] or ()
                     for message in said(alarm, form, held)]
        result += [(alarm.defined_at, message) for message in said_where(settings, told)]
    return result


def _noted(alarm: Alarm, form: Form, settings: Settings, what: str) -> str:
    """A lint note on one alarm form: what it takes over which set on CloudWatch (WHERE: in which part of the fleet),
    then `what`."""
    aggregation = cloudwatch_condition(alarm, settings).query.aggregation
    return (f"alarm {alarm.id!r}{' (MIG instances)' if form.kind == 'mig' else ''} takes the {aggregation} of "
            f"{form.plan.metric} over [{', '.join(form.plan.dims)}] on CloudWatch{WHERE}: {what}")


def copies_counted(project) -> list[tuple[str, str]]:
    """(where, message) of each CloudWatch alarm that counts, adds or averages a GPU's copies (MIG instances, pods
    sharing it by time-slicing) as that many GPUs, where its Prometheus rule counts each GPU once: no merged form of
    the field exists on its pipeline (cloudwatch_query.once_plan; agent.pipeline: classic publishes each series as
    scraped, and a field MIG reports per instance has no one reading per GPU)."""
    catalog = project.catalog

    def said(alarm: Alarm, form: Form, settings: Settings) -> list[str]:
        result = []
        copies = copies_counted_note(form.plan)
        if copies == INSTANCES_JUDGED:
            result.append(_noted(alarm, form, settings,
                                 f"{copies}; no set the agent makes holds that use of each GPU (agent.pipeline: otel "
                                 f"makes a pod's total per GPU, not a namespace's nor a mean)"))
        elif copies:
            why = ("agent.pipeline: classic publishes each series as scraped, nothing merges a GPU's copies"
                   if settings.agent.pipeline == "classic" else
                   f"{form.plan.metric} has no one reading per GPU to merge (MIG reports it per instance)"
                   if catalog.get(form.plan.metric).per_instance else
                   "the agent makes a pod's count and sum of its GPUs once, not a mean nor a namespace's"
                   if POD_DIMENSION in form.plan.dims else
                   "its set has no room for the mark of a GPU's reading once")
            result.append(_noted(alarm, form, settings,
                                 f"{copies}, where its Prometheus rule counts each GPU once ({why})"))
        if PER_PROCESS_COPIES_ADDED in form.plan.notes:  # the pods' copies added (its rule's description says its own)
            result.append(_noted(alarm, form, settings,
                                 f"{PER_PROCESS_COPIES_ADDED}; its Prometheus rule adds a GPU's copies where the GPU "
                                 f"has its own series (4.5.3 on) and reads one where it has none (before): right on "
                                 f"both"))
        return result
    return _said_per_part(project, said)


def failed_scrapes_read(project) -> list[tuple[str, str]]:
    """(where, message) of each CloudWatch alarm whose count of GPUs or total of a gauge is the period's readings over
    the scrapes it holds (cloudwatch_query.per_scrape_read): a failed scrape reads as GPUs lost for the period, where
    its Prometheus rule counts each GPU with a reading in the period and adds each GPU's mean over its readings.
    Metrics Insights cannot take a statistic per GPU and then count or add those in one query, and an alarm on a
    Metrics Insights query takes no math. So is a pod's or node's mean on the OTel pipeline, whose GPU reading DCGM's
    blank at some scrapes weighs by its readings (BLANK_WEIGHED)."""
    def said(alarm: Alarm, form: Form, settings: Settings) -> list[str]:
        note = _failed_scrape_said(alarm, form.plan, settings, lint=False) or \
            (BLANK_WEIGHED if BLANK_WEIGHED in form.plan.notes else "")  # a pod's or node's mean (agent.pipeline otel)
        return [_noted(alarm, form, settings, note)] if note else []
    return _said_per_part(project, said)


def counts_most_per_scrape(project) -> list[tuple[str, str]]:
    """(where, message) of each CloudWatch alarm on a pod's count of GPUs made per scrape at the agent (COUNT_MOST):
    it reads the most one scrape of the period counted, where its Prometheus rule counts each GPU with a reading in
    the period. No processor the agent ships keeps a look-back, and Metrics Insights counts no distinct series."""
    def said(alarm: Alarm, form: Form, settings: Settings) -> list[str]:
        if COUNT_MOST not in form.plan.notes:
            return []
        return [_noted(alarm, form, settings,
                       f"{count_most(alarm, settings)}; neither the agent (no processor it ships keeps a look-back over "
                       f"scrapes) nor Metrics Insights (no count of distinct series) counts a period's GPUs")]
    return _said_per_part(project, said)


def count_most(alarm: Alarm, settings: Settings) -> str:
    """What an alarm on a pod's count of GPUs made per scrape says of it (COUNT_MOST): where its period holds one scrape
    (the scrape interval or less), what it reads at alternate periods (COUNT_MOST_ONE_SCRAPE)."""
    return COUNT_MOST_ONE_SCRAPE if one_scrape_period(alarm, settings) else COUNT_MOST


def named_part(alarm: Alarm, settings: Settings) -> str:
    """What an alarm on a pod's total of a GPU named in turn beside its own says of it (NAMED_PART): where its period
    holds one scrape (the scrape interval or less), what it reads at alternate periods (NAMED_PART_ONE_SCRAPE)."""
    return NAMED_PART_ONE_SCRAPE if one_scrape_period(alarm, settings) else NAMED_PART


def one_scrape_period(alarm: Alarm, settings: Settings) -> bool:
    """Whether the alarm's period holds one scrape of each exporter (the scrape interval or less): its Prometheus rule's
    window holds that one scrape too, so a GPU is read in both or in neither."""
    return alarm.period_seconds <= settings.scrape.seconds


def _failed_scrape_said(alarm: Alarm, plan_: Plan, settings: Settings, lint: bool = True) -> str:
    """What a failed scrape, and a GPU joining or leaving inside a period, do to an alarm whose count or total reads
    the period's readings over its scrapes (per_scrape_read), or whose mean over the GPUs of several nodes weighs each
    by its readings (read_weighed); failed_scrape_note; "" for any other."""
    return _failed_scrape_note(alarm, plan_, settings, lint).text


def _failed_scrape_note(alarm: Alarm, plan_: Plan, settings: Settings, lint: bool = True) -> Note:
    """_failed_scrape_said as a description's note, with its short form (failed_scrape_short). An empty note (none)
    where a period holds one scrape (one_scrape_period): a GPU is read in it or not, a failed scrape leaves the node's
    GPUs out of the period, and its Prometheus rule has no reading of them either: both read alike."""
    condition = cloudwatch_condition(alarm, settings)
    how = condition.query.aggregation
    if one_scrape_period(alarm, settings) or not (
            how in ("count", "sum") and per_scrape_read(plan_)
            or how == "avg" and read_weighed(plan_, group_keys(condition.query.by))):
        return Note("")
    said = (how, condition.comparison, alarm.period_seconds, settings.scrape.seconds)
    blanks = settings.agent.pipeline == "otel" and not addon_source(settings)
    return Note(failed_scrape_note(*said, lint, blanks=blanks), failed_scrape_short(*said, blanks=blanks))


def failed_scrape_short(aggregation: str, comparison: str, period: int, interval: float, blanks: bool) -> str:
    """failed_scrape_note in a few words (its short form): what a failed scrape does to the verdict and, where the
    agent drops DCGM's blank (`blanks`), what a GPU blank at some scrapes reads as beside its rule's 1."""
    n = period / interval
    example = partly_blank(n) if blanks else None
    if aggregation == "avg":
        blank = " or DCGM's blank" if example else ""
        return f"its mean weighs each GPU by its readings in the period: a node added or removed inside it, or a " \
               f"failed scrape{blank}, weighs a GPU less (lint AL024)"
    verdict = "fire" if comparison in ("<", "<=") else "miss"
    blank = f"; a GPU blank (DCGM) at {example[0]} of {counted(n, 'scrape')} reads {example[1]:.2g}, the rule's 1" \
        if example else ""
    return f"a failed scrape, or a node added or removed inside a period, reads as part of a GPU lost for it, so " \
           f"it can {verdict}{blank} (lint AL024)"


@dataclass(frozen=True)
class Form:
    """One kind of CloudWatch alarm a rule makes (per cluster; per Region for a fleet-scope rule)."""

    kind: str  # "insights": its Metrics Insights alarm; "mig": the second one, on MIG instances (mig_plan);
    # "static": one classic alarm per alarms.static_pods entry; "pod": one Metrics Insights alarm per entry, each GPU
    # the pod holds a contributor (judges_pod_gpus), and "pod-mig" its second per entry, on the MIG instances the pod
    # holds (mig_plan); "math": the data-missing metric-math alarm;
    # "second": the data-missing rule's GROUP BY alarm per node or GPU (second_plan); "unread": the GPU stopped
    # reporting rule's GROUP BY alarm per node (unread_plan)
    plan: Plan
    stand_in: str = ""  # "mig": the field that stands in on MIG instances


def static_per_pod(alarm: Alarm, per_pod: str) -> bool:
    """The rule makes a classic alarm per listed pod (alarms.per_pod: static). A fleet-scope rule does not: a
    classic alarm names one pod of one cluster (its ClusterName), and the rule watches every cluster of a
    Region in one alarm, so it stays a GROUP BY alarm (and keeps its MIG second alarm) in either mode."""
    return alarm.per_pod and per_pod == "static" and alarm.scope != "fleet"


def unwatched_static_alarms(project) -> tuple[str, str, str] | None:
    """(where, what, fix) when alarms.per_pod: static lists no pod: the per-pod rules then make no CloudWatch alarm
    at all while their Prometheus twins watch every pod; None otherwise."""
    settings = project.settings
    if settings.alarms.static_pods:
        return None
    rules = sorted(alarm.id for alarm in project.alarms if static_per_pod(alarm, settings.alarms.per_pod))
    if not rules:
        return None
    return (setting_place(settings, ["alarms", "per_pod"]),
            f"alarms.per_pod: static with no alarms.static_pods: the per-pod rules ({', '.join(rules)}) make no "
            f"CloudWatch alarm, while their Prometheus rules watch every pod",
            "list the pods to watch in alarms.static_pods as namespace/pod, or write alarms.per_pod: group_by")


def alarm_forms(alarm: Alarm, catalog: Catalog, settings: Settings, per_pod: str | None = None) -> tuple[Form, ...]:
    """The CloudWatch alarms a rule makes, with the plan each reads: the one answer to which alarms exist, so the
    alarms made (cloudwatch_alarms), the sets the agent publishes (render/cloudwatch.queried_sets) and the
    alarms priced (cost) agree. `per_pod`: alarms.per_pod to assume (default: the settings'). Empty when the
    rule is left out with a note (no expected signal, a field the add-on does not publish); Unsupported when
    CloudWatch cannot evaluate it (generate refuses it)."""
    if alarm.stopped:  # each node's GPUs unread below its highest index, where the agent counts them (else AL027)
        return () if stopped_gpus.not_on_cloudwatch(alarm, catalog, settings) else (Form("unread", unread_plan()),)
    if alarm.absent and not data_missing.expected(settings):
        return ()
    try:
        plan_ = alarm_plan(alarm, catalog, settings)
    except NotPublished:
        return ()
    if alarm.absent:
        return Form("math", plan_), Form("second", second_plan(alarm, settings))
    static = static_per_pod(alarm, per_pod or settings.alarms.per_pod)
    if static and not judges_pod_gpus(alarm, settings):
        return (Form("static", static_plan(alarm, catalog, settings)),)
    try:
        mig = mig_plan(alarm, catalog, settings)
    except HalfAlarm:
        raise
    except Unsupported:
        mig = None  # MIG GPUs are not evaluated on CloudWatch: a note says so (mig_left_out)
    if static:  # each GPU of the pod a contributor, as the rule judges it; its MIG instances in a second alarm
        return (Form("pod", plan_),) + ((Form("pod-mig", *mig),) if mig else ())
    comparison = cloudwatch_condition(alarm, settings).comparison
    if mig:  # a share below a level: ranked by the unused share's sum over the window (unused_plan)
        mig = (unused_plan(mig[0], comparison, catalog, settings) or mig[0], mig[1])
    plan_ = unused_plan(plan_, comparison, catalog, settings) or plan_
    # every reading of several periods past a level: ranked by the count of readings past it (level_plan)
    level = float(cloudwatch_condition(alarm, settings).threshold) * plan_.divisor
    plan_ = level_plan(plan_, comparison, level, alarm.evaluation_periods, catalog, settings) or plan_
    if mig and alarm.missing_data == "breaching":  # a half alarm too: made where no GPU is split (made_parts)
        raise HalfAlarm(
            f"missing_data='breaching' on a rule CloudWatch judges in two alarms (the whole GPUs' "
            f"{plan_.metric}, the MIG instances' {mig[1]}): in a cluster without GPUs of one kind its alarm reads no "
            f"datapoint and stays in ALARM, where the rule, judging both kinds together, does not fire",
            fix="set exporter.mig: none (or clusters[].exporter.mig: none) where no GPU is split into MIG instances, "
                "or missing_data='notBreaching'")
    forms = (Form("insights", plan_),) + ((Form("mig", *mig),) if mig else ())
    if clusters_apart(alarm, cloudwatch_condition(alarm, settings).query):
        forms = tuple(replace(form, plan=_per_cluster(form.plan, alarm)) for form in forms)
    return forms


def first_kind(alarm: Alarm, catalog: Catalog, settings: Settings) -> str | None:
    """The kind of the first CloudWatch alarm the rule makes (alarm_forms' first Form), as far as its periods are judged
    by it (_window_limit); None where it makes none (left out with a note; the stopped rule off the OTel pipeline,
    which Prometheus alone judges). A rule CloudWatch cannot evaluate, which generate refuses, is judged as a Metrics
    Insights alarm."""
    try:
        forms = alarm_forms(alarm, catalog, settings)
    except Unsupported:
        return "insights"
    return forms[0].kind if forms else None


# The keys that name an object of one cluster: a pod is its cluster's (two clusters each run an `ml/infer-1`), and so
# is a node (EKS names a node by its private IP, and clusters in VPCs of one CIDR have nodes of one name), its GPUs and
# their MIG instances, a namespace and a container. A model, or a field's own label (an XID code), names none.
CLUSTER_OBJECTS = ("cluster", "namespace", "pod", "container", "node", "gpu", "mig_instance")


def clusters_apart(alarm: Alarm, query) -> bool:
    """A fleet-scope rule (one alarm per Region, or one rule over a Prometheus holding several clusters) whose query
    names a cluster's objects: it judges each object of each cluster apart, grouped by the cluster too, so two
    clusters' namesakes are two contributors, never one. Grouped by nothing (or by a model alone) it judges the
    fleet's value, its clusters' objects together: the meaning of the fleet scope."""
    return alarm.scope == "fleet" and any(key in CLUSTER_OBJECTS for key in query.by)


def _per_cluster(plan_: Plan, alarm: Alarm) -> Plan:
    """A fleet alarm's plan grouped by the cluster first (clusters_apart): GROUP BY ClusterName, ... ."""
    if CLUSTER_DIMENSION not in plan_.dims:
        raise Unsupported(f"a fleet-scope alarm per {', '.join(plan_.group)} needs {CLUSTER_DIMENSION} in its set "
                          f"[{', '.join(plan_.dims)}] to tell two clusters' namesakes apart",
                          fix=f"name {CLUSTER_DIMENSION} in that set (cloudwatch.dimensions / gpu_dimensions)")
    group = (CLUSTER_DIMENSION, *(name for name in plan_.group if name != CLUSTER_DIMENSION))
    series = (CLUSTER_DIMENSION, *(name for name in plan_.series if name != CLUSTER_DIMENSION))
    return replace(plan_, group=group, series=series)


def _threshold(alarm: Alarm, plan_: Plan, settings: Settings) -> float:
    given = cloudwatch_condition(alarm, settings).threshold
    try:
        threshold = float(given) * plan_.divisor
    except OverflowError:
        threshold = math.inf
    if not math.isfinite(threshold):  # JSON has no Infinity: alarms.json and the templates would not parse
        raise InputError(f"alarm {alarm.id!r}: its threshold {given:g} times the "
                         f"{counted(plan_.divisor, 'reading')} a period "
                         f"holds is no finite number", where=alarm.defined_at,
                         hint="give a threshold a GPU reading can reach (below 1e300)")
    if plan_.flagged:  # the flags past the level (level_plan): every reading of a period past it is a lowest flag of 1
        return 1.0
    # the unused share (unused_plan): whole - reading, so reading < T is unused > whole - T
    return threshold if plan_.complement is None else plan_.complement - threshold


def _addon_blanks_said(plan_: Plan, comparison: str, settings: Settings) -> Note:
    """Where DCGM's blank is published (the Container Insights add-on, and the agent's JSON path, agent.pipeline:
    classic), what it does to an alarm on a reading (its query has no math to drop it, container_insights.ALARM_BLANKS):
    one firing above its threshold fires for the GPU or pod reading it, one firing below never does. A count counts
    the series, a blank among them. Only the OTel pipeline drops it before it is published."""
    published = addon_source(settings) or settings.agent.pipeline == "classic"
    if not published or plan_.function == "COUNT":
        return Note("")
    fires = 'never fires' if comparison in ('<', '<=') else 'fires'
    return Note(f"{ALARM_BLANKS}: this alarm {fires} for it", f"DCGM's blank is a reading: it {fires} for its GPU")


def _zero_unread_said(plan_: Plan, comparison: str, settings: Settings) -> Note:
    """What a GPU without a memory temperature sensor does to an alarm on its field on agent.pipeline: classic, which
    publishes the 0 DCGM writes there (cloudwatch_query.UNREAD_ZERO_NOTE): one firing below its threshold fires for
    it, a count counts it, a mean or least over GPUs firing above it is pulled down by it; one firing above on each
    GPU, or on a largest, is not moved by it. The OTel pipeline drops it."""
    if settings.agent.pipeline != "classic" or addon_source(settings) or plan_.metric not in UNREAD_AT_ZERO:
        return Note("")
    if plan_.function == "COUNT":
        return Note(f"{UNREAD_ZERO_OPENING}: this alarm counts it", "a GPU without the sensor reads 0: counted")
    if comparison in ("<", "<="):
        return Note(f"{UNREAD_ZERO_OPENING}: this alarm fires for it", "a GPU without the sensor reads 0: it fires")
    if plan_.function in ("AVG", "MIN") and plan_.gpu_series[-1] not in plan_.group:  # (a series per GPU: unmoved)
        # a mean or least over GPUs firing above a level: the 0 pulls it down (three GPUs at 45, 30 and 97 °C and two
        # without the sensor: a mean of 34.4 °C for 57.3)
        return Note(f"{UNREAD_ZERO_OPENING}: its {'mean' if plan_.function == 'AVG' else 'least'} over GPUs counts "
                    f"that 0, and this alarm can stay quiet where the GPUs with the sensor read above its level",
                    f"a GPU without the sensor reads 0: a {'mean' if plan_.function == 'AVG' else 'least'} over GPUs "
                    f"is pulled down")
    return Note("")


def _addon_mig_said(plan_: Plan, comparison: str, settings: Settings) -> Note:
    """What an alarm on the add-on reads of a GPU split into MIG instances: one instance's reading
    (ALARM_MIG_ONE_INSTANCE), or, of a field MIG does not report at all (utilization), what its exporter writes for an
    instance, 0 on some versions, which fires an alarm below its level whatever the GPU's use (ALARM_MIG_UNREPORTED)."""
    if not reads_one_instance(plan_, settings):
        return Note("")
    field = one_instance_fields()[plan_.metric]
    if field not in MIG_UNSUPPORTED:
        return Note(ALARM_MIG_ONE_INSTANCE, ALARM_MIG_ONE_INSTANCE_SHORT)
    words = {"field": field, "fires": "fires" if comparison in ("<", "<=") else "never fires"}
    return Note(ALARM_MIG_UNREPORTED.format(**words), ALARM_MIG_UNREPORTED_SHORT.format(**words))


def _judged(alarm: Alarm, plan_: Plan, settings: Settings) -> tuple[str, str, str | None]:
    """(comparison, ORDER BY direction, ORDER BY function: None for the SELECT's) of a Metrics Insights alarm: toward
    its threshold, the series nearest it first; over the unused share (unused_plan) the comparison turns round and
    the series rank by the share's SUM over the window, the most first."""
    comparison = cloudwatch_condition(alarm, settings).comparison
    if plan_.flagged:  # level_plan: the lowest flag at least 1, ranked by the count of readings past the level
        return ">=", "DESC", "SUM"
    if plan_.complement is None:
        return comparison, ORDER[comparison], None
    turned = {"<": ">", "<=": ">="}[comparison]
    return turned, ORDER[turned], "SUM"


DIGEST_LENGTH = 8  # hexadecimal digits of the digest that parts two DaemonSets' alarm names


def _addon_reported() -> str:
    """The add-on's node metric of the field its exporter reports for every GPU (node metrics cover idle GPUs)."""
    return metric_name("node", by_field()[data_missing.ADDON_REPORTED])


def _about(alarm: Alarm, about: data_missing.About, title: str | None = None) -> str:
    """The description of an alarm whose meaning gpudash writes (`about`, under `title`): whole before its runbook
    where it fits; else its first sentence the alarm's own, the others notes with their short forms
    (alarm_text.about_notes)."""
    whole = described(alarm, (), data_missing.whole_text(about), title)
    if not own_cut(whole):
        return whole
    own, notes = about_notes(about)
    return described(alarm, notes, own, title)


def _data_missing_requests(alarm: Alarm, settings: Settings, cluster: Cluster) -> list[dict[str, Any]]:
    """The metric-math alarms of `data_missing` in `cluster`: one on the Container Insights add-on, else one per
    exporter DaemonSet the settings name (named_daemonsets; a cluster with several names each in its alarm's)."""
    if addon_source(settings):
        return [_data_missing_request(alarm, settings, cluster)]
    daemonsets = named_daemonsets(settings, cluster)
    joined = Counter(f"{ns}-{ds}" for ns, ds in daemonsets)
    requests, named = [], len(daemonsets) > 1
    for number, (ns, ds) in enumerate(daemonsets):
        requests.append(_data_missing_request(alarm, settings, cluster, (ns, ds), named, joined[f"{ns}-{ds}"] > 1))
        if named:
            _daemonset_name_fits(requests[-1]["AlarmName"], settings, cluster, number, f"{ns}/{ds}")
    return requests


def _daemonset_name_fits(name: str, settings: Settings, cluster: Cluster, number: int, daemonset: str) -> None:
    """Refuse a data-missing alarm whose name, which ends in its exporter DaemonSet's (the cluster's `number`th, from
    0: exporter.daemonset, then more_daemonsets), passes ALARM_NAME_LENGTH, naming that DaemonSet and its key: a name
    Kubernetes takes (up to 253 characters) passes it whatever alarms.name_prefix is."""
    if len(name) <= ALARM_NAME_LENGTH:
        return
    raise InputError(f"alarm name {name[:60]}... is {len(name)} characters; CloudWatch takes at most "
                     f"{ALARM_NAME_LENGTH} and refuses the alarm: its name ends in the exporter DaemonSet "
                     f"{daemonset} ({len(daemonset)} characters) its data-missing alarm watches",
                     where=setting_place(settings, daemonset_key(settings, cluster, number == 0)),
                     hint=f"name that DaemonSet {len(name) - ALARM_NAME_LENGTH} or more characters shorter "
                          "(its Helm release, or the chart's fullnameOverride), or use a shorter "
                          "alarms.name_prefix or cluster name")


def _data_missing_request(alarm: Alarm, settings: Settings, cluster: Cluster, daemonset: tuple[str, str] | None = None,
                          named: bool = False, apart: bool = False) -> dict[str, Any]:
    """The metric-math alarm of `data_missing`: below 1 when GPU data is missing where expected; no
    datapoint (breaching) when the expected signal itself is missing. On the DCGM source, of one exporter DaemonSet
    (namespace, name), whose name ends the alarm's when `named`, and then a digest of namespace/name when `apart`
    (another of the cluster's DaemonSets joins its namespace and name with "-" alike: `a-b/c`, `a/b-c`)."""
    if addon_source(settings):
        description = _about(alarm, data_missing.ADDON_DESCRIPTION)
        metrics = data_missing.addon_metrics(_addon_reported(), cluster, alarm.period_seconds, alarm.title)
    else:
        assert daemonset is not None
        description = _description(alarm, *(Note(text, short) for text, short in zip(
            data_missing.cluster_limits(settings, cluster, daemonset),
            data_missing.cluster_limits_short(settings, cluster, daemonset))))
        metrics = data_missing.cloudwatch_metrics(cloudwatch_condition(alarm, settings).query.metric,
                                                  settings, cluster, alarm.period_seconds, alarm.title, daemonset)
    name = _name(settings.alarms.name_prefix, cluster.name, alarm.id, alarm.severity, daemonset if named else None)
    if apart and daemonset:
        name += "-" + hashlib.sha256("/".join(daemonset).encode()).hexdigest()[:DIGEST_LENGTH]
    request = _common(alarm, settings, name, description)
    request.update({"ComparisonOperator": COMPARISON_OPERATORS["<"], "Threshold": 1.0,
                    "TreatMissingData": "breaching", "Metrics": metrics})
    return request


def _second_request(alarm: Alarm, catalog: Catalog, settings: Settings, plan_: Plan,
                     cluster: Cluster) -> dict[str, Any]:
    """The data-missing rule's GROUP BY alarm per node (its exporter's scrapes that brought no GPU data, more than
    NO_DATA_SHARE of the window's, over one period the length of the rule's window, as the rule's branch counts
    them) or per GPU (its observations below SCRAPE_SHARE of its scrapes two periods running). On the Container
    Insights add-on, a metric-math alarm over each GPU's observations: GPUs the kubelet counts missing half a period
    or more, two periods running."""
    if addon_source(settings):
        return _addon_gpu_request(alarm, settings, plan_, cluster)
    if plan_.metric == data_missing.SAMPLES:
        window = data_missing.window_seconds(alarm.period_seconds, alarm.evaluation_periods)
        about, each = data_missing.per_node_description(settings, window), "node"
        suffix, comparison, order = data_missing.PER_NODE_SUFFIX, ">", "DESC"
        threshold, period, periods = data_missing.no_data_threshold(settings, window), window, 1
    else:
        about = data_missing.per_gpu_description(settings, plan_.metric, alarm.period_seconds,
                                                 alarm.evaluation_periods)
        each = "GPU"
        suffix, comparison, order = data_missing.PER_GPU_SUFFIX, "<", "ASC"
        threshold = data_missing.per_gpu_threshold(settings, alarm.period_seconds)
        period, periods = alarm.period_seconds, alarm.evaluation_periods
    description = _about(alarm, about, f"{alarm.title} (per {each})")
    name = _name(settings.alarms.name_prefix, cluster.name, alarm.id + suffix, alarm.severity)
    request = _common(alarm, settings, name, description)
    request.update({"ComparisonOperator": COMPARISON_OPERATORS[comparison],
                    "Threshold": threshold,
                    "EvaluationPeriods": periods,
                    "DatapointsToAlarm": periods,
                    "TreatMissingData": "notBreaching",
                    "Metrics": [{"Id": "q1", "Expression": plan_.expression(settings, cluster, order),
                                 "Period": period, "ReturnData": True,
                                 "Label": f"{alarm.title} (per {each})"}]})
    return request


def _agent_periods(alarm: Alarm) -> Alarm:
    """The data-missing rule as its agent alarm judges it: over data_missing.agent_periods periods running, all of them
    breaching."""
    periods = data_missing.agent_periods(alarm.evaluation_periods, alarm.datapoints_to_alarm)
    return replace(alarm, evaluation_periods=periods, datapoints_to_alarm=None)


def _agent_request(alarm: Alarm, settings: Settings, cluster: Cluster) -> dict[str, Any]:
    """The data-missing rule's alarm on the agent's own scrapes of kube-state-metrics (data_missing.AGENT_SUFFIX): a
    GROUP BY alarm, each kube-state-metrics target a contributor in ALARM where the desired count it served has fewer
    datapoints than half the period's scrapes, in each of its periods (_agent_periods); no data is not breaching (an
    agent stopped is the cluster's alarm)."""
    alarm = _agent_periods(alarm)
    about = data_missing.agent_description(settings, alarm.period_seconds, alarm.evaluation_periods)
    name = _name(settings.alarms.name_prefix, cluster.name, alarm.id + data_missing.AGENT_SUFFIX, alarm.severity)
    label = f"{alarm.title} (agent)"
    request = _common(alarm, settings, name, _about(alarm, about, label))
    query = data_missing.agent_query(settings, cluster)
    request.update({"ComparisonOperator": COMPARISON_OPERATORS["<"],
                    "Threshold": data_missing.agent_threshold(settings, alarm.period_seconds),
                    "TreatMissingData": "notBreaching",
                    "Metrics": [{"Id": "q1", "Expression": query, "Period": alarm.period_seconds,
                                 "ReturnData": True, "Label": label}]})
    return request


def _addon_gpu_request(alarm: Alarm, settings: Settings, plan_: Plan, cluster: Cluster) -> dict[str, Any]:
    """The add-on's per-GPU data-missing alarm (data_missing.addon_gpu_expression): no datapoint is not breaching
    (nothing collects: the cluster's alarm sees the agent stopped)."""
    intervals = node_interval(settings), gpu_interval(settings)
    about = data_missing.addon_gpu_description(alarm.period_seconds, *intervals,
                                               mig=mig_of(settings, cluster) != "none")
    description = _about(alarm, about, f"{alarm.title} (per GPU)")
    name = _name(settings.alarms.name_prefix, cluster.name, alarm.id + data_missing.PER_GPU_SUFFIX, alarm.severity)
    request = _common(alarm, settings, name, description)
    query = plan_.expression(settings, cluster, "ASC", data_missing.GPUS_PER_QUERY)
    request.update({"ComparisonOperator": COMPARISON_OPERATORS[">="], "Threshold": data_missing.MISSING_GPU,
                    "TreatMissingData": "notBreaching",
                    "Metrics": data_missing.addon_gpu_metrics(query, _addon_reported(), cluster, alarm.period_seconds,
                                                              f"{alarm.title} (GPUs missing)", *intervals)})
    return request


# The notes of an alarm's description in a few words (their short forms: render/alarm_text; docs/alarm-notes.md), by
# their whole text; a note not here is only left out where there is no room
# COUNT_MOST's short form, and COUNT_MOST_ONE_SCRAPE's (a pod that moved nodes is one whose GPUs no scrape read all)
_COUNT_MOST_SHORT = "a pod's count of GPUs is the most one scrape counted: fewer where no scrape read all (lint AL025)"
SHORT = {COPIES_COUNTED: "a MIG or shared GPU counts, adds and weighs once per instance or pod (lint AL019)",
         WHOLE_COPIES_COUNTED: "a shared GPU counts, adds and weighs once per pod sharing it (lint AL019)",
         MIG_COPIES_COUNTED: "a MIG GPU counts, adds and weighs once per instance (lint AL019)",
         INSTANCES_JUDGED: "a MIG field is read per instance a group holds, not per GPU (lint AL019)",
         NAMED_SHARE: "a pod named in turn on a shared GPU reads the scrapes it was named at",
         NAMED_PART: "a pod named in turn on a shared GPU beside its own reads it in part (300 W and 100 W at half the "
                 "scrapes: 350 W)",
         NAMED_PART_ONE_SCRAPE: "a pod named in turn on a shared GPU beside its own reads it at the periods naming it "
                                "(300 W and 100 W: 400 W, 300 W)",
         NAMED_EXTREME: "a pod named in turn on a shared GPU reads only the scrapes naming it (the rule: every pod "
                        "sharing it)",
         NAMED_TURNS_ALARM: "a pod named in turn on a shared GPU reads its increase at each naming (a period off by up "
                        "to one gap between them)",
         INSTANCE_CONTRIBUTORS: "each GPU instance is a contributor (a MIG GPU's each with the GPU's increase)",
         CLASSIC_COUNTER_ALARM: "an increase is missed across a failed scrape, an agent restart or a change of pods, "
                                "and counted once per pod sharing a GPU (lint AL013, AL015)",
         CLASSIC_COUNTER_ALARM_ONE_SERIES: "an increase is missed across a failed scrape, an agent restart or a change "
                                           "of pods (lint AL015)",
         PER_PROCESS_COPIES_ADDED_ALARM: "before dcgm-exporter 4.5.3 a GPU k pods share adds k times (lint AL019)",
         COUNT_MOST: _COUNT_MOST_SHORT,
         COUNT_MOST_ONE_SCRAPE: _COUNT_MOST_SHORT,
         NAMED_WEIGHED: "a pod's mean weighs a GPU named in turn by the scrapes naming the pod (300 W and 200 W at "
                   "half: 266.7 W for 250)",
         NAMESPACE_WEIGHED: "a namespace's mean weighs a GPU it shares with other namespaces, named in turn, by the "
                            "scrapes naming its pods (300 W and 200 W at half: 266.7 W for 250)",
         NAMED_WEIGHED_COLLECTIONS: "a pod's mean weighs a GPU named in turn by the collections naming the pod (300 W "
                                    "and 200 W at half: 266.7 W for 250)",
         NAMESPACE_WEIGHED_COLLECTIONS: "a namespace's mean weighs a GPU it shares with other namespaces, named in turn, "
                                        "by the collections naming its pods (300 W and 200 W at half: 266.7 W for 250)",
         SHARED_INSTANCE_WEIGHS: "a MIG instance pods share weighs once per pod in its GPU's mean",
         BLANK_WEIGHED: "a GPU reading DCGM's blank at some scrapes weighs by its readings (50 % and 100 % at half: "
                        "66.7 % for 75)",
         ALARM_MIG_ONE_INSTANCE: ALARM_MIG_ONE_INSTANCE_SHORT,
         MIG_UNSEEN: MIG_UNSEEN_SHORT,
         **{GAP_TEXTS[kind]: short for kind, short in GAP_SHORT.items()}}


# The example of a mean weighed by the scrapes naming a pod (NAMED_WEIGHED and its kin) is in watts: an alarm of
# another field gives it in its own unit, its numbers scaled where watts' would not read as that unit (a utilization of
# 300 %, a temperature of 300 °C). {unit key: (a GPU of its own, the one named at half the scrapes, what is read, the
# mean of the two)}; any other unit: the watts' numbers in its own label.
WEIGHED_EXAMPLES = {"percent": ("30 %", "20 %", "26.7 %", "25"), "celsius": ("60 °C", "40 °C", "53.3 °C", "50"),
                    "ratio": ("0.3", "0.2", "0.267", "0.25"), "time_ratio": ("0.3", "0.2", "0.267", "0.25")}
_WATTS_EXAMPLE = ("300 W", "200 W", "266.7 W", "250")


def in_unit(text: str, unit: Unit) -> str:
    """`text` with its weighed mean's example in watts (WEIGHED_EXAMPLES) given in `unit`."""
    if unit.key == "watt" or f"{_WATTS_EXAMPLE[2]} for {_WATTS_EXAMPLE[3]}" not in text:
        return text
    example = WEIGHED_EXAMPLES.get(unit.key) or tuple(f"{number[:-2]} {unit.label}" for number in _WATTS_EXAMPLE[:3]) \
        + (_WATTS_EXAMPLE[3],)
    text = text.replace(f"{_WATTS_EXAMPLE[2]} for {_WATTS_EXAMPLE[3]}", f"{example[2]} for {example[3]}")
    return text.replace(_WATTS_EXAMPLE[0], example[0]).replace(_WATTS_EXAMPLE[1], example[1])


def _plan_notes(alarm: Alarm, catalog: Catalog, settings: Settings, plan_: Plan, unseen: str) -> list[Note]:
    """The notes of an alarm on a plan (a rule's Metrics Insights alarm, a static per-pod one), most important first:
    what its threshold reads (a gap in a counter, the unused share, flags past a level), the MIG GPUs it does not see
    (`unseen`, MIG_UNSEEN) or sees as one instance (the add-on), what it reads otherwise than the rule (a GPU's copies
    counted: no merged form, cloudwatch_query.once_plan, lint AL019; a failed scrape as GPUs lost, lint AL024; a pod's
    total of a GPU named in turn beside its own, a pod's counter of a GPU named under its pods in turn: the OTel
    pipeline, shorter than the header's), DCGM's blank on the add-on, and what a contributor whose data stops does
    (stale)."""
    condition = cloudwatch_condition(alarm, settings)
    note = Note(otel_gap(gap_kind(condition)), GAP_SHORT[gap_kind(condition)]) \
        if reads_gap_growth(plan_, catalog, settings) else Note("")
    if plan_.complement is not None:  # unused_plan
        reads = f"it reads {plan_.complement:g} less each reading above {_threshold(alarm, plan_, settings):g}"
        note = Note(f"{reads}, ranked by its sum over the window (past 500: the longest idle)", reads)
    if plan_.flagged:  # level_plan
        flags = f"readings {LEVEL_WORDS[plan_.flagged[0]]} {plan_.flagged[1]:g} read 1, others 0"
        note = Note(f"{flags}, ranked by their sum", flags)
    named = [said for note_, said in ((NAMED_SHARE, NAMED_SHARE), (NAMED_PART, named_part(alarm, settings)),
                                      (NAMED_TURNS, NAMED_TURNS_ALARM), (NAMED_EXTREME, NAMED_EXTREME),
                                      (COUNT_MOST, count_most(alarm, settings)),
                                      (NAMED_WEIGHED, NAMED_WEIGHED), (NAMESPACE_WEIGHED, NAMESPACE_WEIGHED),
                                      (NAMED_WEIGHED_COLLECTIONS, NAMED_WEIGHED_COLLECTIONS),
                                      (NAMESPACE_WEIGHED_COLLECTIONS, NAMESPACE_WEIGHED_COLLECTIONS),
                                      (SHARED_INSTANCE_WEIGHS, SHARED_INSTANCE_WEIGHS),
                                      (BLANK_WEIGHED, BLANK_WEIGHED))
             if note_ in plan_.notes]
    # (and a group's sum or mean of the pods' copies of a field split per process, which an exporter before 4.5.3
    # writes as the device's whole value: lint AL019 notes it too; said before the notes of pods named in turn, which
    # with exporter.virtual_gpus only an exporter of the fleet without KUBERNETES_VIRTUAL_GPUS makes true, so that
    # they give way first where the description runs out of room)
    named[:0] = [PER_PROCESS_COPIES_ADDED_ALARM] if PER_PROCESS_COPIES_ADDED in plan_.notes else []
    unit = charted_unit(condition.query, catalog)  # (the weighed means' example in the alarm's unit: in_unit)
    comparison = _judged(alarm, plan_, settings)[0]
    texts = (unseen, copies_counted_note(plan_) or "")
    return [note, _addon_blanks_said(plan_, comparison, settings), _zero_unread_said(plan_, comparison, settings),
            _addon_mig_said(plan_, comparison, settings),
            *(Note(text, SHORT.get(text, "")) for text in texts),
            _failed_scrape_note(alarm, plan_, settings),
            *(Note(in_unit(text, unit), in_unit(SHORT.get(text, ""), unit)) for text in named),
            stale(alarm, catalog, settings, plan_)]


def _insights_requests(alarm: Alarm, catalog: Catalog, settings: Settings, form: Form,
                       unseen: str = "", whole: bool = False, said: str = "") -> Callable[..., dict[str, Any]]:
    """The request of a rule's Metrics Insights alarm (`form`: its own, or its second on MIG instances) for a
    cluster (None: fleet-wide, less the clusters `apart` a fleet rule's other alarm in the Region judges); all but
    its name and its query's cluster filter is made once, whatever the number of clusters. `unseen`: MIG_UNSEEN,
    where the rule's field is one MIG does not report and no alarm judges its stand-in (mig_unseen). `whole`: a
    fleet rule's alarm of the clusters saying exporter.mig: none in a Region judged apart (WHOLE_SUFFIX); `said`, a
    sentence of such an alarm's description naming the clusters it judges, last (left out where there is no room)."""
    condition = cloudwatch_condition(alarm, settings)
    plan_, mig = form.plan, form.kind in ("mig", "pod-mig")
    threshold = _threshold(alarm, plan_, settings)
    comparison, order, rank = _judged(alarm, plan_, settings)
    notes = [*_plan_notes(alarm, catalog, settings, plan_, unseen), ranked_note(alarm, form, settings)]
    label = alarm.title
    if mig:
        label += " (MIG instances)"
        notes = [Note(f"On GPUs split into MIG instances, which report no {condition.query.metric}: {form.stand_in} "
                      f"{COMPARED[condition.comparison]} {float(condition.threshold) * plan_.divisor:g} (the same "
                      f"share as a ratio).", sentence=True), *notes]
    elif MIG_INSTANCE_LABEL in plan_.group and condition.query.metric in catalog \
            and catalog.get(condition.query.metric).is_counter:  # a counter's increase per GPU instance (cloudwatch_query)
        listed, missed = instance_contributors(settings, gap_kind(condition))
        notes = [Note(listed, SHORT.get(listed, "")), _addon_blanks_said(plan_, comparison, settings),
                 Note(missed, SHORT.get(missed, "")), Note(_stale_clause(alarm, settings))]
    description = _description(alarm, *notes, *([Note(said, sentence=True)] if said else []))
    before, after = plan_.around_cluster(settings, order, rank=rank)

    def request(cluster: Cluster | None, apart: tuple[str, ...] = (), pod: tuple[str, str] | None = None) \
            -> dict[str, Any]:
        """`pod`: (namespace, pod) of an alarms.static_pods entry, whose alarm (Form kind "pod") reads its series
        alone, named for it."""
        result = _common(alarm, settings, alarm_name(settings, cluster, alarm, pod, mig=mig, whole=whole),
                         description)
        result["Threshold"] = threshold
        result["ComparisonOperator"] = COMPARISON_OPERATORS[comparison]
        left_out = left_out_by_name(plan_.dims, apart, whole)
        where = plan_.cluster_filter(cluster, left_out)
        if pod is not None:
            where += _pod_filter(pod, settings, joined=bool(where))
        result["Metrics"] = [{"Id": "q1", "Expression": before + where + after,
                              "Period": alarm.period_seconds, "ReturnData": True, "Label": label}]
        return result

    return request


def _pod_filter(pod: tuple[str, str], settings: Settings, joined: bool) -> str:
    """A query's filter on one pod (namespace, pod), after its cluster filter (`joined`) or alone: the dimension names
    the agent publishes the workload's namespace and pod under."""
    terms = " AND ".join(f"{quote_identifier(dimension_for(key, settings))} = {quote_string(value)}"
                         for key, value in zip(("namespace", "pod"), pod))
    return (" AND " if joined else " WHERE ") + terms


def left_out_by_name(dims: tuple[str, ...], apart: tuple[str, ...], whole: bool) -> tuple[str, ...]:
    """The clusters of `apart` (those of its Region a fleet rule's other alarm there judges) a fleet alarm's query over
    the set `dims` leaves out by name: the clusters whose GPUs may be split, from the alarm of those saying
    exporter.mig: none (`whole`), as their agents may publish its set too (a per-GPU widget or alarm, agent.
    metric_selection: all), a MIG GPU's instances in one series; the clusters saying none from the other alarm only
    where its set is not one of MIG instances alone (mig_only_set: they publish nothing in that one)."""
    return () if not whole and mig_only_set(dims) else apart


def static_pod(entry: str) -> tuple[str, str]:
    """`namespace/pod` from alarms.static_pods."""
    namespace, _, pod = entry.partition("/")
    return namespace, pod


def _static_requests(alarm: Alarm, catalog: Catalog, settings: Settings,
                     unseen: str = "") -> Callable[[Cluster, str], dict[str, Any]]:
    """The maker of the classic alarms on one pod's series (the `static` per-pod mode), `request(cluster, entry)`;
    `unseen`: MIG_UNSEEN, where its MIG GPUs go unseen. What the alarm's every pod shares (its query, description,
    threshold and statistic) is worked out at the first pod's request, once: a fleet of 550 static pods in 2
    clusters worked it out again for each of 1,100 requests of each rule, most of a static build's CPU."""
    planned: list[tuple] = []  # (condition, plan), then (description, threshold, statistic): in the order they
    described: list[tuple] = []  # were worked out for each pod, so a refusal is the one it was

    def request(cluster: Cluster, entry: str) -> dict[str, Any]:
        if not planned:
            planned.append((cloudwatch_condition(alarm, settings), static_plan(alarm, catalog, settings)))
        condition, plan_ = planned[0]
        namespace, pod = static_pod(entry)
        # CloudWatch dimension names (the agent's own scrape job), not the labels a Prometheus path uses.
        values = {CLUSTER_DIMENSION: cluster.name, dimension_for("namespace", settings): namespace,
                  dimension_for("pod", settings): pod,
                  "Namespace": exporter_namespace(settings, cluster), "Service": style_for(settings, cluster).service,
                  "job": settings.scrape.job_name}
        unknown = [d for d in plan_.dims if not values.get(d)]
        if unknown:
            raise InputError(f"alarm {alarm.id!r}: a static per-pod alarm cannot name the value of "
                             f"{', '.join(unknown)} for pod {entry}", where=alarm.defined_at,
                             hint=f"keep cloudwatch.dimensions to {CLUSTER_DIMENSION}, namespace, pod, or use "
                                  "alarms.per_pod: group_by")
        spaces = list(dict.fromkeys(ns for ns, _ in named_daemonsets(settings, cluster)))
        if "Namespace" in plan_.dims and len(spaces) > 1:
            # the agent's job gives each exporter pod its own namespace as Namespace: a pod on a GPU of another
            # one's exporter would publish under a value this alarm does not name, and it would read nothing
            raise InputError(f"alarm {alarm.id!r}: a static per-pod alarm names one value of Namespace (the exporter "
                             f"pod's namespace, which cloudwatch.dimensions publishes), and cluster {cluster.name}'s "
                             f"exporter DaemonSets run in {', '.join(spaces)} (exporter.more_daemonsets): pod "
                             f"{entry}'s alarm would read nothing while the pod runs on a GPU "
                             f"{', '.join(spaces[1:])}'s exporter serves",
                             where=setting_place(settings, ["cloudwatch", "dimensions"]),
                             hint="leave Namespace out of cloudwatch.dimensions, or use alarms.per_pod: group_by (its "
                                  "query reads every Namespace)")
        if not described:
            described.append((_description(alarm, *_plan_notes(alarm, catalog, settings, plan_, unseen)),
                              _threshold(alarm, plan_, settings),
                              STATISTICS[{v: k for k, v in MI_FUNCTIONS.items()}[plan_.function]]))
        description, threshold, statistic = described[0]
        result = _common(alarm, settings, alarm_name(settings, cluster, alarm, (namespace, pod)), description)
        result.update({
            "Threshold": threshold,
            "Namespace": settings.cloudwatch.namespace,
            "MetricName": condition.query.metric,
            "Dimensions": [{"Name": d, "Value": values.get(d, "")} for d in plan_.dims],
            "Statistic": statistic,
            "Period": alarm.period_seconds,
        })
        return result

    return request


def _check_period(alarm: Alarm, settings: Settings, kind: str | None, fixed: bool = True) -> None:
    """Periods CloudWatch can evaluate from the agent's standard-resolution observations, a whole
    number of them per period (thresholds of sums and counts are scaled by that number). A period under 60 s is told
    first on the add-on too: told the add-on's collections first, 10 s x 1 was told 'pick a
    cloudwatch.addon_gpu_interval that divides 10 s (e.g. 10, 30, 60)', and at 10 it was refused for its period.
    `fixed`: the refusal names its fix (_refusal)."""
    if alarm.period_seconds < 60:
        raise InputError(f"alarm {alarm.id!r}: a period of {alarm.period_seconds} s needs high-resolution "
                         f"metrics; the agent publishes standard resolution (60 s)", where=alarm.defined_at,
                         hint="give the alarm period_seconds={}{}".format(*_standard_period(alarm, settings, kind))
                         if fixed else "")
    if addon_source(settings):
        _check_addon_period(alarm, settings)
        return
    scrape = scrape_seconds(settings)
    if alarm.period_seconds % scrape:  # the scrape interval is the setting at fault
        raise InputError(f"alarm {alarm.id!r} ({alarm.defined_at}): its period of {alarm.period_seconds} s is not a "
                         f"whole number of scrape intervals (scrape.interval {scrape} s): each GPU would report "
                         f"{alarm.period_seconds / scrape:g} times per period, and the alarm's sums and counts "
                         f"would be off", where=setting_place(settings, ["scrape", "interval"]),
                         hint=_whole_scrapes_fix(alarm, settings, kind) if fixed else "")


def _whole_scrapes_fix(alarm: Alarm, settings: Settings, kind: str | None) -> str:
    """The fix of a period that is not a whole number of scrape intervals: the intervals that divide it and
    cloudwatch.period (else the settings refuse them) at which its period is not too short either (_fine_intervals: a
    filled alarm of 60 s at 60 s scrapes holds one), or the nearest longer period the interval divides that the checks
    take (_accepted_near), over the periods that keep its window (a bundled alarm's: copied into a folder of the user's
    own first)."""
    # a bundled alarm's: none at which the bundled data-missing rule's period (every bundled alarm's) holds under its
    # agent alarm's scrapes (at 90 s scrapes, cloudwatch.period 900, xid-error was told 150s, where generate warns of
    # the data-missing alarm: AL029)
    fits = _fine_intervals([alarm], settings, longest_interval(alarm.period_seconds, agent_alarm=_bundled(settings)),
                           alarm.period_seconds)
    window = alarm.period_seconds * alarm.evaluation_periods
    step = math.lcm(60, settings.scrape.seconds)
    first = alarm.period_seconds // step * step + step
    near = _accepted_near(alarm, settings, kind, window, f"which keep its window of {window} s",
                          range(first, first + step * _NEAR_TRIES, step))
    if near and settings.definitions.alarms is None:
        near = f"copy the bundled alarms into a folder of your own, named in definitions.alarms, and {near}"
    period = near or "give the alarm a period_seconds that scrape.interval divides"
    if not fits:
        return period
    return (f"pick a scrape.interval that divides {alarm.period_seconds} s and cloudwatch.period "
            f"({written_intervals(fits)}), or {period}")


def _fine_intervals(alarms: list[Alarm], settings: Settings, longest: int, period: int) -> list[int]:
    """The scrape intervals of `longest` seconds or less dividing both cloudwatch.period and `period` (settings'
    scrape_intervals of their common divisor) at which none of `alarms` is refused for its period (not a whole number
    of them, too short: _short_periods): told one that leads into another's refusal or warning, a user followed the
    stopped rule's fix at scrape.interval 5m to 150s, where the data-missing rule's agent alarm never fires."""
    return [interval for interval, unfit in _intervals_judged(alarms, settings, longest, period) if not unfit]


def _intervals_judged(alarms: list[Alarm], settings: Settings, longest: int, period: int) -> list[tuple[int, str]]:
    """Each scrape interval _fine_intervals weighs, with the id of the first of `alarms` refused for its period there
    ("" where none is)."""
    def unfit(interval: int) -> str:
        at = replace(settings, scrape=replace(settings.scrape, interval=f"{interval}s"))
        return next((alarm.id for alarm in alarms
                     if alarm.period_seconds % interval or _short_periods(alarm, at, None)), "")
    return [(n, unfit(n)) for n in scrape_intervals(math.gcd(settings.cloudwatch.period, period), longest)]


def _intervals_said(alarms: list[Alarm], settings: Settings, longest: int, period: int) -> str:
    """'give scrape.interval one of ...' (_fine_intervals), saying which alarm each interval left out would refuse or
    warn of; "" where none is fine."""
    judged = _intervals_judged(alarms, settings, longest, period)
    fine = [interval for interval, unfit in judged if not unfit]
    if not fine:
        return ""
    left = {}
    for interval, unfit in judged:
        if unfit:
            left.setdefault(unfit, []).append(interval)
    out = "".join(f"; not {written_intervals(intervals)}, too short for alarm {rule!r}"
                  for rule, intervals in left.items())
    return (f"give scrape.interval one of {written_intervals(fine)} ({longest} s or less, dividing cloudwatch.period "
            f"and the alarm's period{out})")


def _standard_period(alarm: Alarm, settings: Settings, kind: str | None) -> tuple[int, str]:
    """The least standard-resolution period an alarm refused for a period under 60 s is told, and what keeps its window
    at it (_keeping_window): the least whole minutes of whole scrape intervals (on the add-on 60 s, its collections
    dividing it), or a longer one where the alarm's scrapes ask for it (_short_periods), with that fix's numbers: 30 s x 3
    (90 s) is not told 60 s x 3 (180 s) but evaluation_periods=1 (60 s) or 2 (120 s). A data-missing rule's in no fewer
    periods than data_missing.fewest_periods (churn_problem refuses one period on classic: 30 s x 2 at 10 s scrapes was
    told 60 s x 1, then refused)."""
    least = 60 if addon_source(settings) else _least_period(settings, 1)
    fewest = data_missing.fewest_periods(settings) if _with_agent_alarm(alarm, settings) else 1
    keep = _keeping_window(alarm, least, _window_limit(kind, least), fewest,
                           data_missing.fewest_periods_why(settings) if fewest > 1 else "")
    fixes = [(least, keep)] + [(short.least, short.keep) for short in _short_periods(alarm, settings, kind)]
    return max(reversed(fixes), key=lambda fix: fix[0])


def _check_addon_period(alarm: Alarm, settings: Settings) -> None:
    """On the add-on, a period holds a whole number of the agent's DCGM collections, and the data-missing alarm's
    a whole number of its node collections too: it counts both."""
    for key, interval in (("addon_metrics_interval", node_interval(settings)),
                          ("addon_gpu_interval", gpu_interval(settings)))[0 if alarm.absent else 1:]:
        if alarm.period_seconds % interval:
            raise InputError(f"alarm {alarm.id!r} ({alarm.defined_at}): its period of {alarm.period_seconds} s is not "
                             f"a whole number of the add-on's collections (cloudwatch.{key} {interval} s): each GPU "
                             f"would report {alarm.period_seconds / interval:g} times per period, and the "
                             f"{'data-missing ' if alarm.absent else ''}alarm's counts would be off",
                             where=setting_place(settings, ["cloudwatch", key]),
                             hint=f"pick a cloudwatch.{key} that divides {alarm.period_seconds} s (e.g. 10, 30, 60)")


def cloudwatch_alarms(alarms: tuple[Alarm, ...], settings: Settings, catalog: Catalog,
                      made: dict[int, Maker] | None = None) -> list[dict[str, Any]]:
    """PutMetricAlarm keyword arguments, sorted by name, with the Region they belong to and the cluster they watch
    ("Cluster": absent for a fleet alarm, one per Region). Each cluster's alarms are built by its own exporter.mig
    (Settings.for_clusters: the clusters alike in it built together); a fleet alarm, which reads its Region's
    clusters together, by theirs (the strictest: GPUs may be split unless each says none). `made`, if given,
    receives what made each cluster's request, by the request's id: a Maker, whose request for any cluster is
    `made_request(maker, cluster)` (alarm_texts.AlarmTexts writes the requests of one maker in the clusters alike but
    in their names from one text)."""
    requests = []
    if settings.alarms.per_pod == "static":
        _static_pods_apart(settings)
    groups = settings.mig_groups()
    regions = sorted({c.region for c in settings.clusters})
    for alarm in alarms:
        parts = made_parts(alarm, catalog, settings)
        for held, clusters, region in parts:
            where = "" if len(groups) == 1 else f" in Region {region}" if region else \
                f" in cluster{'s' if len(clusters) > 1 else ''} {', '.join(c.name for c in clusters)}"
            # a fleet rule's Region judged in two alarms (_kinds_apart): the others' clusters, read by its other one
            apart = tuple(c.name for c in settings.clusters if c.region == region and c not in clusters) \
                if region is not None else ()
            other_made = any(_makes_alarms(alarm, catalog, other) for other, others, in_region in parts
                             if region is not None and in_region == region and others != clusters)
            requests += _rule_requests(alarm, held, catalog, clusters, region, len(regions), where, made, apart,
                                       other_made)
    for item in requests:
        _regional_actions(item["Request"], item["Region"])
        _within_limits(item, settings)
    _named_once(requests, alarms)
    return sorted(requests, key=lambda r: (r["Region"], r["Request"]["AlarmName"]))


# What makes one rule's request in a cluster (one request: a rule's form, a DaemonSet's data-missing alarm, a static
# pod's alarm), called with the cluster
Maker = Callable[[Cluster], dict[str, Any]]


def made_request(maker: Maker, cluster: Cluster) -> dict[str, Any]:
    """The request `maker` makes in `cluster`, as cloudwatch_alarms gives it."""
    return _regional_actions(maker(cluster), cluster.region)


def _regional_actions(request: dict[str, Any], region: str) -> dict[str, Any]:
    """The request without the SNS topics of other Regions than its own: PutMetricAlarm refuses them."""
    for key in ("AlarmActions", "OKActions"):
        request[key] = [arn for arn in request[key] if sns_region(arn) in (None, region)]
    return request


def made_parts(alarm: Alarm, catalog: Catalog, settings: Settings,
               per_pod: str | None = None) -> list[tuple[Settings, tuple[Cluster, ...], str | None]]:
    """(settings as they hold there, clusters, Region) of each part of the fleet a rule's CloudWatch alarms are made
    for: a fleet-scope rule's Regions (one alarm each), any other rule's clusters alike in exporter.mig
    (Settings.mig_groups: each built by its own). Where the clusters differ in exporter.mig, not where it would be a
    half alarm, if made anywhere (mig_left_out notes it, lint AL012); made nowhere, the first part is kept, refused
    as in a fleet alike. The one answer of where alarms are made, for generate and cost alike. `per_pod`:
    alarms.per_pod to assume (default: the settings')."""
    groups = settings.mig_groups()
    if alarm.scope == "fleet":
        parts = []
        for region in sorted({c.region for c in settings.clusters}):
            members = tuple(c for c in settings.clusters if c.region == region)
            kinds = _kinds_apart(alarm, settings, members)
            parts += [(settings.for_clusters(kind), kind, region) for kind in kinds]
    else:
        parts = [(held, clusters, None) for held, clusters in groups]
    if len(groups) > 1:
        kept = [part for part in parts if half_alarm(alarm, catalog, part[0], per_pod) is None
                and not reads_no_instance(alarm, catalog, part[0], per_pod)]
        parts = kept or parts[:1]
    return parts


def _makes_alarms(alarm: Alarm, catalog: Catalog, settings: Settings) -> bool:
    """Whether the rule makes an alarm with these settings: not where it is left out with a note (on the add-on, a
    condition per MIG instance, which it does not publish); one it refuses stops generate anyway."""
    try:
        return bool(alarm_forms(alarm, catalog, settings))
    except Unsupported:
        return True


def _kinds_apart(alarm: Alarm, settings: Settings, members: tuple[Cluster, ...]) -> list[tuple[Cluster, ...]]:
    """The clusters of a Region that a fleet-scope rule's alarms judge together: all of them, in one alarm; apart, the
    clusters whose GPUs may be split and those saying exporter.mig: none, in two, where CloudWatch evaluates a
    different condition in each (cloudwatch_condition: a `cloudwatch=` condition per MIG instance, the rule's own
    where no GPU is split). One Metrics Insights query per alarm reads one dimension set, and the per-MIG-instance
    set holds no whole GPU: the Region's one alarm saw no GPU of the clusters saying none, which its Prometheus rule
    watches."""
    split = tuple(c for c in members if mig_of(settings, c) != "none")
    whole = tuple(c for c in members if mig_of(settings, c) == "none")
    if not split or not whole or cloudwatch_condition(alarm, settings.for_clusters(split)) == \
            cloudwatch_condition(alarm, settings.for_clusters(whole)):
        return [members]
    return [split, whole]


def reads_no_instance(alarm: Alarm, catalog: Catalog, settings: Settings, per_pod: str | None = None) -> bool:
    """The rule's alarm reads MIG instances alone where the settings say no GPU is split (NoMigInstances): made in
    the clusters whose GPUs may be split, not in these (its Prometheus rule, which reads the series of a MIG instance,
    fires nowhere there either)."""
    try:
        alarm_forms(alarm, catalog, settings, per_pod)
    except NoMigInstances:
        return True
    except Unsupported:
        return False
    return False


def half_alarm(alarm: Alarm, catalog: Catalog, settings: Settings, per_pod: str | None = None) -> HalfAlarm | None:
    """Why the rule would be a half alarm with these settings (HalfAlarm: generate refuses it), None if it is not."""
    try:
        alarm_forms(alarm, catalog, settings, per_pod)
    except HalfAlarm as exc:
        return exc
    except Unsupported:
        return None
    return None


def _rule_requests(alarm: Alarm, settings: Settings, catalog: Catalog, clusters: tuple[Cluster, ...],
                   region: str | None, regions: int, where: str,
                   made: dict[int, Maker] | None = None, apart: tuple[str, ...] = (),
                   other_made: bool = True) -> list[dict[str, Any]]:
    """A rule's requests in `clusters` (a fleet-scope rule's: the clusters of `region`, of `regions` Regions, one
    alarm for them), built with the settings as they hold there (`where` says which, in a refusal, when the fleet's
    clusters differ); `made`: cloudwatch_alarms'. `apart`: the clusters of the Region the rule's other alarm there
    judges (_kinds_apart), left out of this one's query; the one of clusters saying exporter.mig: none is named with
    WHOLE_SUFFIX. `other_made`: that other alarm is made (not left out with a note), which the description names."""
    def each(makers: list[Maker]) -> list[dict[str, Any]]:
        """Each cluster's request of each maker, cluster by cluster."""
        out = []
        for cluster in clusters:
            for maker in makers:
                request = maker(cluster)
                if made is not None:
                    made[id(request)] = maker
                out.append({"Region": cluster.region, "Cluster": cluster.name, "Request": request})
        return out

    try:
        forms = alarm_forms(alarm, catalog, settings)
    except Unsupported as exc:  # (`where` for a half alarm: it is the clusters' exporter.mig that refuses it)
        raise InputError(f"alarm {alarm.id!r}{where if isinstance(exc, HalfAlarm) else ''}: {exc}",
                         where=alarm.defined_at,
                         hint=", or ".join(filter(None, (exc.fix, None if alarm.cloudwatch is not None else
                                                         "give the Alarm a `cloudwatch=` condition")))) \
            from None
    if not forms:
        return []  # left out, with a note (data_missing.left_out_reason, left_out_on_addon)
    check_periods(alarm, settings, forms[0].kind)
    if forms[0].kind == "unread":  # the GPU stopped reporting rule: each node's GPUs unread, per cluster
        return each([lambda c: _unread_request(alarm, settings, forms[0].plan, c)])
    requests = []
    if forms[0].kind == "math":  # metric-math alarms per cluster (data_missing: one per exporter DaemonSet on the
        # DCGM source), and a GROUP BY alarm per GPU
        by_index: dict[int, Maker] = {}  # one maker for a cluster's first DaemonSet, one for its second...
        for cluster in clusters:
            for index, request in enumerate(_data_missing_requests(alarm, settings, cluster)):
                if made is not None:
                    made[id(request)] = by_index.setdefault(
                        index, lambda c, index=index: _data_missing_requests(alarm, settings, c)[index])
                requests.append({"Region": cluster.region, "Cluster": cluster.name, "Request": request})
        for form in forms[1:]:
            requests += each([lambda c, plan_=form.plan: _second_request(alarm, catalog, settings, plan_, c)])
        if not addon_source(settings):  # the agent's own reads of kube-state-metrics (a crash loop)
            requests += each([lambda c: _agent_request(alarm, settings, c)])
        return requests
    # MIG GPUs unseen where GPUs may be split (lint AL012): the alarm's own description says so too, to whoever
    # reads it in the console
    unseen = MIG_UNSEEN if not addon_source(settings) and mig_unseen(alarm, catalog, settings, forms) else ""
    if forms[0].kind in ("static", "pod") and addon_source(settings):
        raise InputError(f"alarm {alarm.id!r}: alarms.per_pod: static needs each pod's owner name, "
                         "which the Container Insights add-on publishes with the pod (PodName)",
                         where=alarm.defined_at, hint="use alarms.per_pod: group_by with "
                         "cloudwatch.source: container-insights")
    if forms[0].kind == "static":
        static = _static_requests(alarm, catalog, settings, unseen)
        return each([lambda c, entry=entry: static(c, entry) for entry in settings.alarms.static_pods])
    if forms[0].kind == "pod":  # a Metrics Insights alarm per listed pod, each GPU it holds a contributor (and one
        # per listed pod on the MIG instances it holds)
        builders = [_insights_requests(alarm, catalog, settings, form, unseen) for form in forms]
        return each([lambda c, entry=entry, listed=listed: listed(c, pod=static_pod(entry))
                     for listed in builders for entry in settings.alarms.static_pods])
    whole = bool(apart) and settings.no_mig
    said = ""  # where the rule's two alarms in the Region judge its clusters apart, whose each judges
    if apart:
        other = regional_alarm_name(alarm_name(settings, None, alarm, whole=not whole), region, regions)
        others = f"{other} judges the others." if other_made else \
            f"no alarm of the rule judges the others ({', '.join(apart)}): generate's note says why."
        said = f"Judges the clusters of {region} saying exporter.mig: none ({', '.join(c.name for c in clusters)}) " \
               f"on the rule's own condition; {others}" if whole else \
               f"Judges the clusters of {region} but those saying exporter.mig: none ({', '.join(apart)}), which " \
               + (f"{other} judges." if other_made else "no alarm of the rule judges: generate's note says why.")
    builders = [_insights_requests(alarm, catalog, settings, form, unseen, whole, said) for form in forms]
    if region is not None:  # a fleet-scope rule: one alarm per Region (two where its clusters are judged apart)
        for form, insights_request in zip(forms, builders):
            request = insights_request(None, apart)
            request["AlarmName"] = regional_alarm_name(request["AlarmName"], region, regions)
            _query_fits(alarm, request, region, left_out_by_name(form.plan.dims, apart, whole))
            requests.append({"Region": region, "Request": request})
        return requests
    return each(builders)


def check_periods(alarm: Alarm, settings: Settings, kind: str | None, cloudwatch: bool = True) -> None:
    """Refuse an alarm whose periods CloudWatch (or, for the stopped rule, either backend) cannot judge as it says, in
    one message where several things are wrong, each refusal's fix one the checks then accept (tests/unit/
    test_alarm_fixes_followed.py follows them over a grid of alarms and settings). A stopped rule's datapoints_to_alarm
    (stopped_datapoints_problem) is told with whatever the checks refuse of the alarm without it: told alone, its fix
    led into their refusal. Then the window CloudWatch evaluates: a period's fix keeps the window (_keeping_window), so
    told first it led into this refusal (60 s x 240: 120 s x 120, 4 hours); its fix is numbers the period checks take
    (_accepted_near). Then the periods: the stopped rule's hold enough scrapes first (the period its hint asks for fits
    both backends), the others' after the periods CloudWatch can evaluate; a data-missing rule of too few periods on
    classic (churn_problem, whatever the interval) before its interval's refusal, whose intervals followed led into it
    (60 s x 1 at 150 s scrapes: 'pick ... 10s, ..., 60s', each refused). Without `cloudwatch` (a Prometheus rule
    alone), the stopped rule's datapoints and the periods too short for the scrape interval (_check_short_periods).
    `kind`: the rule's first CloudWatch alarm's (first_kind), None where it makes none, whose window then bounds the
    spans its fixes name (_window_limit)."""
    problem = stopped_datapoints_problem(alarm)
    if problem:
        later = _refusal(replace(alarm, datapoints_to_alarm=None), settings, kind, cloudwatch)
        needed = alarm.datapoints_to_alarm
        raise InputError(f"alarm {alarm.id!r}: {problem}" + (f"; and {_refused_what(later, alarm)}" if later else ""),
                         where=alarm.defined_at,
                         hint=f"drop datapoints_to_alarm, and {later.hint}" if later else
                         f"drop datapoints_to_alarm (for a window of {counted(needed, 'period')} write "
                         f"evaluation_periods={needed})")
    refused = _refusal(alarm, settings, kind, cloudwatch)
    if refused:
        raise refused


def stopped_datapoints_problem(alarm: Alarm) -> str:
    """Why a stopped rule's datapoints_to_alarm cannot be built ("" where it can): the rule fires for a GPU every scrape
    over its window read unread, each of its periods, so its CloudWatch alarm is built N of N."""
    if not alarm.stopped_partly:
        return ""
    return (f"stopped=True fires for a GPU that every scrape over its window read unread, each of its "
            f"{counted(alarm.evaluation_periods, 'period')}: datapoints_to_alarm {alarm.datapoints_to_alarm} would "
            f"not be built")


def _window_limit(kind: str | None, period: int) -> int:
    """The longest window (period x evaluation periods) of `period`s CloudWatch evaluates for a rule whose first alarm
    is of `kind` (first_kind): PutMetricAlarm's limit, and for an alarm of Metrics Insights the 3 hours it reads (not
    for a static pod's alarm, of metric math); none where the rule makes no CloudWatch alarm (Prometheus alone judges
    it)."""
    if kind is None:
        return sys.maxsize
    limit = evaluation_limit(period)[0]
    return limit if kind == "static" else min(limit, ALARM_WINDOW_SECONDS)


def _refusal(alarm: Alarm, settings: Settings, kind: str | None, cloudwatch: bool = True,
             fixed: bool = True) -> InputError | None:
    """The first refusal of the window and period checks (check_periods' order), None where none refuses; with its
    fix where `fixed` (not where _accepted_near tries alarms against the checks: their refusals' fixes are not read,
    and not searched for in turn)."""
    def short(alarm: Alarm, settings: Settings, kind: str | None, fixed: bool) -> None:
        _check_short_periods(alarm, settings, kind, cloudwatch, fixed)
    ordered = (short, _check_period) if alarm.stopped or churn_problem(alarm, settings) else (_check_period, short)
    try:
        for check in (_check_window, *ordered) if cloudwatch else (short,):
            check(alarm, settings, kind, fixed)
    except InputError as exc:
        return exc
    return None


def _refused_what(refused: InputError, alarm: Alarm) -> str:
    """A refusal's what without its `alarm 'id'` (and where) opening, to be told after another of the same alarm."""
    return re.sub(rf"^alarm {re.escape(repr(alarm.id))}(?: \([^)]*\))?: ", "", refused.what)


def _check_window(alarm: Alarm, settings: Settings, kind: str | None, fixed: bool = True) -> None:
    """The alarm's window (period x evaluation periods) is one CloudWatch evaluates: a Metrics Insights alarm's the
    latest 3 hours (a static pod's alarm, of metric math, is not one), and any alarm's PutMetricAlarm's limit. The
    fix (where `fixed`) names the alarm's own fields, with numbers the period checks take too (_accepted_near)."""
    window = alarm.period_seconds * alarm.evaluation_periods
    limit = _window_limit(kind, alarm.period_seconds)
    if window <= limit:
        return
    said = "" if limit == ALARM_WINDOW_SECONDS else evaluation_limit(alarm.period_seconds)[1]
    spanned = (f"{counted(alarm.evaluation_periods, 'period')} of {alarm.period_seconds} s "
               f"span{'s' if alarm.evaluation_periods == 1 else ''} {_in_hours(window)}")
    what = (f"CloudWatch evaluates an alarm over {said} at most (PutMetricAlarm refuses more)" if said else
            "CloudWatch evaluates a Metrics Insights alarm over the latest 3 hours of data only")
    raise InputError(f"alarm {alarm.id!r}: {spanned}; {what}", where=alarm.defined_at,
                     hint=_accepted_near(alarm, settings, kind, limit, f"within {said or 'the 3 hours'}") if fixed
                     else "")


def _in_hours(seconds: int) -> str:
    """A span of over an hour in whole hours, minutes and seconds ('3 hours 20 minutes', not '3.33333 hours')."""
    hours, left = divmod(seconds, 3600)
    minutes, seconds = divmod(left, 60)
    return " ".join(counted(n, unit) for n, unit in ((hours, "hour"), (minutes, "minute"), (seconds, "second")) if n)


# The most periods _accepted_near tries
_NEAR_TRIES = 200


def _accepted_near(alarm: Alarm, settings: Settings, kind: str | None, window: int, said: str,
                   periods: Iterable[int] = ()) -> str:
    """'give the alarm ...': the alarm's own fields with numbers check_periods accepts, spanning `window` s (or the
    nearest spans to it, no longer than CloudWatch evaluates): at its own period first (else at `periods`, else at
    whole minutes above it, then below it), over the whole periods spanning `window` or the two nearest (at least the
    data-missing rule's fewest, data_missing.fewest_periods), its datapoints_to_alarm of the same share (_periods_of).
    `said`: what the span is kept within or to."""
    own = alarm.period_seconds
    fewest = data_missing.fewest_periods(settings) if _with_agent_alarm(alarm, settings) else 1
    tried = list(periods) or [own, *range(own - own % 60 + 60, window + 1, 60),
                              *range(min(own, window) // 60 * 60, 59, -60)]
    first_refused = None
    for period in [p for p in dict.fromkeys(tried) if p > 0][:_NEAR_TRIES]:
        whole, left = divmod(window, period)
        limit = _window_limit(kind, period)
        for count in dict.fromkeys(max(count, fewest) for count in (whole, whole + bool(left))):
            if count * period > limit:
                continue
            candidate = replace(alarm, period_seconds=period, evaluation_periods=count,
                                datapoints_to_alarm=_scaled(alarm, count))
            refused = _refusal(candidate, settings, kind, fixed=False)
            if refused is None:
                changed = f"period_seconds={period} and " if period != own else ""
                why = (f"; at {counted(first_refused[0].evaluation_periods, 'period')} of "
                       f"{first_refused[0].period_seconds} s it would be refused: "
                       f"{re.split(r': |; |, and ', _refused_what(first_refused[1], alarm))[0]}"
                       if first_refused and period != own else "")
                span = said if count * period == window else (
                    f"no whole number of {period} s periods spanning {window} s: say that span in its description")
                return f"give the alarm {changed}{_periods_of(alarm, count)} ({count * period} s), {span}{why}"
            first_refused = first_refused or (candidate, refused)
    return (f"give the alarm a period_seconds of whole minutes and whole scrape intervals, and evaluation_periods "
            f"spanning about {window} s")


EXPRESSION_LENGTH = 2048  # PutMetricAlarm: a MetricDataQuery's Expression holds at most 2,048 characters


def _query_fits(alarm: Alarm, request: dict[str, Any], region: str, left_out: tuple[str, ...]) -> None:
    """Refuse a fleet alarm whose query PutMetricAlarm would refuse: a query leaving out, one `!=` each, the clusters
    of its Region the rule's other alarm there judges (`left_out`: left_out_by_name) grows with them."""
    longest = max((len(str(query.get("Expression", ""))) for query in request.get("Metrics", [])), default=0)
    if longest <= EXPRESSION_LENGTH:
        return
    named = (f", which leaves out by name, one `!=` each, the {len(left_out)} clusters of {region} the rule's other "
             f"alarm there judges (their exporter.mig differs, and their agents may publish this query's set too)") \
        if left_out else ""
    raise InputError(f"alarm {alarm.id!r}: its CloudWatch alarm {request['AlarmName']} would run a query of "
                     f"{longest:,} characters{named}; CloudWatch takes at most {EXPRESSION_LENGTH:,} and refuses "
                     f"the alarm", where=alarm.defined_at,
                     hint="give the rule scope='cluster' (one alarm per cluster, each reading its own clusters' "
                          "GPUs), or put fewer clusters of the other kind in that Region")


def _static_pods_apart(settings: Settings) -> None:
    """Refuse two alarms.static_pods entries whose alarms would share a name: a static alarm's name ends in
    `<namespace>-<pod>`, so `ml/a-b` and `ml-a/b` (or one entry written twice) name one alarm, and one
    pod's alarm would overwrite the other's."""
    seen: dict[str, str] = {}
    for index, entry in enumerate(settings.alarms.static_pods):
        suffix = "-".join(static_pod(entry))
        if suffix in seen:
            same = seen[suffix] == entry
            raise InputError(f"alarms.static_pods lists {entry!r} " + ("twice" if same else
                             f"and {seen[suffix]!r}, whose alarms would have one name (ending in {suffix!r}): "
                             "one would overwrite the other"),
                             where=setting_place(settings, ["alarms", "static_pods", index]),
                             hint=f"remove the second {entry!r}" if same else
                                  "rename one of the two namespaces or pods in Kubernetes so that "
                                  "<namespace>-<pod> differs (the alarm name joins them with '-') and list the new "
                                  "name here, or use alarms.per_pod: group_by (one alarm watches every pod)")
        seen[suffix] = entry


def _named_once(requests: list[dict[str, Any]], alarms: tuple[Alarm, ...]) -> None:
    """Refuse two alarms of one name in one Region: PutMetricAlarm would overwrite one with the other. Names
    join their parts with "-", so a rule `x-mig` meets rule x's MIG alarm, and cluster `a-b` with rule `c`
    meets cluster `a` with rule `b-c`."""
    made_by: dict[tuple[str, str], str] = {}
    for item in requests:
        rule = next(t["Value"] for t in item["Request"]["Tags"] if t["Key"] == ALARM_RULE_TAG)
        key = (item["Region"], item["Request"]["AlarmName"])
        if key in made_by:
            alarm = next((a for a in alarms if a.id == rule), None)
            raise InputError(f"CloudWatch alarm {key[1]!r} ({key[0]}) is made twice, by alarm {made_by[key]!r} and "
                             f"alarm {rule!r}: one would overwrite the other",
                             where=alarm.defined_at if alarm else None,
                             hint="rename one alarm, cluster or alarms.name_prefix so the names differ")
        made_by[key] = rule


ACTIONS_PER_ALARM = 5  # PutMetricAlarm: AlarmActions and OKActions hold at most 5 each
ALARM_NAME_LENGTH = 255


def _within_limits(item: dict[str, Any], settings: Settings) -> None:
    """A request PutMetricAlarm would refuse is refused here, naming the setting that made it."""
    request, region = item["Request"], item["Region"]
    actions = request["AlarmActions"]
    if len(actions) > ACTIONS_PER_ALARM:
        severity = next(s for s in ("critical", "warning") if set(actions) <= set(getattr(settings.alarms.actions, s)))
        raise InputError(f"alarms.actions.{severity} lists {len(actions)} actions for alarms in {region}; "
                         f"CloudWatch takes at most {ACTIONS_PER_ALARM} per alarm and refuses the alarm "
                         f"({request['AlarmName']})", where=setting_place(settings, ["alarms", "actions", severity]),
                         hint=f"keep at most {ACTIONS_PER_ALARM} topics of {region} for {severity} alarms (one SNS "
                              f"topic can fan out to many subscribers)")
    name = request["AlarmName"]
    if len(name) > ALARM_NAME_LENGTH:
        static = settings.alarms.per_pod == "static" and any(name.endswith(pod.replace("/", "-"))
                                                             for pod in settings.alarms.static_pods)
        setting = "alarms.static_pods" if static else "alarms.name_prefix"
        raise InputError(f"alarm name {name[:60]}... is {len(name)} characters; CloudWatch takes at most "
                         f"{ALARM_NAME_LENGTH} and refuses the alarm",
                         where=setting_place(settings, setting.split(".")),
                         hint="use alarms.per_pod: group_by (one alarm watches every pod)" if static else
                              "use a shorter alarms.name_prefix or cluster name")


def sns_region(arn: str) -> str | None:
    """The Region of an SNS topic ARN (arn:partition:sns:region:account:name); None for any other action."""
    parts = arn.split(":")
    return parts[3] if len(parts) == 6 and parts[0] == "arn" and parts[2] == "sns" else None


def foreign_topics(settings: Settings) -> list[tuple[str, str, list[str]]]:
    """(Region, severity, topics) where alarms.actions lists topics for a severity but none of that Region:
    those alarms notify no one (an alarm notifies only SNS topics of its own Region)."""
    found = []
    for region in sorted({c.region for c in settings.clusters}):
        for severity in ("critical", "warning"):
            topics = list(getattr(settings.alarms.actions, severity))
            if topics and all(sns_region(arn) not in (None, region) for arn in topics):
                found.append((region, severity, topics))
    return found


def silent_alarms(alarms: Iterable[AlarmRequest]) -> list[str]:
    """Names of alarms that notify no one (no AlarmActions)."""
    return [item.request["AlarmName"] for item in alarms if not item.request.get("AlarmActions")]


def never_firing_fix(request: dict[str, Any], settings: Settings, alarms: Iterable[Alarm] = (),
                     catalog: Catalog | None = None) -> str:
    """What to do of an alarm never_firing finds, by the scrapes its period holds at scrape.interval `interval`: a
    data-missing alarm counts under half of them, none at two or fewer, so at 60 s scrapes a 120 s period needs a
    shorter interval (not the bundled 300 s period's 100 s) dividing it and cloudwatch.period (10 s to 30 s) at which
    the rule's period is not too short either (_fine_intervals), or 180 s periods in as many as keep the window of the
    rule of `alarms` that made it ('180 s or more' multiplied it: 120 s x 3 at 180 s x 3), their spans within what its
    first alarm evaluates (first_kind, from `catalog`: the counters `alarms` were read with); without the rule (a build
    read back), as many as keep its window."""
    interval = settings.scrape.seconds
    given = [m.get("Period") or m.get("MetricStat", {}).get("Period") for m in request.get("Metrics", [])]
    period = request.get("Period") or next((p for p in given if isinstance(p, int)), 0)
    if not period or period // interval >= AGENT_SCRAPES:
        return "set missing_data='breaching', or a threshold a period with a reading can be under"
    rule = next((tag.get("Value") for tag in request.get("Tags", []) if tag.get("Key") == ALARM_RULE_TAG), None)
    alarm = next((alarm for alarm in alarms if alarm.id == rule), None)
    least = _least_period(settings, AGENT_SCRAPES)
    keep = (_keeping_window(alarm, least, _window_limit(first_kind(alarm, catalog, settings), least),
                            data_missing.fewest_periods(settings),
                            data_missing.fewest_periods_why(settings)) if alarm else
            f" in as many periods as keep its window of {period * request.get('EvaluationPeriods', 1)} s")
    intervals = _intervals_said([alarm] if alarm else [], settings, longest_interval(period, agent_alarm=True),
                                period)
    return (f"a data-missing alarm counts under half of a period's scrapes, none at {period // interval} a period "
            f"({period} s at scrape.interval {interval} s): {f'{intervals}, or ' if intervals else ''}"
            f"(an alarm of your own) "
            f"period_seconds={least}{keep}")


def never_firing(request: dict[str, Any]) -> bool:
    """Whether an alarm counts readings (a Metrics Insights COUNT, a SampleCount) below 1 without breaching missing
    data: it can never be in ALARM, since a period without a reading has no datapoint (not a count of 0) and one with
    a reading counts 1 or more (lint AL028; the data-missing alarms' under half a period's scrapes at two a period)."""
    operator, threshold = request.get("ComparisonOperator"), request.get("Threshold")
    if request.get("TreatMissingData", "missing") == "breaching" or not isinstance(threshold, (int, float)) \
            or not (operator == "LessThanThreshold" and threshold <= 1
                    or operator == "LessThanOrEqualToThreshold" and threshold < 1):
        return False
    returned = [m for m in request.get("Metrics", []) if m.get("ReturnData", True)]
    if request.get("Statistic") == "SampleCount" or (
            len(returned) == 1 and returned[0].get("MetricStat", {}).get("Stat") == "SampleCount"):
        return True
    return len(returned) == 1 and re.match(r"\s*SELECT\s+COUNT\s*\(", str(returned[0].get("Expression", "")),
                                           re.I) is not None


def never_firing_unsaid(requests: Iterable[dict[str, Any]], alarms: Iterable[Alarm],
                        settings: Settings) -> list[dict[str, Any]]:
    """The requests never_firing finds (lint AL028) but those of a bundled rule whose short period short_periods says
    (lint AL029): the data-missing rule's agent alarm (on agent.pipeline: classic its per-GPU alarm too) at a period
    under three scrapes, whose warning says that they never fire, why and what to do. Said once, under AL029."""
    said = {alarm.id for alarm in alarms if _bundled(settings) and _short_periods(alarm, settings, None)}
    return [request for request in requests if never_firing(request) and not said & {
        tag.get("Value") for tag in request.get("Tags", []) if tag.get("Key") == ALARM_RULE_TAG}]


def insights_alarm_counts(alarms: Iterable[AlarmRequest]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in alarms:
        if any(str(m.get("Expression", "")).lstrip().upper().startswith("SELECT")  # not a metric-math alarm
               for m in item.request.get("Metrics", [])):
            counts[item.region] = counts.get(item.region, 0) + 1
    return counts


# --- Prometheus ---------------------------------------------------------------------------

def _duration(seconds: int) -> str:
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"


def prometheus_expression(alarm: Alarm, catalog: Catalog, settings: Settings,
                          value: Callable[[str | None, int], str] | None = None) -> str:
    """The rule's whole condition in one expression. `value(kind, period)` writes a period's statistic
    (period_value by default; recorded_value reads it from the rule's recording rule instead)."""
    condition = cloudwatch_condition(alarm, settings)  # one situation for both forms of the rule
    window = _duration(alarm.period_seconds)
    query = _alert_query(alarm, settings)
    if alarm.absent:  # the same situations as the CloudWatch form, judged per period as it judges them (an exporter
        # target's scrapes: no_data_rule, over one window)
        def branches(part: str | None = None) -> Callable[[int], str]:
            return lambda period: data_missing.prometheus_expression(
                query.metric, settings, window, _duration(alarm.period_seconds * period) if period else None, part,
                _duration(alarm.period_seconds * alarm.evaluation_periods))
        if alarm.evaluation_periods > 1:
            # each DaemonSet's periods joined (or counted, M of N) on the DaemonSet whatever made each one breach (its
            # pod gone, then the DaemonSet deleted) and whichever kube-state-metrics pod counted it, as its CloudWatch
            # alarm judges them
            # no exporter DaemonSet labelled in the periods that alarm: branch 1's alert alone (a named DaemonSet's
            # counts gone then are judged where its cluster may not name it: data_missing.Gone)
            joined = _of_periods(alarm, branches(data_missing.EACH_DAEMONSET), data_missing.daemonset_labels(settings))
            joined = (f"({joined} unless {data_missing.cluster_join(settings)} "
                      f"{_of_periods(alarm, branches(data_missing.NONE_FOUND))})")
            judged = f"{_of_periods(alarm, branches(data_missing.NONE_FOUND))} or {joined}"
        else:
            judged = _of_periods(alarm, branches())
        # kube-state-metrics' target answering under half its scrapes: over the agent alarm's periods, all of them, as
        # it judges each kube-state-metrics pod's reads (data_missing.AGENT_PERIODS)
        return f"{judged} or {_of_periods(_agent_periods(alarm), branches(data_missing.KSM_READS))}"
    if alarm.stopped:  # each GPU that stopped while its node's other GPUs report (no CloudWatch twin: lint AL027);
        # as generated, a recording rule keeps each one past the hour (stopped_rules)
        return stopped_gpus.expression(*_stopped_fields(alarm, catalog, settings), _stopped_keys(alarm, settings),
                                       rule_step(settings))
    # A gauge over the period (its max, min or mean), as CloudWatch takes it from the period's observations;
    # a pod is judged on each MIG instance it holds, as CloudWatch sees them (one series per instance).
    # A pod's whole GPUs and its MIG instances are judged apart, as CloudWatch's two alarms judge them.
    kinds = _kinds(alarm, catalog, settings)

    def of_kind(kind: str | None) -> Condition:  # whole GPUs beside MIG instances: the rule's own condition
        return alarm.condition if kind == OWN_WHOLE else condition
    read = value or (lambda kind, period: period_value(alarm, catalog, settings, period, kind))
    if range_judged(alarm):
        extra = range_extra(alarm, settings)
        def signs(kind: str | None) -> tuple:  # (period_sign(k), each period's flag and the naming it leaves to the
            # periods' sum, if any)
            if value:
                return None, None, None
            unnamed = _unnamed_flags(alarm, catalog, settings, of_kind(kind), kind, alarm.evaluation_periods + extra)
            return (period_signs(alarm, catalog, settings, of_kind(kind), kind), *(unnamed or (None, None)))
        judged = " or ".join(_of_range(alarm, lambda period, kind=kind: read(kind, period), of_kind(kind),
                                       None if value else (lambda periods, kind=kind:
                                                           period_values(alarm, catalog, settings, periods, kind)),
                                       extra, *signs(kind))
                             for kind in kinds)
        if alarm.missing_data == "breaching":
            periods = range(alarm.evaluation_periods + extra)
            return f"{judged} or {_nothing(alarm, settings, [read(kind, k) for kind in kinds for k in periods])}"
        return judged
    return " or ".join(_of_periods(alarm, lambda period, kind=kind: f"{read(kind, period)} {of_kind(kind).comparison} "
                                                                    f"{number(of_kind(kind).threshold)}")
                       for kind in kinds)


def _nothing(alarm: Alarm, settings: Settings, values: list[str]) -> str:
    """A `breaching` alarm with no datapoint in its evaluation range (`values`: each period's statistic there): every
    period breaches, so CloudWatch's alarm, a GROUP BY one with no contributor left too, is in ALARM (tests/support/
    cloudwatch_eval judges it so). One series per CloudWatch alarm: each cluster's (its prometheus_label) on a
    Prometheus holding several (each Region's for a fleet alarm there, one alarm per Region, whether the rule judges
    the Regions apart, judged_regions, or each cluster, clusters_apart), one for the rule's own Prometheus otherwise."""
    keys = group_keys(_alert_query(alarm, settings).by)
    cluster, regions = label_name("cluster", settings.labels), shared_regions(settings)
    if alarm.scope == "cluster" and "cluster" in keys and settings.shared_prometheus:
        label, names = cluster, [c.prometheus_label for c in settings.clusters]
    elif alarm.scope == "fleet" and regions:  # an alarm per Region
        label, names = REGION_LABEL, [region for region, _ in regions]
        if not judged_regions(alarm, settings):  # judged by cluster (clusters_apart): each its Region written in
            values = [by_region(value, cluster, regions) for value in values]
    else:
        return f"(vector(1) unless on() group({' or '.join(values)}))"
    return f"({_one_series_each(label, names)} unless on({label}) group by ({label}) ({' or '.join(values)}))"


def _one_series_each(label: str, names: Iterable[str]) -> str:
    """One series of value 1 per name, carrying it as `label`."""
    each = " or ".join(f'label_replace(vector(1), "{label}", {quoted(name.replace("$", "$$"))}, "", "")'
                       for name in names)
    return f"({each})"


def of_settings_clusters(expr: str, settings: Settings) -> str:
    """The data-missing rule's series (each carrying its cluster) of the settings' clusters alone on a Prometheus
    holding several: another team's cluster there, its exporter down or its DaemonSet short of pods, is none of the
    settings' (its branches read kube-state-metrics' and the scrapes' series of every cluster, each per cluster)."""
    if not settings.shared_prometheus:
        return expr
    cluster = label_name("cluster", settings.labels)
    return f"(({expr}) and on({cluster}) {_one_series_each(cluster, (c.prometheus_label for c in settings.clusters))})"


def _stopped_fields(alarm: Alarm, catalog: Catalog, settings: Settings) -> tuple:
    """A stopped alarm's (fields, settings, period, periods): its presence field and its MIG stand-in
    (stopped_gpus.fields_read)."""
    check_periods(alarm, settings, first_kind(alarm, catalog, settings), cloudwatch=False)
    fields = stopped_gpus.fields_read(catalog, settings, _alert_query(alarm, settings).metric)
    return fields, settings, alarm.period_seconds, alarm.evaluation_periods


@dataclass(frozen=True)
class _ShortPeriod:
    """One way an alarm's period is too short for the scrape interval: why, the scrapes its period (`periods`=1) or
    its window (`periods`: evaluation_periods) must hold, the least period of whole minutes that holds them, the
    evaluation periods that keep the alarm's window at it (`keep`, _keeping_window) and what the refusal's hint says
    after scraping more often (`other`), and whether scraping more often does (`scraping`)."""
    why: str
    scrapes: int
    periods: int
    least: int
    other: str = ""
    keep: str = ""
    per_period: int = 1  # the scrapes each period must hold beside: the data-missing agent alarm's (AGENT_SCRAPES)
    scraping: bool = True  # whether scraping more often mends it (not the data-missing rule's one period: churn_problem)


def _least_period(settings: Settings, scrapes: int, periods: int = 1) -> int:
    """The shortest period of whole minutes (the agent's standard resolution) and whole scrape intervals whose
    `periods` of them hold `scrapes` scrape intervals."""
    interval, period = settings.scrape.seconds, 60
    while period * periods < scrapes * interval or period % interval:
        period += 60
    return period


def _longer_intervals(alarm: Alarm, short: _ShortPeriod, settings: Settings, alarms: list[Alarm]) -> str:
    """`give scrape.interval ...`: the intervals that fit `short.scrapes` of them in the alarm's period or window
    (`short.per_period` in its period), each of which the settings take (dividing cloudwatch.period), the alarm does
    (dividing its period) and `alarms` do too (_fine_intervals: each bundled alarm then neither refused nor warned of);
    'or less' of the longest named 120 s, 90 s, 45 s at 5m, which the settings refuse. "" where none does."""
    longest = min(alarm.period_seconds * short.periods // short.scrapes, alarm.period_seconds // short.per_period)
    return _intervals_said(alarms, settings, longest, alarm.period_seconds)


# The fewest scrapes a period of an alarm judged over several periods with its missing ones filled holds (filled_problem)
FILLED_SCRAPES_PER_PERIOD = 2


def filled_problem(alarm: Alarm, interval: int) -> str:
    """Why `alarm` cannot be judged on CloudWatch at scrapes every `interval` seconds ("" where it can): judged over
    several periods with its missing periods filled (TreatMissingData notBreaching or breaching), a period under two
    scrape intervals holds no scrape whenever an exporter's scrapes land at its edge a little early then a little late
    (and two in the next), and each such period is filled: not breaching, a GPU idle all along is out of ALARM at
    evaluations whose range holds two of them (60 s periods x 6 at 60 s scrapes: in ALARM at 36 of the 55 minutes it
    should be, over an evaluation range one period longer than the alarm's); breaching, one not breaching reaches the
    datapoints it needs. An alarm of one period is judged on its latest datapoint, which any two periods running hold;
    missing data not filled (missing, ignore) is judged so too. The stopped rule (stopped_gpus.period_problem) and the
    data-missing rule (window_problem) are judged apart."""
    if alarm.stopped or alarm.absent or alarm.evaluation_periods < 2 or \
            alarm.missing_data not in ("notBreaching", "breaching") or \
            alarm.period_seconds >= FILLED_SCRAPES_PER_PERIOD * interval:
        return ""
    filled = "not breaching" if alarm.missing_data == "notBreaching" else "breaching"
    return (f"its period of {alarm.period_seconds} s is under {FILLED_SCRAPES_PER_PERIOD} scrape intervals "
            f"(scrape.interval {interval} s), and it is judged over {alarm.evaluation_periods} periods with missing "
            f"data {filled} (missing_data={alarm.missing_data!r}): a period that short holds no scrape whenever an "
            f"exporter's scrapes land at its edge a little early then a little late, and its CloudWatch alarm reads "
            f"that period as {filled}, so it "
            + ("misses the situation it names at such evaluations" if alarm.missing_data == "notBreaching" else
               "fires where the situation it names does not hold"))


# The fewest scrape intervals the data-missing rule's window holds (window_problem): over n, a window ending at a node's
# scrapes' edge holds n - 1 of them, and a hung exporter's n - 1 failed scrapes are more than half of n from n = 3 on
WINDOW_SCRAPES = 3


def window_problem(alarm: Alarm, settings: Settings) -> str:
    """Why the data-missing rule's per-node count (agent.pipeline: otel; branch 4 of its Prometheus rule alike) cannot
    judge its window at settings' scrape interval ("" where it can): over a window of n scrape intervals it fires on more
    than n / 2 of a node's scrapes bringing no GPU data, and a window whose end falls at the node's scrapes' edge holds
    n - 1 of them, which for n = 2 is not more than 1: measured with scrapes within 0.3 s of the minute, a user's rule
    of 60 s periods x 2 at 60 s scrapes (a 120 s window) missed an exporter hung for 40 minutes at 10 of the 39 minutes
    it fires with scrapes mid-minute (at 120 s periods x 2, a 240 s window, at 38 of 39, the first minute of the hang
    one scrape late); the bundled rule at scrape.interval 5m (a 600 s window of two) at 34 of 35."""
    if not _with_agent_alarm(alarm, settings) or not data_missing.per_node(settings):
        return ""
    interval = settings.scrape.seconds
    window = data_missing.window_seconds(alarm.period_seconds, alarm.evaluation_periods)
    if window >= WINDOW_SCRAPES * interval:
        return ""
    return (f"its window of {window} s ({counted(alarm.evaluation_periods, 'period')} of {alarm.period_seconds} s) "
            f"is under "
            f"{WINDOW_SCRAPES} scrape intervals (scrape.interval {interval} s): its per-node alarm fires on more than "
            f"{data_missing.no_data_threshold(settings, window):g} of a node's scrapes over the window bringing no GPU "
            f"data, and a window ending at the edge of a node's scrapes holds one fewer, so a hung exporter is missed "
            f"at such evaluations")


def _with_agent_alarm(alarm: Alarm, settings: Settings) -> bool:
    """Whether `alarm` is a data-missing rule built with its agent alarm: off the add-on, and not left out (nothing
    telling that GPUs are expected: alarms.expected_gpus none), where its periods judge nothing."""
    return alarm.absent and not addon_source(settings) and not data_missing.left_out_reason(settings)


def agent_problem(alarm: Alarm, settings: Settings) -> str:
    """Why the data-missing rule's agent alarm (and on agent.pipeline: classic its per-GPU alarm) can never fire at
    settings' scrape interval ("" where it can): each counts a period's readings under half its scrapes, and at a
    period of two scrapes or one that is under 1, which a period with a reading never is (one without has no
    datapoint, not breaching): 120 s periods x 3 at 60 s scrapes built alarms that never fire (lint AL028), their
    window long enough."""
    interval = settings.scrape.seconds
    if not _with_agent_alarm(alarm, settings) or alarm.period_seconds >= AGENT_SCRAPES * interval:
        return ""
    one, under = data_missing.per_node(settings), data_missing.agent_threshold(settings, alarm.period_seconds)
    alarms = ("its alarm on the agent's reads of kube-state-metrics fires" if one else
              "its alarms on the agent's reads of kube-state-metrics and on each GPU (agent.pipeline: classic) fire")
    return (f"its period of {alarm.period_seconds} s is under {AGENT_SCRAPES} scrape intervals (scrape.interval "
            f"{interval} s): {alarms} on a period holding under {counted(under, 'reading')} of its "
            f"{counted(alarm.period_seconds // interval, 'scrape')}, which no period with a reading does (one without "
            f"has no "
            f"datapoint, not breaching), so {'it' if one else 'they'} can never fire{_cluster_problem(alarm, interval)}")


def churn_problem(alarm: Alarm, settings: Settings) -> str:
    """Why the data-missing rule is judged over too few periods ("" where it is not): on agent.pipeline: classic its
    per-GPU alarm over one period fires for a GPU node added or removed (data_missing.fewest_periods, node_churn: the
    node's GPUs are short of observations in the period it came or left, and a removed node's short datapoint stays the
    latest), measured through the agent model at 300 s x 1, at 30 s and 60 s scrapes, in ALARM 12 minutes after a node
    removed and 2 after one added (over 2 periods at none). Scraping more often does not mend it."""
    fewest = data_missing.fewest_periods(settings)
    if not _with_agent_alarm(alarm, settings) or alarm.evaluation_periods >= fewest:
        return ""
    return (f"it is judged over one period (evaluation_periods={alarm.evaluation_periods}), and on agent.pipeline: "
            f"classic its alarm per GPU fires over one period for a GPU node added or removed: the node's GPUs are "
            f"short of observations in the period it came or left, and a removed node's short datapoint stays the "
            f"latest, so the alarm stays in ALARM minutes after (over {fewest} periods running it fires for neither)")


def _cluster_problem(alarm: Alarm, interval: int) -> str:
    """What the data-missing rule's cluster alarm does at a period under two scrape intervals ("" at a longer one): such
    a period holds no scrape whenever the exporters' scrapes land at its edge a little early then a little late, and
    the alarm reads it as no GPU reporting, so next to a period whose scrapes all failed it fires though no exporter
    stopped: the bundled rule at scrape.interval 5m, scrapes within 0.3 s of the minute, every exporter failing every
    other scrape, was in ALARM at 3 of the 71 minutes from 50 to 120 (51, 91, 111), never with scrapes 37 s past it
    (tests/unit/test_data_missing_short_period.py)."""
    if alarm.period_seconds >= FILLED_SCRAPES_PER_PERIOD * interval:
        return ""
    return (f"; and its period holds no scrape whenever the exporters' scrapes land at its edge a little early then a "
            f"little late, which its cluster alarm reads as no GPU reporting, so next to a period whose scrapes all "
            f"failed (every exporter failing every other scrape) it fires though no exporter stopped")


def _short_periods(alarm: Alarm, settings: Settings, kind: str | None) -> list[_ShortPeriod]:
    """Each way `alarm`'s period is too short for settings' scrape interval: a stopped rule's period on either backend
    (stopped_gpus.period_problem), and off the add-on a several-period alarm with missing data filled (filled_problem)
    and the data-missing rule's window (window_problem), period (agent_problem) and periods (churn_problem), said
    together. `kind`: the rule's first CloudWatch alarm's (first_kind), whose window bounds the spans the fixes name."""
    interval = settings.scrape.seconds
    stopped, filled_least = (_least_period(settings, scrapes) for scrapes in (stopped_gpus.SCRAPES_PER_PERIOD,
                                                                              FILLED_SCRAPES_PER_PERIOD))
    found = [_ShortPeriod(problem, stopped_gpus.SCRAPES_PER_PERIOD, 1, stopped,
                          keep=_keeping_window(alarm, stopped, _window_limit(kind, stopped)))
             for problem in [alarm.stopped and stopped_gpus.period_problem(alarm.period_seconds, interval,
                                                                           cloudwatch=kind is not None)] if problem]
    if addon_source(settings):
        return found
    filled = filled_problem(alarm, interval)
    # the data-missing rule's window and period said at once, with one fix: the least period holding AGENT_SCRAPES
    # holds the window's scrapes too, at the rule's fewest periods (data_missing.fewest_periods)
    scraped = [problem for problem in (window_problem(alarm, settings), agent_problem(alarm, settings)) if problem]
    missing = "; ".join(scraped + [problem for problem in [churn_problem(alarm, settings)] if problem])
    fewest = data_missing.fewest_periods(settings)
    least = _dividing_period(alarm, settings, _least_period(settings, AGENT_SCRAPES), fewest)
    return found + [short for short in (
        filled and _ShortPeriod(filled, FILLED_SCRAPES_PER_PERIOD, 1, filled_least, other=", or missing_data='missing'",
                                keep=_keeping_window(alarm, filled_least,
                                                     _window_limit(kind, filled_least))),
        missing and _ShortPeriod(missing, WINDOW_SCRAPES, alarm.evaluation_periods, least, per_period=AGENT_SCRAPES,
                                 keep=_keeping_window(alarm, least, _window_limit(kind, least), fewest,
                                                      data_missing.fewest_periods_why(settings)),
                                 scraping=bool(scraped))) if short]


def _dividing_period(alarm: Alarm, settings: Settings, least: int, fewest: int) -> int:
    """The least period of `least` or more, of whole minutes and whole scrape intervals, of which `fewest` or more span
    the alarm's window exactly (the data-missing rule's 600 s x 1 on classic: 300 s x 2, not 180 s periods, none of
    which spans 600 s); `least` where none does."""
    window, step = alarm.period_seconds * alarm.evaluation_periods, math.lcm(60, settings.scrape.seconds)
    return next((period for period in range(least, window // fewest + 1, step) if window % period == 0), least)


def _bundled(settings: Settings) -> bool:
    """Whether the settings' alarms are the bundled ones (definitions.alarms unset): their periods are not the user's."""
    return settings.definitions.alarms is None


def _check_short_periods(alarm: Alarm, settings: Settings, kind: str | None, cloudwatch: bool = True,
                         fixed: bool = True) -> None:
    """An alarm of the user's own whose period is too short for the scrape interval (_short_periods) is refused; a
    bundled one, whose period the user does not write, is kept with a warning (short_periods). The fix names the scrape
    intervals at which the alarm as written is accepted (_longer_intervals), none where CloudWatch judges a period
    under 60 s (_check_period refuses it at any interval): 'or scrape more often' led a 10 s stopped rule at 10 s
    scrapes (agent.pipeline: otel) to 5 s, refused for its period, and a data-missing rule of 60 s x 2 at 60 s scrapes
    (classic) to 30 s, refused as short again. `fixed`: the refusal names its fix (_refusal)."""
    if _bundled(settings):
        return
    for short in _short_periods(alarm, settings, kind):
        longer = "" if not fixed or not short.scraping or (cloudwatch and alarm.period_seconds < 60) else \
            _longer_intervals(alarm, short, settings, [alarm])
        raise InputError(f"alarm {alarm.id!r}: {short.why}", where=alarm.defined_at,
                         hint=f"give the alarm period_seconds={short.least}{short.keep}"
                              f"{f', or {longer}' if longer else ''}{short.other}" if fixed else "")


def short_periods(alarms: Iterable[Alarm], settings: Settings, catalog: Catalog) -> list[tuple[str, str, str]]:
    """(where, what, fix) of each bundled alarm of `alarms` (a project's) whose period is too short for the scrape
    interval (_short_periods), the stopped rule's first: at scrape.interval 5m the stopped rule's and the idle GPU
    alarm's 5-minute periods hold one, the data-missing rule's 10-minute window two. It is kept (the user does not write
    its period), and said: by generate, and by lint (SHORT_PERIOD_RULE) of the build or of a build read back."""
    if not _bundled(settings):
        return []
    alarms = list(alarms)
    found = [(alarm, short) for alarm in alarms
             for short in _short_periods(alarm, settings, first_kind(alarm, catalog, settings))]
    return [(alarm.defined_at, f"alarm {alarm.id!r} (bundled): {short.why}",
             f"{f'{longer}, or ' if short.scraping and longer else ''}"
             f"copy the bundled alarms into a folder of your own, named in definitions.alarms, and give it "
             f"period_seconds={short.least}{short.keep}")
            for alarm, short in sorted(found, key=lambda pair: not pair[0].stopped)
            for longer in [_longer_intervals(alarm, short, settings, alarms)]]


# The lint rule that says, as generate does, each bundled alarm whose period is too short for the scrape interval
SHORT_PERIOD_RULE = "AL029"


def _keeping_window(alarm: Alarm, least: int, limit: int, fewest: int = 1, why_fewest: str = "") -> str:
    """What a longer period `least` asks of an alarm judged over several periods so that it judges the span it says:
    the bundled idle alarm's 6 periods of 300 s (idle_minutes 30) at 600 s periods would span 60 minutes, its
    description still saying 30; the stopped rule's 2 periods of 300 s, 20 minutes, its description saying 10; the
    data-missing rule's 2 x 300 s at 900 s periods 30 minutes, not 10. Where no whole number of the longer periods, at
    least `fewest` (`why_fewest`), spans the window, the nearest numbers and their spans, the longer within the `limit`
    seconds CloudWatch evaluates (_window_limit: a static pod's alarm is not bound by a Metrics Insights alarm's 3
    hours)."""
    window = alarm.period_seconds * alarm.evaluation_periods
    periods, left = divmod(window, least)
    if not left and periods >= fewest:
        return f" and {_periods_of(alarm, periods)}, which keep its window of {window} s"
    if periods >= fewest:  # the longer choice only within what CloudWatch evaluates (_check_window)
        choices = tuple(n for n in (periods, periods + 1) if n == periods or n * least <= limit)
        why = f"no whole number of {least} s periods spans its window of {window} s"
    else:
        choices = (fewest,)
        why = (f"{'one period' if fewest == 1 else counted(fewest, 'period')} of {least} s "
               f"{'is' if fewest == 1 else 'are'} "
               f"longer than its window of {window} s{f', {why_fewest}' if why_fewest else ''}")
    said = " or ".join(f"{_periods_of(alarm, n)} ({n * least} s)" for n in choices)
    return f" ({why}: give it {said}, and say that span in its description)"


def _periods_of(alarm: Alarm, periods: int) -> str:
    """evaluation_periods=`periods`, and the datapoints_to_alarm of the same share where the alarm sets one (the
    data-missing rule's 2 of 2 at one period: 1 of 1, which the model takes, not 2 of 1)."""
    scaled = _scaled(alarm, periods)
    return f"evaluation_periods={periods}" + ("" if scaled is None or periods == alarm.evaluation_periods else
                                              f", datapoints_to_alarm={scaled}")


def _scaled(alarm: Alarm, periods: int) -> int | None:
    """The datapoints_to_alarm of `periods` evaluation periods at the alarm's share (None where it sets none): the
    stopped rule's all of them (stopped_datapoints_problem)."""
    needed = alarm.datapoints_to_alarm
    if needed is None:
        return None
    return periods if alarm.stopped else max(1, -(-needed * periods // alarm.evaluation_periods))


def _stopped_keys(alarm: Alarm, settings: Settings) -> tuple[str, ...]:
    return tuple(label_name(key, settings.labels) for key in group_keys(_alert_query(alarm, settings).by))


def stopped_rules(alarm: Alarm, catalog: Catalog, settings: Settings) -> tuple[dict[str, Any], str]:
    """A stopped alarm's recording rule (stopped_gpus.recording: the GPUs judged stopped, each kept while it reads
    nothing and its node's other GPUs read, past the hour its readings are read over) and its alert's expression,
    which reads what the recording rule wrote at the same evaluation."""
    record = recorded_name(alarm.id, stopped_gpus.RECORDED)
    return ({"record": record, "labels": {PROMETHEUS_RULE_LABEL: alarm.id},
             "expr": stopped_gpus.recording(*_stopped_fields(alarm, catalog, settings), rule_step(settings), record)},
            stopped_gpus.alert(_stopped_keys(alarm, settings), settings, record))


def _kinds(alarm: Alarm, catalog: Catalog, settings: Settings) -> tuple[str | None, ...]:
    if kinds_apart(_alert_query(alarm, settings), catalog):
        return ("whole", "mig")
    return (INSTANCES, OWN_WHOLE) if whole_beside_instances(alarm, settings) else (None,)


# A rule whose CloudWatch condition is per MIG instance (a `cloudwatch=` one) where its own is not, with settings where
# GPUs may be split: MIG instances judged on that condition (INSTANCES), as the alarm of the clusters whose GPUs may be
# split judges them, and whole GPUs on the rule's own condition (OWN_WHOLE), as the alarm of a cluster saying
# exporter.mig: none does (its own, or a fleet rule's <rule>-whole). The one rules file every cluster's Prometheus loads
# cannot tell which cluster it runs on (a Prometheus per cluster writes no cluster label): read on the MIG instances
# alone, it fired for no GPU of a cluster saying none, where that cluster's alarm was in ALARM. A whole GPU of a cluster
# whose GPUs may be split is judged here too, by no alarm there (AL012 says so).
INSTANCES, OWN_WHOLE = "instances", "whole-own"


def whole_beside_instances(alarm: Alarm, settings: Settings) -> bool:
    """Whether the rule judges MIG instances on its `cloudwatch=` condition and whole GPUs on its own (INSTANCES,
    OWN_WHOLE)."""
    chosen = alarm.cloudwatch
    return (chosen is not None and not alarm.absent and not alarm.stopped
            and cloudwatch_condition(alarm, settings) is chosen and "mig_instance" in chosen.query.by
            and "mig_instance" not in alarm.condition.query.by)


# A rule whose condition reads one period's statistic more than once (missing data `missing` or `notBreaching`, judged
# over the evaluation range, at M out of N periods with M < N, or `missing` at N of N over more than 2: each period
# is counted in several sums, _of_range) gets a recording rule that
# computes each period's statistic once, at each evaluation; its alert reads them back. A group evaluates its rules
# in order at one instant and commits each rule's samples, stamped with that instant (the instant its queries are
# evaluated at: less the group's query offset, where one is set), before the next rule runs; Prometheus 3's
# concurrent rule evaluation runs a rule that reads another's metric after it. So the alert reads exactly the
# samples written at its own instant: `last_over_time(x[1ms])` holds a sample taken at the instant alone
# (Prometheus 2's [t - 1 ms, t] and 3's (t - 1 ms, t] alike, a group's evaluations being seconds apart), never an
# older one, with or without a staleness marker (none is written after a restart or for a missed evaluation). The
# values are the same floats (stored as they are), so the alert is the one expression's at every evaluation
# (tests/integration/test_recorded_periods.py; the cost: docs/performance.md, "What the rules cost Prometheus").
RECORDED_KIND_LABEL = "gpudash_kind"  # whole GPUs or MIG instances, where the rule judges them apart


def recorded_name(alarm_id: str, part: str = "period_value") -> str:
    """The metric of an alarm's recording rule: gpudash:<alarm id>:period_value (a stopped alarm's:
    gpudash:<alarm id>:lost, stopped_rules)."""
    return f"gpudash:{alarm_id.replace('-', '_')}:{part}"


def recorded_periods(alarm: Alarm, catalog: Catalog, settings: Settings) -> list[tuple[str | None, int]]:
    """The (kind, period) statistics the rule's condition reads, when it reads one of them more than once (then a
    recording rule computes each once); [] otherwise."""
    if alarm.absent or alarm.stopped:
        return []
    reads: dict[tuple[str | None, int], int] = {}

    def counted(kind: str | None, period: int) -> str:
        reads[kind, period] = reads.get((kind, period), 0) + 1
        return "x"
    prometheus_expression(alarm, catalog, settings, counted)
    return sorted(reads, key=lambda read: (str(read[0]), read[1])) if max(reads.values(), default=0) > 1 else []


def recording_expression(alarm: Alarm, catalog: Catalog, settings: Settings,
                         periods: list[tuple[str | None, int]]) -> str:
    """Each of `periods`' statistic (period_value), marked with its period (PERIOD_LABEL) and kind."""
    def of_kind(kind: str | None, term: str) -> str:
        return term if kind is None else f'label_replace({term}, "{RECORDED_KIND_LABEL}", "{kind}", "", "")'

    def marked(kind: str | None, period: int) -> str:
        return of_kind(kind, f'label_replace({period_value(alarm, catalog, settings, period, kind)}, '
                             f'"{PERIOD_LABEL}", "{period}", "", "")')
    terms = []
    for kind in dict.fromkeys(kind for kind, _ in periods):
        read = [period for each, period in periods if each == kind]
        # the kind's periods 0 to n - 1 in one expression where its query reads them so (period_values)
        combined = period_values(alarm, catalog, settings, read, kind) if read == list(range(len(read))) else None
        terms += [of_kind(kind, combined)] if combined else [marked(kind, period) for period in read]
    return " or ".join(terms)


def recorded_value(alarm: Alarm, kind: str | None, period: int) -> str:
    """A period's statistic as the recording rule wrote it at this evaluation, with the labels period_value gives."""
    matchers = [f'{PERIOD_LABEL}="{period}"'] + ([] if kind is None else [f'{RECORDED_KIND_LABEL}="{kind}"'])
    return (f"max without ({PERIOD_LABEL}, {RECORDED_KIND_LABEL}, {PROMETHEUS_RULE_LABEL}) "
            f"(last_over_time({recorded_name(alarm.id)}{{{', '.join(matchers)}}}[1ms]))")


def period_value(alarm: Alarm, catalog: Catalog, settings: Settings, period: int = 0, kind: str | None = None) -> str:
    """A rule's statistic of the period `period` periods back from the evaluation (none if it has no reading; a
    counter's increase, none if no reading of its own has a delta): what its CloudWatch twin compares per period."""
    return _statistic(alarm, catalog, settings, _duration(alarm.period_seconds * period) if period else None, kind)


def period_sign(alarm: Alarm, catalog: Catalog, settings: Settings, period: int, kind: str | None,
                threshold: float) -> str:
    """A mean's period (period_value's) less `threshold`, in sign exactly, from one read of its readings
    (mean_sign); NotCombined where the query is not read so."""
    return _statistic(alarm, catalog, settings, _duration(alarm.period_seconds * period) if period else None, kind,
                      threshold)


def period_signs(alarm: Alarm, catalog: Catalog, settings: Settings, condition: Condition,
                 kind: str | None) -> Callable[[int], str] | None:
    """`period_sign(k)` of the condition's level where its flags may be read so (the condition a mean's, compared by
    <, <=, > or >= with a level mean_sign takes exactly); None otherwise."""
    if condition.query.aggregation != "avg" or condition.comparison not in NEGATED \
            or not mean_sign.exact_against(condition.threshold):
        return None
    try:
        period_sign(alarm, catalog, settings, 0, kind, condition.threshold)
    except NotCombined:
        return None
    return lambda period: period_sign(alarm, catalog, settings, period, kind, condition.threshold)


def period_values(alarm: Alarm, catalog: Catalog, settings: Settings, periods: Iterable[int],
                  kind: str | None = None) -> str | None:
    """The statistics of `periods` (each k periods back) in one expression, the k-th marked with PERIOD_LABEL k, where
    the rule's query reads them so at less cost (promql.Periods: a per-GPU gauge's GPUs named once); None otherwise."""
    shifts = tuple(_duration(alarm.period_seconds * k) if k else None for k in periods)
    try:
        return _statistic(alarm, catalog, settings, shifts, kind)
    except NotCombined:
        return None


def _unnamed_flags(alarm: Alarm, catalog: Catalog, settings: Settings, condition: Condition, kind: str | None,
                   periods: int) -> tuple[Callable[[int], str], Callable[[str, str], str]] | None:
    """(`flag(k)`, `name(expr, how)`) of a rule per pod and GPU over `periods` periods: each period's flag (1
    breaching, 0 not; its mean compared by sign where period_signs reads it so) keyed by the pod's GPU (its UUID of
    NVIDIA's form, else its index), and the naming of each GPU by its index, which the caller applies once to what it
    makes of the periods (promql.expression's `naming`: named in every period, the idle rule read the naming 16 times
    an evaluation, 32 with exporter.virtual_gpus); None otherwise."""
    signs = period_signs(alarm, catalog, settings, condition, kind) is not None
    against = condition.threshold if signs else None
    naming: list = []
    oldest = _duration(alarm.period_seconds * (periods - 1)) if periods > 1 else None
    _statistic(alarm, catalog, settings, oldest, kind, against, naming)
    if not naming:
        return None
    level = "0" if signs else number(condition.threshold)

    def flag(period: int) -> str:
        shift = _duration(alarm.period_seconds * period) if period else None
        return f"({_statistic(alarm, catalog, settings, shift, kind, against, [])} {condition.comparison} bool {level})"
    return flag, naming[0]


def _statistic(alarm: Alarm, catalog: Catalog, settings: Settings, offset, kind: str | None,
               against: float | None = None, naming: list | None = None) -> str:
    window = _duration(alarm.period_seconds)
    regions = judged_regions(alarm, settings)
    query, scope = _alert_query(alarm, settings), Scope() if regions else settings_clusters(settings)
    if kind == OWN_WHOLE:  # the rule's own condition over the series of whole GPUs (no MIG instance named)
        query, scope = _own_query(alarm, settings), Scope((*scope.regexes, ("mig_instance", "")))
    if kind in (INSTANCES, OWN_WHOLE):
        kind = None
    return expression(query, settings.labels, catalog, scope, rate_window=window,
                      increase_window=window, gauge_window=window, per_instance=True, kind=kind,
                      resolution=rule_step(settings), offset=offset,
                      hold=f"{settings.scrape.seconds}s", reach=gap_reach(alarm, settings), regions=regions,
                      named_within=label_lookback(settings.scrape.seconds), against=against, naming=naming)



def judged_regions(alarm: Alarm, settings: Settings) -> Regions:
    """The Regions a fleet rule judges apart on a Prometheus holding clusters of several Regions, each with the
    cluster label's values of the settings' clusters in it; () where the rule reads as CloudWatch without them.

    A fleet alarm that judges its clusters together (grouped by nothing, or by a model: not clusters_apart) is one
    alarm per Region on CloudWatch, each reading its Region's clusters (a Metrics Insights query reads one Region).
    Its rule on a shared Prometheus (clusters[].prometheus_label) judges the same clusters: a value per Region, of
    the settings' clusters there (tests/integration/test_fleet_region_twins.py). A Prometheus of one Region's
    clusters needs none (its rule reads what the Region's alarm reads: the rules and goldens as they were); a
    Prometheus per cluster reads its own cluster alone, whatever the Region's alarm reads (lint AL022 says so)."""
    if alarm.scope != "fleet" or alarm.absent or clusters_apart(alarm, cloudwatch_condition(alarm, settings).query):
        return ()
    return shared_regions(settings)


def shared_regions(settings: Settings) -> Regions:
    """Each Region's cluster label values on a Prometheus holding clusters of several Regions; () otherwise."""
    if not settings.shared_prometheus:
        return ()
    regions: dict[str, list[str]] = {}
    for cluster in settings.clusters:
        regions.setdefault(cluster.region, []).append(cluster.prometheus_label)
    return tuple((region, tuple(values)) for region, values in sorted(regions.items())) if len(regions) > 1 else ()


def gap_reach(alarm: Alarm, settings: Settings) -> int:
    """Seconds back a rule's increase looks for a GPU's reading before a gap in its data (0: the window's own,
    promql.WINDOW_PREVIOUS_WITHIN). An event alarm (Condition.counts_events: a row remapped is one whenever it
    happened) counts the growth across a gap of up to an hour (promql.PREVIOUS_WITHIN, as the dashboard's increases)
    at the first reading after it: a remap during an exporter's crash loop or upgrade is not lost. A level per period
    (`> N` replays per 5 minutes) keeps the window's horizon: a longer gap's growth in one period is no rate."""
    return PREVIOUS_WITHIN if cloudwatch_condition(alarm, settings).counts_events else 0


RULE_STEP_SECONDS = 5  # the finest step a rule reads its readings at


def rule_step(settings: Settings) -> str:
    """The step a rule's subqueries read each series' readings at: 5 s, or the scrape interval when shorter.
    Prometheus places a subquery's steps at multiples of the step since the epoch, not at the evaluation's
    instant, so a sample counts at the first step after it and the readings end at the latest step at or before
    the instant: a step of the scrape interval would lag a rule by up to one interval (a 150 s scrape fires two
    minutes late), a fine step by at most that step, as CloudWatch judges the observations up to the period's
    end. Each sample is read once (promql.step_reading: at the one step after it, on Prometheus 2 and 3 alike)."""
    return f"{min(RULE_STEP_SECONDS, settings.scrape.seconds)}s"




def _of_periods(alarm: Alarm, breaching: Callable[[int], str], join: tuple[str, ...] = ()) -> str:
    """The periods CloudWatch judges at an evaluation, judged at each of the rule's: the N whole periods that end
    at the evaluation (its sliding evaluation window), of which M must breach. `breaching(k)` is the
    condition on the period k periods back. One period: its condition; M of M: every period's condition (`and`;
    the value is the latest period's); M of N: the periods that breach counted (each marked with its own
    PERIOD_LABEL, so that `or` keeps them all) against M. A period without data breaches in none of them, as
    TreatMissingData notBreaching (and missing, as tests/support/cloudwatch_eval reads it) has it; the one rule
    that treats missing data as breaching, data-missing, says in its branch 1 that a period had none. Its
    branches carry their own `reason`, so each is judged over the periods apart (the `and` matches label sets), but
    where `join` names the labels the periods are matched on (each exporter DaemonSet's): M of M `and on(join)`; M of N
    the periods in which each `join` breached counted, the latest breaching period's series kept."""
    periods = alarm.evaluation_periods
    needed = alarm.datapoints_to_alarm or periods
    if periods == 1:
        return breaching(0)
    on = f"on({', '.join(join)})"
    if needed == periods:
        return "(" + (f" and {on} " if join else " and ").join(f"({breaching(k)})" for k in range(periods)) + ")"
    terms = [breaching(k) for k in range(periods)]
    if join:
        latest = f" or {on} ".join(f"({term})" for term in terms)
        labels = ", ".join(join)
        counted = f"count by ({labels}) (group by ({labels}, {PERIOD_LABEL}) ({_marked(terms)}))"
        return f"(({latest}) and {on} ({counted} >= {needed}))"
    return f"({_over_periods('count', terms)} >= {needed})"


RANGE_JUDGED = ("missing", "notBreaching", "breaching")  # missing data judged over the evaluation range (_of_range)
# Periods CloudWatch's evaluation range holds beyond EvaluationPeriods, as the rule models it. AWS publishes no rule
# for the length ("depends on the length of the alarm period and whether it is based on a metric with standard
# resolution or high resolution"); its one example, two tables of 3 evaluation periods of 5 minutes, judges 5
# periods, and 5 of their rows read otherwise at 4 (tests/unit/test_cloudwatch_evaluation_range.py).
RANGE_EXTRA_PERIODS = 2
NEGATED = {">": "<=", ">=": "<", "<": ">=", "<=": ">"}


def range_extra(alarm: Alarm, settings: Settings) -> int:
    """The periods CloudWatch's evaluation range holds beyond EvaluationPeriods, as the rule models it: AWS's example's
    RANGE_EXTRA_PERIODS, cut where an alarm on a Metrics Insights query would read past the latest 3 hours of data it
    can use ("Only the latest 3 hours of data can be used for evaluating the alarm's conditions", alarm-limits.html;
    ALARM_WINDOW_SECONDS): 36 periods of 5 minutes (thresholds.idle_minutes: 180) hold none more, 35 one. A static
    per-pod alarm on a classic metric watches one metric, with no such cut
    (tests/integration/test_evaluation_range_three_hours.py)."""
    if static_per_pod(alarm, settings.alarms.per_pod) and not judges_pod_gpus(alarm, settings):
        return RANGE_EXTRA_PERIODS
    readable = ALARM_WINDOW_SECONDS // alarm.period_seconds - alarm.evaluation_periods
    return max(0, min(RANGE_EXTRA_PERIODS, readable))


def _over_periods(aggregation: str, terms: list[str]) -> str:
    """`aggregation` (count, sum) over the periods' terms, latest first, each marked with its own PERIOD_LABEL so
    that `or` keeps them all."""
    return f"{aggregation} without ({PERIOD_LABEL}) ({_marked(terms)})"


def _each_period(numbers: list[int]) -> str:
    """One series per period, latest first, of the period's number, marked with its PERIOD_LABEL."""
    return "(" + " or ".join(f'label_replace(vector({number}), "{PERIOD_LABEL}", "{k}", "", "")'
                             for k, number in enumerate(numbers)) + ")"


def _marked(terms: list[str]) -> str:
    """The periods' terms, latest first, each marked with its own PERIOD_LABEL, so that `or` keeps them all."""
    return " or ".join(f'label_replace({term}, "{PERIOD_LABEL}", "{k}", "", "")' for k, term in enumerate(terms))


def _of_range(alarm: Alarm, value: Callable[[int], str], condition: Condition,
              values: Callable[[list[int]], str | None] | None = None, extra: int = RANGE_EXTRA_PERIODS,
              signs: Callable[[int], str] | None = None, flags: Callable[[int], str] | None = None,
              name: Callable[[str, str], str] | None = None) -> str:
    """CloudWatch's judgement of an alarm whose missing data is `missing`, `notBreaching` or `breaching`, over an
    evaluation range of N + `extra` periods (user guide, "How alarm state is evaluated when data is
    missing": it retrieves "a higher number of data points than" N; the page's example retrieves 5 for 3; fewer where
    the 3 hours a Metrics Insights alarm reads end first: range_extra). `value(k)`: the
    statistic of the period k periods back, none if that period has no reading.
    - At least N periods with a reading: the N most recent of them are judged (TreatMissingData unused), M must
      breach. A period without a reading among the latest N lets an older one be judged: a GPU whose exporter
      answers five minutes of every ten or fifteen stays judged on its readings, not paused at each gap.
    - Fewer: the missing periods count as not breaching, M of the real ones must breach (with `breaching`, N less
      the real ones breach: at most N - M real ones may not); with `missing`, fewer
      real periods than M alarm early when the oldest breaching one of the latest N is at least M periods old and
      every later one breaches or has no reading ("Avoiding premature transitions to alarm state").
    Where M equals N (every default alarm; with `missing` data, 2 of 2) one evaluation of each period's statistic:
    its breaching flag (`> bool`) weighted so that one sum over the range decides (two with `missing`, N > 2).
    Checked against the evaluator for every pattern of the range (tests/integration/test_evaluation_range_rules.py).
    `signs(k)` (a mean's, period_signs): the period's statistic less the level, in sign exactly, at less cost: each
    flag then compares it with 0. `flags(k)` and `name(expr, how)` (_unnamed_flags): each period's flag keyed by a
    pod's GPU, and each weighted sum of the periods' flags named by the GPU's index once."""
    periods = alarm.evaluation_periods
    needed = alarm.datapoints_to_alarm or periods
    compare, threshold = condition.comparison, number(condition.threshold)  # every digit (`:g` keeps six)

    def flag(k: int) -> str:  # 1 breaching, 0 not, none without a reading
        if flags is not None and name is not None:
            return flags(k)
        if signs is not None:
            return f"({signs(k)} {compare} bool 0)"
        return f"({value(k)} {compare} bool {threshold})"

    def weighted(weights: list[tuple[int, int]]) -> str:
        """The sum over the periods, latest first, of each one's weight: (breaching, not breaching); 0 without a
        reading. Where `values` reads the periods' statistics in one expression (period_values), each one's flag is
        weighted by its period's (breaching - not breaching) and not breaching weights, one series per period."""
        marked = values(list(range(len(weights)))) if values else None
        if marked is None:
            summed = _over_periods("sum", [f"{flag(k)} * {b - n} - {-n}" if b != n else f"{flag(k)} * 0 + {b}"
                                           for k, (b, n) in enumerate(weights)])
            return name(summed, "sum") if flags is not None and name is not None else summed
        on = f"on ({PERIOD_LABEL}) group_left ()"
        return (f"sum without ({PERIOD_LABEL}) (({marked} {compare} bool {threshold}) * {on} "
                f"{_each_period([b - n for b, n in weights])} + {on} {_each_period([n for _, n in weights])})")

    def counted(terms: list[str]) -> str:
        return _over_periods("count", terms)

    def breaching(k: int) -> str:
        return f"{value(k)} {compare} {threshold}"

    def not_breaching(k: int) -> str:
        return f"{value(k)} {NEGATED[compare]} {threshold}"
    if not 0 <= extra <= 2:  # not an assert: `python -O` would drop it and write wrong rules
        raise ValueError(f"the weights below are worked out for a range of N to N + 2 periods, not N + {extra}")
    if needed == periods == 2 and alarm.missing_data == "missing" and extra == 2:
        # One sum (the default temperature-high alarm: each period read once): weights per period, breaching /
        # not breaching / no reading, latest first: 7 / -100 / 0, 10 / -100 / 0, 7 / -5 / 0, 4 / -1 / 0. The
        # patterns that alarm sum to 10 or more (the two most recent real periods breaching: 17, 14, 11, 16, 13,
        # ...; the middle alone, early: 10), every other pattern's is under it (the latest or the one before not
        # breaching: under 0; one real period elsewhere: 7 or 4; a not breaching one among the two most recent
        # real: 9 or less).
        return f"({weighted([(7, -100), (10, -100), (7, -5), (4, -1)])} >= 10)"
    if needed == periods:
        # Each of the latest N adds 2 breaching and -3 not (then no sum reaches 2N - 1); period N adds 2 / -1,
        # period N + 1 adds 1 / 0: 2N - 1 or more where the N most recent real periods breach (the latest N; with
        # one of them empty, period N breaching, or N + 1 where N is empty too; with two empty, both). A range cut
        # shorter (range_extra) drops the periods it cannot read, oldest first.
        main = f"{weighted([(2, -3)] * periods + [(2, -1), (1, 0)][:extra])} >= {2 * periods - 1}"
    else:
        # The N most recent real periods lie in the latest N + j for the least j at which N + j periods hold N
        # readings (all of the range where it holds fewer): M of them breach in the latest N + j, unless the latest
        # N + j - 1 already hold N readings.
        main = " or ".join(
            f"({counted([breaching(k) for k in range(periods + j)])} >= {needed}"
            + (f" unless {counted([value(k) for k in range(periods + j - 1)])} >= {periods})" if j else ")")
            for j in range(extra + 1))
    if alarm.missing_data == "breaching":
        # Fewer real periods than N in the range: the missing ones breach, so N - M not breaching at most alarm (the
        # range read as its readings; a contributor with none in it is none, as its GROUP BY query returns none)
        readings = counted([value(k) for k in range(periods + extra)])
        fewer = (f"(({readings} unless {counted([not_breaching(k) for k in range(periods + extra)])} > "
                 f"{periods - needed}) unless {readings} >= {periods})")
        return f"({main} or {fewer})"
    if alarm.missing_data != "missing" or needed < 2:
        return f"({main})"
    if needed == periods:
        # Early: period N-1 breaching (N + 2), each later one breaching (1) or without a reading (0), any not
        # breaching -(N + 2); the periods before them 1 each with a reading: fewer than N real periods in all.
        big = periods + 2
        early = [(1, -big)] * (periods - 1) + [(big, -big)] + [(1, 1)] * extra
        return f"({main} or ({weighted(early)} >= {big}) <= {big + periods - 2})"
    # Early: the oldest breaching period of the latest N at least M periods old, none after it not breaching, and
    # fewer than M real periods in the range.
    oldest = " or ".join(
        f"({breaching(k)}"
        + "".join(f" unless {other}" for other in ([not_breaching(j) for j in range(k)] +
                                                    [breaching(j) for j in range(k + 1, periods)]))
        + ")"
        for k in range(needed - 1, periods))
    return f"({main} or (({oldest}) unless {counted([value(k) for k in range(periods + extra)])} >= {needed}))"


def no_data_rule(alarm: Alarm, settings: Settings) -> str:
    """The data-missing rule's branch on each exporter target's scrapes, judged over the rule's window as its
    CloudWatch twin per node is (one period the window's length, no `for`)."""
    window = data_missing.window_seconds(alarm.period_seconds, alarm.evaluation_periods)
    threshold = data_missing.no_data_threshold(settings, window)
    return data_missing.no_data_expression(settings, window, threshold, int(rule_step(settings).removesuffix("s")))


def _alert_query(alarm: Alarm, settings: Settings):
    """The query of the condition CloudWatch evaluates: a definition's `cloudwatch=` condition, where
    CloudWatch cannot compute its own, is the rule's in Prometheus too, so both fire on one situation."""
    return _of_clusters(alarm, settings, cloudwatch_condition(alarm, settings).query)


def _own_query(alarm: Alarm, settings: Settings):
    """The query of the rule's own condition (its whole GPUs beside MIG instances: OWN_WHOLE)."""
    return _of_clusters(alarm, settings, alarm.condition.query)


def _of_clusters(alarm: Alarm, settings: Settings, query):
    if settings.shared_prometheus and (alarm.scope == "cluster" or clusters_apart(alarm, query)):
        query = with_cluster(query)  # one Prometheus, several clusters: each cluster's objects apart
    return query


def _where_label(alarm: Alarm, catalog: Catalog, settings: Settings) -> str:
    """` on pod {{ $labels.namespace }}/{{ $labels.pod }}`, ` on {{ $labels.node }} GPU {{ $labels.gpu }}` ..."""
    keys = group_keys(_alert_query(alarm, settings).by)
    if alarm.absent:  # the cluster, when there are several, and the `reason` each branch of the rule attaches
        cluster = label_name("cluster", settings.labels)
        where = f" on cluster {{{{ $labels.{cluster} }}}}" if "cluster" in keys else ""
        return where + " ({{ $labels.reason }})"
    words = {"gpu": "GPU ", "namespace": "namespace ", "cluster": "cluster "}
    parts = []
    for key in keys:
        value = f"{{{{ $labels.{label_name(key, settings.labels)} }}}}"
        if key == "namespace" and "pod" in keys:
            continue  # named with the pod
        if key == "pod":
            value = f"pod {{{{ $labels.{label_name('namespace', settings.labels)} }}}}/{value}"
        parts.append(words.get(key, "") + value)
    if {"pod", "gpu"} <= set(keys) and kinds_apart(_alert_query(alarm, settings), catalog):
        # the rule's MIG branch judges each instance of a pod's GPU: its alert names the instance
        instance, profile = (f"$labels.{name}" for name in (MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL))
        parts[-1] += f"{{{{ if {instance} }}}} MIG {{{{ {instance} }}}} ({{{{ {profile} }}}}){{{{ end }}}}"
    if alarm.stopped:  # the lost GPU's UUID: a reboot that leaves it out gives its index to another GPU
        uuid = f"$labels.{stopped_gpus.uuid_name(settings)}"
        parts[-1] += f"{{{{ if {uuid} }}}} ({{{{ {uuid} }}}}){{{{ end }}}}"
    region = f" in Region {{{{ $labels.{REGION_LABEL} }}}}" if judged_regions(alarm, settings) else ""
    return region + (" on " + " ".join(parts) if parts else "")


def counted_group(counted: tuple[str, ...], catalog: Catalog, settings: Settings) -> dict[str, Any] | None:
    """The recording rules of the counters Grafana's rate panels read (promql.counted_rule), one per field, evaluated
    at the scrape interval (each evaluation adds one step's delta), or None without such a counter."""
    if not counted:
        return None
    resolution = f"{settings.scrape.seconds}s"
    return {"name": COUNTER_GROUP, "interval": resolution,
            "rules": [{"record": counted_name(metric, part), "expr": expr, "labels": {PROMETHEUS_RULE_LABEL: COUNTER_GROUP}}
                      for metric in counted
                      for part, expr in zip(COUNTED_PARTS, counted_rules(metric, catalog, settings.labels, resolution,
                                                                         settings_clusters(settings)))]}


def counter_of(rule: dict[str, Any]) -> str:
    """The counter a recording of counted_group records (its name less the part: gpudash:<field>)."""
    return rule["record"].rpartition(":")[0]


def counter_groups(counted: tuple[str, ...], catalog: Catalog, settings: Settings,
                   measure: Callable[[dict[str, Any]], int] = encoded_bytes) -> list[dict[str, Any]]:
    """counted_group cut into COUNTER_GROUPS groups (size_bounded), each counter's two recordings in one group."""
    group = counted_group(counted, catalog, settings) or {"name": COUNTER_GROUP,
                                                          "interval": f"{settings.scrape.seconds}s", "rules": []}
    return size_bounded(group, COUNTER_GROUPS, unit=counter_of, measure=measure)


def prometheus_rules(alarms: tuple[Alarm, ...], catalog: Catalog, settings: Settings,
                     counted: tuple[str, ...] = (),
                     measure: Callable[[dict[str, Any]], int] = encoded_bytes) -> dict[str, Any]:
    """The rule groups of the alarms and of the counted fields' recordings; `measure`: a rule's bytes as kubectl encodes
    it (size_bounded; rule_texts measures rules rendered with a stand-in)."""
    rules = []
    for alarm in alarms:
        if alarm.absent and not data_missing.expected(settings):
            continue  # left out, with a note (data_missing.left_out_reason)
        # Every rule judges each of CloudWatch's periods at once (_of_periods), as CloudWatch does at each
        # evaluation: no `for`, which a condition that is not monotone (a rollout's `unless`) would reset.
        periods = recorded_periods(alarm, catalog, settings)
        if periods:  # each period's statistic computed once, before the alert that reads it (recorded_periods)
            rules.append({"record": recorded_name(alarm.id),
                          "expr": recording_expression(alarm, catalog, settings, periods),
                          "labels": {PROMETHEUS_RULE_LABEL: alarm.id}})
        if alarm.stopped:  # the GPUs judged stopped recorded, and kept past the hour (stopped_rules)
            record, expr = stopped_rules(alarm, catalog, settings)
            rules.append(record)
        else:
            expr = prometheus_expression(alarm, catalog, settings, (lambda kind, period, alarm=alarm:
                                                                    recorded_value(alarm, kind, period))
                                         if periods else None)
        rule: dict[str, Any] = {
            "alert": alert_name(alarm.id),
            "expr": of_settings_clusters(expr, settings) if alarm.absent else expr,
            "labels": {"severity": alarm.severity, PROMETHEUS_RULE_LABEL: alarm.id},
            "annotations": {
                "summary": as_alert_text(alarm.title) + _where_label(alarm, catalog, settings),
                "description": as_alert_text(alarm.description),
                "runbook": as_alert_text(alarm.runbook),
            },
        }
        rules.append(rule)
        if alarm.absent:  # its branch on the exporter targets' scrapes: one window (no_data_rule); its
            # reason among its labels too, so the two rules' label sets differ (promtool's lint refuses duplicates)
            rules.append({**rule, "expr": of_settings_clusters(no_data_rule(alarm, settings), settings),
                          "labels": {**rule["labels"], "reason": data_missing.NO_DATA_REASON}})
    # every group is written, an empty one too (its object then holds no rule): kubectl apply leaves an object the
    # file no longer holds, so each build writes the objects the one before it wrote (docs/artifacts.md)
    groups = [{"name": ALERT_GROUP, "rules": rules}]
    return {"groups": [part for group in groups for part in size_bounded(group, ALERT_GROUPS, measure=measure)]
            + counter_groups(counted, catalog, settings, measure)
            + (watched_clusters(settings) or [{"name": CLUSTERS_GROUP, "rules": []}])}


# The most bytes of rules a group holds (as kubectl encodes them) before the next alarm's rules start another: each
# group is a PrometheusRule of its own (prometheus_rule_resources), which client-side `kubectl apply` refuses past
# APPLY_LIMIT bytes of annotations. Half of it leaves room for alarms to grow without every fix fighting for bytes.
GROUP_BYTES = APPLY_LIMIT // 2
# The alerts are always cut into at least this many groups (objects), an empty one written as such: kubectl apply does
# not delete an object the file no longer holds, so a count that followed the rules' size would leave, after a change
# that shrinks them (an alarm disabled, a cluster removed), an object of the old rules evaluated beside the new ones;
# an alarm removed would go on firing from it. A fixed count changes only past ALERT_GROUPS x GROUP_BYTES (393 KB of
# alert rules; the bundled build holds 140, the multi-region example 181).
ALERT_GROUPS = 3


def _alarm_of(rule: dict[str, Any]) -> str:
    return rule["labels"][PROMETHEUS_RULE_LABEL]


def size_bounded(group: dict[str, Any], at_least: int = 1, unit: Callable[[dict[str, Any]], str] = _alarm_of,
                 measure: Callable[[dict[str, Any]], int] = encoded_bytes) -> list[dict[str, Any]]:
    """`group` as `at_least` groups or, where they would hold more than about GROUP_BYTES of rules each, the fewest
    that do not, of about the same size, in the rules' order: the first of its name, the next `<name>-2`, `-3`... (an
    empty one kept: its object then holds no rule). Consecutive rules of one `unit` stay in one group; by default an
    alarm's (one PROMETHEUS_RULE_LABEL): its recording of its periods is read by its alert in the same evaluation, in
    the order written; alarms read no other alarm's rules, and Prometheus evaluates groups independently, so where a
    group ends changes no alert's value. A group of one label (the watched clusters) stays whole. The counters' unit is
    the counter (counter_of): a rate panel divides the sums of its two recordings over one window, which hold the
    same steps only where both are evaluated at the same instants, in one group (each group has a phase of its own in
    the interval); no counter's recording reads another's (promql.counted_rules reads the raw series alone)."""
    alarms = [list(same) for _, same in groupby(group["rules"], key=unit)]
    sizes = [sum(measure(rule) for rule in rules) for rules in alarms]
    count = max(at_least, min(len(alarms), math.ceil(sum(sizes) / GROUP_BYTES)))
    share = sum(sizes) / count
    parts: list[list[dict[str, Any]]] = [[] for _ in range(count)]
    before = 0
    for rules, size in zip(alarms, sizes):  # each alarm in the part its middle byte falls in
        parts[min(count - 1, int((before + size / 2) // share))] += rules
        before += size
    return [{**group, "name": group["name"] if number == 1 else f"{group['name']}-{number}", "rules": rules}
            for number, rules in enumerate(parts, 1)]


def watched_clusters(settings: Settings) -> list[dict[str, Any]]:
    """On a Prometheus holding several clusters, the group recording one series per cluster of the settings (its
    cluster label its prometheus_label): the dashboards' cluster variable lists the clusters these series name, of
    every settings file and project publishing to the Prometheus, so a dashboard several files generate is one text,
    and another team's cluster there is none of its values (its All reads the clusters listed, not `.*`)."""
    if not settings.shared_prometheus:
        return []
    cluster = label_name("cluster", settings.labels)
    return [{"name": CLUSTERS_GROUP, "rules": [
        {"record": WATCHED_CLUSTER, "expr": "vector(1)",
         "labels": {cluster: c.prometheus_label, PROMETHEUS_RULE_LABEL: CLUSTERS_GROUP}}
        for c in settings.clusters]}]


def prometheus_rule_resources(rules: dict[str, Any], settings: Settings) -> tuple[dict[str, Any], ...]:
    """The rules as PrometheusRules, one per group (names.prometheus_rule_name), in the rules' order: the alerts' first
    group in gpudash-gpu-alerts, the object that held every group before, so that `kubectl apply -f` of the file
    replaces it first and no group is in two objects at once (docs/artifacts.md, upgrading)."""
    from .scrape import object_metadata

    return tuple({"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
                  "metadata": object_metadata(prometheus_rule_name(group["name"]), settings), "spec": {"groups": [group]}}
                 for group in rules["groups"])
