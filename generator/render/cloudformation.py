"""The CloudWatch dashboards and alarms as CloudFormation templates (one per Region). Pure."""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

from ..names import logical_id

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


QUOTA_FIX = ("publish with `gpudash apply` (it writes each dashboard and alarm itself), or split the clusters over "
             "settings files generated apart (a template each)")


def _alarm_properties(request: dict[str, Any]) -> dict[str, Any]:
    properties = {key: request[key] for key in _ALARM_KEYS if key in request}
    if "Metrics" in request:
        properties["Metrics"] = [{key: query[key] for key in ("Id", "Expression", "MetricStat", "Period", "ReturnData",
                                                                "Label")
                                  if key in query} for query in request["Metrics"]]
    return properties


def templates(dashboards: dict[str, dict[str, Any]], alarms: list[dict[str, Any]], primary_region: str,
              log_groups: list[tuple[str, str, int]] = ()) -> dict[str, dict[str, Any]]:
    """{region: template}. Dashboards are global and go with the primary Region's template.

    `dashboards` maps each DashboardName to its body, which stays data here: CloudFormation takes
    it as text, written (with its ownership stamp) when the template is encoded.

    `log_groups` are the agent's EMF log groups (region, name, retention days): created with a
    retention, and kept when the stack goes (they hold the agent's data).
    """
    regions = sorted({primary_region, *(a["Region"] for a in alarms), *(g[0] for g in log_groups)})
    result = {}
    for region in regions:
        named: list[tuple[str, str, dict[str, Any]]] = []  # (kind, name, resource), in template order
        if region == primary_region:
            for name, body in sorted(dashboards.items()):
                named.append(("Dashboard", name, {
                    "Type": "AWS::CloudWatch::Dashboard",
                    "Properties": {"DashboardName": name, "DashboardBody": body}}))
        for group_region, name, days in log_groups:
            if group_region == region:
                named.append(("LogGroup", name, {
                    "Type": "AWS::Logs::LogGroup", "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
                    "Properties": {"LogGroupName": name, "RetentionInDays": days}}))
        for item in alarms:
            if item["Region"] == region:
                request = item["Request"]
                named.append(("Alarm", request["AlarmName"],
                              {"Type": "AWS::CloudWatch::Alarm", "Properties": _alarm_properties(request)}))
        resources = _by_logical_id(named)
        result[region] = {
            "AWSTemplateFormatVersion": "2010-09-09",
            "Description": f"gpudash GPU dashboards and alarms ({region}); generated, do not edit by hand.",
            "Resources": resources,
        }
    return result


def _by_logical_id(named: list[tuple[str, str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Resources under their logical ids. An id keeps only a name's letters and digits, so clusters `a-b`
    and `a_b` (or `ab` and `aB`) would give their alarms, dashboards and log groups one id and the template
    would keep one of each: ids that more than one name shares end in a digest of the exact name."""
    ids = [logical_id(kind, name) for kind, name, _ in named]
    shared = {id_ for id_, count in Counter(ids).items() if count > 1}
    resources: dict[str, dict[str, Any]] = {}
    for id_, (_, name, resource) in zip(ids, named):
        if id_ in shared:
            id_ += hashlib.sha256(name.encode()).hexdigest()[:10].upper()
        if id_ in resources:
            raise ValueError(f"two template resources under one logical id {id_}")
        resources[id_] = resource
    return resources
