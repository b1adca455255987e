"""The CloudWatch dashboards and alarms as CloudFormation templates (one per cluster, split in parts when its own
resources pass CloudFormation's quotas, and one per Region of fleet alarms). Pure."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

from ..errors import InputError
from ..names import cluster_stack, logical_id, region_stack
from ..serialize import nested_json_size, nested_json_size_bound

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
FILL = 0.9  # a part is filled to this share of the quotas: the bytes of its resources are estimated, lint measures
QUOTA_FIX = (f"a cluster's resources are split over up to {MAX_PARTS} templates and a resource is not split (a "
             "Region's fleet alarms are one template): define fewer or smaller CloudWatch dashboards or alarms for it, "
             "or publish with `gpudash apply` (it writes each dashboard and alarm itself)")


# A resource of a template: (kind, name, resource, its bytes in the template (estimated for a dashboard; for the others
# at first an upper bound, measured where the bounds do not fit one template), its logical id)
Named = tuple[str, str, dict[str, Any], int, str]

# Where the build before put a cluster's resources: given the cluster's stack names by part (part 1 first), the
# {(kind, name): part} its templates of those names declared (output.PreviousParts reads them from the folder)
Placed = Callable[[list[str]], Mapping[tuple[str, str], int]]


_QUERY_KEYS = ("Id", "Expression", "MetricStat", "Period", "ReturnData", "Label")


def _alarm_properties(request: dict[str, Any]) -> dict[str, Any]:
    properties = _taken(request, _ALARM_KEYS)
    if "Metrics" in request:
        properties["Metrics"] = [_taken(query, _QUERY_KEYS) for query in request["Metrics"]]
    return properties


# (the keys wanted, the keys a request holds, in its order) -> those of the keys wanted it holds, in their order: the
# requests of one kind of alarm hold the same keys (1,000 clusters' 12,000 alarms, a few dozen key sets)
_TAKEN: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[str, ...]] = {}


def _taken(value: dict[str, Any], wanted: tuple[str, ...]) -> dict[str, Any]:
    """The items of `value` whose keys are `wanted`, in the order `wanted` lists them."""
    key = (wanted, tuple(value))
    keys = _TAKEN.get(key)
    if keys is None:
        keys = _TAKEN[key] = tuple(name for name in wanted if name in value)
    return dict(zip(keys, map(value.__getitem__, keys)))


def alarm_resource(request: dict[str, Any]) -> dict[str, Any]:
    """The template resource of an alarm's PutMetricAlarm request."""
    return {"Type": "AWS::CloudWatch::Alarm", "Properties": _alarm_properties(request)}


def templates(clusters: list[tuple[str, str]], dashboards: list[tuple[str, str, Any, Hashable | None]],
              alarms: list[dict[str, Any]], log_groups: list[tuple[str, str, int]] = (),
              project: str | None = None, placed: Placed | None = None,
              requests: dict[int, tuple[dict[str, Any], dict[str, Any]]] | None = None,
              alarm_bound: Callable[[dict[str, Any]], int | None] | None = None) -> dict[str, dict[str, Any]]:
    """{stack name: template}: one stack per cluster (names.cluster_stack), deployed in its Region, with its
    dashboards (global: any Region's stack may hold them), its alarms and its agent's log group; and one per Region
    holding fleet alarms (names.region_stack), named with the `project` when the settings name one (two projects of
    one account deploy stacks of their own). A stack's name and content depend on its cluster alone, so a fleet of
    any size deploys (one cluster of the bundled definitions: 16 resources, about 64 KB, where CloudFormation takes
    500 and 1,000,000 bytes) and a cluster added or removed moves no resource between stacks.

    `clusters` are (name, Region); `dashboards` (DashboardName, cluster, body, alike), the body data here (or a
    render.cloudwatch.PendingBody, which the template holds as it is, rendered only where it is measured):
    CloudFormation takes it as text, written (with its ownership stamp) when the template is encoded; bodies of one
    `alike` (not None) are written in as many bytes (one dashboard's in clusters of one Region whose names are plain
    and of one length), so one of them is measured. `alarms` are
    cloudwatch_alarms' requests, each per-cluster one naming its "Cluster". `log_groups` are the agent's EMF log
    groups (cluster, name, retention days): created with a retention, and kept when the stack goes (they hold the
    agent's data). `placed` reads where the build before put a cluster's resources (split_cluster); it is asked only
    for a cluster whose resources do not fit one template. `requests`, if given, receives each alarm resource and the
    request it was made from, by the resource's id (held, so no other object takes the id); `alarm_bound`, if given, gives the `nested_json_size_bound` of a
    cluster's alarm's resource from its request where it knows it (alarm_texts.AlarmTexts.bound: once per kind).
    """
    from .cloudwatch import rendered

    named: dict[str, list[Named]] = {cluster: [] for cluster, _ in clusters}
    # each cluster's resources, in template order: its dashboards, log group, alarms
    measured: dict[Hashable, int] = {}  # the bytes of the bodies of one `alike`
    for name, owner, body, alike in sorted(dashboards, key=lambda item: item[0]):
        size = measured.get(alike) if alike is not None else None
        if size is None:
            size = _body_bytes(rendered(body))
            if alike is not None:
                measured[alike] = size
        named[owner].append(("Dashboard", name, {
            "Type": "AWS::CloudWatch::Dashboard", "Properties": {"DashboardName": name, "DashboardBody": body}},
            size + len(name) + _DASHBOARD_AROUND, logical_id("Dashboard", name)))
    for owner, name, days in log_groups:
        group = {"Type": "AWS::Logs::LogGroup", "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
                 "Properties": {"LogGroupName": name, "RetentionInDays": days}}
        id_ = logical_id("LogGroup", name)
        named[owner].append(("LogGroup", name, group, _resource_bytes(id_, group, bound=True), id_))
    fleet: dict[str, list[Named]] = {}  # a Region's fleet alarms
    for item in alarms:
        cluster = item.get("Cluster")
        name = item["Request"]["AlarmName"]
        alarm = alarm_resource(item["Request"])
        if requests is not None:
            requests[id(alarm)] = (alarm, item["Request"])
        id_ = logical_id("Alarm", name)
        if cluster is not None:
            nested = alarm_bound(item["Request"]) if alarm_bound is not None else None
            named[cluster].append(("Alarm", name, alarm, _resource_bytes(id_, alarm, bound=True, nested=nested), id_))
        else:  # a Region's fleet alarms are one template, never split: not measured
            fleet.setdefault(item["Region"], []).append(("Alarm", name, alarm, 0, id_))
    result = {}
    for cluster, region in clusters:
        if not _fits(named[cluster]):  # over the quotas by the bounds of its alarms' and log group's bytes: measured
            named[cluster] = [item if item[0] == "Dashboard" else (*item[:3], _resource_bytes(item[4], item[2]),
                                                                    item[4]) for item in named[cluster]]
        parts = split_cluster(named[cluster], lambda: placed(
            [cluster_stack(cluster, project, part) for part in range(1, MAX_PARTS + 1)]) if placed else {})
        for part, items in enumerate(parts, 1):
            if not items:  # CloudFormation takes no template without resources: a part left empty (its resources
                continue  # gone from the definitions) is not written
            what = f"cluster {cluster} ({region})" + (f", part {part} of {len(parts)}" if len(parts) > 1 else "")
            result[cluster_stack(cluster, project, part)] = _template(what, region, items, cluster,
                                                                      part if len(parts) > 1 else None)
    result.update((region_stack(region, project), _template(f"fleet alarms of {region}", region, items))
                  for region, items in fleet.items())
    return dict(sorted(result.items()))


def split_cluster(named: list[Named], before: Callable[[], Mapping[tuple[str, str], int]] = dict) -> list[list[Named]]:
    """One cluster's resources in the templates it is deployed as (part 1 first; a part may be left empty): one while
    they are within CloudFormation's quotas for a template (FILL of them), else as many as they fill, up to MAX_PARTS.

    A resource moving between stacks is deleted by one stack's update and created by another's (an alarm comes back
    in INSUFFICIENT_DATA, a change made in the console is gone), and CloudFormation refuses to create it while another
    stack still declares it. So each resource stays in the part the build before gave it (`before()`: {(kind, name):
    part}, asked only when the resources do not fit one template) while that part holds it, the parts' earlier
    residents first, in template order; one its part no longer holds goes to the first LATER part with room, so
    deploying the parts in order (docs/artifacts.md's loop, by Metadata.gpudash.Part) deletes it before creating it; a
    new resource goes to the first part with room (first fit: dashboards, which are large, before alarms). The log group
    is always in part 1: the stack that lets it go keeps it (DeletionPolicy Retain), so no other could create it.
    Resources move only when their part is full or when they all fit one template again (then the stacks of the other parts
    are no longer written: generate says to delete them before deploying). Without a build before, the parts are
    filled in template order. A resource over a part's share alone (or the last of MAX_PARTS parts) is still placed:
    its template is over the quotas, which generate and `gpudash lint` (CF001) say CloudFormation refuses. Bytes
    are estimated (`Named`); lint measures the written templates."""
    if MAX_PARTS < 2 or _fits(named):
        return [named]
    where = before()
    parts: list[list[Named]] = [[]]
    sizes: list[list[int]] = [[0, 0]]  # each part's resources and estimated bytes

    def room(part: int, item: Named) -> bool:
        while len(parts) <= part:
            parts.append([])
            sizes.append([0, 0])
        count, size = sizes[part]
        return part == MAX_PARTS - 1 or not count or \
            (count < TEMPLATE_RESOURCES * FILL and size + item[3] <= TEMPLATE_BYTES * FILL)

    def put(part: int, item: Named) -> None:
        parts[part].append(item)
        sizes[part][0] += 1
        sizes[part][1] += item[3]

    going: list[tuple[int, Named]] = []  # (the first part it may go to, resource)
    for item in sorted(named, key=lambda item: item[0] != "LogGroup"):  # (a log group never moves: the stack that
        part = 0 if item[0] == "LogGroup" else where.get((item[0], item[1]), 0) - 1  # lets it go keeps it)
        if 0 <= part < MAX_PARTS and (item[0] == "LogGroup" or room(part, item)):
            put(part, item)
        else:
            going.append((part + 1 if 0 <= part < MAX_PARTS else 0, item))
    for part, item in going:
        while not room(part, item):
            part += 1
        put(part, item)
    order = {id(item): index for index, item in enumerate(named)}
    return [sorted(items, key=lambda item: order[id(item)]) for items in parts]


def _fits(named: list[Named]) -> bool:
    """Whether resources fit one template within FILL of CloudFormation's quotas, their bytes estimated: any number
    of resources may pass the bytes (a dashboard's body is up to hundreds of KB, an alarm 1-4 KB)."""
    return len(named) <= TEMPLATE_RESOURCES * FILL and sum(item[3] for item in named) <= TEMPLATE_BYTES * FILL


# What a dashboard's resource adds to its name and body in a template: its keys, type, indents and ownership stamp
_DASHBOARD_AROUND = 300


def _body_bytes(body: Any) -> int:
    """The bytes of a dashboard's body in a template: its text (`body`, or about its compact JSON) in a JSON string,
    each quote and backslash escaped again."""
    if isinstance(body, str):
        return len(body) + body.count('"') + body.count("\\") + 2
    return _size(body, 2)


def _resource_bytes(logical_id_: str, resource: dict[str, Any], bound: bool = False, nested: int | None = None) -> int:
    """The bytes of a resource in a template, as its file writes them: its key (`"<logical id>": `, indented at its
    depth, under "Resources"), its value there, then `,` and a line break. With `bound`, at least that, worked out at a
    third of the cost: a cluster's resources mostly fit one template by far (16 of 500, 64 KB of 1,000,000), and only
    those of a cluster they do not show fitting are measured exactly (templates). `nested`: the value's size at its
    depth, known already."""
    if nested is None:
        nested = (nested_json_size_bound if bound else nested_json_size)(resource, RESOURCE_DEPTH)
    return 2 * RESOURCE_DEPTH + len(logical_id_) + 4 + nested + 2


RESOURCE_DEPTH = 2  # a template's resources are the values of "Resources"' keys


def _size(value: Any, escaped: int = 1) -> int:
    """About the length of `value` written as compact JSON, each quote and backslash in it `escaped` times longer
    (2: the text again in a JSON string). Texts, dicts and lists (most of a body) are told by their exact type, a text
    item measured where its dict or list is read; anything else as the isinstance checks tell it."""
    quotes, grown = 2 * escaped, 2 * escaped - 1  # a text's quotes; what each quote or backslash in it adds

    def size(value: Any) -> int:
        kind = type(value)
        if kind is str:
            return len(value) + quotes + (value.count('"') + value.count("\\")) * grown
        if kind is dict or (kind is not list and kind is not tuple and isinstance(value, dict)):
            total = 2
            for key, item in value.items():
                total += len(key if type(key) is str else str(key)) + quotes + 2
                if type(item) is str:
                    total += len(item) + quotes + (item.count('"') + item.count("\\")) * grown
                else:
                    total += size(item)
            return total
        if kind is list or kind is tuple or isinstance(value, (list, tuple)):
            total = 2
            for item in value:
                if type(item) is str:
                    total += len(item) + quotes + (item.count('"') + item.count("\\")) * grown + 1
                else:
                    total += size(item) + 1
            return total
        if isinstance(value, str):
            return len(value) + quotes + (value.count('"') + value.count("\\")) * grown
        return len(str(value))

    return size(value)


def _template(what: str, region: str, named: list[Named],
              cluster: str | None = None, part: int | None = None) -> dict[str, Any]:
    """A template; its Metadata says the Region to deploy it in (and its cluster, and its part when the cluster's
    resources are split over several), which docs/artifacts.md's loop reads."""
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": f"gpudash GPU dashboards and alarms, {what}; generated, do not edit by hand.",
        "Metadata": {"gpudash": {"Region": region, **({"Cluster": cluster} if cluster is not None else {}),
                                 **({"Part": part} if part is not None else {})}},
        "Resources": _by_logical_id(named),
    }


def _by_logical_id(named: list[Named]) -> dict[str, dict[str, Any]]:
    """Resources under their logical ids (names.logical_id: a function of the kind and name alone, so that adding,
    removing or moving other resources changes none)."""
    resources: dict[str, dict[str, Any]] = {}
    names: dict[str, str] = {}
    for _, name, resource, _, id_ in named:
        if id_ in resources:  # two names of one kind whose ids meet (a name ending in the digest another's id has)
            raise InputError(f"CloudFormation resources {names[id_]!r} and {name!r} would have one logical id in one "
                             f"template, {id_}", hint="rename the pod, cluster, alarm or dashboard one of them is named "
                             "after")
        resources[id_], names[id_] = resource, name
    return resources
