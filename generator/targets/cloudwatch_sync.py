"""Plan and apply CloudWatch: dashboards and alarms, written only when they differ, paced, never
touching what gpudash does not own."""

from __future__ import annotations

import json
from typing import Any, Callable

from .. import diff
from ..changes import CREATE, DELETE, DRIFT, FOREIGN, UNCHANGED, UPDATE, Change, Outcome
from ..errors import RemoteError
from ..ownership import read_cloudwatch_stamp
from ..render.alarms import MANAGED_TAG
from . import prune_guard
from .pacing import Pacer

WRITE_KEYS_SKIPPED = ("Tags",)


class CloudWatch:
    """boto3 CloudWatch clients per Region, one pacer, errors turned into RemoteError."""

    def __init__(self, profile: str | None = None, endpoint_url: str | None = None, pacer: Pacer | None = None,
                 max_attempts: int = 8):
        import boto3
        from botocore.config import Config

        self.session = boto3.Session(profile_name=profile) if profile else boto3.Session()
        self.endpoint_url = endpoint_url
        self.config = Config(retries={"mode": "adaptive", "max_attempts": max_attempts}, user_agent_extra="gpudash",
                             connect_timeout=5, read_timeout=20)
        self.pacer = pacer or Pacer()
        self.clients: dict[str, Any] = {}

    def client(self, region: str):
        if region not in self.clients:
            self.clients[region] = self.session.client("cloudwatch", region_name=region,
                                                       endpoint_url=self.endpoint_url, config=self.config)
        return self.clients[region]

    def call(self, region: str, api: str, what: str, **kwargs) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

        self.pacer.wait(region, api)
        method = getattr(self.client(region), "_".join(_snake(api)))
        try:
            return method(**kwargs)
        except NoCredentialsError:
            raise RemoteError("no AWS credentials found", where=what,
                              hint="set AWS_PROFILE, or the standard AWS environment variables, or an instance role"
                              ) from None
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code, message = error.get("Code", "?"), error.get("Message", "")
            if code == "ResourceNotFound":
                raise
            hints = {"AccessDenied": "grant cloudwatch:" + api + " to the credentials in use",
                     "Throttling": "rate exceeded after adaptive retries; run again, apply converges",
                     "LimitExceeded": "a CloudWatch quota is reached; ask for an increase or prune old alarms"}
            raise RemoteError(f"CloudWatch {api} failed in {region}: {code}: {message}", where=what,
                              hint=hints.get(code, "run `gpudash plan` and check the request")) from None
        except BotoCoreError as exc:
            raise RemoteError(f"CloudWatch {api} failed in {region}: {exc}", where=what,
                              hint="check the network, AWS_REGION and AWS_ENDPOINT_URL; run again") from None


def _snake(api: str) -> list[str]:
    import re

    return [part.lower() for part in re.findall(r"[A-Z][a-z]*", api)]


# --- dashboards -----------------------------------------------------------------------------

def plan_dashboards(cloudwatch: CloudWatch, dashboards: dict[str, dict[str, Any]],
                    regions: dict[str, str]) -> list[Change]:
    """`dashboards`: DashboardName -> {"DashboardName", "DashboardBody"}; `regions`: name -> Region."""
    from botocore.exceptions import ClientError

    changes = []
    for name, desired in sorted(dashboards.items()):
        region = regions[name]
        try:
            live = cloudwatch.call(region, "GetDashboard", f"CloudWatch dashboard {name}", DashboardName=name)
        except ClientError:
            changes.append(Change("cloudwatch", "dashboard", name, CREATE, region=region))
            continue
        live_body = json.loads(live.get("DashboardBody") or "{}")
        desired_body = json.loads(desired["DashboardBody"])
        stamped, actual = read_cloudwatch_stamp(live_body)
        change = Change("cloudwatch", "dashboard", name, UNCHANGED, region=region, live=live_body)
        if live_body == desired_body:
            pass
        elif stamped is None:
            change.action, change.details = FOREIGN, ["exists and was not written by gpudash; --force replaces it"]
        elif stamped != actual:
            change.action = DRIFT
            change.details = ["edited in the CloudWatch console since gpudash wrote it; --force overwrites"] + \
                diff.cloudwatch_dashboard(live_body, desired_body)
        else:
            change.action, change.details = UPDATE, diff.cloudwatch_dashboard(live_body, desired_body)
        changes.append(change)
    return changes


# --- alarms ---------------------------------------------------------------------------------

def _comparable(alarm: dict[str, Any]) -> dict[str, Any]:
    """The fields PutMetricAlarm sets, as DescribeAlarms reports them."""
    keys = ("AlarmName", "AlarmDescription", "ActionsEnabled", "AlarmActions", "OKActions", "ComparisonOperator",
            "Threshold", "EvaluationPeriods", "DatapointsToAlarm", "TreatMissingData", "Namespace", "MetricName",
            "Statistic", "Period")
    result = {key: alarm[key] for key in keys if key in alarm}
    result.setdefault("DatapointsToAlarm", alarm.get("EvaluationPeriods"))
    for key in ("AlarmActions", "OKActions"):
        result[key] = sorted(result.get(key) or [])
    result["Threshold"] = float(result.get("Threshold", 0))
    if alarm.get("Dimensions"):
        result["Dimensions"] = sorted((d["Name"], d["Value"]) for d in alarm["Dimensions"])
    if alarm.get("Metrics"):
        result["Metrics"] = [(m.get("Id"), m.get("Expression"), m.get("Period"), m.get("ReturnData", True))
                             for m in alarm["Metrics"]]
    return result


def _live_alarms(cloudwatch: CloudWatch, region: str, prefix: str) -> dict[str, dict[str, Any]]:
    alarms: dict[str, dict[str, Any]] = {}
    token = None
    while True:
        kwargs = {"AlarmNamePrefix": prefix, "AlarmTypes": ["MetricAlarm"], "MaxRecords": 100}
        if token:
            kwargs["NextToken"] = token
        page = cloudwatch.call(region, "DescribeAlarms", f"CloudWatch alarms {prefix}* in {region}", **kwargs)
        alarms.update({a["AlarmName"]: a for a in page.get("MetricAlarms", [])})
        token = page.get("NextToken")
        if not token:
            return alarms


def plan_alarms(cloudwatch: CloudWatch, requests: list[dict[str, Any]], prefix: str) -> list[Change]:
    changes = []
    regions = sorted({item["Region"] for item in requests} or set())
    desired_by_region = {r: {i["Request"]["AlarmName"]: i["Request"] for i in requests if i["Region"] == r}
                         for r in regions}
    for region in regions:
        live = _live_alarms(cloudwatch, region, prefix + "-")
        tags = {name: cloudwatch.call(region, "ListTagsForResource", f"alarm {name}",
                                      ResourceARN=alarm["AlarmArn"]).get("Tags", [])
                for name, alarm in live.items()}
        for name, request in sorted(desired_by_region[region].items()):
            alarm = live.get(name)
            if alarm is None:
                changes.append(Change("cloudwatch", "alarm", name, CREATE, region=region))
                continue
            change = Change("cloudwatch", "alarm", name, UNCHANGED, region=region,
                            live={"arn": alarm["AlarmArn"], "tags": tags[name]})
            owned = MANAGED_TAG in tags[name]
            differences = diff.fields(_comparable(alarm), _comparable(request))
            missing_tags = [t for t in request.get("Tags", []) if t not in tags[name]]
            if not owned:
                change.action, change.details = FOREIGN, ["exists without the ManagedBy=gpudash tag; --force takes it over"]
            elif differences or missing_tags:
                change.action = UPDATE
                change.details = differences + [f"tag {t['Key']}={t['Value']}" for t in missing_tags]
            changes.append(change)
        for name, alarm in sorted(live.items()):
            if name not in desired_by_region[region] and MANAGED_TAG in tags[name]:
                changes.append(Change("cloudwatch", "alarm", name, DELETE, region=region,
                                      details=["managed by gpudash but no longer defined; --prune deletes it"]))
    return changes


def plan(cloudwatch: CloudWatch, desired) -> list[Change]:
    """Dashboards then alarms, for a publish.Desired."""
    return (plan_dashboards(cloudwatch, desired.cloudwatch_dashboards, desired.dashboard_regions)
            + plan_alarms(cloudwatch, desired.alarms, desired.alarm_prefix))


def apply(cloudwatch: CloudWatch, changes: list[Change], dashboards: dict[str, dict[str, Any]],
          requests: list[dict[str, Any]], *, force: bool, prune: bool, dry_run: bool,
          progress: Callable[[Change], None] = lambda change: None,
          max_prune_share: float = prune_guard.DEFAULT_MAX_SHARE) -> list[Outcome]:
    prune_guard.check(changes, prune=prune, force=force, max_share=max_prune_share)
    by_name = {(i["Region"], i["Request"]["AlarmName"]): i["Request"] for i in requests}
    outcomes = []
    for change in changes:
        progress(change)
        if change.action == UNCHANGED or (change.action == DELETE and not prune) or (change.blocked and not force) \
                or dry_run:
            outcomes.append(Outcome(change, done=False))
            continue
        region = change.region or "us-east-1"
        what = f"CloudWatch {change.kind} {change.name}"
        try:
            if change.kind == "dashboard":
                response = cloudwatch.call(region, "PutDashboard", what, **dashboards[change.name])
                messages = response.get("DashboardValidationMessages") or []
                if messages:
                    text = "; ".join(f"{m.get('DataPath', '')}: {m.get('Message', '')}" for m in messages)
                    raise RemoteError(f"CloudWatch accepted the dashboard with validation messages: {text}",
                                      where=what, hint="fix the definition; `gpudash lint` checks most of these")
            elif change.action == DELETE:
                cloudwatch.call(region, "DeleteAlarms", what, AlarmNames=[change.name])
            else:
                request = by_name[(region, change.name)]
                cloudwatch.call(region, "PutMetricAlarm", what, **request)
                if change.action != CREATE:
                    # PutMetricAlarm ignores Tags on update: reconcile them separately.
                    live_tags = (change.live or {}).get("tags", [])
                    missing = [t for t in request.get("Tags", []) if t not in live_tags]
                    if missing:
                        cloudwatch.call(region, "TagResource", what, ResourceARN=change.live["arn"], Tags=missing)
            outcomes.append(Outcome(change, done=True))
        except RemoteError as exc:
            outcomes.append(Outcome(change, done=False, error=str(exc)))
    return outcomes
