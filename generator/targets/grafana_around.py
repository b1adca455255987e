"""What people made around a dashboard that Grafana's delete of it takes with it, and that no version of it records.

Grafana's delete of a dashboard (dashboards store, deleteDashboard) also deletes its annotations, its public dashboard,
the permissions set on it (managed permissions scoped `dashboards:uid:<uid>`), the playlist items that pick it by id
(items by uid are left pointing at nothing, which the playlist then skips), and every user's star of it. gpudash deletes
a dashboard only where a valid answer shows none of a person's are there, or with --force; a read that fails or is
refused is said, never read as none.

- Permissions: the dashboard's own entries (GET /api/dashboards/uid/<uid>/permissions, not `inherited` from its
  folder) other than the Admin Grafana gives the account that created it (setDefaultPermissions) were set by a person.
  Grafana leaves out of that answer, instead of refusing, the entries of a holder the caller may not read: a team
  without teams:read on it (always, with role-based access control), a user or service account without
  org.users:read or serviceaccounts:read on it (Grafana 9; later where access control is enforced). The answer is
  all of them only where gpudash's account's permissions (GET /api/access-control/user/permissions) read every team,
  user and service account.
- Playlists: every playlist (GET /api/playlists, then each one's items) is read; an item by the dashboard's uid or id
  picks it. An item by tag picks whatever carries the tag: the delete takes nothing of it.
- Stars: Grafana answers an account only its own stars (GET /api/user/stars), so gpudash cannot see whether people
  starred it; a star is a bookmark of the dashboard, and goes with it. Not read, and said in docs/publishing.md.
- Library panels: the delete removes the dashboard's connections to them, not the panels. One a person added to a
  dashboard changes its content: an edit, which needs --force already.
- Home dashboards: the organization's and each team's preferences may name it as their home dashboard (GET
  /api/org/preferences, /api/teams/<id>/preferences); the delete leaves them naming nothing, and those they apply to
  are shown Grafana's default home instead. The organization's need orgs.preferences:read, and Grafana's team search
  leaves out, instead of refusing, the teams the account may not read: read as all only where the account's
  permissions read every team (an organization Admin's). A user's own preference is answered to that user alone: not
  read, and said in docs/publishing.md.
- Alert rules: a Grafana-managed alert rule links itself to a dashboard by its annotation `__dashboardUid__` (GET
  /api/v1/provisioning/alert-rules lists every rule of the organization, for an account with alerting's provisioning
  read: an organization Admin's; Grafana 11 and later answer one that reads rules by folder the rules of the folders it
  may read, leaving out the others: read as all only over every folder); the delete leaves it linking to nothing.

The playlists, home dashboards and alert rules are the organization's, read whole whatever the dashboard (the homes
cost a call per team): `AccountReads` reads them once for the dashboards one look judges (the plan's, for every
dashboard it prunes) and records what each showed of each dashboard.
"""

from __future__ import annotations

import re
from typing import Any, Callable, NamedTuple, TypeVar

from ..clients.deadline import DeadlineExceeded
from ..clients.grafana import GrafanaClient, InvalidAnswer
from ..errors import RemoteError

T = TypeVar("T")
ADMIN = 4  # Grafana's permission level Admin (1 View, 2 Edit)
LEVELS = {1: "View", 2: "Edit", ADMIN: "Admin"}


class Unread(NamedTuple):
    """What a read answered where it gave no evidence: why (a refusal, an answer that is not a valid API answer, or
    one that would prove nothing)."""
    why: str


def attempt(read: Callable[[], T]) -> T | Unread:
    """`read()`'s answer, or Unread saying why it could not be read (the deadline is not an answer: raised)."""
    try:
        return read()
    except DeadlineExceeded:
        raise
    except RemoteError as exc:
        return Unread(f"could not be read ({exc.what})")


def _holder(entry: dict[str, Any]) -> str:
    if entry.get("userId"):
        return f"user {entry.get('userLogin') or entry.get('userEmail') or entry['userId']}"
    if entry.get("teamId"):
        return f"team {entry.get('team') or entry['teamId']}"
    return f"role {entry.get('role')}"


def granted(entries: list[dict[str, Any]], creator: str | None) -> list[str]:
    """The permissions a person set on the dashboard itself, as `user alice: View` (sorted): its own entries (not its
    folder's) except the Admin Grafana gave the account that created it (`creator`, its login: meta.createdBy)."""
    return sorted(f"{_holder(e)}: {LEVELS.get(e['permission'], e['permission'])}" for e in entries
                  if not e["inherited"] and not (creator and e["permission"] == ADMIN
                                                 and e.get("userId") and e.get("userLogin") == creator))


NO_PERMISSIONS = ("Grafana lists no permissions of gpudash's account (no /api/access-control/user/permissions: a "
                  "Grafana before role-based access control, or a proxy in front of it)")
# what an account must read over every holder for Grafana's answer of a dashboard's permissions to hold all of them
HOLDER_READS = (("teams:read", "teams:id:"), ("org.users:read", "users:id:"),
                ("serviceaccounts:read", "serviceaccounts:id:"))


def _over_all(permissions: dict[str, list[str]], action: str, prefix: str) -> bool:
    """Whether `permissions` grant `action` over every object whose scope starts with `prefix` (a wildcard scope)."""
    return any(scope.endswith("*") and prefix.startswith(scope[:-1]) for scope in permissions.get(action, []))


def unlisted(permissions: dict[str, list[str]] | None) -> str | None:
    """Why Grafana's answer of a dashboard's permissions may leave some out for an account with `permissions`
    (action -> scopes; None: Grafana lists none); None where it reads every team, user and service account."""
    if permissions is None:
        return NO_PERMISSIONS
    missing = [action for action, prefix in HOLDER_READS if not _over_all(permissions, action, prefix)]
    return f"it has no {', '.join(missing)} over all of them" if missing else None


ORGANIZATION = "the organization"


def read_homes(client: GrafanaClient) -> dict[str, tuple[str, int]] | Unread:
    """The home dashboard (uid, id) the organization's preferences and each team's name, by whose they are
    (ORGANIZATION, "team 'noc'"); Unread where they cannot all be read: a read refused or not a valid answer, or an
    account whose permissions (as last read) do not read every team, whose teams Grafana's search leaves out."""
    def read() -> dict[str, tuple[str, int]] | Unread:
        permissions = client.permissions()
        if permissions is None or not _over_all(permissions, *TEAM_READS):
            why = NO_PERMISSIONS if permissions is None else f"it has no {TEAM_READS[0]} over all of them"
            return Unread(f"are not all shown to gpudash's account ({why}): Grafana's team search leaves out the "
                          "teams the account may not read instead of refusing")
        homes = {ORGANIZATION: client.home_dashboard()}
        homes.update((f"team {team['name']!r}", client.home_dashboard(team["id"])) for team in client.teams())
        return homes
    return attempt(read)


# the actions with which Grafana answers the alert rules' read with every rule of the organization (organization scope)
RULES_PROVISIONING_READS = ("alert.provisioning:read", "alert.rules.provisioning:read", "alert.provisioning.secrets:read")
# what an account reading alert rules by folder must hold over every folder for that answer to hold every rule
RULES_BY_FOLDER = (("alert.rules:read", "folders:uid:"), ("folders:read", "folders:uid:"))


def read_alert_rules(client: GrafanaClient) -> list[dict[str, Any]] | Unread:
    """Every Grafana-managed alert rule, or Unread: a read refused or not a valid answer, or an account whose
    permissions (as last read) do not read every rule. Grafana 11 and later answer an account without alerting's
    provisioning read that reads rules by folder (alert.rules:read and folders:read) with the rules of the folders it
    may read, leaving out the others instead of refusing."""
    def read() -> list[dict[str, Any]] | Unread:
        permissions = client.permissions()
        if permissions is None:
            why = NO_PERMISSIONS
        elif not any(action in permissions for action in RULES_PROVISIONING_READS) and \
                "alert.rules:read" in permissions and not all(_over_all(permissions, *held) for held in RULES_BY_FOLDER):
            why = "it reads alert rules by folder, not over every folder, and has no alerting's provisioning read"
        else:  # (an account that reads no rule at all is refused: said as such)
            return client.alert_rules()
        return Unread(f"are not all shown to gpudash's account ({why}): Grafana answers the rules of the folders an "
                      "account may read, leaving out the others instead of refusing")
    return attempt(read)


LINKED_DASHBOARD = "__dashboardUid__"  # the annotation by which an alert rule links itself to a dashboard


def linking(rules: list[dict[str, Any]], uid: str) -> list[str]:
    """The alert rules that link themselves to the dashboard `uid`, as `'GPU hot' (rule-uid)` (sorted by uid)."""
    return [f"{rule['title']!r} ({rule['uid']})" for rule in sorted(rules, key=lambda r: r["uid"])
            if (rule.get("annotations") or {}).get(LINKED_DASHBOARD) == uid]


TEAM_READS = ("teams:read", "teams:id:")  # what an account must hold over every team for the team search to list all


def homes_of(homes: dict[str, tuple[str, int]], uid: str, dashboard_id: Any) -> list[str]:
    """Whose home dashboard the dashboard `uid` (of id `dashboard_id`) is, sorted: by its uid, or by its id where the
    preferences name one (Grafana before 10)."""
    own_id = dashboard_id if isinstance(dashboard_id, int) and not isinstance(dashboard_id, bool) else None
    return sorted(holder for holder, (home_uid, home_id) in homes.items()
                  if home_uid == uid or (own_id and home_id == own_id))


# Why an answer of no permission at all is no evidence: Grafana gives a dashboard or folder made by an account that
# account's Admin, and a folder at the top level the Editor and Viewer roles too (setDefaultPermissions), and lists a
# dashboard's with those it inherits from its folder (before role-based access control: the default Editor and Viewer
# entries where neither sets any)
NONE_AT_ALL = ("not even what its folder gives nor the Admin of the account that made it, which Grafana lists for a "
               "dashboard: something in front of Grafana answered, or a person removed every one")


def read_granted(client: GrafanaClient, uid: str, creator: str | None, fresh: bool = False) -> list[str] | Unread:
    """The permissions a person set on the dashboard (`granted`), or Unread: the answer may leave some out for
    gpudash's account (`unlisted`, its permissions read again if `fresh`), lists none at all (a valid shape, but not
    Grafana's answer for a dashboard: NONE_AT_ALL), or the read failed or was refused."""
    def read() -> list[str] | Unread:
        why = unlisted(client.permissions(fresh=True) if fresh else client.permissions())
        if why is not None:
            return Unread(f"are not all shown to gpudash's account ({why}): Grafana leaves out those of a team, user "
                          "or service account the account may not read instead of refusing")
        entries = client.dashboard_permissions(uid)
        if not entries:
            return Unread(f"are listed as none at all, {NONE_AT_ALL}")
        return granted(entries, creator)
    return attempt(read)


def read_playlists(client: GrafanaClient) -> dict[str, dict[str, Any]] | Unread:
    """Every playlist with its items, by uid. One whose read is answered 404 is left out where the list, read again,
    no longer holds it (deleted between the list and its read); one it still holds could not be read."""
    def read() -> dict[str, dict[str, Any]]:
        found, missed = {}, []
        for listed in client.playlists():
            playlist = client.playlist(listed["uid"])
            if playlist is None:
                missed.append(listed["uid"])
            else:
                found[listed["uid"]] = playlist
        still = sorted({listed["uid"] for listed in client.playlists()} & set(missed)) if missed else []
        if still:
            raise InvalidAnswer(f"Grafana answered 404 (not found) to the read of playlist(s) {', '.join(still[:5])}"
                                f"{' ...' if len(still) > 5 else ''} and lists it still", where="playlists",
                                hint="GRAFANA_URL must reach Grafana's API itself (a proxy may refuse the paths "
                                     "under /api/playlists)")
        return found
    return attempt(read)


def _as_id(value: Any) -> int | None:
    """A playlist item's value read as Grafana reads a by-id item's (Go's ParseInt, base 10: "042" and "+42" are 42),
    or None where it reads none."""
    text = str(value)
    return int(text) if re.fullmatch(r"[+-]?[0-9]+", text) else None


def picking(playlists: dict[str, dict[str, Any]], uid: str, dashboard_id: Any) -> list[str]:
    """The playlists that pick the dashboard by its uid or its id, as `'NOC wall' (pl1)` (sorted by uid)."""
    own_id = _as_id(dashboard_id)

    def picks(item: dict[str, Any]) -> bool:
        if item["type"] == "dashboard_by_uid":
            return item["value"] == uid
        return item["type"] == "dashboard_by_id" and own_id is not None and _as_id(item["value"]) == own_id
    return [f"{playlist.get('name')!r} ({key})" for key, playlist in sorted(playlists.items())
            if any(picks(item) for item in playlist["items"])]


READS: dict[str, Callable[[GrafanaClient], Any]] = {"playlists": read_playlists, "homes": read_homes,
                                                    "rules": read_alert_rules}


def whose(what: str, found: Any, uid: str, dashboard_id: Any) -> list[str]:
    """What the organization-wide read `what` (READS) that answered `found` shows of the dashboard `uid`."""
    if what == "playlists":
        return picking(found, uid, dashboard_id)
    if what == "homes":
        return homes_of(found, uid, dashboard_id)
    return linking(found, uid)


class AccountReads:
    """The organization-wide reads (READS) for a look at several dashboards: those in `once` read at the first
    dashboard that asks and kept for the others, the rest read at each ask; what each showed of each dashboard, by
    its uid, in `shown_of` (the last ask's)."""

    def __init__(self, client: GrafanaClient, once: frozenset[str] | set[str] = frozenset(READS)):
        self.client, self.once = client, frozenset(once)
        self.kept: dict[str, Any] = {}
        self.shown_of: dict[str, dict[str, list[str] | Unread]] = {}

    def shown(self, what: str, uid: str, dashboard_id: Any) -> list[str] | Unread:
        """What the read `what` shows of the dashboard `uid` (of id `dashboard_id`), or Unread saying why not."""
        if what in self.kept:
            found = self.kept[what]
        else:
            found = READS[what](self.client)
            if what in self.once:
                self.kept[what] = found
        shown = found if isinstance(found, Unread) else whose(what, found, uid, dashboard_id)
        self.shown_of.setdefault(uid, {})[what] = shown
        return shown
