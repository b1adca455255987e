"""How gpudash recognises what it owns and what a person changed since, with no state on disk.

The evidence lives with each object (the marks themselves are spelled in `markers`):
  * Grafana dashboards carry the owner tag; every push is saved with a version message
    that starts with the hash note and the hash of what was pushed. When the live content
    no longer hashes to the message of its latest gpudash version, someone edited it.
  * CloudWatch dashboards carry the hash note and hash in their header text: the hash of the
    dashboard's name, the project's name and the body without that line; an edit in the console, a
    copy saved under another name and another project's dashboard all break the match.
  * Alarms and dashboards name their project (the settings' `project`): alarms in a tag, dashboards
    in what their stamp binds. Prune deletes only what names this project.
  * CloudWatch alarms carry the owner tag (ownership) and the hash tag: the hash of the
    fields gpudash wrote and, if CloudWatch reports them in
    another form, the hash of what it reported right after the write. When the live alarm no
    longer hashes to what was reported, someone edited it in the console. The hash tag also holds
    the hash of the ownership marks written with it (project and clusters tags): marks that no
    longer hash to it were rewritten by a person, which transfers nothing.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any, Iterable

from .markers import (ALARM_CLUSTERS_TAG, ALARM_HASH_TAG, ALARM_OWNER_TAG, ALARM_PROJECT_TAG, ALARM_RULE_TAG,
                      CLAIM_DIGEST_LENGTHS,
                      CLAIM_NOTE, CLAIMS_CUT, CLUSTERS_NOTE, GRAFANA_MESSAGE_LENGTH, GRAFANA_OWNER_TAG, HASH_NOTE,
                      NO_PROJECT, PROJECT_NOTE, PUBLICATION_NOTE, PUBLISHER_LENGTH, TAG_VALUE_LENGTH, UID_PREFIX_NOTE)
from .serialize import ascii_json, canonical_json, compact_json

_STAMP = re.compile(r"\n*`?" + re.escape(HASH_NOTE) + r"([0-9a-f]{16})`?\s*$")
_MESSAGE = re.compile("^" + re.escape(HASH_NOTE) + r"([0-9a-f]{16})\b")
_RECORDED_PREFIX = re.compile("^" + re.escape(HASH_NOTE) + r"[0-9a-f]{16} " + re.escape(UID_PREFIX_NOTE) + r"(\S+)(?:\s|$)")
_RECORDED_PUBLISHER = re.compile("^" + re.escape(HASH_NOTE) + r"[0-9a-f]{16} " + re.escape(UID_PREFIX_NOTE) + r"\S+ "
                                 + re.escape(PROJECT_NOTE) + r"(\S+) " + re.escape(CLUSTERS_NOTE)
                                 + r"([A-Za-z0-9_,-]+)(?:\s|$)")
GRAFANA_SERVER_FIELDS = ("id", "version")


def content_hash(value: Any) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()[:16]


# --- Grafana ------------------------------------------------------------------------------

def grafana_content(dashboard: dict[str, Any]) -> dict[str, Any]:
    """The dashboard without the fields the server fills in."""
    return {k: v for k, v in dashboard.items() if k not in GRAFANA_SERVER_FIELDS}


def grafana_owned(dashboard: dict[str, Any]) -> bool:
    """The owner tag as one of the dashboard's tags (a list of strings; anything else carries no tag)."""
    tags = dashboard.get("tags")
    return isinstance(tags, list) and GRAFANA_OWNER_TAG in tags


def grafana_message(dashboard: dict[str, Any], note: str, uid_prefix: str | None = None,
                    publisher: tuple[str, tuple[str, ...]] | str | None = None, claims=()) -> str:
    """The message of a version gpudash saves: the hash note, then the uid prefix it was saved with (which project
    wrote it: `gpudash-eu-inference` may be `gpudash`'s id `eu-inference` or `gpudash-eu`'s `inference`), then
    the settings that saved it (`publisher`: their project, "" for none, and clusters; or the record of an earlier
    save as it reads, `grafana_recorded_publisher_text`, kept word for word), then the `claims` of other settings
    files of the project that generate it too (`grafana_claim`; CLAIMS_CUT alone when they do not all fit), then
    `note`, cut so that the message fits the GRAFANA_MESSAGE_LENGTH bytes Grafana takes (left out when the notes
    before it take them all; those always fit: project and uid prefix are bounded by the settings schema, the
    clusters by PUBLISHER_LENGTH, the claims by the room left)."""
    recorded = f" {UID_PREFIX_NOTE}{uid_prefix}" if uid_prefix else ""
    if uid_prefix and isinstance(publisher, str):
        recorded += f" {publisher}"
    elif uid_prefix and publisher is not None:
        recorded += f" {PROJECT_NOTE}{publisher[0] or NO_PROJECT} {CLUSTERS_NOTE}{_publisher_clusters(publisher[1])}"
    head = f"{HASH_NOTE}{content_hash(grafana_content(dashboard))}{recorded}"
    if claims and not (uid_prefix and publisher is not None):  # a save that dropped them would let a prune delete
        raise ValueError("claims are recorded after the uid prefix and the settings that saved the dashboard")
    if claims:
        head += _claims_text(head, claims)
    if note.startswith(CLAIM_NOTE):
        note = f"- {note}"  # a note is never read as a claim
    if len(head.encode()) > GRAFANA_MESSAGE_LENGTH:
        raise ValueError(f"a Grafana version message would be {len(head.encode())} bytes, over Grafana's "
                         f"{GRAFANA_MESSAGE_LENGTH}: {head[:80]}...")
    room = max(0, GRAFANA_MESSAGE_LENGTH - len(head.encode()) - 1)  # a head of all 500 bytes leaves no note
    return f"{head} {note.encode()[:room].decode(errors='ignore')}".strip()


def _claims_text(head: str, claims) -> str:
    """The claims as the message records them after `head`: each cluster by as many characters of its digest as
    let every claim fit (CLAIM_DIGEST_LENGTHS, the longest first; a claim read with fewer keeps them), else the
    mark of claims not listed."""
    if not any(CLAIMS_CUT in claim for claim in claims):
        for length in CLAIM_DIGEST_LENGTHS:
            shown = sorted({",".join(sorted({digest[:length] for digest in claim})) for claim in claims})
            text = "".join(f" {CLAIM_NOTE}{claim}" for claim in shown)
            if len((head + text).encode()) <= GRAFANA_MESSAGE_LENGTH:
                return text
    return f" {CLAIM_NOTE}{CLAIMS_CUT}"


def _publisher_clusters(clusters: tuple[str, ...]) -> str:
    """The clusters as a version message records them: all of them, sorted, when PUBLISHER_LENGTH holds them, else as
    many whole names as it holds followed by a comma, which marks the list as cut (a cut list proves nothing about
    the names it leaves out: --prune keeps what such a record saved, see `CLUSTERS_CUT`)."""
    listed = sorted(clusters)
    if len(",".join(listed)) <= PUBLISHER_LENGTH:
        return ",".join(listed)
    names: list[str] = []
    for name in listed:
        if len(",".join([*names, name])) + 1 > PUBLISHER_LENGTH:
            break
        names.append(name)
    return ",".join(names) + ","


# In a recorded cluster set, the mark of a list cut to fit the message (never a cluster name): such a set is never
# all of some settings' clusters, so it is neither these settings' whole record nor a subset of them.
CLUSTERS_CUT = "..."


def _recorded_clusters(text: str) -> frozenset[str]:
    names = {name for name in text.split(",") if name}
    return frozenset(names | {CLUSTERS_CUT} if text.endswith(",") else names)


def grafana_publisher(project: str, clusters: tuple[str, ...]) -> tuple[str, frozenset[str]]:
    """(project, clusters) of these settings as a version message records them (grafana_recorded_publisher)."""
    return project, _recorded_clusters(_publisher_clusters(clusters))


def grafana_recorded_publisher(message: str | None) -> tuple[str, frozenset[str]] | None:
    """(project, "" for none; clusters, with CLUSTERS_CUT where the list was cut) of the settings a gpudash version
    message records as saving it; None for one saved before gpudash recorded them."""
    match = _RECORDED_PUBLISHER.match(message) if isinstance(message, str) else None
    if not match:
        return None
    project = "" if match.group(1) == NO_PROJECT else match.group(1)
    return project, _recorded_clusters(match.group(2))


def grafana_recorded_publisher_text(message: str | None) -> str | None:
    """The record of the settings that saved it (`project:... clusters:...`) as a gpudash version message reads,
    word for word (a save that keeps them as they were, such as a claim, writes it back unchanged); None when it
    records none."""
    match = _RECORDED_PUBLISHER.match(message) if isinstance(message, str) else None
    return match.group(0)[match.group(0).index(PROJECT_NOTE):].rstrip() if match else None


# --- claims: other settings files of the project that generate a dashboard another file saved -----------------
# A claim names each cluster of the settings that made it by a short digest of the project and the cluster, so that
# one settings file's claim fits Grafana's message whatever its clusters' names. Settings take a claim for theirs
# when each of its clusters is one of theirs (their claim, or an earlier version's with fewer clusters); any other
# claim is another file's, and a dashboard carrying one is never pruned. CLAIMS_CUT alone stands for claims that
# did not all fit: nobody's to withdraw, never pruned.

Claim = frozenset  # of cluster digests (grafana_claim), or {CLAIMS_CUT}

_CLAIM = re.compile(re.escape(CLAIM_NOTE) + r"(?:" + re.escape(CLAIMS_CUT) + "".join(
    rf"|[a-z2-7]{{{n}}}(?:,[a-z2-7]{{{n}}})*" for n in CLAIM_DIGEST_LENGTHS) + ")")

# Claims as a gpudash of 2026-12-01 (4f220e5..83732e7) wrote them, names in full: `also:<project>/<a,b>`.
_LEGACY_CLAIM = re.compile(re.escape(CLAIM_NOTE) + r"([A-Za-z0-9][A-Za-z0-9_.-]*|" + re.escape(NO_PROJECT)
                           + r")/([A-Za-z0-9][A-Za-z0-9_-]*(?:,[A-Za-z0-9][A-Za-z0-9_-]*)*)")


class GarbledClaims(ValueError):
    """A version message whose claims do not read as gpudash writes them: not evidence of "no claims"."""


def claim_digest(project: str, cluster: str) -> str:
    digest = hashlib.sha256(f"{project}\x00{cluster}".encode()).digest()
    return base64.b32encode(digest).decode().lower()[:CLAIM_DIGEST_LENGTHS[0]]


def grafana_claim(project: str, clusters) -> Claim:
    """The claim settings of `project` with `clusters` record on a dashboard another settings file saved."""
    return frozenset(claim_digest(project, cluster) for cluster in clusters)


def claim_within(claim: Claim, digests: Claim) -> bool:
    """Whether each cluster `claim` names (by as many characters of its digest as it records) is one of those whose
    full digests are `digests`; never for the mark of claims not listed."""
    return CLAIMS_CUT not in claim and all(any(full.startswith(digest) for full in digests) for digest in claim)


def claim_is(claim: Claim, own: Claim) -> bool:
    """Whether `claim` names exactly the clusters whose full digests are `own`, at the length it records them."""
    if CLAIMS_CUT in claim or not claim:
        return False
    length = len(next(iter(claim)))
    return claim == frozenset(digest[:length] for digest in own)


def grafana_recorded_claims(message: str | None) -> frozenset:
    """The claims a gpudash version message records after the settings that saved it (empty when it records no
    settings, or none); GarbledClaims when a word there starts as a claim and does not read as one."""
    match = _RECORDED_PUBLISHER.match(message) if isinstance(message, str) else None
    if not match:
        return frozenset()
    claims = set()
    rest = message[match.end():]
    while rest.startswith(CLAIM_NOTE):
        word, _, rest = rest.partition(" ")
        if legacy := _LEGACY_CLAIM.fullmatch(word):
            project = "" if legacy.group(1) == NO_PROJECT else legacy.group(1)
            claims.add(grafana_claim(project, legacy.group(2).split(",")))
        elif _CLAIM.fullmatch(word):
            claims.add(frozenset(word[len(CLAIM_NOTE):].split(",")))
        else:
            raise GarbledClaims(f"the version message's claim {word[:60]!r} does not read as gpudash writes claims")
    return frozenset(claims)


def grafana_message_head(message: str) -> str:
    """What a gpudash version message records, without the note after it: the hash, the uid prefix, the settings
    that saved it and their claims, as far as it records them ("" for a message that is not gpudash's)."""
    match = _RECORDED_PUBLISHER.match(message)
    if match:
        end = match.end()
        while message.startswith(CLAIM_NOTE, end):
            space = message.find(" ", end)
            end = len(message) if space < 0 else space + 1
        return message[:end].rstrip()
    match = _RECORDED_PREFIX.match(message) or _MESSAGE.match(message)
    return message[:match.end()].rstrip() if match else ""


def grafana_recorded_prefix(message: str | None) -> str | None:
    """The uid prefix a gpudash version message records; None for one saved before gpudash recorded it."""
    match = _RECORDED_PREFIX.match(message) if isinstance(message, str) else None
    return match.group(1) if match else None


def grafana_pushed_hash(message: str | None) -> str | None:
    match = _MESSAGE.match(message) if isinstance(message, str) else None
    return match.group(1) if match else None


# --- CloudWatch dashboards ----------------------------------------------------------------

def _with_header(body: dict[str, Any], markdown: str) -> dict[str, Any]:
    """A copy of `body` whose first widget's markdown is `markdown` (the rest is shared, not copied)."""
    first = body["widgets"][0]
    header = {**first, "properties": {**first["properties"], "markdown": markdown}}
    return {**body, "widgets": [header, *body["widgets"][1:]]}


def _stamp(digest: str) -> str:
    return f"\n\n`{HASH_NOTE}{digest}`"


def _bound_to(name: str, project: str) -> bytes:
    """What a dashboard's hash covers before its body: its own name and its project, so that a copy saved
    under another name, or another project's dashboard, does not carry a valid stamp."""
    return canonical_json([name, project]) + b"\n"


def dashboard_hash(body: dict[str, Any], name: str, project: str) -> str:
    return hashlib.sha256(_bound_to(name, project) + canonical_json(body)).hexdigest()[:16]


def stamp_cloudwatch_body(body: dict[str, Any], name: str, project: str) -> dict[str, Any]:
    """The body with its hash (bound to its name and project) appended to the header text widget."""
    return _with_header(body, body["widgets"][0]["properties"]["markdown"] + _stamp(dashboard_hash(body, name, project)))


_PENDING = "\x00gpudash-digest\x00"  # stands for the digest while the stamped body is encoded
_PENDING_TEXT = canonical_json(_stamp(_PENDING))[1:-1]  # that stamp as it appears inside the encoded header


def stamped_cloudwatch_text(body: dict[str, Any], name: str, project: str) -> str:
    """The DashboardBody text of `body` stamped with its hash: compact_json(stamp_cloudwatch_body(...)),
    from one encoding instead of two. A JSON string encodes character by character, so the stamped
    text less the encoded stamp is the canonical text of the unstamped body, which the hash covers."""
    pending = pending_cloudwatch_text(body)
    if pending is None:  # the placeholder occurs in the body itself: take the long way
        return compact_json(stamp_cloudwatch_body(body, name, project))
    return stamped_pending_text(*pending, name, project)


def stamped_pending_text(text: bytes, at: int, end: int, name: str, project: str) -> str:
    """`stamped_cloudwatch_text` of the body whose `pending_cloudwatch_text` is (text, at, end)."""
    whole = memoryview(text)
    # escaped piece by piece (a character at a time, so as a whole): what follows the header is most of the text,
    # and without the header's non-ASCII characters it is read as one byte a character
    return "".join([ascii_json(str(piece, "utf-8"))
                    for piece in (whole[:at], cloudwatch_stamp(text, at, end, name, project), whole[end:])])


def pending_cloudwatch_text(body: dict[str, Any]) -> tuple[bytes, int, int] | None:
    """The canonical text of `body` stamped with a placeholder for its digest, and where the placeholder's stamp
    starts and ends in it; None when the placeholder occurs in the body itself."""
    pending = _PENDING_TEXT
    text = canonical_json(_with_header(body, body["widgets"][0]["properties"]["markdown"] + _stamp(_PENDING)))
    at = text.find(pending)
    end = at + len(pending)
    if at < 0 or text.find(pending, end) >= 0:
        return None
    return text, at, end


def cloudwatch_stamp(text: bytes, at: int, end: int, name: str, project: str) -> bytes:
    """The canonical text of the stamp that takes the place of text[at:end] (`pending_cloudwatch_text`): the hash
    of the text around it, bound to the dashboard's name and project."""
    whole = memoryview(text)  # the text around the placeholder, hashed without copies of its own
    return cloudwatch_stamp_of((whole[:at], whole[end:]), name, project)


def cloudwatch_stamp_of(around: Iterable[bytes], name: str, project: str) -> bytes:
    """`cloudwatch_stamp` of the text around the placeholder given as the pieces it is made of, in order."""
    digest = hashlib.sha256(_bound_to(name, project))
    for piece in around:
        digest.update(piece)
    return canonical_json(_stamp(digest.hexdigest()[:16]))[1:-1]


def unstamped_cloudwatch_body(body: dict[str, Any]) -> dict[str, Any]:
    """The body as rendered: without the stamp `stamped_cloudwatch_text` added (unchanged when it has none)."""
    header = body["widgets"][0]["properties"]["markdown"]
    match = _STAMP.search(header)
    return _with_header(body, header[: match.start()]) if match else body


# --- publications: which settings of a project published an object ----------------------------
# One project may be split over several settings files (one per Region or team): each object of a project
# records the clusters of the settings that last wrote it. An apply prunes an object of its project only when
# it was published with a cluster of its own lineage: the clusters these settings define, and those their
# defined objects were published with (a file's earlier versions), never another file's. A changed list
# alone rewrites nothing (an object records the new one when it is written for another reason); objects
# written before this was recorded (or whose list is too long for a tag) say nothing and are pruned as before.

_PUBLICATION = re.compile(r"\n\n`" + re.escape(PUBLICATION_NOTE) + r" ([A-Za-z0-9_ -]*)`")


def publication_text(clusters: tuple[str, ...] | list[str]) -> str:
    """The clusters as recorded: names separated by spaces (a cluster's name holds none), sorted."""
    return " ".join(sorted(clusters))


def with_publication(body: dict[str, Any], clusters: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """A CloudWatch dashboard body whose header text ends with the clusters it is published with."""
    header = body["widgets"][0]["properties"]["markdown"]
    return _with_header(body, f"{header}\n\n`{PUBLICATION_NOTE} {publication_text(clusters)}`")


def dashboard_publication(body: dict[str, Any]) -> frozenset[str] | None:
    """The clusters a dashboard's header says it was published with; None when it says none."""
    try:
        header = body["widgets"][0]["properties"]["markdown"]
    except (KeyError, IndexError, TypeError):
        return None
    found = _PUBLICATION.findall(header) if isinstance(header, str) else []
    return frozenset(found[-1].split()) if found else None


def publication_tags(clusters: tuple[str, ...] | list[str]) -> list[dict[str, str]]:
    """The clusters tag of an alarm: as many whole names as a tag value holds. A shorter list still names
    only clusters of the settings that published the alarm, so other settings never take it for theirs."""
    names: list[str] = []
    for name in sorted(clusters):
        if len(publication_text([*names, name])) > TAG_VALUE_LENGTH:
            break
        names.append(name)
    return [{"Key": ALARM_CLUSTERS_TAG, "Value": publication_text(names)}] if names else []


def alarm_publication(tags: list[dict[str, str]]) -> frozenset[str] | None:
    value = next((t.get("Value") for t in tags if t.get("Key") == ALARM_CLUSTERS_TAG), None)
    return frozenset(value.split()) if isinstance(value, str) and value.strip() else None


def lineage(clusters: tuple[str, ...], publications: list[frozenset[str] | None]) -> frozenset[str]:
    """These settings' clusters and those their defined objects say they were published with, where that
    list shares a cluster with these settings: an object whose name holds no cluster (a fleet-scope alarm)
    may have been written last by other settings of the project, and must not make their clusters ours."""
    own = frozenset(clusters)
    return own.union(*(p for p in publications if p is not None and p & own))


def published_elsewhere(publication: frozenset[str] | None, lineage_: frozenset[str]) -> bool:
    """Whether an object of this project was published by other settings: with no cluster of this lineage."""
    return publication is not None and not publication & lineage_


Record = tuple[str, str, bool, "frozenset[str] | None"]  # kind, name, defined by these settings, clusters recorded
# The kind of a record that vouches for nothing (an alarm whose ownership marks a person rewrote; an object that records
# no clusters, for the cluster its name is in gpudash's form for) but still carries a cluster: a flag naming it names a
# cluster the account holds objects of (`unrecorded`)
UNVOUCHED = "unvouched"


def renamed_evidence(renamed_from: tuple[str, ...], clusters: tuple[str, ...], former: tuple[str, ...],
                     records: list[Record], project: str, delete: str,
                     removed: tuple[str, ...] | None = None) -> list[str]:
    """The evidence --renamed-from OLD needs: the objects of this project recording OLD were last published by an
    earlier version of these settings. Each records the clusters of the settings that last wrote it; that list must
    hold no cluster these settings neither define nor name as one they had (--renamed-from, --removed-cluster), and,
    where objects these settings still define record an earlier list of theirs (one sharing a cluster they define
    and holding one they do not, all of them ones they define or had), it must be one of those lists: a settings
    file split in two whose other part (OLD's) applied since is refused. Raises a GpudashError (exit 2, before anything
    is written) naming the objects and what they record otherwise, and for a name no object records that is close to
    one they do (`unrecorded`); returns the names no object records otherwise (the flag takes nothing then).

    Not told apart: another settings file whose clusters are exactly ones these settings name as theirs before
    (`--renamed-from a` while another file defines `a` alone, and this file's objects record no earlier list).

    `removed` (--removed-cluster, None where the command has no such flag) asks less: an object recording one of
    them must record a cluster these settings define or had under another name; one recording removed clusters alone was published by settings with none of
    these settings' clusters: another file's (a split whose other part applied since), never these settings' to
    prune."""
    from .errors import GpudashError
    from .names import shown

    unproven = unrecorded(renamed_from, clusters, records, project, removed)
    records = [record for record in records if record[0] != UNVOUCHED]
    had = frozenset(clusters) | frozenset(former)
    earlier: dict[str, set[frozenset[str]]] = {}
    for kind, _, defined, recorded in records:
        if (defined and recorded is not None and recorded & set(clusters) and not recorded <= set(clusters)
                and recorded <= had):  # (a list with clusters these never had is another file's sharing one)
            earlier.setdefault(kind, set()).add(recorded)
    whose = f"of project {project!r}" if project else "of no project"
    also = "" if removed is None else ("; if the other clusters they record were removed from these settings, name "
                                       "them with --removed-cluster too")
    for gone in removed or ():
        alone = sorted(name for _, name, _, recorded in records
                       if recorded and gone in recorded and recorded <= set(removed or ()))
        if alone:
            lists = sorted({" ".join(sorted(recorded)) for _, name, _, recorded in records if name in alone
                            and recorded})
            raise GpudashError(
                f"{len(alone)} object(s) {whose} recording the cluster "
                f"{gone!r} were last published by settings with clusters {' / '.join(lists)}, none of which these "
                f"settings define (clusters {' '.join(sorted(clusters))}) or name with --renamed-from: another "
                f"settings file defines {gone!r} (a file split in two whose other part applied since) "
                f"({shown(alone)})", where=f"--removed-cluster {gone}",
                hint=f"leave out --removed-cluster {gone}: those objects are that file's; if no settings file "
                     f"defines {gone!r} any more, delete them by hand ({delete})")
    for old in renamed_from:
        recording = [(kind, name, recorded) for kind, name, _, recorded in records if recorded and old in recorded]
        strangers = sorted((name, recorded) for kind, name, recorded in recording
                           if not recorded <= had or (earlier.get(kind) and recorded not in earlier[kind]))
        if strangers:
            lists = sorted({" ".join(sorted(recorded)) for _, recorded in strangers})
            mine = sorted({" ".join(sorted(r)) for lists_ in earlier.values() for r in lists_})
            raise GpudashError(
                f"{len(strangers)} object(s) {whose} recording the cluster "
                f"{old!r} were last published by settings with clusters {' / '.join(lists)}, not by an earlier "
                f"version of these (clusters {' '.join(sorted(clusters))}"
                f"{'; their objects record ' + ' / '.join(mine) if mine else ''}): another settings file still "
                f"defines {old!r}, or did when it last applied ({shown([n for n, _ in strangers])})",
                where=f"--renamed-from {old}",
                hint=f"leave out --renamed-from {old}: nothing is taken from the file that publishes {old!r}; if "
                     f"no settings file defines {old!r} any more, delete its objects by hand ({delete}) and publish "
                     f"without the flag{also}")
    return unproven


def unrecorded(renamed_from: tuple[str, ...], clusters: tuple[str, ...], records: list[Record], project: str,
               removed: tuple[str, ...] | None) -> list[str]:
    """The --renamed-from and --removed-cluster names no object of the project records: the flag takes nothing.
    Where such a name is close to one the objects record that these settings do not define (a typo: `othr` for
    `other`, whose objects the user believes renamed or pruned), refuses it (GpudashError, exit 2, before any write)
    naming the one meant; so too where the settings name no project, under which CloudWatch objects record nothing a
    flag could take. Otherwise returns them, for a note: a flag left in place after the run it was for (nothing
    records the old name once that run rewrote or pruned its objects: a rerun of a CI job after a later step failed)
    takes nothing and is said to, as a rerun of a finished rename or prune changes nothing."""
    from .errors import GpudashError
    from .guesses import did_you_mean

    seen = frozenset().union(*(recorded for *_, recorded in records if recorded))
    unknown = [(flag, name) for flag, names in (("--renamed-from", renamed_from), ("--removed-cluster", removed or ()))
               for name in names if name not in seen]
    if not unknown:
        return []
    known = sorted(seen - set(clusters))
    no_project = removed is not None and not project  # (CloudWatch objects are read for what they record by project)
    guesses = "".join(did_you_mean(name, known) for _, name in unknown)
    if not no_project and not guesses:
        return [name for _, name in unknown]
    whose = f"of project {project!r}" if project else "of no project"
    named = " ".join(f"'{name}'" for _, name in unknown)
    flags = {flag for flag, _ in unknown}
    verb = " or ".join(sorted({"rename" if flag == "--renamed-from" else "prune" for flag in flags}))
    regions = "" if removed is None else (
        "; if the old cluster's alarms are in a Region these settings no longer use, add --former-region REGION")
    if no_project:
        guesses, regions = "set `project:` in the settings (what gpudash publishes then records its clusters); ", ""
    raise GpudashError(
        f"no object {whose} records the cluster{'s' if len(unknown) > 1 else ''} {named}: the flag would {verb} "
        f"nothing (clusters the objects record that these settings do not define: "
        f"{' '.join(known) if known else 'none'})",
        where=", ".join(f"{flag} {name}" for flag, name in unknown),
        hint=f"{guesses}give the cluster's name as the objects record it; once the run the flag was for has "
             f"published, nothing records the old name: leave the flag out{regions}")


def same_but_publication(live: dict[str, Any], desired: dict[str, Any]) -> bool:
    """Whether two stamped dashboard bodies differ at most in the clusters their publication line lists."""
    def masked(body: dict[str, Any]) -> dict[str, Any]:
        bare = unstamped_cloudwatch_body(body)
        header = bare["widgets"][0]["properties"]["markdown"]
        return _with_header(bare, _PUBLICATION.sub(f"\n\n`{PUBLICATION_NOTE} `", header))
    try:
        return masked(live) == masked(desired)
    except (KeyError, IndexError, TypeError):
        return False


def same_publication_kind(tag: dict[str, str], tags: list[dict[str, str]]) -> bool:
    """Whether `tag` is the clusters tag and `tags` already hold one (perhaps listing other clusters)."""
    return tag.get("Key") == ALARM_CLUSTERS_TAG and any(t.get("Key") == ALARM_CLUSTERS_TAG for t in tags)


OURS, OLDER, OTHER = "ours", "older", "other"  # what a dashboard's stamp proves


def read_cloudwatch_stamp(body: dict[str, Any], name: str, project: str) -> str | None:
    """What the stamp of the dashboard `name` proves: OURS (written by gpudash for this project under
    this name, unchanged since), OLDER (written, unchanged, with no project named: by a gpudash whose
    settings named none, or by an older one that bound no name to its stamp; this project's or another's,
    nothing says), OTHER (edited since, a copy saved under another name, or another project's); None when
    it carries no stamp. Without a project, what was written with none is OURS (it is never pruned then)."""
    try:
        header = body["widgets"][0]["properties"]["markdown"]
    except (KeyError, IndexError, TypeError):
        return None
    match = _STAMP.search(header) if isinstance(header, str) else None
    if not match:
        return None
    bare, stamped = _with_header(body, header[: match.start()]), match.group(1)
    if project and stamped == dashboard_hash(bare, name, project):
        return OURS
    # Written with no project named: by this gpudash (its name bound) or by one that bound nothing.
    if stamped in (dashboard_hash(bare, name, ""), content_hash(bare)):
        return OURS if not project else OLDER
    return OTHER


# --- CloudWatch alarms --------------------------------------------------------------------

_ALARM_KEYS = ("AlarmName", "AlarmDescription", "ActionsEnabled", "AlarmActions", "OKActions",
               "InsufficientDataActions", "ComparisonOperator", "Threshold", "ThresholdMetricId", "EvaluationPeriods",
               "DatapointsToAlarm", "TreatMissingData", "EvaluateLowSampleCountPercentile", "Namespace",
               "MetricName", "Statistic", "ExtendedStatistic", "Period", "Unit")
# What DescribeAlarms reports of a metric alarm that is no setting of it (its state, when it changed, its ARN), and the
# settings of a PromQL alarm (one with them has no Metrics or MetricName: an edit already). Every other member of the
# report is among the fields compared (_ALARM_KEYS, Dimensions, Metrics, _UNSENT_DEFAULTS): a setting CloudWatch adds
# later must be put in one of them (tests/unit/test_alarm_fields_cover_the_model.py reads botocore's model).
NOT_COMPARED = ("AlarmArn", "AlarmConfigurationUpdatedTimestamp", "StateValue", "StateReason", "StateReasonData",
                "StateUpdatedTimestamp", "StateTransitionedTimestamp", "EvaluationState", "EvaluationCriteria",
                "EvaluationInterval")


# PutMetricAlarm's settings gpudash never sends, each with the values CloudWatch documents as its default (what an
# alarm that sets none has): a person's other value, set in the console, is an edit like any field's. PutMetricAlarm
# overwrites an alarm's whole configuration, so an update that sends none resets it, and a delete deletes it.
_UNSENT_DEFAULTS = {
    "EvaluationWindow": ({"SlidingWindow": {}},),  # a sliding window, the default; a wall clock window is not
    "WarmUpConfiguration": ({"WarmUpPeriodDurationInMinutes": 0}, {"OnlyStartEvaluatingAfterWarmUpPeriodEnds": False},
                            {"WarmUpPeriodDurationInMinutes": 0, "OnlyStartEvaluatingAfterWarmUpPeriodEnds": False}),
    "ActionConfiguration": ({"AlarmTagsPropagation": {"Enabled": False}},),  # no alarm tags in notifications
}


# Where a listed alarm holds the members the installed botocore's model lacks (its parser drops them), by their path in
# the alarm ("FutureSetting", "Metrics[0].FutureSetting") with their values as answered: clients/cloudwatch.py puts
# them there. A setting CloudWatch added after that botocore, set by a person in the console, is one of them.
UNMODELLED = "UnknownToBotocore"


def unknown_settings(alarm: dict[str, Any]) -> dict[str, Any]:
    """The members of a listed alarm the installed botocore does not know that may be settings, by path: all but those
    under a member gpudash knows is no setting (NOT_COMPARED: a state CloudWatch changes by itself would otherwise
    read as an edit at each change) and a setting of _UNSENT_DEFAULTS (compared by its value, as any botocore's)."""
    return {path: value for path, value in (alarm.get(UNMODELLED) or {}).items()
            if re.split(r"[.\[]", path, maxsplit=1)[0] not in NOT_COMPARED and path not in _UNSENT_DEFAULTS}


def alarm_fields(alarm: dict[str, Any], legacy: bool = False) -> dict[str, Any]:
    """The fields PutMetricAlarm sets, normalised so that a request and DescribeAlarms' report of
    the alarm it made compare equal. A query's Label and AccountId, when it has them, are among them (a person may
    rename the line the alarm's graph shows, or point the query at another account); `legacy`: without them, as the
    evidence of gpudash releases before them hashed the fields (see `legacy_alarm_hash`). The settings gpudash never
    sends (`_UNSENT_DEFAULTS`) are among them where they hold anything but their documented default (an alarm without
    them hashes as before). Members the installed botocore does not know (`unknown_settings`) are among them too, so
    that evidence shows them as gpudash's write left them, or not: a person's setting there is an edit like any."""
    result = {key: alarm[key] for key in _ALARM_KEYS if alarm.get(key) not in (None, [], "")}
    unmodelled = alarm.get(UNMODELLED) or {}
    result.update((key, value) for key, defaults in _UNSENT_DEFAULTS.items()
                  if (value := alarm.get(key, unmodelled.get(key))) not in (None, {}, *defaults))
    if unknown := unknown_settings(alarm):
        result[UNMODELLED] = unknown
    result.setdefault("DatapointsToAlarm", alarm.get("EvaluationPeriods"))
    for key in ("AlarmActions", "OKActions", "InsufficientDataActions"):
        result[key] = sorted(alarm.get(key) or [])
    result["Threshold"] = float(result.get("Threshold", 0))
    if alarm.get("Dimensions"):
        result["Dimensions"] = sorted([d["Name"], d["Value"]] for d in alarm["Dimensions"])
    if alarm.get("Metrics"):
        result["Metrics"] = [_query_fields(m, legacy) for m in alarm["Metrics"]]
    return result


def _query_fields(query: dict[str, Any], legacy: bool) -> list[Any]:
    """One query of an alarm: [Id, Expression, MetricStat, Period, ReturnData], then {Label, AccountId} when it has
    either (left out of `legacy` fields; a query with neither hashes as it did before)."""
    fields = [query.get("Id"), query.get("Expression"), query.get("MetricStat"), query.get("Period"),
              query.get("ReturnData", True)]
    named = {} if legacy else {key: query[key] for key in _QUERY_NAMES if query.get(key) not in (None, "")}
    return fields + [named] if named else fields


_QUERY_NAMES = ("Label", "AccountId")


def as_reported(request: dict[str, Any], reported: dict[str, Any]) -> dict[str, Any]:
    """The request's fields (alarm_fields) in the form CloudWatch may report them, following `reported`
    where CloudWatch rewrites what it was sent: the one known rewrite leaves a query's Period out. A
    read-back that differs from this in anything else is not the alarm the request made."""
    result = dict(request)
    queries, seen = request.get("Metrics"), reported.get("Metrics")
    if isinstance(queries, list) and isinstance(seen, list) and len(queries) == len(seen):
        result["Metrics"] = [query[:3] + [None] + query[4:] if shown[3] is None else query
                             for query, shown in zip(queries, seen)]
    return result


# What a read-back must show as sent for the write to count: PutMetricAlarm's parameters that decide what
# the alarm evaluates (metric or queries, statistic, period, unit), when it fires (comparison, threshold,
# evaluation and datapoint counts, missing-data treatment) and whom it tells (actions). Not checked:
# AlarmDescription, text for people (CloudWatch may shorten or re-encode it; the evidence keeps the form
# reported); a query's Label and Tags are not among the fields compared at all. DescribeAlarms' MetricAlarm
# may leave out what PutMetricAlarm documents as a default: ActionsEnabled (true), TreatMissingData
# (missing), DatapointsToAlarm (EvaluationPeriods, in alarm_fields), a query's ReturnData (true, in
# alarm_fields); it may list a metric's dimensions in another order and leave out an expression query's Period.
# (gpudash sends none of the latter, nor what its botocore does not know: a form CloudWatch may report for an alarm that
# set none is not documented beyond the defaults; the evidence records the form reported)
_NOT_CONFIRMED = ("AlarmDescription", *_UNSENT_DEFAULTS, UNMODELLED)
_DEFAULTS = {"ActionsEnabled": True, "TreatMissingData": "missing"}


def _significant(fields: dict[str, Any]) -> dict[str, Any]:
    result = {key: value for key, value in fields.items() if key not in _NOT_CONFIRMED}
    for key, default in _DEFAULTS.items():
        result.setdefault(key, default)
    if isinstance(result.get("Metrics"), list):
        result["Metrics"] = [_confirmed_query([*query[:2], _stat_sorted(query[2]), *query[3:]])
                             for query in result["Metrics"]]
    return result


def _confirmed_query(query: list[Any]) -> list[Any]:
    """A query's fields a read-back must show as sent: not its Label, text for people like AlarmDescription, nor its
    AccountId (gpudash sends none, and what DescribeAlarms reports for a query that named none is not documented: a
    form of CloudWatch's own, which the evidence then records, not a failed write). Both count as edits."""
    return query[:5]


def _stat_sorted(stat: Any) -> Any:
    """A query's MetricStat with its metric's dimensions in one order."""
    metric = stat.get("Metric") if isinstance(stat, dict) else None
    dimensions = metric.get("Dimensions") if isinstance(metric, dict) else None
    if not isinstance(dimensions, list):
        return stat
    ordered = sorted(dimensions,
                     key=lambda d: (str(d.get("Name")), str(d.get("Value"))) if isinstance(d, dict) else ("", ""))
    return {**stat, "Metric": {**metric, "Dimensions": ordered}}


def unconfirmed(request: dict[str, Any], reported: dict[str, Any]) -> list[str]:
    """The fields (alarm_fields of both) in which the alarm CloudWatch reports is not the request, up to
    CloudWatch's documented defaults and forms: empty when the read-back confirms the write."""
    wanted, seen = _significant(as_reported(request, reported)), _significant(reported)
    return sorted(key for key in {*wanted, *seen} if wanted.get(key) != seen.get(key))


def alarm_hash(alarm: dict[str, Any]) -> str:
    return content_hash(alarm_fields(alarm))


def legacy_alarm_hash(alarm: dict[str, Any]) -> str:
    """The hash gpudash releases before queries' Label and AccountId were hashed wrote as evidence: an alarm whose
    evidence is this is as those wrote it in every field they hashed (its labels are not known to be as written); the
    same as `alarm_hash` for an alarm whose queries have neither."""
    return content_hash(alarm_fields(alarm, legacy=True))


def _documented_forms(alarm: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """The alarm as listed, and as it is where it lists a member of _DEFAULTS no more: holding what PutMetricAlarm
    documents for an alarm put without it (actions enabled, missing data treated as `missing`). CloudWatch lists no
    TreatMissingData of an alarm put without one (terraform-provider-aws#8854): an alarm listed without it treats
    missing data as `missing`, and is as gpudash wrote it if gpudash wrote that, not edited whatever gpudash wrote. A
    PromQL alarm (EvaluationCriteria) has no missing-data treatment: as listed alone."""
    absent = {key: default for key, default in _DEFAULTS.items() if alarm.get(key) is None}
    return (alarm,) if not absent or alarm.get("EvaluationCriteria") is not None else (alarm, {**alarm, **absent})


def written_as_is(then: str | None, alarm: dict[str, Any], rendered: dict[str, Any] | None = None) -> bool:
    """Whether evidence `then` (the hash of the alarm as CloudWatch reported it when gpudash wrote it) shows `alarm`
    is as gpudash wrote it. Evidence of a release before labels were hashed (`legacy_alarm_hash`) reads the same
    whatever a person did to a query's Label or AccountId: it vouches for the alarm only where its queries carry the
    labels gpudash renders for it (`rendered`, the request of these settings) and read no other account than the
    alarm's own. An alarm no longer defined has no rendering: only one whose queries carry neither (both hashes are
    then one)."""
    if then is None:
        return False
    forms = _documented_forms(alarm)
    if any(then == alarm_hash(form) for form in forms):
        return True
    return any(then == legacy_alarm_hash(form) for form in forms) and _labels_as_rendered(alarm, rendered)


def _labels_as_rendered(alarm: dict[str, Any], rendered: dict[str, Any] | None) -> bool:
    own = _arn_account(alarm.get("AlarmArn"))
    queries = alarm.get("Metrics") or []
    wanted = {q.get("Id"): q.get("Label") or None for q in (rendered or {}).get("Metrics") or []}
    return all(q.get("AccountId") in (None, "", own) and (q.get("Label") or None) == wanted.get(q.get("Id"))
               for q in queries)


def _arn_account(arn: Any) -> str | None:
    """The account of an ARN (arn:aws:cloudwatch:<region>:<account>:alarm:<name>), None when it names none."""
    parts = arn.split(":") if isinstance(arn, str) else []
    return parts[4] or None if len(parts) > 5 else None


def alarm_evidence(request_hash: str, reported_hash: str | None = None, marks: str | None = None) -> str:
    """The hash tag's value: the hash of the request gpudash wrote, and, when CloudWatch
    reports the alarm in another form (`<request>.<reported>`), the hash of what it reports; then
    `/<marks>`, the hash of the ownership marks written with it (`marks_hash`)."""
    fields = request_hash if reported_hash in (None, request_hash) else f"{request_hash}.{reported_hash}"
    return fields if marks is None else f"{fields}/{marks}"


def _evidence_value(tags: list[dict[str, str]]) -> str:
    return next((t.get("Value") for t in tags if t.get("Key") == ALARM_HASH_TAG), None) or ""


def read_alarm_evidence(tags: list[dict[str, str]]) -> tuple[str | None, str | None]:
    """(hash of the request gpudash wrote, hash of the alarm as CloudWatch reported it then)."""
    value = _evidence_value(tags).partition("/")[0]
    if not value:
        return None, None
    request, _, reported = value.partition(".")
    return request, reported or request


def _tag_value(tags: list[dict[str, str]], key: str) -> str:
    return next((t.get("Value") for t in tags if t.get("Key") == key), None) or ""


def marks_hash(tags: list[dict[str, str]], project: str | None = None, rule: bool = True) -> str:
    """The hash of an alarm's ownership marks: the project its tags name (or `project`), the clusters tag and the
    rule tag (which reads an alarm's name when it records no clusters; `rule=False`: the hash gpudash wrote before it
    covered the rule tag)."""
    named = alarm_project(tags) if project is None else project
    marks = ["marks", named or "", _tag_value(tags, ALARM_CLUSTERS_TAG)]
    return content_hash(marks + [_tag_value(tags, ALARM_RULE_TAG)] if rule else marks)


def marks_intact(tags: list[dict[str, str]]) -> bool | None:
    """Whether the alarm's ownership marks (its project, clusters and rule tags) are as gpudash wrote
    them, by the hash its evidence recorded with them; None when the evidence recorded none (written before
    gpudash recorded it, or no evidence at all). A project tag added to an alarm written without one is
    the documented adoption (the note that lists such alarms says how), not a change of its marks. Evidence written
    before the hash covered the rule tag vouches for the other two (`older_marks`)."""
    recorded = _evidence_value(tags).partition("/")[2]
    if not recorded:
        return None
    return recorded in (marks_hash(tags), marks_hash(tags, ""), *older_marks(tags))


def older_marks(tags: list[dict[str, str]]) -> tuple[str, str]:
    """The marks hashes gpudash wrote before its hash covered the rule tag (with the project the tags name, and
    with none)."""
    return marks_hash(tags, rule=False), marks_hash(tags, "", rule=False)


def evidence_current(tag: dict[str, str], tags: list[dict[str, str]]) -> bool:
    """Whether `tag`, the evidence gpudash would write now, is held by `tags` in the form written before the marks
    hash covered the rule tag: the same fields, and marks that hash as they did then. Such evidence is not written
    again for that alone (a tag write per alarm on upgrade), only with the alarm's next write."""
    if tag.get("Key") != ALARM_HASH_TAG:
        return False
    live = _evidence_value(tags)
    return (live.partition("/")[0] == tag.get("Value", "").partition("/")[0]
            and live.partition("/")[2] in older_marks(tags))


def keeping_marks(request: dict[str, Any], tags: list[dict[str, str]]) -> dict[str, Any]:
    """The request with the clusters tag `tags` carry instead of its own (a new cluster list alone is not
    written: the evidence to expect is then that of the marks the alarm carries)."""
    live = [t for t in tags if t.get("Key") == ALARM_CLUSTERS_TAG]
    if not live:
        return request
    return {**request, "Tags": [t for t in request.get("Tags", []) if t.get("Key") != ALARM_CLUSTERS_TAG] + live}


def creation_tags(request: dict[str, Any]) -> list[dict[str, str]]:
    """The request's own tags (owner, rule, project), without the content evidence (ALARM_HASH_TAG)."""
    return [t for t in request.get("Tags", []) if t.get("Key") != ALARM_HASH_TAG]


def alarm_tags(request: dict[str, Any], reported_hash: str | None = None) -> list[dict[str, str]]:
    """The tags an alarm gpudash wrote carries once a read-back confirmed it: its own plus the evidence,
    which covers its ownership marks too (a person who rewrites them makes the evidence disagree)."""
    own = creation_tags(request)
    return own + [{"Key": ALARM_HASH_TAG, "Value": alarm_evidence(alarm_hash(request), reported_hash, marks_hash(own))}]


# The keys of the tags gpudash writes on an alarm (render.alarms.ownership_tags, alarm_tags)
ALARM_TAG_KEYS = frozenset({ALARM_OWNER_TAG["Key"], ALARM_RULE_TAG, ALARM_HASH_TAG, ALARM_PROJECT_TAG,
                            ALARM_CLUSTERS_TAG})
AWS_TAG_PREFIX = "aws:"  # tag keys only AWS writes (CloudFormation's, for one); a user cannot add or change them


def tags_of_others(tags: list[dict[str, str]], ours: frozenset[str] = ALARM_TAG_KEYS) -> list[dict[str, str]]:
    """An object's tags that neither gpudash (keys `ours`: an alarm's by default; a dashboard carries none) nor AWS
    writes: a person's or another tool's, added since gpudash wrote it (an alarm's evidence covers its fields and its
    ownership marks, a dashboard's stamp its body, not these)."""
    return [t for t in tags if t.get("Key") not in ours and not str(t.get("Key", "")).startswith(AWS_TAG_PREFIX)]


def alarm_owned(tags: list[dict[str, str]]) -> bool:
    return ALARM_OWNER_TAG in tags


def project_tagged(item: dict[str, Any], project: str) -> dict[str, Any]:
    """An alarm item ({"Region", "Request"}) whose request also carries the project tag (when there is a project)."""
    if not project:
        return item
    request = item["Request"]
    tags = [t for t in request.get("Tags", []) if t.get("Key") != ALARM_PROJECT_TAG]
    return {**item, "Request": {**request, "Tags": tags + [{"Key": ALARM_PROJECT_TAG, "Value": project}]}}


def alarm_project(tags: list[dict[str, str]]) -> str | None:
    """The project an alarm's tags name; None when they name none (another tool's, or an older gpudash's)."""
    return next((t.get("Value") for t in tags if t.get("Key") == ALARM_PROJECT_TAG), None)
