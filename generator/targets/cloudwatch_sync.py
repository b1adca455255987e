"""Plan and apply CloudWatch: dashboards and alarms, written only when they differ, paced, never
touching what gpudash does not own, never reverting a console edit without --force.

Each Region is planned and applied in its own thread under its own pacing, so a fleet spread over
Regions takes as long as its largest Region. Dashboards are global in CloudWatch (each Region's
endpoint lists and serves the account's one set): they are planned and applied once, through the
first Region's endpoint, whatever Region their widgets read. Dashboards named in gpudash's form but no longer
defined are found with ListDashboards (the configured prefix, every page; for a prune, and a plan, which shows
one, each cluster's names are listed too, and a dashboard only they list fails the plan) and are this project's to
prune only when their header carries the hash stamp of their own name, this project and their body;
alarms only when they carry this project's tag. Without a project named in the settings, nothing is
pruned: nothing tells two gpudash projects in one account apart. The plan's reads are bulk: DescribeAlarms
pages of 100 and one Resource Groups Tagging API GetResources page per 100 owned alarms (only alarms
it does not vouch for are read one by one); alarms are deleted one per DeleteAlarms call (`DELETE_GROUP`), each
read just before its own call.

Just before writing, what is written is read again: an object that appeared or changed since the
plan is not overwritten. An alarm is written or deleted only on fresh evidence: its tags (ownership
and hash, read for the batch with one GetResources call by ARN, and alarm by alarm where that answer does not
show an alarm as the plan read it) and then its fields, read again right before its batch's writes (and once more
by itself as the last call before its own write, with no pacing wait between: an alarm the plan found, its own tags,
then its fields; one to create, its fields), or its fields and then its own tags (the ownership read last) right
before its own DeleteAlarms call, still as the plan read them. Each
alarm written is read back at once, before the next write, to learn the form CloudWatch reports it
in; each dashboard written, and what each delete removed, is read again too. A write or delete that is
not read back done (an answer of `{}` proves nothing) is a failure, and no evidence is tagged for it.
CloudWatch has no conditional write or delete: what changes after that last read is not seen.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from .. import composite_rules, diff
from ..clients.cloudwatch import BATCH, LOOKED, CloudWatch, NotResent, answer_hint, answer_lost, other_kind
from ..clients.deadline import NOT_STARTED, UNDER_WAY, DeadlineExceeded, sent_then_stopped
from ..changes import (CREATE, DELETE, DONE, DRIFT, FAILED, FOREIGN, HELD, KEPT, SKIPPED, UNCHANGED, UPDATE,
                       WOULD_WRITE, WRITE, Change, Outcome, disposition)
from ..errors import MAY_HAVE_HAPPENED, RemoteError
from ..markers import (ALARM_CLUSTERS_TAG, ALARM_HASH_TAG, ALARM_OWNER_TAG, ALARM_OWNER_TEXT, ALARM_PROJECT_TAG,
                       ALARM_RULE_TAG)
from ..model import SEVERITIES
from ..render.alarms import MIG_SUFFIX, WHOLE_SUFFIX
from ..names import (alarm_name_start, cloudwatch_dashboard_name, cloudwatch_dashboard_name_start, cluster_tail,
                     clusters_named, is_alarm_name, is_cloudwatch_dashboard_name, name_tails, names_cluster,
                     shown as shown_names)
from ..ownership import (OLDER, OTHER, OURS, UNMODELLED, UNVOUCHED, Record, alarm_fields, alarm_hash, alarm_owned,
                         alarm_project, alarm_publication, alarm_tags, as_reported, dashboard_publication,
                         keeping_marks, lineage, marks_intact, publication_tags, published_elsewhere,
                         read_alarm_evidence, read_cloudwatch_stamp, renamed_evidence, same_but_publication,
                         same_publication_kind, legacy_alarm_hash, tags_of_others, unconfirmed, unknown_settings,
                         written_as_is, evidence_current)
from ..serialize import compact_json
from . import prune_guard
from .since_plan import UNREAD, made_since
from .cloudwatch_listings import alarms_listed, dashboards_listed
from .progress import Progress, Silent

READERS = 4  # dashboards read at once per Region
# Alarms deleted per DeleteAlarms call: one. Its own tags are the last read before its DeleteAlarms, one round trip
# old when the delete goes (in a group of 3 the first alarm's were two tag reads old, up to a second of pacing; in a
# batch of 100, 33 s). DeleteAlarms' quota (3 a second) is ListTagsForResource's pace: the prune takes the time of its
# tag reads, as before.
DELETE_GROUP = 1
EDITED = "edited in the CloudWatch console since gpudash wrote it (live → generated below); --force overwrites"
MARKS_EDITED = (f"its {ALARM_CLUSTERS_TAG}, {ALARM_PROJECT_TAG} or {ALARM_RULE_TAG} tag was changed since gpudash "
                f"wrote it (they say which settings published it and for which rule; the hash in {ALARM_HASH_TAG} "
                "covers them), so nothing shows which settings own it")
EDITED_OR_OTHER = ("edited in the CloudWatch console since gpudash wrote it, or written by another project "
                   "(live → generated below); --force overwrites")
Tick = Callable[[], None]
# Why gpudash writes no alarm under a name an alarm of another kind (a composite or log alarm) holds, --force or not:
# it writes metric alarms alone, and what PutMetricAlarm does with another kind's name is not documented (CloudWatch
# keeps one alarm of a name)
NOT_OVER_OTHER_KINDS = "gpudash writes metric alarms alone, never over another kind of alarm, --force or not"
HELD_FIX = ("rename that alarm (make it again under another name, then delete this one), or give these settings' "
            "alarms another alarms.name_prefix")


# Why an alarm no longer defined that a composite alarm depends on is not deleted, and what frees it
NOT_UNDER_COMPOSITES = ("CloudWatch deletes no alarm a composite alarm's rule names, and gpudash none a composite "
                        "alarm holds its actions by (its actions suppressor), --force or not")
KEPT_FIX = ("change that composite alarm's rule or actions suppressor so that it no longer names this alarm (or delete "
            "that composite alarm): --prune deletes it then")


def _holds(kind: str) -> str:
    return f"a {kind} holds this name"


def _held_since(kind: str) -> str:
    """Why a last look before a write or delete stops it: an alarm of another kind made under its name since the
    plan."""
    return f"{_holds(kind)}, made by someone else since the plan: {NOT_OVER_OTHER_KINDS}"


def _unknown_to_botocore(alarm: dict[str, Any], overwrites: str) -> str | None:
    """Why nothing shows whether a person edited `alarm` (not as gpudash's evidence has it): CloudWatch lists members
    of it that the installed botocore does not know (a setting added since), whose values no evidence covers; None when
    it lists none. `overwrites`: what --force does to it."""
    from botocore import __version__ as botocore_version

    unknown = sorted(unknown_settings(alarm))
    if not unknown:
        return None
    shown = ", ".join(unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")
    return (f"cannot tell whether a person edited it: CloudWatch lists {shown} for it, which botocore "
            f"{botocore_version} does not know (a setting CloudWatch added since, perhaps set in the console, which "
            f"PutMetricAlarm would reset); update boto3 and botocore (pip install -U boto3 botocore); {overwrites}")


def _unproven(cloudwatch: CloudWatch) -> str:
    """The fix for a write a read-back did not confirm, naming the endpoint as the user gave it."""
    return f"run `gpudash plan` and apply again; if it persists, check what answers at {cloudwatch.endpoint_name}"


def _locked(tick: Tick) -> Tick:
    """A progress tick that several Region threads may call."""
    import threading

    lock = threading.Lock()

    def locked() -> None:
        with lock:
            tick()
    return locked


def _parallel(regions: list[str], work: Callable[[str], list]) -> list:
    """`work(region)` for every Region at once; results in Region order; the first error is raised."""
    if len(regions) <= 1:
        return [item for region in regions for item in work(region)]
    with ThreadPoolExecutor(max_workers=len(regions), thread_name_prefix="gpudash-region") as pool:
        futures = [pool.submit(work, region) for region in regions]
        return [item for future in futures for item in future.result()]


# --- planning -------------------------------------------------------------------------------

def _plan_dashboard(name: str, region: str, desired_body: dict[str, Any], live_body: dict[str, Any] | None,
                    project: str, own: frozenset[str] = frozenset(), stamp=read_cloudwatch_stamp) -> Change:
    """Compare the stamped body of the set with the live one (both data: the live one parsed once from
    GetDashboard's answer). `own`: these settings' clusters and those they had (--renamed-from, --removed-cluster):
    a dashboard as generated whose header records another list sharing one of them is written again to record
    these settings' (so that after a split, each file's objects record that file alone)."""
    if live_body is None:
        return Change("cloudwatch", "dashboard", name, CREATE, region=region, live={"body": None})
    proof = stamp(live_body, name, project)
    change = Change("cloudwatch", "dashboard", name, UNCHANGED, region=region, live={"body": live_body})
    if live_body == desired_body:
        pass
    elif proof == OURS and same_but_publication(live_body, desired_body):
        recorded, wanted = dashboard_publication(live_body), dashboard_publication(desired_body)
        if _rerecord(recorded, wanted, own):
            change.action = UPDATE
            change.details = [f"record the clusters of these settings: {' '.join(sorted(wanted or ()))} (it records "
                              f"{' '.join(sorted(recorded or ()))})"]
    elif proof is None:
        change.action, change.details = FOREIGN, ["exists and was not written by gpudash; --force replaces it"]
    elif proof == OTHER:
        change.action = DRIFT
        change.details = [EDITED_OR_OTHER] + diff.cloudwatch_dashboard(live_body, desired_body)
    else:
        change.action, change.details = UPDATE, diff.cloudwatch_dashboard(live_body, desired_body)
        if proof == OLDER:
            change.details.insert(0, "written by an older gpudash, whose stamp named no project: rewritten with "
                                     "this project's")
    return change


def _plan_alarm(name: str, region: str, request: dict[str, Any], alarm: dict[str, Any] | None,
                tags: list[dict[str, str]], project: str = "", clusters: tuple[str, ...] = (),
                former: tuple[str, ...] = ()) -> Change:
    """`former`: clusters these settings had before they renamed them (--renamed-from): an alarm recorded with
    one of them is these settings', and is written with the names they have now."""
    if alarm is None:
        return Change("cloudwatch", "alarm", name, CREATE, region=region, live={"fields": None})
    live_fields, wanted = alarm_fields(alarm), alarm_fields(request)
    reported = alarm_hash(alarm)
    change = Change("cloudwatch", "alarm", name, UNCHANGED, region=region,
                    live={"arn": alarm["AlarmArn"], "tags": tags, "fields": live_fields, "hash": reported})
    # (CloudWatch's own form is no edit; members botocore does not know are said apart, where they decide)
    differences = diff.fields({key: value for key, value in live_fields.items() if key != UNMODELLED},
                              as_reported(wanted, live_fields))
    written, then = read_alarm_evidence(tags)
    as_written = written_as_is(then, alarm, request)  # nobody changed it since gpudash wrote it
    named = alarm_project(tags)
    if not alarm_owned(tags):
        change.action, change.details = FOREIGN, [f"exists without the {ALARM_OWNER_TEXT} tag; --force takes it over"]
    elif named is not None and named != project:  # another project's alarm of the same name: never retagged
        change.action, change.details = FOREIGN, [
            f"belongs to gpudash project {named!r} ({ALARM_PROJECT_TAG}), not "
            f"{repr(project) if project else 'these settings (they name no project)'}; --force takes it over"]
    elif marks_intact(tags) is False:  # a person rewrote which settings published it: ownership moves nowhere
        change.action, change.details = DRIFT, [MARKS_EDITED + "; --force writes them again"] + differences
    elif not (differences or UNMODELLED in live_fields) or (as_written and written == alarm_hash(request)):
        # As generated (perhaps in CloudWatch's own form): at most the evidence is restored.
        change.live["as_generated"] = True
        change.live["renamed"] = _renamed(alarm_publication(tags), clusters, former)
        missing_tags = _evidence_to_restore(request, tags, reported, change.live["renamed"])
        if missing_tags:
            change.action, change.details = UPDATE, [f"tag {t['Key']}={t['Value']}" for t in missing_tags]
    elif clusters and published_elsewhere(alarm_publication(tags), frozenset(clusters + former)):
        # other settings of this project define it too (a fleet-scope rule, or a name two clusters' alarms
        # share) and wrote it last, with none of these settings' clusters: theirs, not overwritten silently
        recorded = sorted(alarm_publication(tags) or ())
        change.action = FOREIGN
        change.details = [f"published by other settings{f' of project {named!r}' if named else ''} (clusters "
                          f"{' '.join(recorded)}, none of these settings'), which define it otherwise; left as they "
                          f"wrote it. {renamed_hint(recorded)}; --force overwrites it"] + differences
    elif as_written:
        change.action, change.details = UPDATE, differences
    elif then is None:
        change.action = DRIFT
        change.details = [f"no {ALARM_HASH_TAG} tag to show it is as gpudash wrote it (live → generated below); "
                          "--force overwrites"] + differences
    elif unknown := _unknown_to_botocore(alarm, "--force overwrites"):
        change.action, change.details = DRIFT, [unknown] + differences
    else:
        change.action, change.details = DRIFT, [EDITED] + differences
    return change


def _plan_held(name: str, region: str, alarm: dict[str, Any]) -> Change:
    """An alarm these settings define whose name an alarm of another kind holds (a composite alarm, shown with its
    rule; a log alarm, with its query): refused, --force too (changes.HELD)."""
    query = alarm.get("ScheduledQueryConfiguration")
    what, text = ("rule", alarm.get("AlarmRule")) if query is None else (
        "query", query.get("QueryString") if isinstance(query, dict) else None)
    shown = f" (its {what}: {composite_rules.clipped(text)})" if isinstance(text, str) else ""
    return Change("cloudwatch", "alarm", name, HELD,
                  [f"{_holds(other_kind(alarm))}{shown}: {NOT_OVER_OTHER_KINDS}; {HELD_FIX}"], region=region)


def _kept_by_composites(cloudwatch: CloudWatch, region: str, changes: list[Change]) -> None:
    """Each alarm to prune that a composite alarm's rule names (read from every composite alarm in the Region, where
    there is one to prune) becomes KEPT, naming the composite alarms: CloudWatch would refuse its delete."""
    retired = [c for c in changes if c.action == DELETE]
    composites = cloudwatch.composite_alarms(region) if retired else {}
    for change in retired:
        parents, said = composite_rules.dependence(composites, change.name, (change.live or {}).get("arn"))
        if parents:
            change.action, change.edited = KEPT, False
            change.live = {**(change.live or {}), "parents": parents}
            change.details = [f"no longer defined, but {said}: {NOT_UNDER_COMPOSITES}; {KEPT_FIX}"]


def _renamed(publication: frozenset[str] | None, clusters: tuple[str, ...], former: tuple[str, ...]) -> bool:
    """Whether an alarm of these settings records another list of clusters that shares one with them or with
    those they had (--renamed-from, --removed-cluster): its clusters tag is then written with their list now."""
    wanted = alarm_publication(publication_tags(clusters))
    return _rerecord(publication, wanted, frozenset(clusters + former))


def _rerecord(recorded: frozenset[str] | None, wanted: frozenset[str] | None, own: frozenset[str]) -> bool:
    """Whether an object records a list of clusters other than `wanted` (these settings', as recorded) that shares
    one with `own` (theirs now and before): an earlier version of these settings published it (or the file these
    were split from), and it is written again to record these settings. A list sharing none is another file's.
    Only a list that holds all of these settings' clusters (the file these were split from, or a cluster removed)
    or that these settings' clusters hold (a cluster added, or renamed with --renamed-from) is rewritten: two files
    that both define a cluster, each with one the other does not (alpha and beta, beta and gamma), would otherwise
    take turns rewriting the shared cluster's objects at every apply; the first to write them keeps them."""
    return (recorded is not None and wanted is not None and recorded != wanted and bool(recorded & own)
            and (wanted <= recorded or recorded <= own))


def _partly(publication: frozenset[str] | None, own: frozenset[str]) -> bool:
    """Whether an object no longer defined (and not another file's by its record) records clusters these settings
    (with those they had) do not all define: an earlier version of them published it, or the file they were split
    from, whose other part may define the rest now (and may have recorded it as its own already, while these
    settings' objects still record both). Pruned only on positive evidence: --removed-cluster (or --renamed-from)
    for the rest."""
    return publication is not None and not publication <= own


def renamed_hint(recorded) -> str:
    """How the settings that published objects with the clusters `recorded` and renamed them since take them back."""
    flags = " ".join(f"--renamed-from {name}" for name in sorted(recorded)[:3])
    return (f"If these settings published it with those clusters and renamed them since, `gpudash apply {flags}` "
            f"takes it back (`gpudash plan {flags}` shows what it does; with --prune it retires the old clusters' "
            "objects)")


def _plan_retired(name: str, region: str, alarm: dict[str, Any], tags: list[dict[str, str]]) -> Change:
    """An owned alarm no longer defined: deleted with --prune, and with --force too if a person edited it
    (its fields, the marks that say which settings published it, or a tag of their own added) or nothing shows
    that gpudash wrote it as it is (no hash tag: the owner tag alone may have been added by hand)."""
    live = {"arn": alarm["AlarmArn"], "tags": tags, "fields": alarm_fields(alarm)}
    then = read_alarm_evidence(tags)[1]
    if marks_intact(tags) is False:
        return Change("cloudwatch", "alarm", name, DELETE, region=region, live=live, edited=True, details=[
            f"no longer defined here, but {MARKS_EDITED}: it may be another settings file's; --prune --force "
            "deletes it"])
    if then is None:
        return Change("cloudwatch", "alarm", name, DELETE, region=region, live=live, edited=True, details=[
            f"no longer defined, and no {ALARM_HASH_TAG} tag shows gpudash wrote it as it is (the "
            f"{ALARM_OWNER_TAG['Key']} tag alone may have been added by hand); --prune --force deletes it"])
    as_written = written_as_is(then, alarm)  # (hashes each documented form of the alarm: once)
    if then == legacy_alarm_hash(alarm) and not as_written:
        return Change("cloudwatch", "alarm", name, DELETE, region=region, live=live, edited=True, details=[
            f"no longer defined, and its {ALARM_HASH_TAG} tag, written by a gpudash release that hashed no query "
            "label, cannot show its queries' labels and accounts are as gpudash wrote them; --prune --force deletes it"])
    if not as_written:
        unknown = _unknown_to_botocore(alarm, "--prune --force deletes it")
        return Change("cloudwatch", "alarm", name, DELETE, region=region, live=live, edited=True, details=[
            f"no longer defined, but {unknown}" if unknown else
            "no longer defined, but edited in the CloudWatch console since gpudash wrote it; "
            "--prune --force deletes it"])
    if tags_of_others(tags):
        return Change("cloudwatch", "alarm", name, DELETE, region=region, live=live, edited=True, details=[
            f"no longer defined, but it carries tags gpudash does not write ({_shown_tags(tags_of_others(tags))}), "
            "added since gpudash wrote it by a person or another tool; --prune --force deletes it"])
    return Change("cloudwatch", "alarm", name, DELETE, region=region, live=live,
                  details=["managed by gpudash but no longer defined; --prune deletes it"])


def _plan_retired_dashboard(name: str, region: str, body: dict[str, Any] | None, project: str,
                            older: list[str], clusters: frozenset[str] = frozenset(),
                            elsewhere: list[str] | None = None, unrecorded: Callable[[str], bool] | None = None,
                            own: frozenset[str] | None = None, partly: list[str] | None = None,
                            stamp=read_cloudwatch_stamp) -> Change | None:
    """A dashboard no longer defined: pruned only when its stamp proves it is this project's, written
    under this name and unchanged since, by these settings (published with a cluster of their lineage,
    `clusters`); None otherwise: never touched. One an older gpudash wrote, whose stamp names no project,
    is added to `older`: it may be another project's, so it stays; one other settings of this project
    published, to `elsewhere`. One whose header names no clusters (written before they were recorded) is
    pruned only when `unrecorded(name)` is False (see `_unrecorded`). One recording clusters of which these settings
    (`own`, with those they had) define only some, to `partly` (see `_partly`)."""
    proof = stamp(body, name, project) if body is not None and project else None
    if proof == OLDER:
        older.append(name)
    if proof != OURS:
        return None
    publication = dashboard_publication(body)
    if published_elsewhere(publication, clusters):
        if elsewhere is not None:
            elsewhere.append(name)
        return None
    if publication is None and unrecorded is not None and unrecorded(name):
        return None
    if own is not None and _partly(publication, own):
        if partly is not None:
            partly.append(name)
        return None
    return Change("cloudwatch", "dashboard", name, DELETE, region=region, live={"body": body},
                  details=[f"written by gpudash for project {project} but no longer defined; --prune deletes it"])


def _read_dashboard_tags(cloudwatch: CloudWatch, region: str, name: str) -> list[dict[str, str]] | RemoteError:
    """A dashboard's tags, or the failure that kept them from being read (the deadline is no answer: raised); [] for
    one gone since it was read (its delete then finds it gone)."""
    try:
        return cloudwatch.dashboard_tags(region, name) or []
    except DeadlineExceeded:
        raise
    except RemoteError as exc:
        return exc


def _people_s_tags(tags: list[dict[str, str]]) -> list[dict[str, str]]:
    """A dashboard's tags a person or another tool put on it: gpudash writes none on a dashboard."""
    return tags_of_others(tags, ours=frozenset())


def _judge_dashboard_tags(change: Change, tags: list[dict[str, str]] | RemoteError) -> None:
    """Record on a retired dashboard's delete the tags the plan read (UNREAD where it could not), and make it need
    --force where a person's tag is on it, or where its tags could not be read: its stamp covers its body alone, and
    DeleteDashboards takes its tags with it. A read that fails is never "no tags"."""
    if isinstance(tags, RemoteError):
        change.live["tags"] = UNREAD
        change.edited = True
        change.details.append(f"its tags could not be read ({tags.what}): a person's tags on it would go with it; "
                              "--prune --force deletes it (grant cloudwatch:ListTagsForResource on dashboards, "
                              "arn:aws:cloudwatch::ACCOUNT:dashboard/*, to have them read)")
        return
    change.live["tags"] = sorted(map(_tag_pair, tags))
    if _people_s_tags(tags):
        change.edited = True
        change.details.append(f"it carries tags gpudash does not write ({_shown_tags(_people_s_tags(tags))}), added "
                              "since gpudash wrote it by a person or another tool; --prune --force deletes it")


def _tags_as_planned(cloudwatch: CloudWatch, region: str, change: Change) -> None:
    """The look right before a retired dashboard's DeleteDashboards (since_plan): its tags read again, or it is not
    deleted where they show a person's tag the plan did not (--force agrees to what the plan showed, not to a tag put
    on it since), or where they cannot be read now and the plan read them."""
    planned = (change.live or {}).get("tags")
    if planned is None:  # (planned without --prune: no delete)
        return
    tags = _read_dashboard_tags(cloudwatch, region, change.name)
    added = made_since(planned, None if isinstance(tags, RemoteError) else sorted(map(_tag_pair, _people_s_tags(tags))))
    if added == UNREAD:
        raise _not_overwritten(change, f"its tags, read right before the delete, could not be read ({tags.what})")
    if added and planned == UNREAD:
        raise _not_overwritten(change, f"it carries tags gpudash does not write ({_shown_tags(_people_s_tags(tags))})")
    if added:
        raise _not_overwritten(change, f"its tags changed since the plan (now: {_shown_tags(tags)})")


def _alarms_shown(body: dict[str, Any]) -> set[str] | None:
    """The alarms (ARNs) a dashboard shows: an alarm status widget's `alarms`, and a graph's alarm annotation
    (`annotations.alarms`), as the console's "Add to dashboard" of an alarm writes them. None for a body CloudWatch
    keeps none of (PutDashboard refuses it): no widgets array (every body holds one, if empty), widgets not a list of
    objects, properties or annotations not objects, alarms not a list of ARNs. Something else answered, and what it
    shows is not "no alarm"."""
    shown: set[str] = set()
    widgets = body.get("widgets")
    if not isinstance(widgets, list):
        return None
    for widget in widgets:
        properties = widget.get("properties", {}) if isinstance(widget, dict) else None
        annotations = properties.get("annotations", {}) if isinstance(properties, dict) else None
        if not isinstance(annotations, dict):
            return None
        for arns in (properties.get("alarms", []), annotations.get("alarms", [])):
            if not isinstance(arns, list) or not all(isinstance(arn, str) for arn in arns):
                return None
            shown.update(arns)
    return shown


def _dashboards_showing(cloudwatch: CloudWatch, region: str) -> dict[str, set[str]] | RemoteError:
    """Every dashboard of the account that shows an alarm (read through `region`'s endpoint: dashboards are global),
    with the alarms it shows; the failure that kept one from being read (the deadline is no answer: raised). A body
    is read only where the listing's stamp differs from the one listed before its last read (the look right before
    the deletes reads again what changed since the plan, not every dashboard of the account)."""
    memo = cloudwatch.alarms_on_dashboards
    try:
        stamps = cloudwatch.dashboard_stamps(region, "")
        names = [name for name, stamp in stamps.items() if stamp is None or memo.get(name, (None,))[0] != stamp]
        with ThreadPoolExecutor(max_workers=READERS, thread_name_prefix="gpudash-read") as pool:
            bodies = list(pool.map(lambda name: cloudwatch.dashboard_body(region, name), names))
    except DeadlineExceeded:
        raise
    except RemoteError as exc:
        return exc
    read = {name: _alarms_shown(body) for name, body in zip(names, bodies) if body is not None}
    odd = next((name for name, shown in read.items() if shown is None), None)
    if odd is not None:  # (CloudWatch keeps no such body: something else answered)
        return RemoteError(f"CloudWatch answered GetDashboard in {region} with a body whose widgets are not as "
                           "CloudWatch keeps them (a list of objects, each alarm an ARN in a list; not an API answer)",
                           where=f"CloudWatch dashboard {odd}", hint=answer_hint(cloudwatch.endpoint_name))
    memo.update((name, (stamps[name], shown)) for name, shown in read.items() if stamps[name] is not None)
    unchanged = {name: memo[name][1] for name in stamps.keys() - set(names)}
    return {name: shown for name, shown in {**unchanged, **read}.items() if shown}


def _which(failure: RemoteError) -> str:
    """A failed read of the account's dashboards as a plan's line says it: the dashboard (or listing) it was of, then
    what failed: of thousands, the one an IAM policy denies is named."""
    return f"{failure.where}: {failure.what}" if failure.where else failure.what


def _showing(dashboards: dict[str, set[str]], change: Change) -> list[str]:
    arn = (change.live or {}).get("arn")
    return sorted(name for name, shown in dashboards.items() if arn in shown)


# Why an alarm no longer defined that a person's dashboard shows is deleted only with --force
ON_DASHBOARDS = ("(an alarm status widget, or a graph's alarm annotation), which then shows it missing; "
                 "--prune --force deletes it")


def _shown_on_dashboards(cloudwatch: CloudWatch, region: str, retired: list[Change]) -> None:
    """Record on each alarm to delete the dashboards that show it, read from every dashboard of the account (UNREAD
    where they could not be), and make it need --force where one does, or where they could not be read: CloudWatch
    deletes an alarm whatever dashboard shows it, and no evidence on the alarm records that."""
    dashboards = _dashboards_showing(cloudwatch, region)
    for change in retired:
        if isinstance(dashboards, RemoteError):
            change.live["dashboards"], change.edited = UNREAD, True
            change.details.append(f"the dashboards that may show it could not be read ({_which(dashboards)}): one "
                                  f"showing it {ON_DASHBOARDS}")
            continue
        change.live["dashboards"] = names = _showing(dashboards, change)
        if names:
            change.edited = True
            change.details.append(f"it is shown on dashboard(s) {shown_names(names)} {ON_DASHBOARDS}")


def _free_of_dashboards(cloudwatch: CloudWatch, region: str, deletes: list[Change],
                        record: Callable[..., None]) -> list[Change]:
    """The alarms of `deletes` no dashboard came to show since the plan, from every dashboard of the account read again
    right before their delete (a listing, and the bodies of the dashboards changed since the last read: one listing
    call more per delete group where none changed): one shown since is `record`ed failed (--force agreed to what the
    plan showed), and where they cannot be read again, each the plan read them for."""
    what = f"CloudWatch alarms in {region}"
    try:
        dashboards = _dashboards_showing(cloudwatch, region)
    except DeadlineExceeded as exc:  # stopped: none is deleted, each saying so (as _free_of_composites does), and the
        for change in deletes:        # report keeps what was done before
            record(change, error=exc)
        return []
    free = []
    for change in deletes:
        added = made_since((change.live or {}).get("dashboards"),
                           None if isinstance(dashboards, RemoteError) else _showing(dashboards, change))
        if added == UNREAD:
            record(change, error=RemoteError(f"not deleted: the dashboards that may show it could not be read again "
                                             f"right before the delete ({_which(dashboards)})", where=what,
                                             hint="run `gpudash plan` and apply again"))
        elif added:
            record(change, error=RemoteError(f"not deleted: shown on dashboard(s) {shown_names(added)} since the plan "
                                             f"{ON_DASHBOARDS.split('; ')[0]}", where=what,
                                             hint="take it off those dashboards, then --prune deletes it"))
        else:
            free.append(change)
    return free


def _plan_dashboards(cloudwatch: CloudWatch, region: str, dashboards: dict[str, dict[str, Any]], prefix: str,
                     progress: Tick, project: str = "", clusters: tuple[str, ...] = (),
                     former: tuple[str, ...] = (), records: list[Record] | None = None,
                     read_regions: set[str] | None = None, prune: bool = True) -> list[Change]:
    """One GetDashboard per dashboard, a few in flight at once (the pacer keeps them within the quota);
    then every dashboard named in gpudash's form but no longer defined, read to see whether this project
    wrote it (without a project, none is read: nothing could show it is this project's). `read_regions` gets
    the Regions the widgets of those of them these settings' own (pruned, or left as partly theirs) read.
    A listing shown to leave out a dashboard (`dashboards_listed`: one defined, or one gpudash named for a cluster of
    `former`, read by name) fails the plan with `prune`, else is noted."""
    proofs: dict[tuple[str, int], str | None] = {}

    def stamp(body: dict[str, Any], name: str, project: str) -> str | None:
        """What the stamp of a body read here proves, worked out once for each: the hash covers the whole body,
        and the plan asks for it up to three times a dashboard (its change, the lineage, the records)."""
        key = (name, id(body))  # each body read here stays referenced until the plan is made
        if key not in proofs:
            proofs[key] = read_cloudwatch_stamp(body, name, project)
        return proofs[key]

    def read(name: str) -> Change:
        change = _plan_dashboard(name, region, dashboards[name], cloudwatch.dashboard_body(region, name), project,
                                 frozenset(clusters + former), stamp)
        progress()
        return change

    listed = cloudwatch.dashboard_names(region, cloudwatch_dashboard_name_start(prefix)) if prefix and project else []
    older: list[str] = []
    elsewhere: list[str] = []
    formerly = _former_names(prefix, dashboards, clusters, former) if prefix and project and prune else []
    with ThreadPoolExecutor(max_workers=READERS, thread_name_prefix="gpudash-read") as pool:
        changes = list(pool.map(read, sorted(dashboards)))
        if prefix and project:
            there = _readable(cloudwatch, region, formerly, pool)
            if prune:  # (a removed cluster's dashboards read by name are not read again)
                there += _listed_by_cluster(cloudwatch, region, prefix, clusters + former, [*listed, *there], pool)
            listed = dashboards_listed(cloudwatch, region, prefix, listed,
                                       [c.name for c in changes if (c.live or {}).get("body") is not None] + there,
                                       prune)
        # (a dashboard no longer defined is judged for a prune and the flags' records alone: without them, another
        # project's dashboards under the prefix are not read on every apply)
        retired = sorted(name for name in listed if name not in dashboards and is_cloudwatch_dashboard_name(prefix, name)
                         and (prune or former))
        bodies = list(pool.map(lambda name: cloudwatch.dashboard_body(region, name), retired))
    if prefix and any(change.action == CREATE for change in changes):
        # (settings without a project list nothing for pruning: listed here for what they create)
        shown = set(listed if project else cloudwatch.dashboard_names(region, cloudwatch_dashboard_name_start(prefix)))
        changes = [_listed_unread(cloudwatch, region, change, dashboards[change.name], project,
                                  frozenset(clusters + former), stamp)
                   if change.action == CREATE and change.name in shown else change for change in changes]
    mine = lineage(clusters + former, [dashboard_publication(c.live["body"]) for c in changes
                              if c.live.get("body") is not None
                              and stamp(c.live["body"], c.name, project) == OURS])
    if records is not None and project:
        ours = [(name, body) for name, body in [*((c.name, c.live.get("body")) for c in changes), *zip(retired, bodies)]
                if body is not None and stamp(body, name, project) == OURS]
        records.extend(("dashboard", name, name in dashboards, dashboard_publication(body)) for name, body in ours)
        records.extend(_named_records(prefix, [(name, name in dashboards) for name, body in ours
                                               if dashboard_publication(body) is None],
                                      clusters, former, _seen_clusters(prefix, listed, dashboards, clusters)))
    others = any(stamp(body, name, project) == OURS
                 and published_elsewhere(dashboard_publication(body), mine)
                 for name, body in zip(retired, bodies) if body is not None)
    kept: list[str] = []
    unrecorded = _unrecorded(prefix, mine, others, elsewhere, kept, _seen_clusters(prefix, listed, dashboards, clusters),
                             _dashboard_tail_exact)
    partly: list[str] = []
    old = [_plan_retired_dashboard(name, region, body, project, older, mine, elsewhere, unrecorded,
                                   frozenset(clusters + former), partly, stamp)
           for name, body in zip(retired, bodies)]
    for change in old if prune else ():  # (an apply without --prune deletes none: their tags are not read)
        if change is not None:
            _judge_dashboard_tags(change, _read_dashboard_tags(cloudwatch, region, change.name))
    if read_regions is not None:
        theirs = {c.name for c in old if c is not None} | set(partly)
        read_regions.update(widget["properties"]["region"] for name, body in zip(retired, bodies)
                            if name in theirs and body is not None for widget in body.get("widgets") or ()
                            if isinstance(widget, dict) and isinstance(widget.get("properties"), dict)
                            and isinstance(widget["properties"].get("region"), str))
    if partly:
        recorded = {c for name, body in zip(retired, bodies) if name in partly and body is not None
                    for c in dashboard_publication(body) or ()}
        cloudwatch.note(_partly_note("dashboard", sorted(partly), project, recorded - set(clusters + former)))
    if elsewhere:
        recorded = {c for name, body in zip(retired, bodies) if name in elsewhere and body is not None
                    for c in dashboard_publication(body) or ()}
        cloudwatch.note(_elsewhere_note("dashboard", sorted(elsewhere), project, recorded))
    if kept:
        cloudwatch.note(_unrecorded_note("dashboard", sorted(kept), project,
                                         "aws cloudwatch delete-dashboards --dashboard-names NAME"))
    if older:
        cloudwatch.note(_older_note("dashboard", sorted(older), project,
                                    "if one is this project's, delete it by hand (aws cloudwatch delete-dashboards "
                                    "--dashboard-names NAME)"))
    return changes + [change for change in old if change is not None]


def _listed_unread(cloudwatch: CloudWatch, region: str, change: Change, desired_body: dict[str, Any], project: str,
                   own: frozenset[str], stamp) -> Change:
    """A defined dashboard GetDashboard read as not there (`change`, a create) that ListDashboards lists: read once more
    (a read that lagged), planned as read then; still not there, the two answers disagree and neither is believed: a
    create would be a PutDashboard over whatever the listing shows (a person's edit, another project's dashboard)."""
    body = cloudwatch.dashboard_body(region, change.name)
    if body is not None:
        return _plan_dashboard(change.name, region, desired_body, body, project, own, stamp)
    raise RemoteError(f"GetDashboard answers that the dashboard {change.name} does not exist, and ListDashboards lists "
                      "it: not created over it (a PutDashboard would replace whatever is there)",
                      where=f"CloudWatch dashboard {change.name}",
                      hint="run again in a minute (a dashboard deleted a moment ago is listed until the listing "
                           "catches up); if it repeats, check what answers for CloudWatch (AWS_ENDPOINT_URL, "
                           "--endpoint-url)")


def _listed_by_cluster(cloudwatch: CloudWatch, region: str, prefix: str, clusters: tuple[str, ...], listed: list[str],
                       pool: ThreadPoolExecutor) -> list[str]:
    """The dashboards in gpudash's name form that a listing of each cluster's own names (ListDashboards by the prefix
    <prefix>-<cluster>-, a listing of its own pages) holds, `listed` (the listing of every name, and those already
    read by name) does not, and GetDashboard reads: a listing that ends early (a page or its next-page token dropped) before a dashboard no longer
    defined shows no gap by itself, since nothing defined names that dashboard; each cluster's listing is a second,
    shorter one, on its own pages, that must agree with it."""
    starts = sorted({cloudwatch_dashboard_name(prefix, cluster, "") for cluster in clusters})
    held = set(listed)
    unlisted = sorted({name for names in pool.map(lambda start: cloudwatch.dashboard_names(region, start), starts)
                       for name in names if name not in held and is_cloudwatch_dashboard_name(prefix, name)})
    return _readable(cloudwatch, region, unlisted, pool)


def _readable(cloudwatch: CloudWatch, region: str, names: list[str], pool: ThreadPoolExecutor) -> list[str]:
    """Those of these dashboards that GetDashboard reads (by name, on the readers' pool), in their order."""
    return [name for name, body in zip(names, pool.map(lambda n: cloudwatch.dashboard_body(region, n), names))
            if body is not None]


def _former_names(prefix: str, dashboards, clusters: tuple[str, ...], former: tuple[str, ...]) -> list[str]:
    """The names gpudash gave the dashboards these settings define for each cluster of `former` (--removed-cluster,
    --renamed-from), not listed by ListDashboards alone: read by name, they show a listing that ends before them."""
    ids = name_tails(prefix, dashboards, clusters)
    named = {cloudwatch_dashboard_name(prefix, cluster, dashboard_id) for cluster in former for dashboard_id in ids}
    return sorted(named - set(dashboards))


def _seen_clusters(prefix: str, listed, defined, clusters: tuple[str, ...]) -> frozenset[str]:
    """The clusters the objects listed (anyone's) are named for, read with the tails of the names these
    settings give their clusters' objects: a cluster of another file (`prod-eu` beside this file's `prod`)
    is told apart from this file's by the objects of it that are seen."""
    return clusters_named(prefix, listed, name_tails(prefix, defined, clusters))


def _named_records(prefix: str, objects: list[tuple[str, bool]], clusters: tuple[str, ...], former: tuple[str, ...],
                   seen: frozenset[str]) -> list[Record]:
    """Records that vouch for nothing (UNVOUCHED) of objects of this project that record no clusters (name, defined),
    each for the cluster not of these settings its name is in the form gpudash gives (of those names are seen for and
    `former`): --removed-cluster or --renamed-from naming that cluster names objects the flag can take by name."""
    candidates = (frozenset(seen) | frozenset(former)) - frozenset(clusters)
    known = candidates | frozenset(clusters)
    found = []
    for name, defined in objects:
        named = frozenset(cluster for cluster in candidates if names_cluster(prefix, name, {cluster}, known))
        if named:
            found.append((UNVOUCHED, name, defined, named))
    return found


def _unrecorded(prefix: str, mine: frozenset[str], others: bool, elsewhere: list[str],
                kept: list[str], seen: frozenset[str] = frozenset(),
                exact: Callable[[str, str], bool] = lambda name, tail: False) -> Callable[[str], bool]:
    """Whether an object of this project no longer defined that records no clusters (written before gpudash
    recorded them) must stay: pruned only on evidence it is these settings', its name in the form gpudash
    gives a cluster of their lineage `mine` (read exactly: not the form of a longer cluster `seen`), with a
    tail no longer cluster could have given it (`exact(name, tail)`: `gpudash-prod-eu-inference` may be
    `prod-eu`'s `inference` though no object shows `prod-eu`), and while no object of the project seen
    (`others`) shows another file publishing; one kept goes to `elsewhere` (while others publish) or `kept`."""
    def stays(name: str) -> bool:
        tail = cluster_tail(prefix, name, mine, seen)
        if others:
            elsewhere.append(name)
        elif tail is None or not exact(name, tail):
            kept.append(name)
        else:
            return False
        return True
    return stays


def _dashboard_tail_exact(name: str, tail: str) -> bool:
    """A dashboard id with no dash: shorter than the <word>-<id> a cluster that continues this one would leave."""
    return "-" not in tail


def _alarm_tail_exact(tags: dict[str, list[dict[str, str]]]) -> Callable[[str, str], bool]:
    """An alarm's tail read with its own rule tag: <rule>[-mig][-whole]-<severity>[-...], as gpudash names it (a
    cluster that continues this one would leave its extra words before the rule); or one of fewer than three words,
    shorter than the <word>-<rule>-<severity> a longer cluster's alarm would leave."""
    def exact(name: str, tail: str) -> bool:
        if tail.count("-") < 2:
            return True
        rule = next((t.get("Value") for t in tags.get(name, []) if t.get("Key") == ALARM_RULE_TAG), None)
        return isinstance(rule, str) and re.fullmatch(
            rf"{re.escape(rule)}(?:{re.escape(MIG_SUFFIX)})?(?:{re.escape(WHOLE_SUFFIX)})?-(?:{'|'.join(SEVERITIES)})"
            rf"(?:-.+)?", tail) is not None
    return exact


def _unrecorded_note(kind: str, names: list[str], project: str, delete: str) -> str:
    return (f"{len(names)} {kind}(s) of project {project!r} not defined here record no clusters (written by an "
            f"older gpudash) and are named for none of these settings' clusters ({shown_names(names)}): --prune leaves "
            f"them, since they may be another settings file's; if one is this file's, delete it by hand ({delete})")


def _elsewhere_note(kind: str, names: list[str], project: str, recorded=()) -> str:
    shown = shown_names(names)
    how = f"; {renamed_hint(recorded).replace(' takes it back', ' takes them back')}" if recorded else ""
    return (f"{len(names)} {kind}(s) of project {project!r} not defined here were published by other settings of "
            f"project {project!r} (with none of these settings' clusters): --prune leaves them ({shown}); a "
            f"project split over several settings files prunes each file's own only{how}")


def _partly_note(kind: str, names: list[str], project: str, rest) -> str:
    flags = " ".join(f"--removed-cluster {name}" for name in sorted(rest)[:3])
    return (f"{len(names)} {kind}(s) of project {project!r} not defined here were published with clusters of which "
            f"these settings define only some ({shown_names(names)}; not these settings': {' '.join(sorted(rest))}): "
            f"--prune leaves them, since another settings file may define those clusters now (a settings file split "
            f"in two: that file's apply records its objects as its own); if these settings published them and those "
            f"clusters are gone, `gpudash apply --prune {flags}` retires them")


def _older_note(kind: str, names: list[str], project: str, adopt: str) -> str:
    shown = shown_names(names)
    return (f"{len(names)} {kind}(s) no longer defined were written by an older gpudash that marked no project "
            f"({shown}): --prune leaves them, since they may be another project's; {adopt}")


def _read_tags(cloudwatch: CloudWatch, region: str, alarms: dict[str, dict[str, Any]],
               bulk: dict[str, list[dict[str, str]]] | None) -> dict[str, list[dict[str, str]]]:
    """Name -> tags of these alarms (those in gpudash's name form): as the bulk read of every alarm that carries the
    ownership tag has them (`bulk`, by ARN), then, one by one, each alarm it does not vouch for, before calling it
    foreign: one without the ownership tag, or one the bulk read leaves out (tagged too recently for the tagging index
    to show it, or on a page after one that ended early), which no token shows; every alarm when the bulk read is
    denied (None)."""
    return {name: bulk[alarm["AlarmArn"]] if bulk is not None and alarm["AlarmArn"] in bulk
            else cloudwatch.alarm_tags(region, alarm) for name, alarm in alarms.items()}


def _indexed_unlisted(cloudwatch: CloudWatch, region: str, prefix: str, bulk: dict[str, list[dict[str, str]]] | None,
                      creating: set[str], listed: set[str]) -> dict[str, dict[str, Any]]:
    """The alarms to create that the tag index (`bulk`) shows carrying gpudash's ownership tag, read by name: a listing
    that left them out. One the index shows that DescribeAlarms by name does not read either, where the listing
    (`listed`) holds none of the others the index shows, is a disagreement that neither side settles: PutMetricAlarm
    has no create-only form, so a create would replace whatever holds the name (a person's alarm among them, where the
    listings hide every alarm), and the plan fails (nothing written). Where the listing holds some of them, it lists
    gpudash's alarms, and one it neither lists nor reads is gone: the index answers "previously tagged" resources and
    lags a delete (minutes, at times hours), and the alarm is created again as a person's delete asks."""
    owned = {arn.split(":", 6)[-1] for arn, tags in (bulk or {}).items() if alarm_owned(tags)}
    indexed = sorted(creating & owned)
    if not indexed:
        return {}
    read = {name: alarm for first in range(0, len(indexed), BATCH)
            for name, alarm in cloudwatch.metric_alarms(region, names=indexed[first:first + BATCH]).items()
            if is_alarm_name(prefix, name)}
    unread = [name for name in indexed if name not in read]
    if unread and not owned & listed:
        raise RemoteError(f"the tag index (GetResources) shows {len(unread)} alarm(s) gpudash owns that DescribeAlarms "
                          f"neither lists nor reads by name ({shown_names(unread)}): the listings may leave out every "
                          "alarm (something standing in for CloudWatch), and a create would replace what holds the name",
                          where=f"CloudWatch alarms in {region}",
                          hint="run again in a few minutes (an alarm deleted a moment ago stays in the tag index for a "
                               "while); if it repeats, check the endpoint (AWS_ENDPOINT_URL, --endpoint-url)")
    return read


def _tagged_for(bulk: dict[str, list[dict[str, str]]] | None, prefix: str, project: str) -> set[str]:
    """The names, in gpudash's name form, of the alarms the bulk tag read shows carrying this project's tag."""
    names = {arn.split(":", 6)[-1]: tags for arn, tags in (bulk or {}).items()}
    return {name for name, tags in names.items() if is_alarm_name(prefix, name) and alarm_project(tags) == project}


def _plan_alarms(cloudwatch: CloudWatch, region: str, requests: dict[str, dict[str, Any]], prefix: str,
                 progress: Tick, project: str = "", clusters: tuple[str, ...] = (),
                 former: tuple[str, ...] = (), records: list[Record] | None = None,
                 prune: bool = False) -> list[Change]:
    """Each alarm defined, then the alarms no longer defined that carry this project's tag (to prune). With `prune`
    (and a project), the alarms defined, and those the bulk tag read shows carrying this project's tag, that the
    listing does not hold are read by name (`alarms_listed`)."""
    changes = []
    live = {name: alarm for name, alarm in cloudwatch.metric_alarms(region, prefix=alarm_name_start(prefix)).items()
            if is_alarm_name(prefix, name)}
    creating = set(requests) - set(live)
    bulk = cloudwatch.owned_alarm_tags(region) if live or creating or (prune and project) else None
    if prune and project:
        live = alarms_listed(cloudwatch, region, prefix, live, set(requests) | _tagged_for(bulk, prefix, project))
    live.update(_indexed_unlisted(cloudwatch, region, prefix, bulk, set(requests) - set(live), set(live)))
    held = {name: alarm for name, alarm in live.items() if other_kind(alarm)}  # a person's: neither written nor
    live = {name: alarm for name, alarm in live.items() if name not in held}     # pruned, whatever it carries
    # An alarm no longer defined is judged for a prune and the flags' records alone: otherwise one the tag index does
    # not show (a person's under gpudash's prefix, untagged) is not read alone (3 a second) on every apply
    judged = live if prune or former else {name: alarm for name, alarm in live.items()
                                           if name in requests or (bulk is not None and alarm["AlarmArn"] in bulk)}
    tags = _read_tags(cloudwatch, region, judged, bulk)
    if records is not None and project:
        ours = {name: t for name, t in tags.items() if alarm_owned(t) and alarm_project(t) == project}
        # an alarm whose marks a person rewrote vouches for nothing, but still carries the clusters it records
        records.extend(("alarm" if marks_intact(t) is not False else UNVOUCHED, name, name in requests,
                        alarm_publication(t)) for name, t in ours.items())
        records.extend(_named_records(prefix, [(name, name in requests) for name, t in ours.items()
                                               if alarm_publication(t) is None],
                                      clusters, former, _seen_clusters(prefix, live, requests, clusters)))
    for name, request in sorted(requests.items()):
        changes.append(_plan_held(name, region, held[name]) if name in held else
                       _plan_alarm(name, region, request, live.get(name), tags.get(name, []), project, clusters,
                                   former))
        progress()
    older, elsewhere, partly = [], [], []
    mine = lineage(clusters + former, [alarm_publication(tags[name]) for name in requests if name in tags
                              and alarm_project(tags[name]) == project and marks_intact(tags[name]) is not False])
    others = any(alarm_project(t) == project and published_elsewhere(alarm_publication(t), mine)
                 for name, t in tags.items() if name not in requests)
    kept: list[str] = []
    unrecorded = _unrecorded(prefix, mine, others, elsewhere, kept, _seen_clusters(prefix, live, requests, clusters),
                             _alarm_tail_exact(tags))
    for name, alarm in sorted(live.items()):
        if name in requests or not project or not alarm_owned(tags.get(name, [])):
            continue
        named = alarm_project(tags[name])
        publication = alarm_publication(tags[name])
        # No clusters recorded: judged by `unrecorded` while others publish, or when its evidence is older than
        # the marks' hash (an alarm gpudash wrote with no project, adopted as the note says, is not).
        unknown = publication is None and (others or marks_intact(tags[name]) is None)
        if named == project and marks_intact(tags[name]) is False and not published_elsewhere(publication, mine):
            changes.append(_plan_retired(name, region, alarm, tags[name]))  # refused: its marks were rewritten
        elif named == project and published_elsewhere(publication, mine):
            elsewhere.append(name)
        elif named == project and _partly(publication, frozenset(clusters + former)):
            partly.append(name)
        elif named == project and not (unknown and unrecorded(name)):
            changes.append(_plan_retired(name, region, alarm, tags[name]))
        elif named is None:
            older.append(name)
    if elsewhere:
        recorded = {c for name in elsewhere for c in alarm_publication(tags[name]) or ()}
        cloudwatch.note(_elsewhere_note("alarm", elsewhere, project, recorded))
    if partly:
        recorded = {c for name in partly for c in alarm_publication(tags[name]) or ()}
        cloudwatch.note(_partly_note("alarm", partly, project, recorded - set(clusters + former)))
    if prune:
        _kept_by_composites(cloudwatch, region, changes)
    if kept:
        cloudwatch.note(_unrecorded_note("alarm", kept, project,
                                         f"aws cloudwatch delete-alarms --region {region} --alarm-names NAME"))
    if older:
        cloudwatch.note(_older_note("alarm", older, project, "to let --prune delete one that is this project's, tag "
                                    f"it: aws cloudwatch tag-resource --region {region} --resource-arn ARN --tags "
                                    f"Key={ALARM_PROJECT_TAG},Value={project}"))
    return changes


def _side_by_side(first: Callable[[], list], second: Callable[[], list]) -> list:
    """Dashboards and alarms have quotas of their own: work on both at once."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpudash-dashboards") as pool:
        future = pool.submit(first)
        later = second()
        return future.result() + later


def plan_region(cloudwatch: CloudWatch, region: str, dashboards: dict[str, dict[str, Any]],
                requests: dict[str, dict[str, Any]], prefix: str, progress: Tick,
                dashboard_prefix: str = "", project: str = "", clusters: tuple[str, ...] = (),
                former: tuple[str, ...] = (), records: list[Record] | None = None,
                read_regions: set[str] | None = None, prune: bool = True) -> list[Change]:
    return _side_by_side(
        lambda: _plan_dashboards(cloudwatch, region, dashboards, dashboard_prefix, progress, project, clusters,
                                 former, records, read_regions, prune),
        lambda: _plan_alarms(cloudwatch, region, requests, prefix, progress, project, clusters, former, records,
                             prune))


def plan(cloudwatch: CloudWatch, desired, progress: Progress | None = None,
         renamed_from: tuple[str, ...] = (), removed: tuple[str, ...] = (),
         former_regions: tuple[str, ...] = (), prune: bool = True) -> list[Change]:
    """Every Region of a desired.Desired at once: dashboards, then alarms, then alarms to prune. `renamed_from`:
    clusters these settings had before renaming them (--renamed-from); what was published with them is theirs,
    on the evidence `renamed_evidence` asks of what the account records (else a GpudashError, before any write).
    `removed`: clusters these settings no longer define, which no other settings file defines (--removed-cluster).
    `former_regions` (--former-region): Regions the settings no longer use, read as well: a cluster removed or
    renamed together with its Region left its alarms there. Nothing is defined there, so every alarm of the project
    found there is judged as one no longer defined, on the same evidence as anywhere; a Region that cannot be read
    fails the plan (never "nothing there"). Without it, the Regions the project's dashboards no longer defined read
    and these settings do not use are named in a note. `prune`: whether what --prune does is to be done or shown (an
    apply --prune; a plan, which shows it): a dashboard listing shown incomplete is then a failure, else a note."""
    used = sorted(set(desired.dashboard_regions.values()) | {item["Region"] for item in desired.alarms})
    regions = used + sorted(set(former_regions) - set(used))
    total = len(desired.cloudwatch_dashboards) + len(desired.alarms)
    unread: set[str] = set()  # Regions that retired dashboards of the project read and no plan reads

    def read(former: tuple[str, ...], label: str) -> tuple[list[Change], list[Record]]:
        records: list[Record] = []
        with (progress or Silent()).phase(label, total) as tick:
            safe = _locked(tick)

            def work(region: str) -> list[Change]:
                # Dashboards are global: every Region's endpoint serves the account's one set, so they are
                # listed, read, written and pruned once, through the first Region's endpoint.
                account_wide = region == regions[0]
                dashboards = desired.cloudwatch_dashboards if account_wide else {}
                requests = {item["Request"]["AlarmName"]: item["Request"] for item in desired.alarms
                            if item["Region"] == region}
                return plan_region(cloudwatch, region, dashboards, requests, desired.alarm_prefix, safe,
                                   desired.dashboard_prefix if account_wide else "", desired.project,
                                   desired.clusters, former, records, unread if account_wide else None, prune)

            return _parallel(regions, work), records

    former = tuple(renamed_from) + tuple(removed)
    notes = len(cloudwatch.notes)
    changes, records = read(former, "reading CloudWatch")
    unproven = renamed_evidence(renamed_from, desired.clusters, former, records, desired.project,
                                "aws cloudwatch delete-alarms / delete-dashboards", tuple(removed))
    renamed_unproven = [name for name in unproven if name in renamed_from]
    if renamed_unproven:  # the flag takes nothing: planned again without it (a finished rename's rerun, say)
        del cloudwatch.notes[notes:]
        former = tuple(name for name in former if name not in renamed_unproven or name in removed)
        changes, _ = read(former, "reading CloudWatch again")
    for name in unproven:
        flag = "--renamed-from" if name in renamed_from else "--removed-cluster"
        cloudwatch.note(f"{flag} {name}: no object of project {desired.project!r} records the cluster {name!r} "
                        f"(already {'renamed' if flag == '--renamed-from' else 'pruned'}, or never published by "
                        "these settings); the flag takes nothing and can be left out")
    unread -= set(regions)
    if unread:
        flags = " ".join(f"--former-region {region}" for region in sorted(unread))
        cloudwatch.note(f"dashboards of project {desired.project!r} no longer defined read Region(s) "
                        f"{', '.join(sorted(unread))}, which these settings no longer use: alarms there are not read, "
                        f"so none is pruned or counted as evidence; `{flags}` reads them too (each alarm judged on "
                        "the same evidence as in any Region)")
    if not desired.project:
        cloudwatch.note("the settings name no project: alarms and dashboards no longer defined are not looked for, "
                        "and --prune is refused; set `project:` in the settings to prune")
    retired = [c for c in changes if c.kind == "alarm" and c.action == DELETE]
    if retired and prune:
        _shown_on_dashboards(cloudwatch, regions[0], retired)
    dashboards = sorted((c for c in changes if c.kind == "dashboard"), key=lambda c: c.name)
    return dashboards + [c for c in changes if c.kind != "dashboard"]


# --- applying -------------------------------------------------------------------------------

def _moved(change: Change, now: Any, desired: Any) -> str | None:
    """Why the object must not be written (or deleted) now that it reads `now`; "" when it is already as
    generated (another publisher wrote it) or, for a delete, already gone; None when it is as the plan saw it."""
    before = (change.live or {}).get("body" if change.kind == "dashboard" else "fields")
    if before == now:
        return None
    if now == desired and (now is not None or change.action == DELETE):
        return ""  # written as generated, or deleted, by another hand
    if before is None:
        return "created by someone else since the plan"
    if now is None:
        return "deleted by someone else since the plan"
    return "changed by someone else since the plan"


def _unshown(exc: RemoteError, api: str, read: str) -> RemoteError:
    """`exc`, which stopped the read after an `api` call CloudWatch answered, saying that the call may have
    happened: never "not attempted" of a write or delete that was sent."""
    sent, unshown = f"CloudWatch answered {api}", f"{read} could not be read again to show it"
    if isinstance(exc, DeadlineExceeded):
        return exc.after_sending(sent, unshown)
    exc.what = f"{sent} and it {MAY_HAVE_HAPPENED}, but {unshown} ({exc.what})"
    return exc


def _settle(exc: RemoteError, api: str, thing: str, read: Callable[[], Any], done: Callable[[Any], bool],
            before: Callable[[Any], bool]) -> None:
    """After a write `api` whose answers were all lost (`exc`, which says it may have happened): read `thing` back.
    Returns when the read shows the write made; raises that it was not made when the read shows `thing` as before
    it; raises `exc` (may have happened) when the read fails or shows neither (someone else changed it)."""
    try:
        now = read()
    except DeadlineExceeded as stop:
        raise stop.after_sending(f"CloudWatch {api} was sent", f"its answer was lost and {thing} was not read back "
                                 "to show it") from None
    except RemoteError as check:
        exc.what += f"; {thing} could not be read back to show it ({check.what})"
        raise exc from None
    if done(now):
        return
    if before(now):
        raise RemoteError(f"CloudWatch {api} was sent and its answer was lost; read back, {thing} is as before: the "
                          f"write was not made ({getattr(exc, 'cause', None) or exc.what})", where=exc.where,
                          hint="run again when CloudWatch answers: publishing converges")
    exc.what += f"; read back, {thing} is neither as sent nor as before (changed by someone else meanwhile)"
    raise exc


def _look(api: str, thing: str, what: str, read: Callable[[], Any], done: Callable[[Any], bool],
          before: Callable[[Any], bool], undone: str = "not overwritten") -> Callable[[], bool]:
    """The look before each retry of a write `api` (CloudWatch.call's `before_retry`; CloudWatch has no conditional
    write): `thing` read again. False when it is as the write makes it (an earlier attempt landed and lost its
    answer, or another publisher wrote it), True when it is as before (send again); NotResent when neither: a
    person changed it between two attempts, and a resend would overwrite that."""
    def look() -> bool:
        now = read()
        if done(now):
            return False
        if before(now):
            return True
        raise NotResent(f"CloudWatch {api} failed and was to be sent again, but read again first, {thing} is neither "
                        f"as sent nor as before: changed by someone else meanwhile (an earlier attempt may have "
                        f"landed before that); {undone}", where=what, hint="run `gpudash plan` and apply again")
    return look


def _not_overwritten(change: Change, why: str) -> RemoteError:
    done = "not deleted" if change.action == DELETE else "not overwritten"
    return RemoteError(f"{why}; {done}", where=f"CloudWatch {change.kind} {change.name}",
                       hint="run `gpudash plan` and apply again")


def _gone_after_lost(what: str, api: str, shown: str = "the retry was answered ResourceNotFound") -> str:
    """The note for an object listed as deleted after an attempt whose answer was lost (any 5xx, a dropped
    connection), `shown` gone (a retry answered ResourceNotFound, or the read-back after every answer was lost): that
    attempt may have deleted it, or someone else may have."""
    return (f"{what}: an attempt of {api} was sent and its answer lost, and {shown}: it is gone, deleted by that "
            "attempt or by someone else meanwhile (nothing tells which); listed as deleted")


ALL_LOST = "no other answer came; read back"  # `shown` for a delete whose every answer was lost
LOOKED_GONE = "read before a retry"  # `shown` for one the look before a retry found gone (no retry was sent)


def _put_dashboard(cloudwatch: CloudWatch, region: str, change: Change, body: dict[str, Any] | None) -> bool:
    """Write one dashboard unless it moved since the plan; False when it is already as generated.
    `body` is the stamped body as data, encoded here, where PutDashboard takes it as text."""
    what = f"CloudWatch dashboard {change.name}"
    desired = None if change.action == DELETE else body
    moved = _moved(change, cloudwatch.dashboard_body(region, change.name), desired)
    if moved is not None:
        if moved:
            raise _not_overwritten(change, moved)
        return False
    # what a retry's look and a lost answer's read-back compare the dashboard with: as the write makes it (gone, for a
    # delete) or as the plan read it
    read = lambda: cloudwatch.dashboard_body(region, change.name)  # noqa: E731
    done, as_before = (lambda now: now == desired), (lambda now: now == (change.live or {}).get("body"))
    if change.action == DELETE:
        from botocore.exceptions import ClientError

        _tags_as_planned(cloudwatch, region, change)

        def read_with_tags() -> Any:  # the look before a resend: its body, then (still there) its tags as planned
            now = read()
            if now is not None:
                _tags_as_planned(cloudwatch, region, change)
            return now
        try:
            looked = cloudwatch.call(region, "DeleteDashboards", what, DashboardNames=[change.name],
                                     before_retry=_look("DeleteDashboards", "the dashboard", what, read_with_tags,
                                                        done, as_before, "not deleted")).get(LOOKED)
        except ClientError as exc:  # ResourceNotFound: deleted by someone else since it was read, if it is gone,
            if cloudwatch.dashboard_body(region, change.name) is None:  # or by this call's attempt whose answer
                if getattr(exc, "after_lost", False):                   # was lost: listed as deleted (done)
                    cloudwatch.note(_gone_after_lost(what, "DeleteDashboards"))
                    return True
                return False
            raise RemoteError("CloudWatch answered DeleteDashboards with ResourceNotFound, but the dashboard is "
                              "still there", where=what, hint="run `gpudash plan` and apply again") from None
        except RemoteError as exc:
            if not answer_lost(exc):
                raise
            _settle(exc, "DeleteDashboards", "the dashboard", read, done=done, before=as_before)
            cloudwatch.note(_gone_after_lost(what, "DeleteDashboards", ALL_LOST))
            return True
        try:  # still there: perhaps a read that has not caught up with the delete
            still, twice = _read_settled(cloudwatch, read, lambda now: now is None)
        except RemoteError as exc:
            raise _unshown(exc, "DeleteDashboards", "the dashboard") from None
        if still is not None:  # an answer alone proves no delete
            right_after = f"read back twice, {LAGGED_READ_PAUSE:g} s apart," if twice else "right after"
            raise RemoteError(f"CloudWatch answered DeleteDashboards, but {right_after} the dashboard is still there",
                              where=what, hint=_unproven(cloudwatch))
        if looked is not None:  # found gone by the look before a retry
            if not looked:  # no attempt reached CloudWatch: someone else deleted it (already gone)
                return False
            cloudwatch.note(_gone_after_lost(what, "DeleteDashboards", LOOKED_GONE))
        return True
    try:
        response = cloudwatch.call(region, "PutDashboard", what, DashboardName=change.name,
                                   DashboardBody=compact_json(body),
                                   before_retry=_look("PutDashboard", "the dashboard", what, read, done, as_before))
    except RemoteError as exc:
        if not answer_lost(exc):
            raise
        _settle(exc, "PutDashboard", "the dashboard", read, done=done, before=as_before)
        return True  # read back with the body sent: the check below is made
    if response.get(LOOKED) is False:  # found as sent by the look before a retry, no attempt having reached
        return False                   # CloudWatch: another publisher wrote it
    messages = response.get("DashboardValidationMessages") or []
    api = "PutDashboard with validation messages" if messages else "PutDashboard"

    def read_back() -> dict[str, Any] | None:
        try:
            return cloudwatch.dashboard_body(region, change.name)
        except RemoteError as exc:
            raise _unshown(exc, api, "the dashboard") from None

    # as before: perhaps a read that has not caught up with the write (AWS documents no freshness for GetDashboard)
    written, twice = _read_settled(cloudwatch, read_back, lambda now: not as_before(now))
    if not messages and written != body:  # read back as the plan compares: the body as data
        right_after = f"read back twice, {LAGGED_READ_PAUSE:g} s apart," if twice else "right after"
        raise RemoteError(f"CloudWatch answered PutDashboard, but {right_after} the dashboard is not there with the "
                          "body sent: the write did not take effect", where=what, hint=_unproven(cloudwatch))
    if messages:  # warnings alone: saved; an error among them: not (AWS; a message does not say which it is)
        _saved_with_messages(what, written, body, as_before(written),
                             "; ".join(f"{m.get('DataPath', '')}: {m.get('Message', '')}" for m in messages))
    return True


class WrittenThenFailed(Exception):
    """An object written and read back as sent, with something left failed or unconfirmed (an alarm's tag write,
    its tags; a dashboard's validation messages): the write is done and listed as written, and this as a failure."""

    def __init__(self, error: RemoteError):
        super().__init__(str(error))
        self.error = error


def _saved_with_messages(what: str, written: Any, body: dict[str, Any], unchanged: bool, text: str) -> None:
    """After PutDashboard answered with DashboardValidationMessages, from the dashboard read right after (`written`;
    `unchanged`: as the plan read it). AWS documents that warnings alone mean the dashboard was created or modified
    (some elements may not render) and an error means it was not; a message does not say which it is. Read back as
    sent: written, with the messages as a failure after the write (WrittenThenFailed). As before: not written.
    Neither: someone else changed it meanwhile; whether this write landed before that is not known."""
    hint = "fix the definition; `gpudash lint` checks most of these"
    if written == body:
        raise WrittenThenFailed(RemoteError(
            f"CloudWatch answered PutDashboard with validation messages, and read back the dashboard is saved as "
            f"sent: they were warnings (AWS: some elements of the dashboard might not render): {text}", where=what,
            hint=f"open the dashboard in the CloudWatch console and look at the widgets named; {hint}"))
    if unchanged:
        raise RemoteError(f"CloudWatch answered PutDashboard with validation messages, and read back the dashboard "
                          f"is as before: not written (the messages were errors): {text}", where=what, hint=hint)
    raise RemoteError(f"CloudWatch answered PutDashboard with validation messages ({text}), and read back the "
                      "dashboard is neither as sent nor as before: changed by someone else meanwhile; whether this "
                      "write landed before that is not known", where=what, hint="run `gpudash plan` and apply again")


def _put_alarm(cloudwatch: CloudWatch, region: str, change: Change, request: dict[str, Any]) -> bool:
    """Write one alarm unless its fields or tags moved since the plan; False when it is already as generated. The
    look is the last read before the write, made by this alarm alone and only once the pacing turns of its reads and
    of the write have come (no wait falls between the look and the write; CloudWatch has no conditional write): an
    alarm the plan found, its own tags (ListTagsForResource, not the batch's bulk read, whose index may lag a tag just
    removed) and then its fields (DescribeAlarms); one to create, its fields, so that an alarm a person made under its
    name since any earlier read (the batch's, the previous alarm's tag check) is seen and not overwritten. What is
    left is one round trip: the look's answer on its way back and the write on its way there.
    Its fields, read back at once, then the tags it lacks (its tags read again first: one a person took over
    meanwhile gets none): the read-back learns the form CloudWatch reports the alarm in, which its evidence keeps
    so that the form is not taken for a console edit next time; read right after the write (not after the batch),
    a person's edit made since cannot pass for that form. (With the read right before its tag write and that write's
    read-back, three ListTagsForResource an update: at 3 a second those, not PutMetricAlarm's 3, set the pace of a
    large update.)"""
    what = f"CloudWatch alarm {change.name}"
    live = change.live or {}
    owned = {"AlarmName": change.name, "AlarmArn": live["arn"]} if live.get("arn") else None
    fields_written = change.action == CREATE or not live.get("as_generated")
    def first_look() -> tuple[list[dict[str, str]] | None, dict[str, Any] | None]:
        _turns(cloudwatch, region, *(("ListTagsForResource",) if owned else ()), "DescribeAlarms",
               *(("PutMetricAlarm",) if fields_written else ()))
        tags = cloudwatch.alarm_tags(region, owned) if owned else None
        return tags, cloudwatch.metric_alarms(region, names=[change.name]).get(change.name)

    tags_before, now = _unwaited(cloudwatch, first_look, what)
    if other_kind(now):
        raise _not_overwritten(change, _held_since(other_kind(now)))
    moved = _moved(change, alarm_fields(now) if now is not None else None, alarm_fields(request))
    if moved is None and tags_before is not None:
        moved = _tag_moved(change, tags_before, request)
    if moved:
        raise _not_overwritten(change, moved)
    if moved == "":
        return False

    def read() -> tuple[dict[str, Any] | None, list[dict[str, str]] | None]:
        """The alarm's tags (an alarm the plan found; PutMetricAlarm leaves them as they are on an update), then its
        fields: a retry's look, like a lost answer's read-back, sees a person's takeover between two attempts."""
        def both() -> tuple[dict[str, Any] | None, list[dict[str, str]] | None]:
            tags = cloudwatch.alarm_tags(region, owned) if tags_before is not None else None
            return cloudwatch.metric_alarms(region, names=[change.name]).get(change.name), tags
        return _unwaited(cloudwatch, both, what) if tags_before is not None else both()

    def untagged(tags) -> bool:
        return tags_before is None or tags is not None and _same_tags(tags, tags_before)

    def sent(state) -> bool:
        alarm, tags = state
        return alarm is not None and not unconfirmed(alarm_fields(request), alarm_fields(alarm)) and untagged(tags)

    def as_before(state) -> bool:
        alarm, tags = state
        if now is None:
            return alarm is None
        return alarm is not None and alarm_fields(alarm) == alarm_fields(now) and untagged(tags)

    def put(**fields) -> bool:
        """Whether the alarm is as gpudash's write makes it by another hand: found so by the look before a retry
        when no attempt reached CloudWatch (another publisher wrote it; its read-back and tags are theirs)."""
        try:
            return cloudwatch.call(region, "PutMetricAlarm", what, **fields, before_retry=_look(
                "PutMetricAlarm", "the alarm", what, read, sent, as_before)).get(LOOKED) is False
        except RemoteError as exc:
            if not answer_lost(exc):
                raise
            _settle(exc, "PutMetricAlarm", "the alarm", read, done=sent, before=as_before)
            return False

    if change.action == CREATE:  # created owned, with the evidence of what is sent, which the read-back confirms
        tags = alarm_tags(request)
        if put(**{**request, "Tags": tags}):
            return False
    else:
        tags = live.get("tags", [])
        if not live.get("as_generated") and put(**{k: v for k, v in request.items() if k != "Tags"}):
            return False  # (PutMetricAlarm ignores Tags on update, AWS does: none sent)
    arn, reported = live.get("arn"), live.get("hash")
    if fields_written:
        arn, reported = _read_back(cloudwatch, region, change.name, request, created=change.action == CREATE,
                                   before=alarm_fields(now) if now is not None else None)
    if change.action == CREATE:
        _created_with(cloudwatch, region, change.name, arn, tags)
    missing = _evidence_to_restore(request, tags, reported, live.get("renamed")) if live.get("as_generated") else [
        t for t in alarm_tags(request, reported) if t not in tags]
    if missing:  # after the fields: a lost tag write leaves an alarm as generated with old evidence, not drift
        read_tags = lambda: cloudwatch.alarm_tags(region, {"AlarmName": change.name, "AlarmArn": arn})  # noqa: E731
        tagged, untouched = (lambda now: all(t in now for t in missing)), (lambda now: _same_tags(now, tags))
        try:
            try:
                if change.action != CREATE and not live.get("as_generated") and _tagged_since(
                        change, read_tags(), tagged):  # its own tags, read after the fields' write and read-back
                    return True
                answer = cloudwatch.call(region, "TagResource", what, ResourceARN=arn, Tags=missing,
                                         before_retry=_look("TagResource", "the alarm's tags", what, read_tags,
                                                            tagged, untouched))
            except RemoteError as exc:
                if not answer_lost(exc):
                    raise
                _settle(exc, "TagResource", "the alarm's tags", read_tags, done=tagged, before=untouched)
            else:
                if answer.get(LOOKED) is False and live.get("as_generated"):
                    return False  # the look before a retry found it tagged by another hand, no attempt of ours
                    # having reached CloudWatch: the tags were the whole write, and it is not gpudash's
                _tags_read_back(cloudwatch, "TagResource", what, read_tags, tagged,  # an answer alone proves no write
                                "does not carry the tags sent")
        except RemoteError as failed:
            if live.get("as_generated"):  # the tags were the whole write
                raise
            raise TagsNotWritten(_untagged(failed, created=change.action == CREATE,
                                           moved=isinstance(failed, (NotResent, TagsMoved)))) from None
    return True


class TagsMoved(RemoteError):
    """An alarm's tags, read right before a tag write, are not as they were before its fields were written."""


def _turns(cloudwatch: CloudWatch, region: str, *apis: str) -> None:
    """Wait, before the reads a write or delete is judged on, for the turn of each call they and it make (their
    pacing): the wait falls before the reads, never between them and the write (CloudWatch has no conditional
    write: what changes after the last read is not seen)."""
    for api in apis:
        cloudwatch.pacer.ready(region, api)


LOOKS = 3  # times a look of several reads is made again when one of its reads waited to retry, before giving up


def _unwaited(cloudwatch: CloudWatch, look: Callable[[], Any], what: str) -> Any:
    """`look()`, a look of several reads (an alarm's tags and its fields), made again when one of its calls waited to
    retry (a throttle, a 5xx): a person's change during that wait would not be seen by the reads made before it (a
    console edit while the tag read of a prune backed off had the edited alarm deleted). After LOOKS looks that each
    waited, nothing is written or deleted: a failure."""
    for _ in range(LOOKS):
        before = cloudwatch.backoffs()
        seen = look()
        if cloudwatch.backoffs() == before:
            return seen
    raise RemoteError(f"CloudWatch throttled or failed a read of the last look before the write {LOOKS} times in a "
                      "row: what was read before that wait may have changed during it; not written or deleted",
                      where=what, hint="run again when CloudWatch answers: publishing converges")


def _tagged_since(change: Change, now: list[dict[str, str]], tagged: Callable[[list[dict[str, str]]], bool]) -> bool:
    """Before the first TagResource of an update whose fields were just written: the alarm's own tags read `now`
    (its tags were read before PutMetricAlarm; the write and its read-back came since). True when they carry the
    tags to write already (another publisher wrote them); raises TagsMoved when someone else changed them meanwhile
    (a person taking the alarm over gets no evidence of gpudash's tagged onto it); False: write them. CloudWatch has
    no conditional TagResource: a change after this read and before the TagResource lands is not seen."""
    if tagged(now) and alarm_owned(now):
        return True
    moved = _tag_moved(change, now, None, since="since they were read right before its fields were written")
    if moved:
        raise TagsMoved(moved, where=f"CloudWatch alarm {change.name}", hint="run `gpudash plan` and apply again")
    return False


def _tags_read_back(cloudwatch: CloudWatch, api: str, what: str, read: Callable[[], list[dict[str, str]]],
                    done: Callable[[list[dict[str, str]]], bool], otherwise: str) -> None:
    """Returns when an alarm's tags, read right after a tag write `api` CloudWatch answered, show it made; raises
    when they do not. ListTagsForResource's freshness is not documented: tags read as not yet written are read
    once more a second later (as a create's are, `_created_with`) before the write is called not made."""
    def now() -> list[dict[str, str]]:
        try:
            return read()
        except RemoteError as exc:
            raise _unshown(exc, api, "the alarm's tags") from None

    tags, twice = _read_settled(cloudwatch, now, done)
    if done(tags):
        return
    read_back = f"read back twice, {LAGGED_READ_PAUSE:g} s apart," if twice else "read back"
    raise RemoteError(f"CloudWatch answered {api}, but {read_back} the alarm {otherwise}: the write did not take "
                      "effect", where=what, hint=_unproven(cloudwatch))


LAGGED_READ_PAUSE = 1.0  # seconds before a read-back that shows a write not (all) made is read again


def _read_settled(cloudwatch: CloudWatch, read: Callable[[], Any], settled: Callable[[Any], bool]) -> tuple[Any, bool]:
    """What `read` reads right after a write (an alarm's tags, its fields, a dashboard), and whether it was read
    twice: once more LAGGED_READ_PAUSE later (on the deadline's clock, when it leaves the time) where the first read
    does not show the write settled."""
    tags = read()
    if settled(tags) or cloudwatch.deadline.remaining() <= LAGGED_READ_PAUSE:
        return tags, False
    cloudwatch.deadline.clock.sleep(LAGGED_READ_PAUSE)
    return read(), True


def _created_with(cloudwatch: CloudWatch, region: str, name: str, arn: str, tags: list[dict[str, str]]) -> None:
    """After a create read back as sent: the alarm carries exactly the tags the create sent. An alarm of this name
    made in between the last read and the write (a person's, in the pacing window) turns the create into an update,
    and AWS ignores Tags on an update: the alarm then has gpudash's definition and someone else's tags, and is not
    reported written (one ListTagsForResource a create). An alarm carrying every tag sent and more was created by this
    write (Tags are applied on a create only) and tagged by someone else since: written, with a note.
    Tags read as none or only some of those sent may also be a ListTagsForResource answer that has not caught up with
    the create (AWS documents no freshness for it): they are read once more a second later, and if they still are,
    the alarm is reported written with its tags unconfirmed (TagsNotWritten), neither as failed nor as confirmed."""
    what = f"CloudWatch alarm {name}"

    def read() -> list[dict[str, str]]:
        try:
            return cloudwatch.alarm_tags(region, {"AlarmName": name, "AlarmArn": arn})
        except RemoteError as exc:
            raise _unshown(exc, "PutMetricAlarm", "the alarm's tags") from None

    now, _ = _read_settled(cloudwatch, read, lambda read_tags: not _fewer_tags(read_tags, tags))
    if _same_tags(now, tags):
        return
    if set(map(_tag_pair, now)) > set(map(_tag_pair, tags)):  # every tag sent, and more: AWS applies Tags only when
        added = _shown_tags([t for t in now if t not in tags])  # PutMetricAlarm creates, so this write created it
        cloudwatch.note(f"{what}: created by gpudash and read back as sent; it carries tags the create did not send "
                        f"({added}), added since by someone else: kept")
        return
    shown = _shown_tags(now)
    if _fewer_tags(now, tags):
        raise TagsNotWritten(RemoteError(
            f"CloudWatch answered PutMetricAlarm, which was to create the alarm, and it reads back as sent, but "
            f"its tags could not be confirmed: read twice, {LAGGED_READ_PAUSE:g} s apart, it carries {shown}, "
            "fewer than the create sent. Either the tag read has not caught up with the create yet (AWS documents "
            "no freshness for ListTagsForResource), or an alarm of this name without those tags was there before "
            "it (made since the plan's last read) and the write updated it with gpudash's definition (AWS ignores "
            f"Tags on an update). The next plan reads its tags again: carrying {ALARM_OWNER_TEXT}, it is gpudash's "
            "alarm as created; without it, it is left alone as not gpudash's", where=what,
            hint="if a person may have made an alarm of this name just now, look at it in the CloudWatch console "
                 "(it holds gpudash's definition); otherwise run `gpudash plan` again"))
    raise RemoteError(f"CloudWatch answered PutMetricAlarm, which was to create the alarm, and right after it "
                      f"carries other tags than the create sent ({shown}): an alarm of this name was there before "
                      "it (made since the plan's last read), and the write updated it with gpudash's definition "
                      "(AWS ignores Tags on an update); not reported written", where=what,
                      hint="look at the alarm in the CloudWatch console: it holds gpudash's definition now; if "
                           "it was a person's, restore theirs")


def _fewer_tags(these: list[dict[str, str]], sent: list[dict[str, str]]) -> bool:
    """Whether `these` are none or only some of the tags `sent`, each with the value sent."""
    return set(map(_tag_pair, these)) < set(map(_tag_pair, sent))


class TagsNotWritten(WrittenThenFailed):
    """An alarm written and read back as sent whose tag write then failed, or whose tags could not be confirmed
    (see `_created_with`): the write is done, its tags are not (known to be) written."""


def _untagged(exc: RemoteError, *, created: bool, moved: bool = False) -> RemoteError:
    """What a failed tag write after a confirmed alarm write means: the alarm stands as written, without the
    evidence of this write, and what that does to the next plan. `moved`: not sent (or not sent again) because
    someone else changed the alarm's tags since they were read before the write."""
    if sent_then_stopped(exc):  # the tag write was sent, then the run stopped
        return RemoteError(
            f"the alarm was {'created' if created else 'updated'} and read back as sent, but {exc.what}: whether "
            "gpudash's evidence of this write was tagged onto it is not known; the next plan reads its tags again",
            where=exc.where, hint=exc.hint)
    if moved:
        return RemoteError(
            f"the alarm was {'created' if created else 'updated'} and read back as sent, but {exc.what}: gpudash's "
            f"evidence was not tagged onto it; the next plan judges the alarm by the tags it carries now (without "
            f"{ALARM_OWNER_TEXT}, it is left alone as not gpudash's)", where=exc.where,
            hint="look at the alarm in the CloudWatch console: it holds gpudash's definition (a change of its tags "
                 "made just before that write landed was not seen before it); if it was taken over, restore its "
                 "definition as its owner wants it")
    if created:
        stands = (f"the alarm was created and read back as sent, carrying the tags it was created with "
                  f"({ALARM_OWNER_TEXT}, the project's and the {ALARM_HASH_TAG} of what was sent), but the "
                  f"{ALARM_HASH_TAG} naming the form CloudWatch reports it in was not written")
    else:
        stands = (f"the alarm was updated and read back as sent, but its tags were not written: {ALARM_HASH_TAG} "
                  f"still holds the evidence of gpudash's earlier write of it (and {ALARM_CLUSTERS_TAG} the "
                  "clusters recorded then)")
    return RemoteError(
        f"{stands}; the next apply finds it as generated and writes only its tags, but if its definition changes "
        f"before they are written, it reads as changed outside gpudash (drift, --force) (tag write: {exc.what})",
        where=exc.where, hint=exc.hint or "grant cloudwatch:TagResource to the credentials in use")


def _read_back(cloudwatch: CloudWatch, region: str, name: str, request: dict[str, Any], *,
               created: bool, before: dict[str, Any] | None = None) -> tuple[str, str]:
    """(ARN, hash of the alarm as CloudWatch reports it) right after its write. The read-back is the only
    proof the write took effect (an answer of `{}` proves nothing): it must be the request in every field
    that decides what the alarm evaluates and does, up to CloudWatch's documented defaults and forms
    (ownership.unconfirmed). An alarm missing, reported otherwise, or not read at all (a failed or
    interrupted read) is a failure. An alarm just created carries the evidence of what was sent from its
    creation on (the hash of the request is known before the write): reported otherwise, that evidence is
    taken back (UntagResource), so that it carries its ownership tags alone and the next plan compares it
    field by field; not read at all, it keeps it, and the next plan's read of the alarm is the proof: as
    generated only where CloudWatch holds what was sent. A read that shows the alarm as it was before the write
    (`before`: its fields read right before it; None: not there) may be a read that has not caught up with the write
    (AWS documents no freshness for DescribeAlarms): it is read once more LAGGED_READ_PAUSE later before the write
    is called not made, as tag read-backs are."""
    what = f"CloudWatch alarm {name}"
    hint = _unproven(cloudwatch)
    left = (f"; the alarm may exist, tagged {ALARM_OWNER_TEXT} and with the {ALARM_HASH_TAG} of what was sent "
            "(unconfirmed: the next plan finds it as generated only where CloudWatch holds what was sent, and "
            "otherwise as changed since gpudash wrote it)") if created else "; no evidence tagged"
    def read() -> dict[str, Any] | None:
        try:
            return cloudwatch.metric_alarms(region, names=[name]).get(name)
        except RemoteError as exc:
            if isinstance(exc, DeadlineExceeded) and exc.stopped is None:
                exc.stopped = exc.what  # the write was answered: it may have happened, never "not attempted"
            exc.what = (f"CloudWatch answered PutMetricAlarm, but the alarm could not be read back to show the "
                        f"write took effect, which it may have ({exc.what.removesuffix('; not attempted')}); not "
                        f"reported written{left}")
            exc.where, exc.hint = what, exc.hint or hint
            raise

    def as_before(alarm: dict[str, Any] | None) -> bool:
        return alarm is None if before is None else alarm is not None and alarm_fields(alarm) == before

    alarm, twice = _read_settled(cloudwatch, read, lambda now: not as_before(now))
    right_after = f"read back twice, {LAGGED_READ_PAUSE:g} s apart," if twice else "right after"
    if alarm is None:
        raise RemoteError(f"CloudWatch answered PutMetricAlarm, but {right_after} the alarm is not there",
                          where=what, hint=hint)
    differences = unconfirmed(alarm_fields(request), alarm_fields(alarm))
    if differences:
        after = _evidence_taken_back(cloudwatch, region, name, alarm, alarm_tags(request)) if created else left
        raise RemoteError(f"CloudWatch answered PutMetricAlarm, but {right_after} it reports the alarm with other "
                          f"{', '.join(differences)} than were sent: the write did not take effect as sent{after}",
                          where=what, hint=hint)
    return alarm["AlarmArn"], alarm_hash(alarm)


def _evidence_taken_back(cloudwatch: CloudWatch, region: str, name: str, alarm: dict[str, Any],
                         sent: list[dict[str, str]]) -> str:
    """Untag the content evidence an alarm was just created with (the create sent the tags `sent`), now that
    CloudWatch reports it otherwise than sent; what the alarm carries then, for the failure's message. Its tags are
    read right before UntagResource and it is sent only when they are those the create sent (a person who took the
    alarm over since gets nothing untagged); a retry looks at them first too. However the UntagResource ends (its
    answer lost, or answered), the tags are read after it, and the message says what they show: taken back, not
    taken back, or not known (they could not be read)."""
    what = f"CloudWatch alarm {name}"
    read = lambda: cloudwatch.alarm_tags(region, alarm)  # noqa: E731
    gone = lambda now: all(t.get("Key") != ALARM_HASH_TAG for t in now)  # noqa: E731

    def kept(why: str, moved: bool = False) -> str:
        if moved:  # someone else's tags now: nothing of gpudash's is said of them
            return (f"; the alarm exists and its {ALARM_HASH_TAG} of what was sent could not be taken back ({why}): "
                    f"the next plan judges the alarm by the tags it carries (without {ALARM_OWNER_TEXT}, it is left "
                    "alone as not gpudash's)")
        return (f"; the alarm exists, tagged {ALARM_OWNER_TEXT}, and its {ALARM_HASH_TAG} of what was sent could "
                f"not be taken back ({why}): the next plan shows it as changed since gpudash wrote it (drift, --force)")

    def not_known(why: str) -> str:
        return (f"; the alarm exists, tagged {ALARM_OWNER_TEXT}, and whether its {ALARM_HASH_TAG} of what was sent "
                f"was taken back is not known ({why}): the next plan reads its tags again (without {ALARM_HASH_TAG}, "
                "it compares the alarm field by field; with it, it shows it as changed since gpudash wrote it: drift, "
                "--force)")

    def shown_after(how: str) -> str:
        """What the tags read now show of the UntagResource, which ended as `how` says."""
        try:
            now, twice = _read_settled(cloudwatch, read, gone)
        except RemoteError as exc:
            return not_known(f"{how}, and its tags could not be read back to show it: {exc.what}")
        if gone(now) and not alarm_owned(now):  # taken over meanwhile: what its tags show, not what gpudash sent
            shown = _shown_tags(now)
            return (f"; the alarm exists without {ALARM_HASH_TAG} (taken back), and its tags read then are not "
                    f"gpudash's ({shown}): the next plan leaves it alone as not gpudash's")
        if gone(now):
            return (f"; the alarm exists, tagged {ALARM_OWNER_TEXT} without {ALARM_HASH_TAG} (taken back: its "
                    "content unconfirmed, the next plan compares it field by field)")
        read_back = f"read back twice, {LAGGED_READ_PAUSE:g} s apart," if twice else "read back"
        return kept(f"{how}; {read_back} the alarm still carries {ALARM_HASH_TAG}")

    try:
        before, _ = _read_settled(cloudwatch, read, lambda now: not _fewer_tags(now, sent))
    except RemoteError as exc:
        return kept(f"its tags could not be read right before UntagResource, which was not sent: {exc.what}")
    if not _same_tags(before, sent):
        shown = _shown_tags(before)
        return kept(f"its tags, read right before UntagResource, are not those it was created with ({shown}): "
                    "changed by someone else since, or a read that has not caught up with the create; not sent",
                    moved=True)
    look = _look("UntagResource", "the alarm's tags", what, read, gone, lambda now: _same_tags(now, sent),
                 "not taken back")
    try:
        cloudwatch.call(region, "UntagResource", what, ResourceARN=alarm["AlarmArn"], TagKeys=[ALARM_HASH_TAG],
                        before_retry=look)
    except RemoteError as exc:
        if sent_then_stopped(exc):  # sent, then the run stopped: unread
            return not_known(exc.what)
        if not answer_lost(exc):  # refused, or a retry withheld by its look: not made
            return kept(exc.what, moved=isinstance(exc, NotResent))
        return shown_after("CloudWatch UntagResource was sent and its answer was lost")
    return shown_after("CloudWatch answered UntagResource")


class _Ledger:
    """What one writer of a Region (its dashboards', its alarms') has done so far, read when apply is stopped at once
    (a second Ctrl-C): the outcomes as they are made, and the changes it is writing now (a dashboard, an alarm, or a
    DeleteAlarms group): only those can be under way, the rest not attempted."""

    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []
        self.writing: list[Change] = []


def _apply_dashboards(cloudwatch: CloudWatch, region: str, changes: list[Change],
                      dashboards: dict[str, dict[str, Any]], progress: Tick, ledger: _Ledger) -> list[Outcome]:
    """The outcomes, kept in `ledger` as they are made."""
    outcomes = ledger.outcomes
    for change in changes:
        ledger.writing = [change]
        try:
            written = _put_dashboard(cloudwatch, region, change, dashboards.get(change.name))
            outcomes.append(Outcome(change, done=written, status=DONE if written else SKIPPED))
        except WrittenThenFailed as warned:
            outcomes.append(Outcome(change, done=True, unfinished=str(warned.error)))
        except RemoteError as exc:
            outcomes.append(Outcome(change, done=False, error=str(exc), status=FAILED))
        progress()
    return outcomes


def _evidence_to_restore(request: dict[str, Any], tags: list[dict[str, str]], reported: str | None,
                         renamed: bool = False) -> list[dict[str, str]]:
    """The tags an alarm as generated lacks (plan and apply alike): its evidence, and its own tags, but not a new
    list of clusters alone (the marks it carries are kept, and the evidence hashes those), unless `renamed`: the
    clusters it records are all ones these settings renamed (--renamed-from), and it records the new names."""
    if renamed:
        return [t for t in alarm_tags(request, reported) if t not in tags]
    expected = request if marks_intact(tags) is False else keeping_marks(request, tags)  # evidence of no marks too
    missing = [t for t in alarm_tags(expected, reported) if t not in tags and not same_publication_kind(t, tags)]
    # evidence of the form before the rule tag was hashed is written again only with another tag (its next write)
    return [] if all(evidence_current(t, tags) for t in missing) else missing


def _tag_moved(change: Change, tags: list[dict[str, str]], request: dict[str, Any] | None,
               since: str = "since the plan") -> str | None:
    """Why the alarm must not be written or deleted now that its tags read `tags`; "" when an update of
    its tags alone is already done (another publisher); None when they are as the plan read them."""
    live = change.live or {}
    before = live.get("tags") or []
    if _same_tags(before, tags):
        return None
    if request is not None and live.get("as_generated") and alarm_owned(tags) and not _evidence_to_restore(
            request, tags, live.get("hash"), live.get("renamed")):
        return ""
    if alarm_owned(before) and not alarm_owned(tags):
        return f"its {ALARM_OWNER_TEXT} tag was removed or changed by someone else {since}"
    if read_alarm_evidence(before) != read_alarm_evidence(tags):
        return f"its {ALARM_HASH_TAG} tag was changed by someone else {since}"
    return f"its tags were changed by someone else {since}"


def _shown_tags(tags: list[dict[str, str]]) -> str:
    """An alarm's tags as a report shows them: key=value, sorted, or "none"."""
    return ", ".join(f"{k}={v}" for k, v in sorted(map(_tag_pair, tags))) or "none"


def _tag_pair(tag: dict[str, str]) -> tuple[str, str]:
    return str(tag.get("Key")), str(tag.get("Value"))


def _same_tags(these: list[dict[str, str]], those: list[dict[str, str]]) -> bool:
    return sorted(map(_tag_pair, these)) == sorted(map(_tag_pair, those))


def _tags_now(cloudwatch: CloudWatch, region: str, batch: list[Change]) -> dict[str, list[dict[str, str]]]:
    """Name -> tags of the alarms of the batch the plan found, read now. An alarm to delete is asked alone
    (ListTagsForResource answers from the alarm itself): a delete cannot be undone, and the Tagging API's index,
    whose freshness AWS does not document, may still show an ownership tag a person removed, or the tags of an alarm
    a person deleted and made again under its name. The alarms to update are read with one GetResources call
    (ResourceARNList, up to 100), and alone where that answer leaves one out or shows it otherwise than the plan
    read (each update reads its own tags again right before its write, `_put_alarm`); alone where GetResources is
    denied."""
    planned = {c.name: c for c in batch if (c.live or {}).get("arn")}
    updated = [c for c in planned.values() if c.action != DELETE]
    bulk = (cloudwatch.tags_of(region, [c.live["arn"] for c in updated]) or {}) if updated else {}
    tags = {}
    for name, change in planned.items():
        listed = bulk.get(change.live["arn"])
        if change.action != DELETE and listed is not None and _same_tags(listed, change.live.get("tags") or []):
            tags[name] = listed
        else:
            tags[name] = cloudwatch.alarm_tags(region, {"AlarmName": name, "AlarmArn": change.live["arn"]})
    return tags


def _evidence_now(cloudwatch: CloudWatch, region: str, batch: list[Change]
                  ) -> tuple[dict[str, list[dict[str, str]]], dict[str, dict[str, Any]]]:
    """The batch's alarms' tags (`_tags_now`) and the alarms (DescribeAlarms by name), read now. A batch of updates
    reads its tags, then its fields (the fields read is the first alarm's read right before its write). A group to
    delete reads its fields, then its tags: the ownership evidence is the last read before DeleteAlarms (and its
    fields once more where an alarm shows no tags: one deleted since is already gone, not taken over)."""
    names = [c.name for c in batch]
    if any(c.action == DELETE for c in batch):
        def look() -> tuple[dict[str, list[dict[str, str]]], dict[str, dict[str, Any]]]:
            _turns(cloudwatch, region, "ListTagsForResource", "DeleteAlarms")
            now = cloudwatch.metric_alarms(region, names=names)
            tags = _tags_now(cloudwatch, region, batch)
            if any(not tags.get(c.name) for c in batch if c.name in now):  # none: stripped, or deleted since (its
                now = cloudwatch.metric_alarms(region, names=names)        # tags go with it): the fields tell which
            return tags, now
        return _unwaited(cloudwatch, look, f"CloudWatch alarms in {region}")
    tags = _tags_now(cloudwatch, region, batch)
    return tags, cloudwatch.metric_alarms(region, names=names)


def _read_now(cloudwatch: CloudWatch, region: str, batch: list[Change], requests: dict[str, dict[str, Any]]
              ) -> tuple[list[tuple[Change, str | None]], RemoteError | None]:
    """Each change of the batch with why it must not be written now (see `_moved`), from the alarms' tags
    and fields read again (`_evidence_now`): the tags of the alarms the plan found, by the ARNs it read.

    The tags are read as `_tags_now` says: each alarm to delete alone (ListTagsForResource, paced at 3 a second, so
    a prune of thousands of alarms in one Region may outlast the deadline and finish on the next run: a slow prune
    over a wrong delete), the alarms to update with one GetResources call per 100 (each reads its own tags again
    right before its write, `_put_alarm`)."""
    try:
        tags, now = _evidence_now(cloudwatch, region, batch)
    except RemoteError as exc:
        return [], exc
    checked = []
    for change in batch:
        request = None if change.action == DELETE else requests.get(change.name)
        alarm = now.get(change.name)
        moved = _held_since(other_kind(alarm)) if other_kind(alarm) else _moved(
            change, alarm_fields(alarm) if alarm is not None else None,
            alarm_fields(request) if request is not None else None)
        if moved is None and alarm is not None:  # an alarm the plan did not find has moved already
            moved = _tag_moved(change, tags.get(change.name, []), request)
        checked.append((change, moved))
    return checked, None


def _apply_alarms(cloudwatch: CloudWatch, region: str, changes: list[Change], requests: dict[str, dict[str, Any]],
                  progress: Tick, ledger: _Ledger) -> list[Outcome]:
    """Writes 100 alarms at a time, then deletes `DELETE_GROUP` at a time. Just before each batch is written (and
    just before each group's DeleteAlarms call) its alarms' tags and fields are read again: one that another hand
    changed, took over (the ownership tag gone) or created since the plan is not written or deleted, and is reported.
    The outcomes are kept in `ledger` as they are made."""
    outcomes = ledger.outcomes

    def record(change: Change, done: bool = False, error: RemoteError | None = None,
               unfinished: RemoteError | None = None) -> None:
        outcomes.append(Outcome(change, done=done, error=str(error) if error else None,
                                status=FAILED if error else DONE if done else SKIPPED,
                                unfinished=str(unfinished) if unfinished else None))
        progress()

    def still_as_planned(batch: list[Change]) -> list[Change]:
        """The changes of the batch to make."""
        checked, failure = _read_now(cloudwatch, region, batch, requests)
        if failure is not None:
            for change in batch:
                record(change, error=failure)
        keep = []
        for change, moved in checked:
            if moved:
                record(change, error=_not_overwritten(change, moved))
            elif moved == "":
                record(change)  # already as generated (another publisher), or already deleted
            else:
                keep.append(change)
        return keep

    writes = [c for c in changes if c.action != DELETE]
    deletes = [c for c in changes if c.action == DELETE]
    for start in range(0, len(writes), BATCH):
        for change in still_as_planned(writes[start:start + BATCH]):
            ledger.writing = [change]
            try:  # each alarm looked at alone right before its own write (_put_alarm)
                record(change, done=_put_alarm(cloudwatch, region, change, requests[change.name]))
            except TagsNotWritten as untagged:
                record(change, done=True, unfinished=untagged.error)
            except RemoteError as exc:
                record(change, error=exc)
    deletes = _free_of_composites(cloudwatch, region, deletes, record) if deletes else deletes
    deleted: list[Outcome] = []
    for start in range(0, len(deletes), DELETE_GROUP):
        # every dashboard listed again before each group's delete (a listing: only those changed since are read), then
        # its alarms' tags and fields, the last look
        batch = _free_of_dashboards(cloudwatch, region, deletes[start:start + DELETE_GROUP], record)
        batch = still_as_planned(batch) if batch else batch
        if not batch:
            continue
        ledger.writing = batch
        for change, gone, error in _delete_alarms(cloudwatch, region, batch):
            record(change, done=not gone and error is None, error=error)
            deleted += [outcomes[-1]] if outcomes[-1].done else []
    _shown_while_deleting(cloudwatch, region, deleted)
    return outcomes


def _shown_while_deleting(cloudwatch: CloudWatch, region: str, deleted: list[Outcome]) -> None:
    """The look after a Region's alarm deletes: every dashboard of the account read once more (the listing, and the
    bodies of those changed since the look before the last delete). A dashboard keeps showing an alarm deleted since
    (its widget shows it missing), so one showing a deleted alarm that the plan did not show it on was put there after
    the look before its delete (within that delete's round trip, or where the listing then lagged the person's save):
    that delete is listed as done, then failed (exit 3), naming the dashboards; where the read fails now, each delete
    is, saying so. Not looked at where the plan could not read them (--force agreed to whatever)."""
    looked = [o for o in deleted if (o.change.live or {}).get("dashboards") not in (None, UNREAD)]
    if not looked:
        return
    try:
        dashboards = _dashboards_showing(cloudwatch, region)
    except DeadlineExceeded as exc:  # stopped: not an answer, each delete unconfirmed
        dashboards = exc
    for outcome in looked:
        added = made_since(outcome.change.live["dashboards"],
                           None if isinstance(dashboards, RemoteError) else _showing(dashboards, outcome.change))
        if added == UNREAD:
            outcome.unfinished = (f"the dashboards that may show it could not be read after the Region's deletes "
                                  f"({_which(dashboards)}): whether one came to show it while they ran is not known")
        elif added:
            outcome.unfinished = (f"put on dashboard(s) {shown_names(added)} while the Region's deletes ran, after "
                                  "the look at every dashboard before its delete: deleted all the same, and those show "
                                  "it missing (running again does not mend it: take it off them or point them at "
                                  "another alarm)")


def _delete_alarms(cloudwatch: CloudWatch, region: str, batch: list[Change]
                   ) -> list[tuple[Change, bool, RemoteError | None]]:
    """(change, already gone, error) for each alarm of one DeleteAlarms call (a group of `DELETE_GROUP`).
    CloudWatch answers ResourceNotFound for an alarm deleted by someone else since it was read: it is read again,
    and one gone is already gone."""
    from botocore.exceptions import ClientError

    what = f"CloudWatch alarms in {region}"
    not_found = own = gone_at_look = False
    lost: RemoteError | None = None

    def read() -> tuple[dict[str, list[dict[str, str]]], dict[str, dict[str, Any] | None]]:
        tags, alarms = _evidence_now(cloudwatch, region, batch)  # the fields, then the tags, as the last look
        return tags, {c.name: alarm_fields(alarms[c.name]) if c.name in alarms else None for c in batch}

    def as_planned(now) -> bool:
        tags, fields = now
        return all(fields[c.name] == (c.live or {}).get("fields")
                   and _tag_moved(c, tags.get(c.name, []), None) is None for c in batch)

    look = _look("DeleteAlarms", "the alarm", what, read, lambda now: not any(now[1].values()), as_planned,
                 "not deleted")
    try:
        looked = cloudwatch.call(region, "DeleteAlarms", what, AlarmNames=[c.name for c in batch],
                                 before_retry=look).get(LOOKED)
        if looked is not None:  # found gone by the look before a retry: by an attempt that may have landed, or else
            gone_at_look, own = True, looked  # (no attempt reached CloudWatch) by someone else
    except RemoteError as exc:
        if _under_composites(exc):
            return _refused_for_composites(cloudwatch, region, batch, exc)
        if not answer_lost(exc):
            return [(change, False, exc) for change in batch]
        lost = exc  # it may have happened: the read below tells
    except ClientError as exc:
        not_found = True
        own = bool(getattr(exc, "after_lost", False))  # an attempt of this call landed and lost its answer
    try:  # an answer alone proves no delete; still there: perhaps a read that has not caught up with it
        left, twice = _read_settled(cloudwatch, lambda: cloudwatch.metric_alarms(region, names=[c.name for c in batch]),
                                    lambda now: not any(c.name in now for c in batch))
    except RemoteError as exc:
        if lost is not None and not isinstance(exc, DeadlineExceeded):
            lost.what += f"; the alarms could not be read back to show it ({exc.what})"
            return [(change, False, lost) for change in batch]
        unshown = _unshown(exc, "DeleteAlarms", "the alarms")  # once: it rewrites the error it is given
        return [(change, False, unshown) for change in batch]
    answer = "with ResourceNotFound" if not_found else "as done"
    right_after = f"read back twice, {LAGGED_READ_PAUSE:g} s apart," if twice else "right after"
    still = RemoteError(f"CloudWatch answered DeleteAlarms {answer}, but {right_after} the alarm is still there",
                        where=what, hint=_unproven(cloudwatch))
    if lost is not None:
        still = RemoteError("CloudWatch DeleteAlarms was sent and its answer was lost; read back, the alarm is still "
                            f"there: not deleted ({getattr(lost, 'cause', None) or lost.what})", where=what,
                            hint="run again when CloudWatch answers: publishing converges")
    if own or lost is not None:
        for change in batch:
            if change.name not in left:
                shown = ALL_LOST if lost is not None else LOOKED_GONE if gone_at_look else None
                cloudwatch.note(_gone_after_lost(f"CloudWatch alarm {change.name}", "DeleteAlarms",
                                                 *([shown] if shown else [])))
    return [(change, (not_found or gone_at_look) and not own and change.name not in left,
             None if change.name not in left else still) for change in batch]


def _free_of_composites(cloudwatch: CloudWatch, region: str, deletes: list[Change],
                        record: Callable[..., None]) -> list[Change]:
    """The alarms of `deletes` no composite alarm depends on now, from the Region's composite alarms read again right
    before the deletes (after the writes, which may take minutes since the plan read them): one a person's composite
    alarm came to name since (its rule, whose delete CloudWatch refuses; its actions suppressor, whose delete CloudWatch
    is not documented to refuse: the composite alarm would lose it) is `record`ed failed, naming the composite alarm.
    Composite alarms that cannot be read leave no alarm shown free: none is deleted, each failed with that error."""
    what = f"CloudWatch alarms in {region}"
    try:
        composites = cloudwatch.composite_alarms(region)
    except RemoteError as exc:
        for change in deletes:
            record(change, error=exc)
        return []
    free = []
    for change in deletes:
        if said := composite_rules.dependence(composites, change.name, (change.live or {}).get("arn"))[1]:
            record(change, error=RemoteError(f"not deleted: {said}, made or changed since the plan; "
                                             f"{NOT_UNDER_COMPOSITES}", where=what, hint=KEPT_FIX))
        else:
            free.append(change)
    return free


def _under_composites(exc: RemoteError) -> bool:
    """Whether CloudWatch refused a DeleteAlarms for a composite alarm that depends on an alarm it names (its answer,
    as users report it: ValidationError "Cannot delete NAME as there are composite alarm(s) depending on it.")."""
    return getattr(exc, "code", None) == "ValidationError" and "composite alarm" in exc.what


def _refused_for_composites(cloudwatch: CloudWatch, region: str, batch: list[Change], refusal: RemoteError
                            ) -> list[tuple[Change, bool, RemoteError | None]]:
    """The outcomes of a DeleteAlarms CloudWatch refused because a composite alarm depends on an alarm it names (one
    made or changed since the plan, which read none). CloudWatch refuses the whole call, deleting none: the alarms a
    composite alarm depends on (by the Region's composite alarms read once, or by the names CloudWatch's refusal
    gives) fail, naming the composite alarms; the others of the call are deleted again without them. Where which ones
    cannot be told, each fails saying it was refused with the others, not that a composite alarm depends on it."""
    what = f"CloudWatch alarms in {region}"
    try:
        composites, unread = cloudwatch.composite_alarms(region), ""
    except RemoteError as exc:
        composites, unread = {}, f" (the composite alarms could not be read to name it: {exc.what})"
    parents = {c.name: composite_rules.parents(composites, c.name, (c.live or {}).get("arn")) for c in batch}
    refused = _refused_names(refusal)
    held = [c for c in batch if parents[c.name] or c.name in refused]
    if not held:
        return [(change, False, RemoteError(
            f"not deleted: CloudWatch refused the DeleteAlarms of {len(batch)} alarms, this among them, because a "
            f"composite alarm depends on one of them ({refusal.what}){unread}", where=what, hint=KEPT_FIX))
            for change in batch]
    outcomes = {id(change): (change, False, RemoteError(
        f"not deleted: {_depending(parents[change.name], unread)}, made or changed since the plan (CloudWatch refused "
        f"DeleteAlarms: {refusal.what}); {NOT_UNDER_COMPOSITES}", where=what, hint=KEPT_FIX)) for change in held}
    free = [c for c in batch if id(c) not in outcomes]
    outcomes.update((id(outcome[0]), outcome) for outcome in (_delete_alarms(cloudwatch, region, free) if free else []))
    return [outcomes[id(change)] for change in batch]


def _depending(parents: list[str], unread: str) -> str:
    """The composite alarms `parents` said as depending on an alarm; where none is known, that one does (CloudWatch's
    refusal named it), with why none could be named (`unread`)."""
    return composite_rules.depend(parents) if parents else f"a composite alarm depends on it{unread}"


def _refused_names(refusal: RemoteError) -> set[str]:
    """The alarm names CloudWatch's composite refusal gives ("Cannot delete abc,xyz as there are composite alarm(s)
    depending on them."); none where it is worded otherwise."""
    found = re.search(r"Cannot delete (.+?) as there are composite alarm", refusal.what)
    return set(found.group(1).split(",")) if found else set()


def _apply_region(cloudwatch: CloudWatch, region: str, changes: list[Change], dashboards: dict[str, dict[str, Any]],
                  requests: dict[str, dict[str, Any]], progress: Tick, ledgers: list[_Ledger]) -> list[Outcome]:
    """`ledgers` gets the Region's writers' ledgers (read when apply is stopped at once)."""
    made = (_Ledger(), _Ledger())
    ledgers += made
    return _side_by_side(
        lambda: _apply_dashboards(cloudwatch, region, [c for c in changes if c.kind == "dashboard"], dashboards,
                                  progress, made[0]),
        lambda: _apply_alarms(cloudwatch, region, [c for c in changes if c.kind == "alarm"], requests, progress,
                              made[1]))


def apply(cloudwatch: CloudWatch, changes: list[Change], dashboards: dict[str, dict[str, Any]],
          requests: list[dict[str, Any]], *, force: bool, prune: bool, dry_run: bool,
          max_prune_share: float = prune_guard.DEFAULT_MAX_SHARE, allow_mass_prune: bool = False,
          progress: Progress | None = None) -> list[Outcome]:
    """Write the changes the flags allow, every Region at once; one Outcome per change, in order.

    A dry run writes nothing and reports what the same command without --dry-run would write.
    """
    prune_guard.check(changes, prune=prune, allowed=allow_mass_prune, max_share=max_prune_share)
    decided = {id(c): disposition(c, force=force, prune=prune) for c in changes}
    if dry_run:
        return [Outcome(c, done=False, status=WOULD_WRITE if decided[id(c)] == WRITE else decided[id(c)])
                for c in changes]
    to_write = [c for c in changes if decided[id(c)] == WRITE]
    by_region: dict[str, dict[str, dict[str, Any]]] = {}
    for item in requests:
        by_region.setdefault(item["Region"], {})[item["Request"]["AlarmName"]] = item["Request"]
    regions = sorted({c.region or "us-east-1" for c in to_write})
    ledgers: list[_Ledger] = []
    with (progress or Silent()).phase("writing to CloudWatch", len(to_write)) as tick:
        safe = _locked(tick)

        def work(region: str) -> list[Outcome]:
            return _apply_region(cloudwatch, region, [c for c in to_write if (c.region or "us-east-1") == region],
                                 dashboards, by_region.get(region, {}), safe, ledgers)

        try:
            written = {id(o.change): o for o in _parallel(regions, work)}
        except KeyboardInterrupt:  # a second Ctrl-C: the calls under way are not waited for; the report is made of
            cloudwatch.deadline.stopped_at_once()  # the outcomes made so far, and what each writer was writing
            written = {id(o.change): o for ledger in list(ledgers) for o in list(ledger.outcomes)}
            writing = {id(c) for ledger in list(ledgers) for c in list(ledger.writing)}
            written.update((id(c), Outcome(c, done=False, status=FAILED,
                                           error=UNDER_WAY if id(c) in writing else NOT_STARTED))
                           for c in to_write if id(c) not in written)
    return [written.get(id(c)) or Outcome(c, done=False, status=decided[id(c)]) for c in changes]
