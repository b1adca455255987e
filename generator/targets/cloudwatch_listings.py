"""Whether a CloudWatch listing (ListDashboards, DescribeAlarms by name prefix) holds every object the plan reads by
name, before it is believed to show what --prune may delete: listed again while it may lag a write (relisting.py). The
first listing that holds every such object is the one the plan goes on with; when none does, the listing holds only
some of the objects (something standing in for CloudWatch, or a listing further behind), and a prune is refused.
"""

from __future__ import annotations

from typing import Any

from ..clients.cloudwatch import BATCH, CloudWatch
from ..errors import RemoteError
from ..names import alarm_name_start, cloudwatch_dashboard_name_start, is_alarm_name, shown as shown_names
from .relisting import ONCE, RELIST_WAITS, listed_again, listings


def dashboards_listed(cloudwatch: CloudWatch, region: str, prefix: str, listed: list[str], read: list[str],
                      prune: bool) -> list[str]:
    """The ListDashboards listing (by the name prefix) to go on with, given the first (`listed`) and the dashboards
    these settings define that GetDashboard read (`read`). One that holds only some of them fails the plan with
    `prune` (nothing written); else it is noted (--prune being what the listing is read for), after one listing
    again."""
    start = cloudwatch_dashboard_name_start(prefix)
    missing = [name for name in read if name not in set(listed)]
    if not missing:
        return listed
    hint = (f"run again in a minute; if it repeats, list them (aws cloudwatch list-dashboards --dashboard-name-prefix "
            f"{start}) and check the endpoint (AWS_ENDPOINT_URL, --endpoint-url)")

    def failure(names: list[str], count: int) -> RemoteError:
        return RemoteError(f"{said(names, count)}: what --prune would delete cannot be read",
                           where=f"CloudWatch dashboards in {region}",
                           hint=f"{hint}; apply without --prune publishes meanwhile")

    def said(names: list[str], count: int) -> str:
        return (f"ListDashboards answered {len(listed)} dashboard(s) named {start}*, leaving out {len(names)} that "
                f"GetDashboard reads{_or_listed(names, read)} ({shown_names(names)}), {listings(count)}: its answer "
                "holds only some of the dashboards (something standing in for CloudWatch, or a listing behind them), "
                "so one gpudash published that is no longer defined may be missing from it too")

    waits = RELIST_WAITS if prune else ONCE
    missing, again = listed_again(cloudwatch.deadline, missing, lambda: set(cloudwatch.dashboard_names(region, start)),
                                  failure, waits, held=[*listed, *read],
                                  still=lambda names: [name for name in names
                                                       if cloudwatch.dashboard_body(region, name) is not None])
    if not missing:
        return sorted(again)
    if prune:
        raise failure(missing, len(waits))
    cloudwatch.note(f"{said(missing, len(waits))}; apply --prune fails on it until it lists them: {hint}")
    return listed


def alarms_listed(cloudwatch: CloudWatch, region: str, prefix: str, live: dict[str, dict[str, Any]],
                  expected: set[str]) -> dict[str, dict[str, Any]]:
    """The DescribeAlarms listing (by the name prefix) to go on with, given the first (`live`: name -> alarm, gpudash's
    names only) and the alarms it should hold (`expected`: those these settings define, and those the tag listing
    shows carrying the project's tag): those it does not hold (to be created, or a listing that ends before them) are
    read by name, BATCH at a time (one read per 100, made for --prune and `plan` only). One that reads shows a listing
    that holds only some of the alarms, unless a listing again holds it: a failure, nothing written."""
    start = alarm_name_start(prefix)
    unlisted = sorted(expected - set(live))
    found = _there(cloudwatch, region, unlisted)
    if not found:
        return live

    def failure(names: list[str], count: int) -> RemoteError:
        return RemoteError(
            f"DescribeAlarms answered {len(live)} alarm(s) named {start}*, leaving out {len(names)} that "
            f"DescribeAlarms by name reads{_or_listed(names, found)} ({shown_names(sorted(names))}), "
            f"{listings(count)}: its answer holds only some of the alarms (something standing in for CloudWatch, or a "
            "listing behind them), so one gpudash published that is no longer defined may be missing from it too: what "
            "--prune would delete cannot be read",
            where=f"CloudWatch alarms in {region}",
            hint=f"run again in a minute; if it repeats, list them (aws cloudwatch describe-alarms --region {region} "
                 f"--alarm-name-prefix {start}) and check the endpoint (AWS_ENDPOINT_URL, --endpoint-url); apply "
                 "without --prune publishes meanwhile")

    missing, again = listed_again(cloudwatch.deadline, found, lambda: cloudwatch.metric_alarms(region, prefix=start),
                                  failure, held=list(live), still=lambda names: _there(cloudwatch, region, names))
    if missing:
        raise failure(missing, len(RELIST_WAITS))
    return {name: alarm for name, alarm in again.items() if is_alarm_name(prefix, name)}


def _or_listed(names: list[str], read: list[str]) -> str:
    """What shows the objects named exist besides a read by name: an earlier listing that held them."""
    return "" if set(names) <= set(read) else " or an earlier listing held"


def _there(cloudwatch: CloudWatch, region: str, names: list[str]) -> list[str]:
    """Those of these alarms that DescribeAlarms by name reads, BATCH at a time."""
    return [name for first in range(0, len(names), BATCH)
            for name in cloudwatch.metric_alarms(region, names=names[first:first + BATCH])]
