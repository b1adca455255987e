"""Plan and push Grafana: create the folder, post only what changed, never clobber.

Ownership needs all the evidence: the owner tag, a uid gpudash generates (`names`), and a
version saved by gpudash (its message starts with the hash note; both marks are in `markers`). A "Save as" copy keeps the tag but
has another uid and no such version: it is never pruned or overwritten. Only gpudash's folder is
pruned. A dashboard whose content
no longer hashes to its latest gpudash message was edited by a person: refused without --force (a person's
save of the same content edits nothing), and so is one carrying people's work that Grafana deletes with it
(grafana_around: annotations, a public dashboard, permissions set on it, playlists picking it) or whose reads show
nothing. Saves carry the version the plan read (a save since is a 412); a delete, which takes no version, is
preceded by a fresh read of the owner tag, the folder, the id and the version, forced or not, then by an unchanged
save with that version, which makes a person's save from any version opened before refused, then by a fresh read of
what people made around it, then by one of the dashboard again.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from .. import diff
from ..changes import (CREATE, DELETE, DONE, DRIFT, FAILED, FOREIGN, HELD, SKIPPED, UNCHANGED, UPDATE, WITHDRAW,
                       WOULD_WRITE, WRITE, Change, Outcome, disposition)
from ..errors import RemoteError, may_have_happened
from ..markers import CLAIMS_CUT, GRAFANA_MESSAGE_LENGTH, GRAFANA_OWNER_TAG
from ..names import grafana_uid_prefixes, is_grafana_uid, shown as shown_names
from ..ownership import (CLUSTERS_CUT, Claim, GarbledClaims, Record, claim_is, claim_within, content_hash,
                         grafana_claim, grafana_content, grafana_message, grafana_message_head, grafana_owned,
                         grafana_publisher,
                         grafana_pushed_hash, grafana_recorded_claims, grafana_recorded_prefix,
                         grafana_recorded_publisher, grafana_recorded_publisher_text, renamed_evidence)
from . import prune_guard
from .grafana_annotations import annotation_count, annotation_ids, annotators, read_annotations, unshown
from .grafana_around import AccountReads, Unread, attempt, read_granted
from .grafana_panel_ties import PanelTies
from .grafana_public import shared
from .since_plan import UNREAD, made_since
from ..clients.deadline import NOT_STARTED, UNDER_WAY, DeadlineExceeded
from ..clients.grafana import (GONE, MAYBE_DELETED, ODDLY_ANSWERED, DashboardGone, GrafanaClient,
                               InvalidAnswer, PreconditionFailed,
                               Unreachable, lost)
from .progress import Progress, Silent
from .relisting import ONCE, RELIST_WAITS, listed_again, listings

HISTORY = 50  # versions searched for a gpudash save when the latest one is a person's
UNEDITED, EDITED, NOT_GPUDASH = "unedited", "edited", "not saved by gpudash"


def _versions(client: GrafanaClient, uid: str, live: dict[str, Any], limit: int) -> list[dict[str, Any]]:
    """The newest `limit` versions of the dashboard `live` read, newest first, the newest being the version it read
    at (meta.version). Anything else is not a valid answer (InvalidAnswer), never evidence: no versions (an empty
    list, a 404) for a dashboard that reads, or a list whose newest is another version (one that lags it: a cache,
    a read replica or a proxy; or a save since the read). A claim or its withdrawal built from an older message and
    posted with the current version would drop the claims saved in between; one read as "no gpudash version" would
    record no claim, and a later --prune of the file that saved it would delete it."""
    at = (live.get("meta") or {}).get("version")
    versions = client.versions(uid, limit)
    newest = versions[0].get("version") if versions else None
    if isinstance(at, int) and not isinstance(at, bool) and newest == at:
        return versions
    got = f"its newest listed is version {newest}" if versions else "Grafana lists no version of it"
    raise InvalidAnswer(f"Grafana's answer is not a valid API answer: the dashboard reads at version {at}, but {got}",
                        where=f"dashboard {uid} versions",
                        hint="a cache, read replica or proxy in front of Grafana answered with older data, or someone "
                             "saved the dashboard meanwhile: run again; if it repeats, point GRAFANA_URL at Grafana "
                             "itself")


def _evidence(client: GrafanaClient, uid: str, live: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Whether gpudash saved this dashboard (`live`, as read), and whether a person changed it since; with the
    latest version and the latest one gpudash saved (empty when none). Unedited is judged by content: a person's
    save of what gpudash saved last (a restore of the current version, a change undone) changed nothing of it."""
    model = live["dashboard"]
    latest = _versions(client, uid, live, 1)[0]
    now = content_hash(grafana_content(model))
    if grafana_pushed_hash(latest.get("message")) == now:
        return UNEDITED, latest, latest
    saved = next((v for v in _versions(client, uid, live, HISTORY) if grafana_pushed_hash(v.get("message"))), None)
    if saved is not None:
        return UNEDITED if grafana_pushed_hash(saved.get("message")) == now else EDITED, latest, saved
    return NOT_GPUDASH, latest, {}


Publisher = tuple[str, tuple[str, ...]]  # the settings that publish: their project ("" for none) and clusters


def _publisher_text(project: str, clusters) -> str:
    return f"{f'project {project!r}' if project else 'no project'}, clusters {' '.join(sorted(clusters))}"


def _other_settings(message: str | None, publisher: Publisher | None) -> str | None:
    """Which other settings the gpudash version `message` records as saving it: another project, or settings
    (of this project, or naming none) with none of these settings' clusters; None when it records these settings,
    or nothing (saved before gpudash recorded it)."""
    recorded = grafana_recorded_publisher(message)
    if recorded is None or publisher is None:
        return None
    project, clusters = recorded
    if (project and project != publisher[0]) or not clusters & set(publisher[1]):
        return _publisher_text(project, clusters)
    return None


def _claims(message: str | None, uid: str) -> frozenset[Claim]:
    """The claims a gpudash version message records (ownership.grafana_recorded_claims); a message whose claims do
    not read is not a valid answer (InvalidAnswer), never "no claims"."""
    try:
        return grafana_recorded_claims(message)
    except GarbledClaims as exc:
        raise InvalidAnswer(f"Grafana's answer is not a valid API answer: {exc}", where=f"dashboard {uid} versions",
                            hint="look at the dashboard's versions in Grafana (Dashboard settings, Versions): runs "
                                 "stop here while that version is its latest one gpudash saved; if a person wrote "
                                 "that message, delete the dashboard (the next push of its settings creates it "
                                 "again)") from None


UNLISTED = "unlisted"  # a shared dashboard whose claims do not all fit its message
_CUT_NOTE = ("; the claims do not all fit Grafana's 500-byte version message beside that record, so it records them as "
             "claims of settings not listed (also:*): no --prune deletes it after that, delete it by hand when no "
             "settings file defines it")


def _cut(model: dict[str, Any], uid_prefix: str, record: dict[str, Any]) -> bool:
    """Whether a save recording `record` (publisher and claims, see _save) writes its claims as claims not listed."""
    if not record.get("claims"):
        return False
    message = grafana_message(model, "", uid_prefix, record["publisher"], record["claims"])
    return any(CLAIMS_CUT in claim for claim in _claims(message, str(model.get("uid"))))


def _mine(publisher: Publisher | None) -> Claim:
    """The digests of these settings' clusters (with those --renamed-from names): a claim all of whose clusters are
    among them is theirs, or an earlier version's with fewer clusters."""
    return grafana_claim(publisher[0], publisher[1]) if publisher is not None else frozenset()


def _theirs(claims: frozenset[Claim], mine: Claim) -> frozenset[Claim]:
    """The claims of settings other than these: any claim with a cluster not among these settings' (or the mark of
    claims not listed)."""
    return frozenset(claim for claim in claims if not claim_within(claim, mine))


def _dropped(recorded: tuple[str, frozenset[str]], claim: Publisher) -> tuple[str, frozenset[str]]:
    """(project, clusters) of the record `recorded` that a save recording these settings (`claim`, with the
    --renamed-from names) would drop: of this project (or none), its clusters that are not these settings'; of another
    project, all of its clusters, hashed under that project (forced over its record: none of them are these
    settings')."""
    if recorded[0] and recorded[0] != claim[0]:
        return recorded[0], recorded[1]
    return claim[0], recorded[1] - set(claim[1])


def _carried(message: str | None, claim: Publisher | None) -> frozenset[Claim]:
    """What a save recording these settings as the dashboard's publisher keeps of the settings the gpudash version
    `message` records as saving it: their clusters that are not these settings' own (`claim`: with those
    --renamed-from names; all of them when it records another project, a save with --force), each as a claim of
    its own (a file split in two or more, or one forced past another file's or project's record): only settings
    whose clusters cover a claim withdraw it, and one claim of several clusters would outlive files that each define
    one of them; claims not listed when the record's cluster list was cut (its other names are
    unknown). Empty when it records these settings' clusters or nothing."""
    recorded = grafana_recorded_publisher(message)
    if recorded is None or claim is None:
        return frozenset()
    if recorded == grafana_publisher(*claim):
        return frozenset()  # these settings' own record
    if CLUSTERS_CUT in recorded[1]:
        return frozenset({frozenset({CLAIMS_CUT})})
    project, dropped = _dropped(recorded, claim)
    return frozenset(grafana_claim(project, {cluster}) for cluster in dropped)


def _carried_note(message: str | None, claim: Publisher) -> str:
    recorded = grafana_recorded_publisher(message)  # (called only where `_carried` found a record)
    project, dropped = _dropped(recorded, claim)
    names = " ".join(sorted(dropped - {CLUSTERS_CUT}))
    of = f"of project {project} " if project != claim[0] else ""
    return (f"; the clusters on record {of}that these settings do not define ({names or 'not listed'}"
            f"{', and others not listed' if names and CLUSTERS_CUT in recorded[1] else ''}) stay on "
            f"record, each as a claim that only settings defining that cluster withdraw (push --prune), so --prune "
            f"of these settings leaves it")


def _recorded(records: list[Record] | None, uid: str, defined: bool, message: str | None,
              publisher: Publisher | None) -> None:
    """Adds to `records` the clusters the gpudash version `message` records as saving the dashboard, when it
    records this project (or none): the evidence --renamed-from asks for."""
    recorded = grafana_recorded_publisher(message)
    if records is not None and publisher is not None and recorded is not None and recorded[0] in ("", publisher[0]):
        records.append(("dashboard", uid, defined, recorded[1]))


def _renamed_hint(message: str | None) -> str:
    recorded = grafana_recorded_publisher(message)
    names = sorted(recorded[1] - {CLUSTERS_CUT})[:3] if recorded else []
    flags = " ".join(f"--renamed-from {name}" for name in names)
    return (f"; if these settings saved it with those clusters and renamed them since, `gpudash push {flags}` takes "
            "it back") if names else ""


def _stale_record(client: GrafanaClient, uid: str, live: dict[str, Any], uid_prefix: str,
                  publisher: Publisher | None, claim: Publisher | None = None,
                  records: list[Record] | None = None, shared: dict[tuple[str, Any], list[str]] | None = None
                  ) -> tuple[str, dict[str, Any]] | None:
    """Why a dashboard as generated, in this folder, must be saved again (content unchanged), and what the save
    records (see _save): these settings as its publisher, when gpudash saved what it holds last (unedited, see
    _evidence), for an earlier
    version of these settings (another cluster list that shares a cluster with theirs: after a settings file is
    split, each file's dashboards then record that file, each other cluster on record carried as its own claim,
    _carried) or by a gpudash that did not record who saved it
    (once, so that another project's push refuses it); or these settings' claim beside other settings of this
    project that saved it last (their record kept word for word, with the claims of others: their --prune leaves it
    while the claim stands). None when nothing is to record (edited, another project's, recorded with these
    clusters, or claimed already)."""
    model = live["dashboard"]
    if publisher is None or not grafana_owned(model):
        return None
    evidence, _, saved = _evidence(client, uid, live)
    if evidence != UNEDITED:
        return None  # a person's edit, or no gpudash save: not gpudash's to re-record
    message = saved.get("message")
    if grafana_recorded_prefix(message) not in (None, uid_prefix):
        return None
    _recorded(records, uid, True, message, publisher)
    claim = claim or publisher
    claims, mine = _claims(message, uid), _mine(claim)
    other = _other_settings(message, claim)
    recorded, ours = grafana_recorded_publisher(message), grafana_publisher(*publisher)
    if other is not None:  # generated the same by other settings, which saved it last: theirs (no turns)
        same_project = recorded is not None and recorded[0] == publisher[0]
        own = grafana_claim(*publisher)
        record = {"publisher": grafana_recorded_publisher_text(message), "claims": _theirs(claims, mine) | {own}}
        unlisted = any(CLAIMS_CUT in c for c in claims) or _cut(model, uid_prefix, record)
        if shared is not None:
            shared.setdefault((other, UNLISTED if same_project and unlisted else same_project), []).append(uid)
        if not same_project or any(claim_is(c, own) or CLAIMS_CUT in c for c in claims):
            return None  # another project's is never written; claimed already (or by claims not listed)
        return (f"record that these settings generate it too ({_publisher_text(*publisher)}), beside the "
                f"settings that saved it ({other}), whose it stays: a --prune of theirs leaves it while this claim "
                f"stands{_CUT_NOTE if unlisted else ''}"), record
    if recorded is not None and recorded[1] == ours[1]:
        return None  # these clusters (a project named since is recorded with the next change of its content)
    was = _publisher_text(*recorded) if recorded else "none: saved by a gpudash that did not record them"
    carried = _carried(message, claim)
    record = {"publisher": publisher, "claims": _theirs(claims, mine) | carried}
    return (f"record the settings that publish it: {_publisher_text(*ours)} (its last save records {was})"
            f"{_carried_note(message, claim) if carried else ''}"
            f"{_CUT_NOTE if _cut(model, uid_prefix, record) else ''}", record)


PROVISIONED_FIX = ("publish it one way: remove it from the provisioning files (Grafana's provider then deletes it "
                   "or leaves it to the API, as its disableDeletion says) for gpudash to push it, or deploy gpudash's "
                   "build/grafana/provisioning files instead of pushing")


def _provisioned(meta: dict[str, Any]) -> str:
    """The file a provisioning provider writes the dashboard from (meta.provisionedExternalId), "a provisioning file"
    where Grafana does not name it; "" for a dashboard no provider writes."""
    return (str(meta.get("provisionedExternalId") or "") or "a provisioning file") if meta.get("provisioned") else ""


def _plan_dashboard(client: GrafanaClient, uid: str, desired: dict[str, Any], folder: dict[str, str],
                    uid_prefix: str, move_from: str | None = None, publisher: Publisher | None = None,
                    claim: Publisher | None = None, records: list[Record] | None = None,
                    shared: dict[tuple[str, Any], list[str]] | None = None, ties: PanelTies | None = None) -> Change:
    """`publisher`: these settings (recorded in what is saved); `claim`: they and the clusters they had
    (--renamed-from), whose saves are theirs. `ties`: the plan's reads of what people tied to panel ids (a save
    moving some panel's id names them)."""
    claim = claim or publisher
    live = client.dashboard(uid)
    if live is None:
        return Change("grafana", "dashboard", uid, CREATE, [f"title {desired.get('title')!r}"])
    model, meta = live["dashboard"], live.get("meta") or {}
    change = Change("grafana", "dashboard", uid, UNCHANGED, live=live)
    provisioned = _provisioned(meta)
    if grafana_content(model) == grafana_content(desired) and meta.get("folderUid") == folder["uid"]:
        # nothing to write, so whoever saved it last does not matter; but one these settings (or their earlier
        # version) saved records them again, so that another settings file's prune leaves it (not one a file
        # provisions: its file is its publisher)
        stale = None if provisioned else _stale_record(client, uid, live, uid_prefix, publisher, claim, records, shared)
        if stale:
            change.action, change.details = UPDATE, [stale[0]]
            change.live = {**live, "record": stale[1]}
        return change
    if provisioned:
        change.action = HELD
        change.details = [f"{model.get('title')!r} is provisioned from the file {provisioned}: Grafana writes it from "
                          f"that file (it refuses a save, or writes the file's dashboard back over one when the file "
                          f"changes), and gpudash writes no provisioned dashboard, --force too; {PROVISIONED_FIX}"]
        return change
    if not grafana_owned(model):
        change.action = FOREIGN
        change.details = [f"{model.get('title')!r} exists and is not managed by gpudash (no {GRAFANA_OWNER_TAG} tag); "
                          f"--force takes it over"]
        return change
    evidence, latest, saved = _evidence(client, uid, live)
    # a save records these settings and carries on the claims of other settings files that generate it too
    # (and the clusters of the settings that saved it last that are not these settings', as their claim)
    recorded = grafana_recorded_prefix(saved.get("message"))
    theirs = _theirs(_claims(saved.get("message"), uid), _mine(claim))
    carried = _carried(saved.get("message"), claim) if recorded in (None, uid_prefix) else frozenset()
    record = {"publisher": publisher, "claims": theirs | carried}
    change.live = {**live, "record": record}
    if recorded in (None, uid_prefix):
        _recorded(records, uid, True, saved.get("message"), publisher)
    if evidence == NOT_GPUDASH:
        change.action = FOREIGN
        change.details = [f"{model.get('title')!r} carries the {GRAFANA_OWNER_TAG} tag but no version of it was saved "
                          f"by gpudash; --force takes it over"]
    elif recorded is not None and recorded != uid_prefix:
        # the same uid read with another project's prefix (`gpudash-eu-inference`: `gpudash`'s id `eu-inference`
        # or `gpudash-eu`'s `inference`): its latest gpudash save says whose it is
        change.action = FOREIGN
        change.details = [f"{model.get('title')!r} was last saved by gpudash with uid prefix {recorded}, not "
                          f"{uid_prefix}: another project's dashboard with the same uid; --force takes it over"]
        if grafana_content(model) != grafana_content(desired):
            change.details += diff.grafana(model, desired)
    elif (other := _other_settings(saved.get("message"), claim)) is not None:
        # two projects, or two settings files of one project, publishing into one folder with one uid prefix:
        # its latest gpudash save records the other settings, whose dashboard it is
        change.action = FOREIGN
        change.details = [f"{model.get('title')!r} was last saved by gpudash from other settings ({other}), not "
                          f"these ({_publisher_text(*publisher)}): both publish uid {uid} "
                          f"(grafana.uid_prefix {uid_prefix}); give each settings file its own grafana.uid_prefix "
                          f"and grafana.folder.uid{_renamed_hint(saved.get('message'))}; --force takes it over"]
        if grafana_content(model) != grafana_content(desired):
            change.details += diff.grafana(model, desired)
    elif evidence == EDITED:
        change.action = DRIFT
        who = _editor(latest)
        change.details = [f"changed in Grafana by {who} (version {meta.get('version')}) since gpudash pushed it; "
                          f"--force overwrites"] + diff.grafana(model, desired)
    elif move_from is not None and meta.get("folderUid") == move_from:
        # gpudash saved it, nobody changed it since, and it sits in the folder the user says was this
        # project's before grafana.folder changed: moved (with the version read, like any save).
        change.action = UPDATE
        change.details = [f"move from folder {move_from} to {folder['uid']} (--move-from {move_from})"]
        change.details += diff.grafana(model, desired) if grafana_content(model) != grafana_content(desired) else []
    elif meta.get("folderUid") != folder["uid"]:
        # gpudash saved it, but it sits in another folder: another project that publishes with the same
        # uid prefix keeps it there, or a person moved it. Either way it is not this project's to write.
        change.action = FOREIGN
        change.details = [f"{model.get('title')!r} is in folder {meta.get('folderUid') or 'General'}, not "
                          f"{folder['uid']}: another project publishing with the same uid prefix, or a person moved "
                          f"it; --force moves it back here"]
        if grafana_content(model) != grafana_content(desired):
            change.details += diff.grafana(model, desired)
    else:
        change.action = UPDATE
        change.details = diff.grafana(model, desired)
    if carried - theirs:
        change.details.append(f"records {_publisher_text(*publisher)}"
                              f"{_carried_note(saved.get('message'), claim)}")
    if publisher is not None and _cut(desired, uid_prefix, record):  # a save carries claims that no longer fit
        change.details.append(f"records the claims of other settings files as claims of settings not listed{_CUT_NOTE}")
    if ties is not None:  # annotations and alert rules naming a panel by an id the save moves
        change.details += ties.said(uid, live, desired)
    return change


def _plan_prune(client: GrafanaClient, uid: str, uid_prefix: str, folder_uid: str,
                seen: frozenset[str] = frozenset(), unproven: list[str] | None = None,
                publisher: Publisher | None = None, kept: dict[str, list[str]] | None = None,
                records: list[Record] | None = None, around: AccountReads | None = None) -> Change | None:
    """A delete for an owned dashboard that is no longer defined; None for anything not provably gpudash's.
    `around`: the organization-wide reads the plan makes once for every dashboard it prunes.

    Only gpudash's folder is pruned: a dashboard elsewhere with the same evidence belongs to another
    project that publishes with the same uid prefix (or was moved there by a person). Nor is one whose latest
    gpudash version records another uid prefix; one recording this one is this project's, even in the form of a
    longer uid prefix `seen` (this project's retired `eu-overview` beside its `overview`). One saved before
    gpudash recorded it is pruned only when its uid is not in such a form (another project's `gpudash-eu-overview`
    beside this one's `gpudash-overview`) and reads one way alone (neither the id after the prefix nor the prefix
    has a dash): `gpudash-eu-inference` may be `gpudash-eu`'s `inference` to `gpudash`, and `gpudash`'s
    `eu-inference` to `gpudash-eu`, so it is kept and listed in `unproven`. Nor is one whose
    latest gpudash version records other settings (another project, or none of these clusters: listed in
    `kept["elsewhere"]`), or clusters of which these settings define only some (another settings file may define
    the rest now, as after a split: listed in `kept["partly"]`), or a claim of other settings files that generate it
    too (listed in `kept["claimed"]`, with --force too). Where such a dashboard records a claim of these settings,
    unedited since, the change is a WITHDRAW of it (a save with --prune only, which the prune guard counts as a
    delete)."""
    if not is_grafana_uid(uid, uid_prefix):
        return None  # a "Save as" copy or someone else's dashboard that carries the tag
    live = client.dashboard(uid)
    if live is None or not grafana_owned(live["dashboard"]) or (live.get("meta") or {}).get("folderUid") != folder_uid:
        return None
    if provisioned := _provisioned(live.get("meta") or {}):  # its file's now: Grafana deletes no provisioned dashboard
        if kept is not None:
            kept.setdefault("provisioned", []).append(f"{uid} (from {provisioned})")
        return None
    model = live["dashboard"]
    evidence, latest, saved = _evidence(client, uid, live)
    if evidence == NOT_GPUDASH:
        return None
    recorded = grafana_recorded_prefix(saved.get("message"))
    if recorded is None and not is_grafana_uid(uid, uid_prefix, seen):
        return None  # in the form of a longer prefix seen: the note on such uids lists it
    if recorded is None and "-" in uid[len(uid_prefix) + 1:] + uid_prefix:
        if unproven is not None:
            unproven.append(uid)
        return None
    if recorded is not None and recorded != uid_prefix:
        return None  # another project's, saved with its own prefix
    publication = grafana_recorded_publisher(saved.get("message"))
    _recorded(records, uid, False, saved.get("message"), publisher)
    claims = _claims(saved.get("message"), uid)
    theirs = _theirs(claims, _mine(publisher))
    why = None
    if publisher is not None and publication is not None:
        why = ("elsewhere" if _other_settings(saved.get("message"), publisher) is not None
               else "partly" if not publication[1] <= set(publisher[1]) else None)
    if why is None and theirs:
        why = "claimed"  # other settings files record that they generate it too: theirs to keep, whatever --force
    if why is not None:
        if kept is not None:
            kept.setdefault(why, []).append(uid)
        if claims == theirs:
            return None
        if evidence != UNEDITED:  # re-saving it would pass a person's edit off as gpudash's
            if kept is not None:
                kept.setdefault("claim_edited", []).append(uid)
            return None
        return Change("grafana", "dashboard", uid, WITHDRAW, [
            f"{model.get('title')!r} is no longer defined here: withdraw these settings' claim that they generate it "
            f"too (a save of the same content, recording the settings that saved it as before); --prune withdraws "
            f"it"], live={**live, "record": {"publisher": grafana_recorded_publisher_text(saved.get("message")),
                                             "claims": theirs}})
    if not _an_id(model.get("id")):  # the look before a delete refuses it (_moved_since_plan): not planned either
        if kept is not None:
            kept.setdefault("no_id", []).append(uid)
        return None
    notes = read_annotations(client, uid, model.get("id"), folder_uid)
    public = attempt(lambda: client.public_dashboard(uid))
    grants = read_granted(client, uid, (live.get("meta") or {}).get("createdBy"))
    around = AccountReads(client) if around is None else around
    picks, homes, rules = (around.shown(what, uid, model.get("id")) for what in ("playlists", "homes", "rules"))
    change = Change("grafana", "dashboard", uid, DELETE, live={
        **live, "saved": saved.get("message"),
        "annotations": UNREAD if isinstance(notes, Unread) else annotation_ids(notes),
        "public": UNREAD if isinstance(public, Unread) else public and public["uid"],
        "permissions": UNREAD if isinstance(grants, Unread) else grants,
        "playlists": UNREAD if isinstance(picks, Unread) else picks,
        "homes": UNREAD if isinstance(homes, Unread) else homes,
        "rules": UNREAD if isinstance(rules, Unread) else rules})
    if evidence == EDITED:
        change.edited = True
        change.details = [f"{model.get('title')!r} is no longer defined, but {_editor(latest)} changed it in "
                          f"Grafana since gpudash pushed it; --prune --force deletes it"]
    else:
        change.details = [f"{model.get('title')!r} is managed by gpudash but no longer defined; --prune deletes it"]
    # people's work around it that no version records and that Grafana's delete takes with it, or a read that shows
    # nothing of it (the look before the delete reads each again): --force agrees to delete it with any
    lost = [_lost_annotations(notes), _lost_public(public), _lost_permissions(grants), _lost_playlists(picks),
            _lost_homes(homes), _lost_rules(rules)]
    for said in filter(None, lost):
        change.edited = True
        change.details.append(said)
    return change


def _first(items: list[str], separator: str = ", ") -> str:
    """The first five of `items`, joined, with " ..." where there are more."""
    return separator.join(items[:5]) + (" ..." if len(items) > 5 else "")


def _lost_annotations(notes: list[dict[str, Any]] | Unread) -> str | None:
    if isinstance(notes, Unread):
        return f"its annotations, which Grafana deletes with it, {notes.why}; --prune --force deletes it with any it " \
               "carries"
    return (f"it carries {annotation_count(notes)} annotation(s) made on its graphs (by {annotators(notes)}), which "
            "Grafana deletes with it; --prune --force deletes them with it") if notes else None


def _lost_public(public: dict[str, Any] | None | Unread) -> str | None:
    if isinstance(public, Unread):
        return (f"whether it is shared externally (a public dashboard, which Grafana deletes with it) {public.why}; "
                "--prune --force deletes it with any")
    return (f"it is shared externally ({shared(public)}), and Grafana deletes the public dashboard with it (its link "
            "stops working); --prune --force deletes both") if public is not None else None


def _lost_permissions(grants: list[str] | Unread) -> str | None:
    if isinstance(grants, Unread):
        return (f"the permissions set on it, which Grafana deletes with it, {grants.why}; gpudash's account needs "
                "dashboards.permissions:read on it (Admin on the dashboard or its folder) and teams:read, "
                "org.users:read and serviceaccounts:read over all of them (an organization Admin's); --prune --force "
                "deletes it with any")
    return (f"a person gave permissions on it ({_first(grants, '; ')}), which "
            "Grafana deletes with it; --prune --force deletes them with it") if grants else None


def _lost_playlists(picks: list[str] | Unread) -> str | None:
    if isinstance(picks, Unread):
        return (f"the playlists, whose items picking it Grafana deletes with it (by id) or leaves pointing at nothing "
                f"(by uid), {picks.why}; --prune --force deletes it with any")
    return (f"it is in playlist(s) {_first(picks)}, which lose it (Grafana "
            "deletes an item by id with it, and one by uid points at nothing); --prune --force deletes it from them"
            ) if picks else None


def _lost_homes(holders: list[str] | Unread) -> str | None:
    if isinstance(holders, Unread):
        return (f"the home dashboards the organization's and the teams' preferences name, which Grafana's delete leaves "
                f"naming nothing, {holders.why}; gpudash's account needs orgs.preferences:read and teams:read over all "
                "teams (an organization Admin's); --prune --force deletes it with any")
    return (f"it is the home dashboard of {_first(holders)}: Grafana's "
            "delete leaves that preference naming nothing, and those it applies to are shown Grafana's default home "
            "instead; --prune --force deletes it") if holders else None


def _lost_rules(rules: list[str] | Unread) -> str | None:
    if isinstance(rules, Unread):
        return (f"the alert rules, which may link themselves to it and which Grafana's delete leaves linking to "
                f"nothing, {rules.why}; gpudash's account needs alerting's provisioning read (alert.provisioning:read, "
                "an organization Admin's); --prune --force deletes it with any")
    if not rules:
        return None
    return (f"alert rule(s) {_first(rules)} link themselves to it: Grafana's delete leaves them linking to nothing "
            "(their notifications' dashboard and panel links lead nowhere); --prune --force deletes it")


def plan(client: GrafanaClient, dashboards: dict[str, dict[str, Any]], folder: dict[str, str], *, uid_prefix: str,
         progress: Progress | None = None, move_from: str | None = None,
         publisher: Publisher | None = None, renamed_from: tuple[str, ...] = (), prune: bool = True) -> list[Change]:
    """`dashboards`: uid -> generated dashboard JSON. Reads only. `move_from`: the folder this project's
    dashboards were in before grafana.folder changed; those gpudash saved there, unedited, are moved.
    `publisher`: the settings' project and clusters; a dashboard whose latest gpudash save records other settings
    is theirs (see `_other_settings`). `renamed_from`: clusters these settings had before renaming them
    (--renamed-from): what was saved with them is theirs, on the evidence `ownership.renamed_evidence` asks of the
    versions (else a GpudashError before any write); such a dashboard as generated is saved again to record them.
    `prune`: whether what --prune does is to be done or shown (a push --prune; a plan, which shows it): a search by
    the owner tag shown to leave out tagged dashboards (`_unsearched`) is then a failure, else a note."""
    progress = progress or Silent()
    notes = len(client.notes)
    records: list[Record] = []
    changes = _plan(client, dashboards, folder, uid_prefix, progress, move_from, publisher, renamed_from, records,
                    prune=prune)
    if publisher is None or not renamed_from:
        return changes
    unproven = renamed_evidence(renamed_from, publisher[1], renamed_from, records, publisher[0],
                                "in Grafana, or curl -X DELETE $GRAFANA_URL/api/dashboards/uid/UID")
    if unproven:  # the flag takes nothing: planned again without it (a finished rename's rerun, say)
        del client.notes[notes:]
        changes = _plan(client, dashboards, folder, uid_prefix, progress, move_from, publisher,
                        tuple(name for name in renamed_from if name not in unproven), None, "reading Grafana again",
                        prune)
        for name in unproven:
            client.note(f"--renamed-from {name}: no dashboard in folder {folder['uid']} records the cluster {name!r} "
                        "(already renamed, or never saved by these settings); the flag takes nothing and can be left "
                        "out")
    return changes


def _plan(client: GrafanaClient, dashboards: dict[str, dict[str, Any]], folder: dict[str, str], uid_prefix: str,
          progress: Progress, move_from: str | None, publisher: Publisher | None, renamed_from: tuple[str, ...],
          records: list[Record] | None, label: str = "reading Grafana", prune: bool = True) -> list[Change]:
    claim = (publisher[0], tuple(publisher[1]) + tuple(renamed_from)) if publisher is not None else None
    changes: list[Change] = []
    shared: dict[tuple[str, Any], list[str]] = {}
    ties = PanelTies(client)
    with progress.phase(label, len(dashboards) + 2) as tick:
        live_folder = client.folder(folder["uid"])
        tick()
        changes.append(Change("grafana", "folder", folder["uid"], UNCHANGED if live_folder else CREATE,
                              [] if live_folder else [f"title {folder['title']!r}"]))
        for uid, desired in sorted(dashboards.items()):
            changes.append(_plan_dashboard(client, uid, desired, folder, uid_prefix, move_from, publisher, claim,
                                           records, shared, ties))
            tick()
        hits = _unsearched(client, changes, client.search_tag(GRAFANA_OWNER_TAG), prune, live_folder)
        tick()
        seen = grafana_uid_prefixes(uid_prefix, [hit["uid"] for hit in hits], dashboards)
        others: list[str] = []
        unproven: list[str] = []
        kept: dict[str, list[str]] = {}
        around = AccountReads(client)
        for hit in sorted(hits, key=lambda h: h["uid"]):
            if hit["uid"] not in dashboards and hit.get("folderUid") == folder["uid"]:
                change = _plan_prune(client, hit["uid"], uid_prefix, folder["uid"], seen, unproven, claim, kept,
                                     records, around)
                if change is not None:
                    changes.append(change)
                elif is_grafana_uid(hit["uid"], uid_prefix) and not is_grafana_uid(hit["uid"], uid_prefix, seen):
                    others.append(hit["uid"])
    if others:
        shown = shown_names(others)
        client.note(f"{len(others)} dashboard(s) in folder {folder['uid']} not defined here have uids in the form of "
                    f"a longer uid prefix seen there ({shown}): --prune leaves them, since they may be another "
                    f"project's; if one is this project's, delete it by hand in Grafana")
    if unproven:
        client.note(f"{len(unproven)} dashboard(s) in folder {folder['uid']} not defined here were saved by a gpudash "
                    f"that did not record its uid prefix, and their uids read with another prefix too "
                    f"({'; '.join(_readings(uid, uid_prefix) for uid in unproven)}): --prune leaves them, since "
                    f"nothing shows they are not another project's (what gpudash saves now records its prefix, so "
                    f"only dashboards saved before that are left so); if one is this project's, delete it by hand: "
                    f"in Grafana (Dashboard settings, Delete) or curl -X DELETE -H \"Authorization: Bearer "
                    f"$GRAFANA_TOKEN\" \"$GRAFANA_URL/api/dashboards/uid/UID\"")
    for (other, same_project), uids in sorted(shared.items(), key=lambda item: (item[0][0], str(item[0][1]))):
        what = ("theirs on record, with these settings recorded beside them as generating them too (once, a save of "
                "the same content), so that a --prune of those settings leaves them" if same_project is True else
                "theirs on record, with claims of settings not listed (also:*: they do not all fit Grafana's 500-byte "
                "version message), so that no --prune deletes them (delete one by hand when no settings file "
                "defines it)" if same_project == UNLISTED else
                "and that project's to prune: if it stops defining one, its push --prune deletes it and this file's "
                "next push creates it again (a new version history)")
        client.note(f"{len(uids)} dashboard(s) these settings define are generated the same by other settings "
                    f"({other}), which saved them last ({shown_names(sorted(uids))}): left as they are, {what}; "
                    f"give each settings file its own grafana.uid_prefix and grafana.folder.uid so that each has its "
                    f"own copy")
    if kept.get("elsewhere"):
        client.note(f"{len(kept['elsewhere'])} dashboard(s) in folder {folder['uid']} not defined here were last saved "
                    f"by other settings (another project, or settings with none of these clusters: "
                    f"{shown_names(kept['elsewhere'])}): --prune leaves them; settings that share a folder and uid "
                    f"prefix share uids: give each settings file its own grafana.uid_prefix and grafana.folder.uid")
    if kept.get("claimed"):
        client.note(f"{len(kept['claimed'])} dashboard(s) in folder {folder['uid']} not defined here are recorded as "
                    f"generated too by other settings files of this project ({shown_names(kept['claimed'])}): --prune "
                    f"leaves them while those claims stand (a file withdraws its claim with its own push --prune once "
                    f"it no longer defines one); if no settings file defines one any more, delete it by hand in "
                    f"Grafana (Dashboard settings, Delete)")
    if kept.get("claim_edited"):
        client.note(f"{len(kept['claim_edited'])} dashboard(s) in folder {folder['uid']} not defined here record that "
                    f"these settings generate them too, but a person changed them since gpudash saved them "
                    f"({shown_names(kept['claim_edited'])}): the claim stays (withdrawing it would save the edit as "
                    f"gpudash's), so no --prune deletes them; delete one by hand in Grafana if no file defines it")
    if kept.get("provisioned"):
        client.note(f"{len(kept['provisioned'])} dashboard(s) in folder {folder['uid']} not defined here are "
                    f"provisioned from files ({shown_names(kept['provisioned'])}): Grafana deletes no provisioned "
                    "dashboard, and --prune leaves them to their files; remove them from the provisioning files to "
                    "retire them")
    if kept.get("no_id"):
        client.note(f"{len(kept['no_id'])} dashboard(s) in folder {folder['uid']} not defined here were read without "
                    f"a dashboard id ({shown_names(kept['no_id'])}): --prune does not delete them, since nothing would "
                    f"show the one deleted is the one read (one deleted and made anew under its uid reads at the same "
                    f"version); a proxy or cache in front of Grafana may drop the field: point GRAFANA_URL at Grafana "
                    f"itself")
    if kept.get("partly"):
        client.note(f"{len(kept['partly'])} dashboard(s) in folder {folder['uid']} not defined here were saved by "
                    f"settings with clusters these settings no longer all define ({shown_names(kept['partly'])}): "
                    f"--prune leaves them, since another settings file may define those clusters now (a settings file "
                    f"split in two); if one is this file's, delete it by hand in Grafana")
    return changes


def _unsearched(client: GrafanaClient, changes: list[Change], hits: list[dict[str, Any]],
                prune: bool, folder: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The search by the owner tag to go on with, given the first (`hits`) and what the plan read of the dashboards
    these settings define: one read with the tag that the search leaves out, or lists in another folder than it is in,
    shows an answer that holds only some of the tagged dashboards (Grafana's search index behind its database:
    grafana/grafana#7633, #16049, #100849; a proxy or stub answering `[]`), in which a dashboard no longer defined may
    be missing too: --prune would leave it without a word. Each is read again first (a person may have removed its
    tag or moved it meanwhile), then searched for again while the index may be catching up (relisting.py); the first
    search that lists them all where they are, and every dashboard the first search listed where it listed it, is
    the one to go on with. Else, with `prune`, a failure (InvalidAnswer,
    nothing written); without, a note (after one search again), --prune being what the search is read for.
    With `prune`, gpudash's folder (`folder`, as read; the only one pruned) is searched too, on pages of its own: a
    search by the tag that ends early (a page dropped) before a dashboard no longer defined shows no gap by itself,
    since nothing defined names it; one the folder's search lists with the tag, that the search by the tag does not
    list there and a read shows there with the tag, shows it as one that does not."""
    def where_listed(found: list[dict[str, Any]]) -> dict[str, str]:
        return {hit["uid"]: hit.get("folderUid") or "General" for hit in found}

    listed = where_listed(hits)
    odd: list[tuple[str, str]] = []

    def still(found: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Those of these (uid, folder) that a read shows there, with the tag: a search that leaves one out leaves
        out a tagged dashboard."""
        shown = [(uid, where, client.dashboard(uid)) for uid, where in found]
        return [(uid, where) for uid, where, again in shown if again is not None and grafana_owned(again["dashboard"])
                and ((again.get("meta") or {}).get("folderUid") or "General") == where]

    for change in changes:
        live = change.live if change.kind == "dashboard" and isinstance(change.live, dict) else {}
        if "dashboard" not in live or not grafana_owned(live["dashboard"]):
            continue
        where = (live.get("meta") or {}).get("folderUid") or "General"
        if listed.get(change.name) != where:
            odd += still([(change.name, where)])  # still there, tagged, where it was read: the search left it out
    if prune and folder is not None:
        found = {uid for uid, _ in odd}
        odd += still([(hit["uid"], folder["uid"]) for hit in client.search_folder(folder)
                      if hit["uid"] not in found and listed.get(hit["uid"]) != folder["uid"] and _may_be_tagged(hit)])
    if not odd:
        return hits
    latest = [hits]

    def search() -> set[tuple[str, str]]:
        latest.append(client.search_tag(GRAFANA_OWNER_TAG))
        return set(where_listed(latest[-1]).items())

    def said(missing: list[tuple[str, str]], again: int) -> str:
        now = where_listed(latest[-1])
        shown = [f"{uid} in folder {where}, " + (f"listed in {now[uid]}" if uid in now else "not listed")
                 for uid, where in missing]
        shows = "read with the tag" + ("" if set(missing) <= set(odd) else " or an earlier search listed")
        return (f"Grafana's search by the {GRAFANA_OWNER_TAG} tag answered {len(latest[-1])} dashboard(s), leaving out "
                f"or listing elsewhere {len(shown)} that {shows} ({'; '.join(shown[:5])}"
                f"{' ...' if len(shown) > 5 else ''}), {listings(again)}: its answer holds only some of the tagged "
                "dashboards (a search index behind Grafana's database, or a proxy or cache answering for it), so one "
                "gpudash owns that is no longer defined may be missing from it too")

    hint = (f"run again in a minute; if it repeats, search Grafana for the tag {GRAFANA_OWNER_TAG} (Dashboards, "
            "filter by tag): where those named are missing there too, Grafana's search is behind its database (for "
            "its admins to look into); else something in front of Grafana answers: point GRAFANA_URL at Grafana "
            "itself")

    def failure(missing: list[tuple[str, str]], again: int) -> InvalidAnswer:
        return InvalidAnswer(f"{said(missing, again)}: what --prune would delete cannot be read",
                             where=f"search tag {GRAFANA_OWNER_TAG}",
                             hint=f"{hint}; a push without --prune publishes meanwhile")

    waits = RELIST_WAITS if prune else ONCE
    read = {uid for uid, _ in odd}  # where a read shows it, not where the first search listed it
    missing, _ = listed_again(client.deadline, odd, search, failure, waits,
                              held=[(uid, where) for uid, where in listed.items() if uid not in read], still=still)
    if not missing:
        return latest[-1]
    if prune:
        raise failure(missing, len(waits))
    client.note(f"{said(missing, len(waits))}; a push --prune fails on it until it lists them: {hint}")
    return hits


def _may_be_tagged(hit: dict[str, Any]) -> bool:
    """Whether a search hit may be a dashboard with the owner tag: it lists the tag, or lists no tags."""
    tags = hit.get("tags")
    return not isinstance(tags, list) or any(isinstance(t, str) and t.casefold() == GRAFANA_OWNER_TAG.casefold()
                                             for t in tags)


def _readings(uid: str, uid_prefix: str) -> str:
    """How an unrecorded uid reads with this uid prefix and with the others it may be made with: `gpudash-prod-x`
    is `gpudash-prod`'s id `x` and `gpudash`'s id `prod-x`."""
    words = uid.split("-")
    others = [f"{'-'.join(words[:n])}'s {'-'.join(words[n:])}" for n in range(1, len(words))
              if "-".join(words[:n]) != uid_prefix]
    return f"{uid}: {uid_prefix}'s {uid[len(uid_prefix) + 1:]}, or " + " or ".join(others)


def _landed(client: GrafanaClient, uid: str, desired: dict[str, Any], folder_uid: str,
            planned_version: Any = None, message: str | None = None) -> bool:
    """Whether Grafana holds exactly this dashboard, saved by gpudash since the plan read it (a save whose answer
    was lost): its content and hash, in the folder the save named, at a version newer than the plan's (a move or
    a save of unchanged content shows only in those). A read that fails is raised, never read as "not there": a
    stop (a signal, the deadline) is not an answer either."""
    live = client.dashboard(uid)
    if live is None or grafana_content(live["dashboard"]) != grafana_content(desired):
        return False
    meta = live.get("meta") or {}
    if meta.get("folderUid") != folder_uid:
        return False
    if planned_version is not None and not (isinstance(meta.get("version"), int)
                                            and meta["version"] > planned_version):
        return False
    latest = client.latest_version(uid) or {}
    if message is not None and (grafana_recorded_publisher_text(latest.get("message"))
                                != grafana_recorded_publisher_text(message)
                                or _claims(latest.get("message"), uid) != _claims(message, uid)):
        return False  # another save of the same content, recording other settings or claims than this one
    return grafana_pushed_hash(latest.get("message")) == content_hash(grafana_content(desired))


def _save(client: GrafanaClient, change: Change, desired: dict[str, Any], folder: dict[str, str], note: str,
          uid_prefix: str, publisher: Publisher | None = None, anew: bool = False) -> bool:
    """Save the dashboard; False when it was found saved as this save makes it by another gpudash run, no request of
    this one having been able to save it (refused, or never reached Grafana): noted, not listed as written. `anew`:
    a create of the dashboard the plan read, found deleted since (no id, no version), recording what the plan's save
    would have recorded (these settings and the claims of other settings files that generate it too)."""
    body = {k: v for k, v in desired.items() if k not in ("id", "version")}
    live = change.live or {}
    if "dashboard" in live and not anew:
        body["version"] = live["dashboard"].get("version")  # optimistic concurrency, forced or not
        planned_id = live["dashboard"].get("id")
        if _an_id(planned_id):
            body["id"] = planned_id  # the dashboard the plan read, not one created anew under its uid since
    # what the save records: these settings, with the claims of other settings carried on; or, for a claim or its
    # withdrawal, the settings that saved it last (word for word) with the claims
    record = live.get("record") or {}
    message = grafana_message(desired, note, uid_prefix, record.get("publisher", publisher), record.get("claims", ()))
    if "dashboard" in live and not anew:
        _still_as_planned(client, change)
    posts = client.sent.get("POST", 0)
    try:
        client.save(body, folder["uid"], message)
    except RemoteError as exc:
        mismatch = isinstance(exc, PreconditionFailed) and exc.kind == "version-mismatch"
        if not (lost(exc) or mismatch or isinstance(exc, (InvalidAnswer, Unreachable))):
            raise
        # An earlier attempt may have landed and only its answer was lost (or garbled; or a retry was refused
        # because it had landed), or another gpudash run saved the same content: then the save is done.
        # Otherwise someone else saved, or the save did not reach Grafana: the error stands.
        try:
            landed = _landed(client, change.name, desired, folder["uid"],
                             None if anew else (live.get("meta") or {}).get("version"), message)
        except DeadlineExceeded as stop:  # stopped while looking: a save sent and not refused may have landed
            if isinstance(exc, PreconditionFailed) and client.sent.get("POST", 0) - posts <= 1:
                raise exc from None  # its one request was refused: it did not happen
            raise stop.after_sending("the save was sent to Grafana", f"its answer was lost ({exc.what}) and the "
                                     "check whether it landed did not finish") from None
        except RemoteError as check:
            if lost(exc):
                raise may_have_happened(exc, "the save was sent to Grafana", "its answer was lost and the check "
                                        f"whether it landed failed ({check.what})") from None
            raise exc from None
        if not landed:
            raise
        if not (lost(exc) or isinstance(exc, InvalidAnswer)):  # no save of ours can have landed: another run's
            client.note(f"dashboard {change.name}: already saved as generated by another gpudash run (the save of "
                        "this one was refused or did not reach Grafana): not listed as written")
            return False
    return True


def _still_as_planned(client: GrafanaClient, change: Change) -> None:
    """Raises when the dashboard the plan read is not there as it read it, right before a save of it: gone, or there
    under another id (deleted and made anew under its uid): DashboardGone, as Grafana's "not found" to a save by the
    id the plan read is, where Grafana looks the id up; Grafana's Kubernetes-style save (resolveLegacyInternalID)
    takes an id it has no dashboard with beside a uid as a save by the uid, which would create the dashboard again
    or save over the new one at the version the plan read (one made anew numbers its versions from 1 again). Or
    moved to another folder: a move adds no version, so the version a save carries does not refuse a save over a
    person's move; a dashboard moved since the plan is neither saved nor moved back (a move --force agreed to is one
    the plan showed)."""
    before = change.live or {}
    planned, planned_id = (before.get("meta") or {}).get("folderUid"), (before.get("dashboard") or {}).get("id")
    now = client.dashboard(change.name)
    if _an_id(planned_id) and (now is None or now["dashboard"].get("id") != planned_id):
        raise DashboardGone(planned_id, change.name, "read right before the save: "
                            + ("none" if now is None else f"id {now['dashboard'].get('id')!r} there now"))
    folder = (now.get("meta") or {}).get("folderUid") if now is not None else planned
    if folder != planned:
        raise RemoteError(f"moved to folder {folder or 'General'} since the plan (it was in {planned or 'General'}); "
                          "not saved", where=f"dashboard {change.name}",
                          hint="run `gpudash plan` and review it: a person may have moved it on purpose")


def _save_generated(client: GrafanaClient, change: Change, desired: dict[str, Any], folder: dict[str, str],
                    note: str, uid_prefix: str, publisher: Publisher | None = None) -> bool:
    """Save the dashboard as generated (_save); one the plan read and that is found deleted since (its id gone,
    nothing under its uid) is created as generated instead, recording what the save would have (the claims of other
    settings files among it): a create carries no id and no version, so one made under the uid meanwhile is refused
    (412), never written over. Noted."""
    try:
        return _save(client, change, desired, folder, note, uid_prefix, publisher)
    except DashboardGone:
        if client.dashboard(change.name) is not None:  # made anew under its uid since: theirs, the error stands
            raise
    # what the plan's save records (the claims of other settings files that generate it too among it): a create
    # recording these settings alone would let their later --prune delete what another file still generates
    created = _save(client, change, desired, folder, note, uid_prefix, publisher, anew=True)
    client.note(f"dashboard {change.name}: deleted in Grafana since the plan (by someone else): created anew as "
                "generated")
    return created


def _withdraw(client: GrafanaClient, change: Change, folder: dict[str, str], note: str, uid_prefix: str,
              publisher: Publisher | None) -> bool:
    """Withdraw these settings' claim: a save of the dashboard as the plan read it (_save). One found deleted since the
    plan (its id gone, nothing under its uid) holds no claim to withdraw: noted, not written."""
    try:
        return _save(client, change, change.live["dashboard"], folder, note, uid_prefix, publisher)
    except DashboardGone:
        if client.dashboard(change.name) is not None:  # made anew under its uid since: theirs, the error stands
            raise
    client.note(f"dashboard {change.name}: deleted in Grafana since the plan (by someone else): no claim of these "
                "settings left to withdraw; not listed as written")
    return False


class Look(NamedTuple):
    """A fresh read of a dashboard the plan read: why it must not be written over or deleted now ("" when gone,
    None when nothing stands in the way), with the dashboard and its latest version as read."""
    why: str | None
    live: dict[str, Any] | None = None
    latest: dict[str, Any] | None = None


def _moved_since_plan(client: GrafanaClient, change: Change, folder_uid: str, guarded: int | None = None,
                      around: bool = True, history: bool = True,
                      read: tuple[dict[str, Any] | None, dict[str, Any] | None] | None = None,
                      account: AccountReads | None = None) -> Look:
    """Why the dashboard the plan read must not be written over or deleted now, from a fresh read of it
    and of its latest version: "" when it is gone; None when it still reads as the plan saw it, owned
    as it was then (owner tag and folder; a move need not add a version), the same dashboard (its id: one created anew
    under the uid numbers its versions from 1 again), at the version the plan read (or `guarded`: the version
    gpudash's own unchanged save before a delete made, see _guard) and, with `around`, nothing of people's made around
    it since (_made_since_plan: Grafana deletes it with it, and no version records it). With `history`, its latest
    version is read first (the version it reads at must be that one), so that the dashboard's read is the last call
    before a write that follows; without, the dashboard alone (the last look before a delete: one call). `read`: the
    dashboard and its latest version, read just now by the caller (not read again). `account`: the run's
    organization-wide reads (_made_since_plan)."""
    before = change.live or {}
    planned = (before.get("meta") or {}).get("version")
    expected = planned if guarded is None else guarded
    if read is None:
        latest = client.latest_version(change.name) if history else None
        live = client.dashboard(change.name)
    else:
        live, latest = read
    if live is None:
        return Look("")
    model, meta = live["dashboard"], live.get("meta") or {}
    who = _editor(latest) if history else str(meta.get("updatedBy") or "someone")

    def look(why: str | None) -> Look:
        return Look(why, live, latest)

    if grafana_owned(before.get("dashboard") or {}) and not grafana_owned(model):
        return look(f"its {GRAFANA_OWNER_TAG} tag was removed by {who} since the plan")
    if meta.get("folderUid") != (before.get("meta") or {}).get("folderUid", folder_uid):
        return look(f"moved to folder {meta.get('folderUid') or 'General'} since the plan")
    planned_id, now_id = (before.get("dashboard") or {}).get("id"), model.get("id")
    if not (_an_id(planned_id) and _an_id(now_id)):  # versions alone cannot tell: one made anew under the uid
        # numbers them from 1 again
        missing = now_id if _an_id(planned_id) else planned_id
        when = f"now, where the plan read id {planned_id}" if _an_id(planned_id) else "to the plan"
        return look(f"Grafana's answer gives no dashboard id {when} ({'none' if missing is None else repr(missing)}): "
                    "nothing shows the dashboard there now is the one the plan read (one deleted and made anew under "
                    "its uid reads at the same version); a proxy or cache in front of Grafana may drop the field: "
                    "point GRAFANA_URL at Grafana itself")
    if now_id != planned_id:  # a new dashboard under the uid: its versions
        # start again, so one created anew by the plan's version number reads as the plan saw it but by its id
        return look(f"deleted and created anew by {who} since the plan")
    if expected is None or meta.get("version") is None or (history and latest is None):
        return look("Grafana gave no version to show it is unchanged since the plan")
    if expected != meta.get("version") or (history and expected != latest.get("version")):
        return look(f"changed in Grafana by {who} since the plan")
    return look(_made_since_plan(client, change, folder_uid, live, account) if around else None)


# What people make around a dashboard that the organization-wide reads show (grafana_around.READS), as a look says it:
# made since the plan, or the read that shows it
ACCOUNT_MADE = {"playlists": ("put in playlist(s)", "the playlists"),
                "homes": ("made the home dashboard of", "the home dashboards"),
                "rules": ("linked to by alert rule(s)", "the alert rules")}
# Each is read again right before each delete, the home dashboards too (the teams' and the organization's preferences: a
# call per team): nothing after a delete shows a home dashboard made of it since the read before it, as Grafana 10 and
# later answer a preference whose dashboard is gone as naming none (Grafana stores the dashboard's id and answers the
# uid of the dashboard it finds by it), and Grafana's delete takes a playlist item that picks the dashboard by id
# with it. The look after the deletes (_after_deletes) sees what the delete leaves naming it: an alert rule's link, a
# playlist item by uid, and a home dashboard's id where Grafana (before 10) answers the preference by id.


def _made_since_plan(client: GrafanaClient, change: Change, folder_uid: str, live: dict[str, Any],
                     account: AccountReads | None = None) -> str | None:
    """Why people's work around the dashboard (see grafana_around), read again now, forbids deleting it: made since
    the plan (which --force did not agree to delete), or no longer shown where the plan read it (a read that fails
    or is refused now; an account no longer shown to read its annotations, whose answer of none proves nothing).
    What the plan could not read, --force agreed to delete with it: only a failed read of it again is let pass.
    `account`: the run's organization-wide reads (each read now where none is given)."""
    before, uid, now_id = change.live or {}, change.name, live["dashboard"]["id"]
    planned_notes = before.get("annotations")
    if planned_notes != UNREAD:  # the account's permissions read again: one withdrawn since makes Grafana answer none
        hidden = unshown(client, uid, folder_uid, fresh=True)
        if hidden is not None:
            return f"its annotations are no longer shown readable by gpudash's account ({hidden})"
    notes = client.annotations(uid, now_id)
    seen = set(planned_notes) if isinstance(planned_notes, list) else set()
    added = [note for note in notes if repr(note.get("id")) not in seen]
    if added:
        return f"annotated by {annotators(added)} since the plan"
    public = attempt(lambda: client.public_dashboard(uid))
    if not isinstance(public, Unread):  # the plan recorded the uid of the one it read (a dashboard has one at most)
        public = [shared(public)] if public is not None and public["uid"] != before.get("public") else []
    # the account's permissions were read again above unless the plan could not read the annotations
    grants = read_granted(client, uid, (live.get("meta") or {}).get("createdBy"), fresh=planned_notes == UNREAD)
    account = account or AccountReads(client, once=())  # (the account's permissions read again above)
    shown = [(account.shown(kind, uid, now_id), before.get(kind), *said) for kind, said in ACCOUNT_MADE.items()]
    for found, planned, what, which in (
            (public, before.get("public"), "shared externally", "whether it is shared externally"),
            (grants, before.get("permissions"), "given permissions on it", "the permissions set on it"), *shown):
        added = made_since(planned, None if isinstance(found, Unread) else found)
        if added == UNREAD:
            return f"{which} {found.why} now, where the plan read it"
        if added:
            return f"{what} since the plan ({'; '.join(added[:5])})"
    return None


def _an_id(value: Any) -> bool:
    """A dashboard id as Grafana gives one (a positive integer); 0 is Grafana's "no id"."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


GUARD_NOTE = "gpudash push --prune: saved unchanged right before deleting it"
_GUARDED = re.compile(" " + re.escape(GUARD_NOTE) + r"; the latest save was (.+?)'s$")


def _guard_message(latest: dict[str, Any], saved: str) -> str:
    """The message of gpudash's unchanged save right before a delete: the latest one when gpudash wrote it (a save of
    this run's guard again, after a retry, among them); else, over a person's save, what the latest gpudash save
    `saved` records (its hash, uid prefix, settings and claims: every reading of ownership and of a person's edit
    stays as it was, should the delete not follow, however many such saves push the earlier versions out of
    Grafana's history) with a note naming who saved last (`_editor`)."""
    if grafana_pushed_hash(latest.get("message")):
        return latest["message"]
    note = f" {GUARD_NOTE}; the latest save was {latest.get('createdBy') or 'someone'}'s"
    head = grafana_message_head(saved)
    return (head + note if len((head + note).encode()) <= GRAFANA_MESSAGE_LENGTH else head).strip()


def _editor(version: dict[str, Any] | None) -> str:
    """Who saved `version` as people see it: for one of gpudash's unchanged saves right before a delete, the one whose
    save it was saved over (its message names them); else its author."""
    match = _GUARDED.search((version or {}).get("message") or "")
    return match.group(1) if match else (version or {}).get("createdBy") or "someone"


def _guard(client: GrafanaClient, change: Change, folder_uid: str, live: dict[str, Any],
           latest: dict[str, Any], account: AccountReads | None = None) -> int | None:
    """Saves the dashboard unchanged, with the version just looked at, right before a delete of it (which takes no
    version): the save Grafana's UI makes from any version opened before is then refused (412 version-mismatch, the
    person told and their change kept in the browser) instead of being accepted and deleted a moment later; one that
    lands between the look and this save makes this one refused, and the delete is not sent. Its message:
    `_guard_message`. Answers the version saved; None when found gone meanwhile
    (someone else deleted it). Any other failure refuses the delete: the content is unchanged, a run again retries."""
    version = (live.get("meta") or {}).get("version")
    model = {**live["dashboard"], "version": version}
    message = _guard_message(latest, (change.live or {}).get("saved") or "")
    where = f"dashboard {change.name}"
    try:
        saved = client.save(model, folder_uid, message)
    except DeadlineExceeded:
        raise
    except RemoteError as exc:
        after, read = version, None
        if lost(exc) or isinstance(exc, (InvalidAnswer, Unreachable)):  # it may have landed: read it back
            now = client.dashboard(change.name)
            if now is None:
                return None
            last = client.latest_version(change.name)
            newer = (last or {}).get("version")
            if last and last.get("message") == message and isinstance(newer, int) and isinstance(version, int) \
                    and newer > version and grafana_content(now["dashboard"]) == grafana_content(live["dashboard"]):
                after = newer  # this save's version, if nothing else reads otherwise (below)
            read = (now, last)
        # judged on the read-back just made; what people made around it is read by the look once this save is found
        # landed (_delete), here only to say why it is not deleted otherwise
        why = _moved_since_plan(client, change, folder_uid, after, around=after == version, read=read,
                                account=account).why
        if why == "":
            return None
        if why:
            raise RemoteError(f"{why}; not deleted", where=where,
                              hint="run `gpudash plan` and review it before pruning") from None
        if after != version:
            return after
        raise RemoteError(f"the unchanged save gpudash makes right before a delete failed ({exc.what}); not deleted",
                          where=where, hint="run again; nothing of the dashboard was changed") from None
    looked_id, saved_id = live["dashboard"].get("id"), saved.get("id")
    if _an_id(saved_id) and saved_id != looked_id:  # a Grafana that saves an id it has no dashboard with by its uid
        raise RemoteError(f"gpudash's unchanged save right before the delete was saved as dashboard id {saved_id}, not "
                          f"id {looked_id} just read: deleted and made anew under its uid in that moment; not deleted",
                          where=where, hint="look at the dashboard's versions in Grafana (the one before gpudash's "
                                            "unchanged save is the new dashboard's), then run `gpudash plan`")
    if saved["version"] == version:  # the version did not move: a save from it would not be refused
        client.note(f"dashboard {change.name}: Grafana kept version {version} for gpudash's unchanged save right "
                    "before the delete, so a person's save in the moment between would not have been refused")
    return saved["version"]


def _delete(client: GrafanaClient, change: Change, folder_uid: str, account: AccountReads | None = None) -> bool:
    """Delete on fresh evidence only, forced or not: --force agrees to delete what the plan showed, not a
    save or takeover since. Grafana's delete takes no version: before each attempt of it (the first, and every retry
    after a 5xx, a 429 or a failed connection) a fresh read is the last look, then an unchanged save with the
    version looked at (_guard) makes any save from an earlier version refused until the delete lands, then what
    people made around it (annotations, public dashboard, permissions, playlists, home dashboards, alert rules:
    `account` records what each showed, see ACCOUNT_MADE) is read again, then the dashboard once more
    (owner tag, folder, id, the guarding save's version). False when it
    was found gone and no delete of gpudash's can have done it (noted: someone else deleted it)."""
    guarded: list[int] = []

    def refused(why: str) -> RemoteError:
        return RemoteError(f"{why}; not deleted", where=f"dashboard {change.name}",
                           hint="run `gpudash plan` and review it before pruning")

    def look() -> bool:
        moved, live, latest = _moved_since_plan(client, change, folder_uid, guarded[-1] if guarded else None,
                                                around=False)
        if moved:
            raise refused(moved)
        if moved == "":
            return False  # already gone
        version = _guard(client, change, folder_uid, live, latest, account)
        if version is None:
            return False
        guarded.append(version)
        # what people made around it, read after the guarding save; then the dashboard itself again (one read), the
        # last thing before the DELETE (a move, a takeover or a save from the guarding save's version may land during
        # those reads): what is made in the round trip between this look and the delete is all that can still go
        # with it (no API call holds it)
        made = _made_since_plan(client, change, folder_uid, live, account)
        if made:
            raise refused(made)
        moved = _moved_since_plan(client, change, folder_uid, version, around=False, history=False).why
        if moved:
            raise refused(moved)
        return moved is None  # ("": gone meanwhile, someone else deleted it)

    if not look():  # gone before any delete of ours was sent: someone else deleted it
        client.note(_gone(change.name, "before gpudash sent its delete"))
        return False
    deleted = client.delete(change.name, look)
    if deleted == GONE:
        client.note(_gone(change.name, "no delete of gpudash's reached Grafana, or the first was answered "
                                       '"not found"'))
    elif deleted == ODDLY_ANSWERED:
        client.note(f"dashboard {change.name}: a delete of gpudash's was sent and its answer was not Grafana's (a "
                    "proxy's page, or JSON of another shape), then the dashboard was found gone: deleted by that "
                    "delete or by someone else meanwhile (nothing tells which); listed as deleted")
    elif deleted == MAYBE_DELETED:
        client.note(f"dashboard {change.name}: a delete of gpudash's was sent and its answer lost, then the dashboard "
                    "was found gone: deleted by that delete or by someone else meanwhile (nothing tells which); "
                    "listed as deleted")
    return deleted != GONE


def _gone(uid: str, when: str) -> str:
    return f"dashboard {uid}: already gone ({when}): someone else deleted it; not listed as deleted"


def push(client: GrafanaClient, changes: list[Change], dashboards: dict[str, dict[str, Any]],
         folder: dict[str, str], note: str, *, uid_prefix: str, force: bool, prune: bool, dry_run: bool,
         max_prune_share: float = prune_guard.DEFAULT_MAX_SHARE, allow_mass_prune: bool = False,
         progress: Progress | None = None, publisher: Publisher | None = None) -> list[Outcome]:
    """Write what the plan found; a dry run reports exactly what this would write or refuse. Every version saved
    records `uid_prefix` and `publisher` (the settings' project and clusters), the evidence a later --prune needs
    that the dashboard is these settings'."""
    prune_guard.check(changes, prune=prune, allowed=allow_mass_prune, max_share=max_prune_share)
    progress = progress or Silent()
    planned = [(change, disposition(change, force=force, prune=prune)) for change in changes]
    if dry_run:
        return [Outcome(c, done=False, status=WOULD_WRITE if d == WRITE else d) for c, d in planned]
    outcomes: list[Outcome] = []
    stopped: str | None = None
    account = AccountReads(client, once=frozenset())  # the organization-wide reads before each delete, as they showed
    with progress.phase("writing to Grafana", sum(1 for _, d in planned if d == WRITE)) as tick:
        for change, decided in planned:
            if decided != WRITE:
                outcomes.append(Outcome(change, done=False, status=decided))
                continue
            if stopped:
                outcomes.append(Outcome(change, done=False, error=stopped, status=FAILED))
                continue
            sent = _writes_sent(client, change)
            try:
                written = True
                if change.kind == "folder":
                    written = client.create_folder(folder["uid"], folder["title"])
                    if not written:
                        client.note(f"folder {folder['uid']}: already there when gpudash came to create it (made by "
                                    "someone else since the plan): not listed as created; the dashboards go into it")
                elif change.action == DELETE:
                    written = _delete(client, change, folder["uid"], account)
                elif change.action == WITHDRAW:  # the dashboard as the plan read it, unedited since gpudash saved it
                    written = _withdraw(client, change, folder, note, uid_prefix, publisher)
                else:
                    written = _save_generated(client, change, dashboards[change.name], folder, note, uid_prefix,
                                              publisher)
                # not written: found done by someone else, with nothing of this run's able to have done it (noted)
                outcomes.append(Outcome(change, done=written, status=DONE if written else SKIPPED))
            except RemoteError as exc:
                outcomes.append(Outcome(change, done=False, error=str(exc), status=FAILED))
                if isinstance(exc, DeadlineExceeded):
                    stopped = f"not attempted: {exc.stopped or exc.what}"  # why, not what it left
                elif change.kind == "folder":
                    stopped = "not attempted: the folder could not be created"
            except KeyboardInterrupt:  # a second Ctrl-C: the call under way is not waited for; the report is made
                client.deadline.stopped_at_once()
                outcomes.append(Outcome(change, done=False, status=FAILED,
                                        error=UNDER_WAY if _writes_sent(client, change) > sent else NOT_STARTED))
                stopped = NOT_STARTED
            tick()
    _after_deletes(client, outcomes, account)
    return outcomes


def _after_deletes(client: GrafanaClient, outcomes: list[Outcome], account: AccountReads) -> None:
    """The look after a run's deletes: the organization-wide reads (ACCOUNT_MADE) made once again. Grafana's delete
    leaves an alert rule or a playlist item by uid naming the dashboard it deleted (and a home dashboard preference
    its id, answered by Grafana before 10 alone), so one that names a deleted dashboard and that the read before its
    delete did not show was made within that delete's round trip: the delete is listed
    as done, then failed (exit 3), saying what was made. A read that fails now, where that read had read it, shows
    nothing: the same, saying it could not be read. Not looked at where that read could not read it (--force agreed
    to delete with whatever it was)."""
    deleted = [o for o in outcomes if o.done and o.change.action == DELETE and o.change.name in account.shown_of]
    after = AccountReads(client)
    for outcome in deleted:
        uid, said = outcome.change.name, []
        dashboard_id = ((outcome.change.live or {}).get("dashboard") or {}).get("id")
        for kind, (what, which) in ACCOUNT_MADE.items():
            looked = account.shown_of[uid].get(kind)
            if looked is None or isinstance(looked, Unread):
                continue
            found = _read_after(after, kind, uid, dashboard_id)
            added = made_since(looked, None if isinstance(found, Unread) else found)
            if added == UNREAD:
                said.append(f"{which} {found.why} after the run's deletes, where the read before its delete read "
                            "them: what was made on it while the deletes ran is not known")
            elif added:
                said.append(f"{what} {_first(list(added))} while the run's deletes ran, after the read before its "
                            "delete: deleted all the same, and that now names a dashboard that is gone (running "
                            "again does not mend it: point it at another dashboard in Grafana)")
        if said:
            outcome.unfinished = "; ".join(said)


def _read_after(after: AccountReads, kind: str, uid: str, dashboard_id: Any) -> list[str] | Unread:
    """`after.shown(...)`, or Unread where the command was stopped (a signal, the deadline): not an answer."""
    if after.client.deadline.interrupted:
        return Unread("could not be read (the command was stopped)")
    try:
        return after.shown(kind, uid, dashboard_id)
    except DeadlineExceeded as exc:
        return Unread(f"could not be read ({exc.what})")
    except KeyboardInterrupt:  # a second Ctrl-C: what was deleted is reported, unconfirmed
        after.client.deadline.stopped_at_once()
        return Unread("could not be read (the command was stopped)")


def _writes_sent(client: GrafanaClient, change: Change) -> int:
    """The requests of the kind that writes `change` that may have reached Grafana so far: a delete's DELETE (not the
    unchanged save before it, which changes nothing), else a save's or folder create's POST."""
    return client.sent.get("DELETE" if change.action == DELETE else "POST", 0)
