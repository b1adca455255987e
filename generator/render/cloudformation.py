"""The CloudWatch dashboards and alarms as CloudFormation templates (one per cluster, split in parts when its own
resources pass CloudFormation's quotas, and one per Region of fleet alarms). Pure."""

from __future__ import annotations

import hashlib
from typing import Any

from ..names import cluster_stack, logical_id, region_stack

# PutMetricAlarm keys that AWS::CloudWatch::Alarm spells the same way.
_ALARM_KEYS = ("AlarmName", "AlarmDescription", "ActionsEnabled", "AlarmActions", "OKActions",
               "ComparisonOperator", "Threshold", "EvaluationPeriods", "DatapointsToAlarm", "TreatMissingData",
               "Namespace", "MetricName", "Dimensions", "Statistic", "Period", "Tags")

# CloudFormation's quotas for one template (the user guide's "Understand CloudFormation quotas"; cfn-lint checks the
# same): it refuses a template over either, and the whole stack is never made.
TEMPLATE_RESOURCES = 500  # resources declared in one template
TEMPLATE_BYTES = 1_000_000  # a template body read from S3 (one passed in the request itself: 51,200 bytes)


def over_quota(template: dict[str, Any], size: int) -> str | None:
    """What of a template (`size` bytes as written) is over CloudFormation's quotas, or None."""
    count = len(template.get("Resources", {}))
    over = ([f"{count:,} resources (CloudFormation takes at most {TEMPLATE_RESOURCES:,})"]
            if count > TEMPLATE_RESOURCES else []) + \
        ([f"{size:,} bytes (CloudFormation reads at most {TEMPLATE_BYTES:,} from S3)"] if size > TEMPLATE_BYTES else [])
    return " and ".join(over) or None


MAX_PARTS = 64  # the most stacks one cluster's resources are split over
FILL = 0.9  # a part is filled to this share of the quotas: the bytes of its dashboards are estimated, lint measures
QUOTA_FIX = ("a cluster's dashboards and log group are in its first template and its alarms split over up to "
             f"{MAX_PARTS} (a Region's fleet alarms are one template): define fewer or smaller CloudWatch dashboards "
             "or alarms for it, or publish with `gpudash apply` (it writes each dashboard and alarm itself)")


def _alarm_properties(request: dict[str, Any]) -> dict[str, Any]:
    properties = {key: request[key] for key in _ALARM_KEYS if key in request}
    if "Metrics" in request:
        properties["Metrics"] = [{key: query[key] for key in ("Id", "Expression", "MetricStat", "Period", "ReturnData",
                                                                "Label")
                                  if key in query} for query in request["Metrics"]]
    return properties


def templates(clusters: list[tuple[str, str]], dashboards: list[tuple[str, str, Any]], alarms: list[dict[str, Any]],
              log_groups: list[tuple[str, str, int]] = (), project: str | None = None) -> dict[str, dict[str, Any]]:
    """{stack name: template}: one stack per cluster (names.cluster_stack), deployed in its Region, with its
    dashboards (global: any Region's stack may hold them), its alarms and its agent's log group; and one per Region
    holding fleet alarms (names.region_stack), named with the `project` when the settings name one (two projects of
    one account deploy stacks of their own). A stack's name and content depend on its cluster alone, so a fleet of
    any size deploys (one cluster of the bundled definitions: 16 resources, about 64 KB, where CloudFormation takes
    500 and 1,000,000 bytes) and a cluster added or removed moves no resource between stacks.

    `clusters` are (name, Region); `dashboards` (DashboardName, cluster, body), the body data here: CloudFormation
    takes it as text, written (with its ownership stamp) when the template is encoded. `alarms` are
    cloudwatch_alarms' requests, each per-cluster one naming its "Cluster". `log_groups` are the agent's EMF log
    groups (cluster, name, retention days): created with a retention, and kept when the stack goes (they hold the
    agent's data).
    """
    named: dict[str, list[tuple[str, str, dict[str, Any]]]] = {cluster: [] for cluster, _ in clusters}
    # (kind, name, resource) of each cluster's template, in template order: its dashboards, log group, alarms
    for name, owner, body in sorted(dashboards, key=lambda item: item[0]):
        named[owner].append(("Dashboard", name, {
            "Type": "AWS::CloudWatch::Dashboard", "Properties": {"DashboardName": name, "DashboardBody": body}}))
    for owner, name, days in log_groups:
        named[owner].append(("LogGroup", name, {
            "Type": "AWS::Logs::LogGroup", "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
            "Properties": {"LogGroupName": name, "RetentionInDays": days}}))
    fleet: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}  # a Region's fleet alarms
    for item in alarms:
        cluster = item.get("Cluster")
        (named[cluster] if cluster is not None else fleet.setdefault(item["Region"], [])).append(
            ("Alarm", item["Request"]["AlarmName"],
             {"Type": "AWS::CloudWatch::Alarm", "Properties": _alarm_properties(item["Request"])}))
    result = {}
    for cluster, region in clusters:
        parts = split_cluster(named[cluster])
        for part, items in enumerate(parts, 1):
            what = f"cluster {cluster} ({region})" + (f", part {part} of {len(parts)}" if len(parts) > 1 else "")
            result[cluster_stack(cluster, project, part)] = _template(what, region, items, cluster,
                                                                      part if len(parts) > 1 else None)
    result.update((region_stack(region, project), _template(f"fleet alarms of {region}", region, items))
                  for region, items in fleet.items())
    return dict(sorted(result.items()))


def split_cluster(named: list[tuple[str, str, dict[str, Any]]]) -> list[list[tuple[str, str, dict[str, Any]]]]:
    """One cluster's resources (kind, name, resource) in the templates it is deployed as: one while they are within
    CloudFormation's quotas for a template (FILL of them), else 2, 4, 8, ... up to MAX_PARTS, the fewest that hold
    them. The first part keeps the cluster's dashboards and log group (its stack keeps its name, cluster_stack);
    each alarm goes to part (a digest of its name mod the number of parts) + 1. An alarm's part depends on its name
    and the number of parts alone: adding or removing other alarms moves none while the number of parts stays, and
    when it doubles an alarm stays in its part or goes to a new one (part k's alarms to k or k + n), never to
    another existing stack, so deploying the existing stacks first (they delete the alarms that go) and the new
    ones after (they create them) never declares one alarm in two stacks. The byte size of a dashboard is estimated
    (its body as a JSON string); `gpudash lint` (CF001) measures the written templates."""
    if MAX_PARTS < 2 or _fits(named):
        return [named]
    fixed = [item for item in named if item[0] != "Alarm"]
    alarms = [item for item in named if item[0] == "Alarm"]
    count = 2
    while True:
        parts: list[list[tuple[str, str, dict[str, Any]]]] = [list(fixed)] + [[] for _ in range(count - 1)]
        for item in alarms:
            parts[int(hashlib.sha256(item[1].encode()).hexdigest(), 16) % count].append(item)
        if count >= MAX_PARTS or all(_fits(part) for part in parts):
            return parts
        count *= 2


def _fits(named: list[tuple[str, str, dict[str, Any]]]) -> bool:
    """Whether resources fit one template within FILL of CloudFormation's quotas. Splitting moves alarms only, so
    the bytes are worked out only where alarms could pass them (an alarm is 1-4 KB; a dashboard's body tens of KB,
    and one cluster of the bundled definitions is 16 resources, about 64 KB)."""
    if len(named) > TEMPLATE_RESOURCES * FILL:
        return False
    if len(named) <= 64:
        return True
    return _bytes(named) <= TEMPLATE_BYTES * FILL


def _bytes(named: list[tuple[str, str, dict[str, Any]]]) -> int:
    """The resources' bytes as a template writes them, estimated (the renderers write no text: output.py does): a
    dashboard's body is written as a JSON string, each of its quotes escaped (a fifth more); an alarm is indented
    (a third more than compact: 1.33 measured on 247 static per-pod alarms, written at 7/5)."""
    total = 0
    for kind, _, resource in named:
        if kind == "Dashboard":
            body = resource["Properties"]["DashboardBody"]
            total += (len(body) if isinstance(body, str) else _size(body)) * 6 // 5 + 200
        else:
            total += _size(resource) * 7 // 5
    return total


def _size(value: Any) -> int:
    """About the length of `value` written as compact JSON."""
    if isinstance(value, dict):
        return 2 + sum(len(str(key)) + 4 + _size(item) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return 2 + sum(_size(item) + 1 for item in value)
    if isinstance(value, str):
        return len(value) + 2 + value.count('"') + value.count("\\")
    return len(str(value))


def _template(what: str, region: str, named: list[tuple[str, str, dict[str, Any]]],
              cluster: str | None = None, part: int | None = None) -> dict[str, Any]:
    """A template; its Metadata says the Region to deploy it in (and its cluster, and its part when the cluster's
    resources are split over several), which README's loop reads."""
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": f"gpudash GPU dashboards and alarms, {what}; generated, do not edit by hand.",
        "Metadata": {"gpudash": {"Region": region, **({"Cluster": cluster} if cluster is not None else {}),
                                 **({"Part": part} if part is not None else {})}},
        "Resources": _by_logical_id(named),
    }


def _by_logical_id(named: list[tuple[str, str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Resources under their logical ids (names.logical_id: a function of the kind and name alone, so that adding,
    removing or moving other resources changes none)."""
    resources: dict[str, dict[str, Any]] = {}
    for kind, name, resource in named:
        id_ = logical_id(kind, name)
        if id_ in resources:
            raise ValueError(f"two template resources under one logical id {id_}")
        resources[id_] = resource
    return resources
