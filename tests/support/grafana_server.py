"""A strict Grafana HTTP API test server.

It follows Grafana's semantics for what gpudash uses (folders, dashboards with versions and
version messages, 412 version-mismatch and name-exists, 401/403, search by tag) and validates
every request body and every response body against Grafana's own OpenAPI spec
(../shared/reference/grafana/grafana-http-api.openapi.json). Faults can be injected: a status
for the next N calls of a path, or a connection dropped before any answer.
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from tests.support.loopback import KeepAliveHandler, LoopbackServer

if TYPE_CHECKING:  # imported where a server validates its first request: not at each test file's collection
    import jsonschema

ADMIN, VIEWER = "glsa_admin_token", "glsa_viewer_token"
# A Grafana user who signs in with basic auth (a login and password, as ~/.netrc holds them): an admin.
BASIC_ADMIN = ("ops-admin", "ops-admin-password")
# Grafana refuses a dashboard save whose version message is longer than this, in bytes (dashboards service: `len(dto.Message) > 500` -> 400 "message too long, max 500 characters").
SAVE_MESSAGE_LENGTH = 500


class Spec:
    """Validators for request and response bodies, built from the Swagger 2.0 definitions."""

    def __init__(self, path: Path):
        self.document = json.loads(path.read_text())
        # The spec's legacy `Dashboard` model types `panels` as an object; Grafana stores and returns the
        # dashboard JSON as given (panels an array), which the spec's own `Json` type describes.
        self.document["definitions"]["Dashboard"] = self.document["definitions"]["Json"]
        self.cache: dict[str, jsonschema.Draft4Validator] = {}
        self.answered: dict[tuple, list[str]] = {}  # (method, path, status, answer's text) -> what its check found

    def _validator(self, schema: dict[str, Any]) -> jsonschema.Draft4Validator:
        import jsonschema

        key = json.dumps(schema, sort_keys=True)
        if key not in self.cache:
            self.cache[key] = jsonschema.Draft4Validator({**schema, "definitions": self.document["definitions"]})
        return self.cache[key]

    def operation(self, method: str, path: str) -> dict[str, Any]:
        return self.document["paths"][path][method.lower()]

    def check_request(self, method: str, path: str, body: Any) -> list[str]:
        for parameter in self.operation(method, path).get("parameters", []):
            if parameter.get("in") == "body":
                return [e.message for e in self._validator(parameter["schema"]).iter_errors(body)]
        return []

    def check_response(self, method: str, path: str, status: int, body: Any, text: bytes | None = None) -> list[str]:
        """What is wrong with an answer (nothing: []). An answer whose `text` (the body as sent) was checked before
        gets that check's findings again: they depend on the operation, the status and the body alone (the servers
        answer the same dashboards and versions lists many times over)."""
        if text is None:
            return self._response_errors(method, path, status, body)
        key = (method, path, status, text)
        found = self.answered.get(key)  # one read: another handler thread may clear the dict at any moment
        if found is None:
            found = self._response_errors(method, path, status, body)
            if len(self.answered) >= 1024:
                self.answered.clear()
            self.answered[key] = found
        return list(found)

    def _response_errors(self, method: str, path: str, status: int, body: Any) -> list[str]:
        response = self.operation(method, path)["responses"].get(str(status))
        if response is None:
            return [f"status {status} is not documented for {method} {path}"]
        if "$ref" in response:
            response = self.document["responses"][response["$ref"].rsplit("/", 1)[1]]
        schema = response.get("schema")
        return [e.message for e in self._validator(schema).iter_errors(body)] if schema else []


@dataclass
class Fault:
    path: str  # regex on the request path
    status: int | None = None  # answer this status ...
    drop: bool = False  # ... or close the connection without an answer
    times: int = 1
    method: str | None = None
    location: str | None = None  # with a 3xx status: where the answer redirects to (a path on this server)


@dataclass
class State:
    folders: dict[str, dict[str, Any]] = field(default_factory=dict)
    dashboards: dict[str, dict[str, Any]] = field(default_factory=dict)  # uid -> {dashboard, folderUid, versions}
    next_id: int = 1
    log: list[tuple[str, str]] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    spec_errors: list[str] = field(default_factory=list)
    annotations: list[dict[str, Any]] = field(default_factory=list)  # people's notes on a dashboard's graphs
    # dashboard uid -> its public dashboard (Grafana's "Share externally"): a person's link to it, no version records
    # it, and Grafana's delete of the dashboard deletes it too
    public: dict[str, dict[str, Any]] = field(default_factory=dict)
    public_api: bool = True  # False: a Grafana without the public dashboards API (its route answers 404 "Not found")
    # None: GET /api/playlists answers up to `limit` (Grafana 10 and before: default 1000). A number: the one page
    # Grafana 11 and later answer whatever the limit (the list goes through the resource API, whose continue token the
    # legacy route drops): 100 from the SQL store's default page, 50 from unified storage's
    playlist_page: int | None = None
    # dashboard uid -> its own permissions (managed: not the folder's), as Grafana keeps them: the creating account's
    # Admin (setDefaultPermissions), then what people set in Dashboard settings, Permissions. Grafana's delete of the
    # dashboard deletes them (permission WHERE scope = dashboards:uid:<uid>, dashboard_acl)
    acl: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # folder uid -> the permissions a dashboard in it inherits (answered with `inherited: true`)
    folder_acl: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # playlists (a TV rotation of dashboards): {uid, name, interval, items: [{type, value}]}. Grafana's delete of a
    # dashboard deletes the items that pick it by id (playlist_item WHERE type = 'dashboard_by_id'); one by uid is left
    # pointing at nothing
    playlists: list[dict[str, Any]] = field(default_factory=list)
    # each token's permissions as GET /api/access-control/user/permissions lists them (action -> scopes); None: no
    # such endpoint (404, a Grafana before role-based access control). The annotations API reads them as Grafana
    # with annotationPermissionUpdate (its default) does: by the dashboard's or its folder's scope.
    # An organization Admin's account reads every team, user and service account (teams:read, org.users:read,
    # serviceaccounts:read over all of them) and the organization's preferences (orgs.preferences:read, unscoped); a
    # Viewer's does not.
    permissions: dict[str, dict[str, list[str]] | None] = field(default_factory=lambda: {
        ADMIN: {"annotations:read": ["annotations:*", "dashboards:*", "folders:*"], "dashboards:read": ["dashboards:*"],
                "teams:read": ["teams:*"], "org.users:read": ["users:*"],
                "serviceaccounts:read": ["serviceaccounts:*"], "orgs.preferences:read": [],
                "alert.provisioning:read": []},
        VIEWER: {"annotations:read": ["annotations:*", "dashboards:*", "folders:*"],
                 "dashboards:read": ["dashboards:*"]}})
    # home dashboards: the uid the organization's preferences name (homeDashboardUID; "" for none), the teams, and the
    # uid each team's preferences name. Grafana's delete of a dashboard leaves the preference holding its id, but its
    # answer names it no more (_preferences)
    org_home: str = ""
    teams: list[dict[str, Any]] = field(default_factory=list)
    team_homes: dict[int, str] = field(default_factory=dict)
    # Grafana-managed alert rules (GET /api/v1/provisioning/alert-rules answers them all to an account with alerting's
    # provisioning read, an organization Admin's, and those of the folders it may read to one reading rules by folder:
    # _alert_rules); one links itself to a dashboard by its __dashboardUid__ annotation,
    # which Grafana's delete of the dashboard leaves naming nothing
    alert_rules: list[dict[str, Any]] = field(default_factory=list)
    # dashboard uid -> the file a provisioning provider writes it from (Grafana's meta.provisionedExternalId), and
    # whether that provider allows saves from the UI and the API (allowUiUpdates): without, Grafana refuses a save
    # ("Cannot save provisioned dashboard"); with, it saves, and the provider writes the file's dashboard over it when
    # the file changes. Grafana refuses to delete a provisioned dashboard either way
    provisioned: dict[str, tuple[str, bool]] = field(default_factory=dict)
    # the login of each token's account (Grafana's service accounts sign in as sa-<name>)
    logins: dict[str, str] = field(default_factory=lambda: {ADMIN: "gpudash-sa", VIEWER: "viewer-sa"})


def _listed(version: dict[str, Any]) -> dict[str, Any]:
    """A version as Grafana's list of a dashboard's versions answers it (GetDashboardVersions, every release from 4 to
    12): the message of a dashboard's first save (parentVersion 0) is Grafana's "Initial save", of a restore "Restored
    from version N", not the one saved; the version read alone (GetDashboardVersion) gives the one saved."""
    message = version["message"]
    if version["restoredFrom"] == version["version"]:
        message = "Initial save (created by migration)"
    if version["restoredFrom"] > 0:
        message = f"Restored from version {version['restoredFrom']}"
    if version["parentVersion"] == 0:
        message = "Initial save"
    return {**version, "message": message}


def _covers(scopes: list[str], target: str) -> bool:
    """Whether one of `scopes` grants the scope `target` (itself, or a wildcard over it), as Grafana evaluates them."""
    return any(scope == target or (scope.endswith("*") and target.startswith(scope[:-1])) for scope in scopes)


# the actions with which Grafana answers the alert rules' read with every rule of the organization (organization scope)
RULES_PROVISIONING_READS = ("alert.provisioning:read", "alert.rules.provisioning:read", "alert.provisioning.secrets:read")


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _encoded(body: Any) -> bytes:
    """An answer's JSON text: orjson's (compact and UTF-8, as Grafana's Go encoder writes; a fifth of json's CPU for a
    dashboard) where it reads back as the value json's text does, else json's: a NaN or infinity (orjson writes
    null), and what orjson does not write as json does (integers beyond 64 bits, lone surrogates, subclasses)."""
    try:
        import orjson

        data = orjson.dumps(body, option=orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
                            | orjson.OPT_PASSTHROUGH_SUBCLASS)
    except (ImportError, TypeError):
        return json.dumps(body).encode()
    return data if b"null" not in data or _finite(body) else json.dumps(body).encode()


def _finite(value: Any) -> bool:
    """No NaN or infinity among the floats inside."""
    stack = [value]
    while stack:
        value = stack.pop()
        if type(value) is float:
            if value - value != 0.0:
                return False
        elif type(value) is dict:
            stack.extend(value.values())
        elif type(value) is list or type(value) is tuple:
            stack.extend(value)
    return True


@lru_cache(maxsize=None)
def _spec(path: Path) -> Spec:
    """One Spec per spec file and test process: it is only read, and its validators are kept."""
    return Spec(path)


_IN_PROCESS: dict[str, Any] = {}  # "127.0.0.1:port" -> what answers requests' callers here (a server, a proxy)


def _sent_in_process() -> None:
    """A request that requests (gpudash's Grafana client, in the CLI run in-process, or a test's) sends to a running
    Grafana test server's own address over plain HTTP, or to a fault proxy in front of one (tests/support/fault_proxy.py),
    is answered by that server or proxy in the caller's thread: the request as requests prepared it and http.client
    would send it (as_sent), the answer as the server's or proxy's HTTP handler writes it (status, reason, its Server
    and Date headers, the JSON's type and length, a Location), read by requests' adapter from a urllib3 response as
    any answer (the body by its length: received). Only the socket, http.client's parse and the server's thread are
    skipped: most of a small request's CPU. A request given a proxy, to another address (a TLS server, a closed one, a
    subprocess's), one a proxy's rule breaks the connection of, goes over HTTP, as does every request when
    GPUDASH_TEST_GRAFANA_HTTP=1."""
    from requests import adapters
    from requests.utils import select_proxy

    if getattr(adapters.HTTPAdapter.send, "in_process", False):
        return
    over_http = adapters.HTTPAdapter.send

    def send(self, request, stream=False, timeout=None, verify=True, cert=None, proxies=None):
        parts = urlsplit(request.url)
        server = _IN_PROCESS.get(parts.netloc) if parts.scheme == "http" else None
        answered = None
        if server is not None and not select_proxy(request.url, proxies):
            sent = as_sent(request)
            answered = None if sent is None else server.answer_in_process(*sent)
        if answered is None:
            return over_http(self, request, stream=stream, timeout=timeout, verify=verify, cert=cert, proxies=proxies)
        return self.build_response(request, received(request, *answered))

    send.in_process = True
    adapters.HTTPAdapter.send = send


def as_sent(request) -> tuple[str, str, list[tuple[str, str]], bytes] | None:
    """requests' prepared `request` as http.client sends it: method, target (path and query), headers (with the Host
    it adds), body; None for a body that is neither bytes nor text (a file, a generator: sent over HTTP)."""
    body = request.body
    if isinstance(body, str):
        body = body.encode("iso-8859-1")  # as http.client sends a text body
    if not isinstance(body, (bytes, type(None))):
        return None
    headers = list(request.headers.items())
    if not any(name.lower() == "host" for name, _ in headers):
        headers.insert(0, ("Host", urlsplit(request.url).netloc))
    return request.method, request.path_url, headers, body or b""


def received(request, status: int, reason: str, headers: list[tuple[str, str]], data: bytes) -> Any:
    """An HTTP answer (its headers as sent) as a urllib3 response, for requests' adapter to read for `request`."""
    import io

    from urllib3 import HTTPResponse
    from urllib3._collections import HTTPHeaderDict

    found = HTTPHeaderDict()
    for name, value in headers:
        found.add(name, value)
    return HTTPResponse(body=io.BytesIO(data), headers=found, status=status, reason=reason, preload_content=False,
                        decode_content=False, request_method=request.method, request_url=request.url)


def serve_in_process(address: str, answerer) -> None:
    """requests' calls in this process to "127.0.0.1:port" are answered by `answerer.answer_in_process(method,
    target, headers, body)` in the caller's thread: (status, reason, headers, body), or None to send it over HTTP."""
    _sent_in_process()
    _IN_PROCESS[address] = answerer


def stop_serving_in_process(address: str) -> None:
    _IN_PROCESS.pop(address, None)


def answered_here(address: str) -> Any:
    """What answers requests' calls in this process to "127.0.0.1:port" (a Grafana test server, a fault proxy), or
    None."""
    return _IN_PROCESS.get(address)


def in_process_server(address: str) -> "GrafanaTestServer | None":
    """The running Grafana test server at "127.0.0.1:port" that answers callers in this process in their own thread
    (None: another address, TLS, or GPUDASH_TEST_GRAFANA_HTTP=1)."""
    server = _IN_PROCESS.get(address)
    return server if isinstance(server, GrafanaTestServer) else None


class GrafanaTestServer(LoopbackServer):
    def __init__(self, spec_path: Path, tls: bool = False):
        """`tls=True` serves HTTPS with a fresh self-signed certificate for 127.0.0.1, in the file `self.ca`."""
        self.spec = _spec(spec_path)
        self.state = State()
        self.lock = threading.Lock()
        self.ignore_search_page = False  # a server (or proxy) that answers page 1 to every page
        self.search_cap = 5000  # the most hits one search page holds, whatever the limit asked
        self.ignore_folder_uids = False  # a Grafana from before the search's folderUIDs (folderIds only)
        self.versions_to_keep = 0  # how many versions of a dashboard are kept (0: all)
        # Grafana 12's list of a dashboard's versions: {"continueToken", "versions"} (DashboardVersionResponseMeta),
        # where earlier releases answer the list alone (the spec's copy here)
        self.versions_wrapped = False
        # ... in pages of this many versions at most, with a continue token while more remain (0: one page); and a
        # proxy in front that drops the token ("dropped": page 1 again), or garbles it ("number")
        self.versions_page = 0
        self.versions_token_fault: str | None = None
        # Grafana's Kubernetes-style save of POST /api/dashboards/db (resolveLegacyInternalID): an id it has no
        # dashboard with, beside a uid, is a save by the uid (a create where none is there, else an update by version),
        # where the legacy save answers 404 "Dashboard not found"
        self.unknown_id_saves_by_uid = False
        server = self

        class Handler(KeepAliveHandler):
            def _handle(self, method: str):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                answer = server.answer(method, self.path, raw, self.headers.get("Authorization", ""))
                if answer is None:  # an injected fault drops the connection
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                status, data, location = answer
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if location:
                    self.send_header("Location", location)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802
                self._handle("GET")

            def do_POST(self):  # noqa: N802
                self._handle("POST")

            def do_DELETE(self):  # noqa: N802
                self._handle("DELETE")

        self._serve(Handler)
        self.url = f"http://{self.address}"
        if tls:
            self.ca = self._serve_tls()[0]
            self.url = f"https://{self.address}"

    def answer(self, method: str, target: str, raw: bytes, auth: str) -> tuple[int, bytes, str | None] | None:
        """What this Grafana answers a request (its target: path and query): (status, JSON body, Location), or None
        where an injected fault drops the connection. Every answer of an API operation is checked against the spec."""
        split = urlsplit(target)
        with self.lock:
            self.state.log.append((method, split.path))
            fault = self._take_fault(method, split.path)
        if fault and fault.drop:
            return None
        if fault:
            return fault.status, json.dumps({"message": "injected fault"}).encode(), fault.location
        status, body, spec_path = self.route(method, split.path, parse_qs(split.query), raw, auth)
        data = _encoded(body)
        if spec_path:
            errors = self.spec.check_response(method, spec_path, status, body, data)
            self.state.spec_errors += [f"response {(method, spec_path)}: {e}" for e in errors]
        return status, data, None

    def __enter__(self) -> "GrafanaTestServer":
        super().__enter__()
        if self.url.startswith("http://") and os.environ.get("GPUDASH_TEST_GRAFANA_HTTP") != "1":
            serve_in_process(self.address, self)
        return self

    def __exit__(self, *exc) -> None:
        stop_serving_in_process(self.address)
        super().__exit__(*exc)

    def answer_as_http(self, method: str, target: str, body: bytes, auth: str
                       ) -> tuple[int, str, list[tuple[str, str]], bytes] | None:
        """What this server's HTTP handler answers a request, asked in the caller's thread: status, reason, headers
        (its Server and Date, the JSON's type and length, a Location) and body. None where the request must go over
        HTTP: a method the handler does not serve, a path http.server would rewrite, or a fault pending (a dropped
        connection is the socket's to show)."""
        import email.utils
        from http.server import BaseHTTPRequestHandler

        if not self.answers_as_http(method, target):
            return None
        answer = self.answer(method, target, body, auth)
        if answer is None:
            return None
        status, data, location = answer
        headers = [("Server", f"{BaseHTTPRequestHandler.server_version} {BaseHTTPRequestHandler.sys_version}"),
                   ("Date", email.utils.formatdate(usegmt=True)), ("Content-Type", "application/json"),
                   ("Content-Length", str(len(data))), *((("Location", location),) if location else ())]
        return status, BaseHTTPRequestHandler.responses.get(status, ("",))[0], headers, data

    def answers_as_http(self, method: str, target: str) -> bool:
        """Whether answer_as_http answers this request now (False: it must go over HTTP, see there)."""
        if method not in ("GET", "POST", "DELETE") or target.startswith("//"):
            return False
        with self.lock:
            return not any(fault.times > 0 for fault in self.state.faults)

    def answer_in_process(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes
                          ) -> tuple[int, str, list[tuple[str, str]], bytes] | None:
        """A request (as_sent) answered in the caller's thread (answer_as_http; see _sent_in_process)."""
        auth = next((value for name, value in headers if name.lower() == "authorization"), "")
        return self.answer_as_http(method, target, body, auth)

    # --- test helpers ----------------------------------------------------------------------

    def inject(self, fault: Fault) -> None:
        with self.lock:
            self.state.faults.append(fault)

    def writes(self) -> list[tuple[str, str]]:
        return [entry for entry in self.state.log if entry[0] in ("POST", "PUT", "DELETE")]

    def edit_in_ui(self, uid: str, mutate, user: str = "alice") -> None:
        """What a person saving in the Grafana UI does: a new version with their change, no gpudash message."""
        with self.lock:
            stored = self.state.dashboards[uid]
            dashboard = json.loads(json.dumps(stored["dashboard"]))
            mutate(dashboard)
            self._store(uid, dashboard, stored["folderUid"], message="", user=user)

    def save_in_ui(self, uid: str, loaded: int, mutate, user: str = "alice") -> bool:
        """What the Grafana UI's Save does for a person who opened the dashboard at version `loaded`: a save that
        carries that version and asks no overwrite. False when Grafana refuses it (412 version-mismatch: the UI then
        tells them "Someone else has updated this dashboard", their change still in their browser); True when saved."""
        with self.lock:
            stored = self.state.dashboards.get(uid)
            if stored is None or stored["dashboard"]["version"] != loaded:
                return False
            dashboard = json.loads(json.dumps(stored["dashboard"]))
            mutate(dashboard)
            self._store(uid, dashboard, stored["folderUid"], message="", user=user)
            return True

    def annotate(self, uid: str, text: str, user: str = "alice", panel_id: int = 1) -> None:
        """A person's annotation on the dashboard (a note on a moment of its graphs: Ctrl+click in a panel, the panel
        of id `panel_id`). Grafana keeps it by the dashboard's id, and its delete of the dashboard deletes it too
        (DELETE FROM annotation WHERE dashboard_id = ?), with no version of the dashboard recording it."""
        with self.lock:
            entry = self.state.dashboards[uid]
            self.state.annotations.append({"id": len(self.state.annotations) + 1, "dashboardId": entry["id"],
                                           "dashboardUID": uid, "panelId": panel_id, "text": text, "login": user,
                                           "type": "annotation"})

    def share_publicly(self, uid: str, user_id: int = 7) -> str:
        """A person shares the dashboard externally (a public dashboard: POST .../public-dashboards): a link anyone can
        open without signing in. No version of the dashboard records it; Grafana's delete of the dashboard deletes it
        (publicDashboardService.DeleteByDashboardUIDs), and the link stops working. Answers its access token."""
        with self.lock:
            number = len(self.state.public) + 1
            token = f"{number:032x}"
            self.state.public[uid] = {"uid": f"pd{number}", "dashboardUid": uid, "accessToken": token,
                                      "isEnabled": True, "annotationsEnabled": False, "timeSelectionEnabled": False,
                                      "share": "public", "createdBy": user_id, "updatedBy": user_id,
                                      "createdAt": "2026-11-29T00:00:00Z", "updatedAt": "2026-11-29T00:00:00Z"}
            return token

    def permit(self, uid: str, permission: int = 1, *, user: str | None = None, team: str | None = None,
               role: str | None = None) -> None:
        """A person gives a user, a team or a basic role a permission on the dashboard itself (Dashboard settings,
        Permissions: 1 View, 2 Edit, 4 Admin; one entry per holder, as Grafana keeps them). No version records it."""
        with self.lock:
            entries = self.state.acl.setdefault(uid, [])
            entries[:] = [e for e in entries if (e.get("userLogin"), e.get("team"), e.get("role")) != (user, team, role)]
            entries.append(self._acl_entry(permission, user=user, team=team, role=role))

    def playlist(self, name: str, items: list[tuple[str, str]]) -> str:
        """A person's playlist of (type, value) items (dashboard_by_uid, dashboard_by_id, dashboard_by_tag); its uid."""
        with self.lock:
            uid = f"pl{len(self.state.playlists) + 1}"
            self.state.playlists.append({"id": len(self.state.playlists) + 1, "uid": uid, "name": name,
                                         "interval": "5m", "items": [{"type": t, "value": v} for t, v in items]})
            return uid

    def alert_rule(self, title: str, dashboard_uid: str | None = None, panel_id: int = 1) -> str:
        """A person's Grafana-managed alert rule, linked to the dashboard `dashboard_uid` (and its panel) where given
        (the panel menu's "New alert rule" links it so); its uid."""
        with self.lock:
            uid = f"rule{len(self.state.alert_rules) + 1}"
            linked = {"__dashboardUid__": dashboard_uid, "__panelId__": str(panel_id)} if dashboard_uid else {}
            self.state.alert_rules.append({
                "uid": uid, "title": title, "orgID": 1, "folderUID": "alerts", "ruleGroup": "gpu", "condition": "A",
                "data": [{"refId": "A", "datasourceUid": "prometheus", "model": {"expr": "up"}}],
                "noDataState": "NoData", "execErrState": "Error",
                "for": 300_000_000_000, "annotations": linked})  # (for: 5 min, as the spec's Go duration, in ns)
            return uid

    def provision(self, uid: str, file: str, allow_ui_updates: bool = False) -> None:
        """A provisioning provider takes the dashboard `uid` over from the file `file` (its content is left as it is:
        the file holds what it holds, a push's or a person's), and saves it so, a version of no message."""
        with self.lock:
            entry = self.state.dashboards[uid]
            self._store(uid, entry["dashboard"], entry["folderUid"], "", "provisioner")
            self.state.provisioned[uid] = (file, allow_ui_updates)

    def set_home(self, uid: str, team: str | None = None) -> None:
        """A person makes the dashboard `uid` the organization's home dashboard (Administration, Default preferences),
        or team `team`'s (made if new)."""
        with self.lock:
            if team is None:
                self.state.org_home = uid
                return
            found = next((t for t in self.state.teams if t["name"] == team), None)
            if found is None:
                found = {"id": len(self.state.teams) + 1, "uid": f"team{len(self.state.teams) + 1}", "name": team,
                         "orgId": 1, "email": "", "memberCount": 1}
                self.state.teams.append(found)
            self.state.team_homes[found["id"]] = uid

    def _acl_entry(self, permission: int, *, user: str | None = None, team: str | None = None,
                   role: str | None = None) -> dict[str, Any]:
        entry: dict[str, Any] = {"permission": permission,
                                 "permissionName": {1: "View", 2: "Edit", 4: "Admin"}[permission],
                                 "created": "2026-11-29T00:00:00Z", "updated": "2026-11-29T00:00:00Z"}
        if user is not None:
            entry.update(userId=sum(map(ord, user)), userLogin=user, userEmail=f"{user}@example.com")
        elif team is not None:
            entry.update(teamId=sum(map(ord, team)), team=team, teamEmail="")
        else:
            entry["role"] = role
        return entry

    def move(self, uid: str, folder_uid: str) -> None:
        """A dashboard moved to another folder with no new version: gpudash must not infer a move from the
        version alone (which storage records a folder change as a version differs)."""
        with self.lock:
            self.state.dashboards[uid]["folderUid"] = folder_uid

    def _take_fault(self, method: str, path: str) -> Fault | None:
        for fault in self.state.faults:
            if re.search(fault.path, path) and (fault.method in (None, method)) and fault.times > 0:
                fault.times -= 1
                return fault
        return None

    def _store(self, uid: str, dashboard: dict[str, Any], folder_uid: str, message: str, user: str) -> dict:
        entry = self.state.dashboards.get(uid)
        if entry is None:
            entry = {"id": self.state.next_id, "versions": [], "createdBy": user}
            self.state.next_id += 1
            self.state.dashboards[uid] = entry
            # Grafana's setDefaultPermissions: the creating user or service account is the dashboard's Admin (in a
            # folder nothing else is given: the rest comes from the folder)
            self.state.acl[uid] = [self._acl_entry(4, user=user)]
        version = (entry["versions"][-1]["version"] if entry["versions"] else 0) + 1
        # Grafana's save records as the parent the version the saved JSON carries (an update's: the version it
        # replaces, a save with overwrite being set to it); a create's JSON carries none (0) or any number
        given = dashboard.get("version")
        parent = version - 1 if entry["versions"] else given if isinstance(given, int) and given > 0 else 0
        dashboard = {**dashboard, "id": entry["id"], "uid": uid, "version": version}
        entry.update(dashboard=dashboard, folderUid=folder_uid)
        entry["versions"].append({"id": version, "dashboardId": entry["id"], "uid": uid,
                                  "version": version, "parentVersion": parent, "restoredFrom": 0,
                                  "created": "2026-11-29T00:00:00Z", "createdBy": user, "message": message})
        if self.versions_to_keep:  # Grafana's [dashboards] versions_to_keep (20 by default): older ones deleted
            del entry["versions"][:-self.versions_to_keep]
        return entry

    # --- the API ---------------------------------------------------------------------------

    def route(self, method: str, path: str, query: dict[str, list[str]], raw: bytes, auth: str):
        token = auth.removeprefix("Bearer ").strip()
        if auth.startswith("Basic "):
            try:
                user = base64.b64decode(auth.removeprefix("Basic ")).decode()
            except ValueError:
                user = ""
            token = ADMIN if user == ":".join(BASIC_ADMIN) else ""
        if token not in (ADMIN, VIEWER):
            return 401, {"message": "Unauthorized"}, None
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                return 400, {"message": "bad request data"}, None
        if method in ("POST", "DELETE") and token == VIEWER:
            return 403, {"message": "You'll need additional permissions to perform this action."}, None
        with self.lock:
            if method == "GET" and (m := re.fullmatch(r"/api/folders/([^/]+)", path)):
                return self._get_folder(m.group(1))
            if method == "POST" and path == "/api/folders":
                return self._create_folder(body)
            if method == "GET" and path == "/api/search":
                return self._search(query)
            if method == "POST" and path == "/api/dashboards/db":
                return self._save(body)
            if method == "GET" and (m := re.fullmatch(r"/api/dashboards/uid/([^/]+)/versions", path)):
                return self._versions(m.group(1), query)
            if method == "GET" and (m := re.fullmatch(r"/api/dashboards/uid/([^/]+)/versions/([^/]+)", path)):
                return self._version(m.group(1), m.group(2))
            if method == "GET" and (m := re.fullmatch(r"/api/dashboards/uid/([^/]+)", path)):
                return self._get_dashboard(m.group(1))
            if method == "GET" and (m := re.fullmatch(r"/api/dashboards/uid/([^/]+)/permissions", path)):
                return self._dashboard_permissions(m.group(1), token)
            if method == "GET" and path == "/api/playlists":
                return self._playlists(query)
            if method == "GET" and (m := re.fullmatch(r"/api/playlists/([^/]+)", path)):
                return self._playlist(m.group(1))
            if method == "GET" and self.state.public_api and (
                    m := re.fullmatch(r"/api/dashboards/uid/([^/]+)/public-dashboards", path)):
                return self._public_dashboard(m.group(1))
            if method == "DELETE" and (m := re.fullmatch(r"/api/dashboards/uid/([^/]+)", path)):
                return self._delete(m.group(1))
            if method == "GET" and path == "/api/annotations":
                return self._annotations(query, self.state.permissions.get(token))
            if method == "GET" and path == "/api/org/preferences":
                if "orgs.preferences:read" not in (self.state.permissions.get(token) or {}):
                    return 403, {"message": "You'll need additional permissions to perform this action."}, None
                return 200, self._preferences(self._home(self.state.org_home)), "/org/preferences"
            if method == "GET" and path == "/api/v1/provisioning/alert-rules":
                return self._alert_rules(self.state.permissions.get(token) or {})
            if method == "GET" and path == "/api/teams/search":
                return self._teams(query)
            if method == "GET" and (m := re.fullmatch(r"/api/teams/([0-9]+)/preferences", path)):
                return 200, self._preferences(self._home(self.state.team_homes.get(int(m.group(1)), ""))), \
                    "/teams/{team_id}/preferences"
            if method == "GET" and path == "/api/access-control/user/permissions":
                found = self.state.permissions.get(token)
                return (404, {"message": "Not found"}, None) if found is None else (200, found, None)
        return 404, {"message": "Not found"}, None

    def _invalid(self, method: str, path: str, body: Any):
        errors = self.spec.check_request(method, path, body)
        if errors:
            self.state.spec_errors += [f"request {method} {path}: {e}" for e in errors]
            return 400, {"message": f"bad request: {errors[0]}"}, path
        return None

    def _folder_body(self, folder: dict[str, Any]) -> dict[str, Any]:
        return {"id": folder["id"], "uid": folder["uid"], "title": folder["title"], "url": f"/dashboards/f/{folder['uid']}/",
                "version": 1, "hasAcl": False, "canSave": True, "canEdit": True, "canAdmin": True,
                "canDelete": True, "created": "2026-11-29T00:00:00Z", "updated": "2026-11-29T00:00:00Z"}

    def _get_folder(self, uid: str):
        folder = self.state.folders.get(uid)
        if folder is None:
            return 404, {"message": "folder not found"}, "/folders/{folder_uid}"
        return 200, self._folder_body(folder), "/folders/{folder_uid}"

    def _create_folder(self, body: Any):
        invalid = self._invalid("POST", "/folders", body)
        if invalid:
            return invalid[0], invalid[1], "/folders"
        uid = body.get("uid") or f"f{self.state.next_id}"
        if uid in self.state.folders:
            return 409, {"message": "a folder with the same uid already exists"}, "/folders"
        folder = {"id": self.state.next_id, "uid": uid, "title": body.get("title", "")}
        self.state.next_id += 1
        self.state.folders[uid] = folder
        return 200, self._folder_body(folder), "/folders"

    def _search(self, query: dict[str, list[str]]):
        tags = set(query.get("tag", []))
        if self.ignore_folder_uids:
            query = {k: v for k, v in query.items() if k != "folderUIDs"}
        elif query.get("folderUIDs") and query.get("folderIds"):  # Grafana's own answer to both
            return 400, {"message": "search supports UIDs or IDs, not both"}, "/search"
        asked = int(query.get("limit", ["0"])[0] or 0)
        if asked > 5000:  # pkg/api/search.go
            return 422, {"message": "Limit is above maximum allowed (5000), use page parameter to access hits beyond "
                                    "limit"}, "/search"
        kind = query.get("type", [""])[0]
        folders = set(query.get("folderUIDs", []))
        folders |= {uid for uid, folder in self.state.folders.items() if str(folder["id"]) in query.get("folderIds", [])}
        hits = []
        # without type=dash-db, folders are hits too (type dash-folder: no tags; here none is in another folder)
        if kind in ("", "dash-folder") and not tags and "folderUIDs" not in query and "folderIds" not in query:
            hits += [{"id": folder["id"], "uid": uid, "title": folder["title"], "uri": f"db/{_slug(folder['title'])}",
                      "url": f"/dashboards/f/{uid}/{_slug(folder['title'])}", "slug": _slug(folder["title"]),
                      "type": "dash-folder", "tags": [], "isStarred": False}
                     for uid, folder in sorted(self.state.folders.items())]
        for uid, entry in sorted(self.state.dashboards.items()) if kind in ("", "dash-db") else ():
            if ("folderUIDs" in query or "folderIds" in query) and entry["folderUid"] not in folders:
                continue
            dashboard = entry["dashboard"]
            # Grafana indexes the string tags of a list and the title as text, whatever else the JSON holds
            own = dashboard.get("tags")
            own = [t for t in own if isinstance(t, str)] if isinstance(own, list) else []
            title = str(dashboard.get("title", ""))
            if tags <= set(own):
                # a hit names its folder by uid, id, title and url; one in General names none (omitempty)
                folder = self.state.folders.get(entry["folderUid"])
                where = {"folderUid": entry["folderUid"]} if entry["folderUid"] else {}
                if folder:
                    where.update(folderId=folder["id"], folderTitle=folder["title"],
                                 folderUrl=f"/dashboards/f/{folder['uid']}/{_slug(folder['title'])}")
                hits.append({"id": entry["id"], "uid": uid, "title": title,
                             "uri": f"db/{_slug(title)}", "url": f"/d/{uid}",
                             "type": "dash-db", "tags": own, "isStarred": False, **where, "slug": _slug(title)})
        limit = min(asked or 1000, self.search_cap)  # Grafana's default page (a limit under 1 too), and a cap
        page = 1 if self.ignore_search_page else max(int(query.get("page", ["1"])[0]), 1)
        return 200, hits[(page - 1) * limit: page * limit], "/search"

    def _save(self, body: Any):
        path = "/dashboards/db"
        invalid = self._invalid("POST", path, body)
        if invalid:
            return invalid
        dashboard = body.get("dashboard") or {}
        folder_uid = body.get("folderUid", "")
        uid = dashboard.get("uid") or f"u{self.state.next_id}"
        title = dashboard.get("title", "")
        if not title:
            return 400, {"message": "Dashboard title cannot be empty"}, path
        message = body.get("message", "")
        if isinstance(message, str) and len(message.encode()) > SAVE_MESSAGE_LENGTH:
            return 400, {"message": "message too long, max 500 characters"}, path
        if len(uid) > 40:
            return 400, {"message": "uid too long, max 40 characters"}, path
        if folder_uid and folder_uid not in self.state.folders:
            return 400, {"message": "folder not found"}, path
        if uid in self.state.provisioned and not self.state.provisioned[uid][1]:
            return 400, {"message": "Cannot save provisioned dashboard"}, path
        existing = self.state.dashboards.get(uid)
        by_id = dashboard.get("id")
        if isinstance(by_id, int) and by_id > 0:  # Grafana looks a save with an id up by it first (a UI save sends it)
            if not any(entry["id"] == by_id for entry in self.state.dashboards.values()):
                if not (self.unknown_id_saves_by_uid and dashboard.get("uid")):
                    return 404, {"message": "Dashboard not found", "status": "not-found"}, path
                by_id = None
            if by_id is not None and existing is not None and existing["id"] != by_id:
                return 400, {"message": "A dashboard with the same uid already exists"}, path
        overwrite = bool(body.get("overwrite"))
        if existing and not overwrite and dashboard.get("version") != existing["dashboard"]["version"]:
            return 412, {"status": "version-mismatch",
                         "message": "The dashboard has been changed by someone else"}, path
        for other_uid, entry in self.state.dashboards.items():
            if other_uid != uid and entry["folderUid"] == folder_uid and entry["dashboard"].get("title") == title \
                    and not overwrite:
                return 412, {"status": "name-exists",
                             "message": "A dashboard with the same name in the folder already exists"}, path
        entry = self._store(uid, dashboard, folder_uid, body.get("message", ""), user="gpudash-sa")
        return 200, {"id": entry["id"], "uid": uid, "url": f"/d/{uid}/{_slug(title)}", "status": "success",
                     "version": entry["dashboard"]["version"], "slug": _slug(title), "title": _slug(title),
                     "folderUid": folder_uid}, path

    def _get_dashboard(self, uid: str):
        path = "/dashboards/uid/{uid}"
        entry = self.state.dashboards.get(uid)
        if entry is None:
            return 404, {"message": "Dashboard not found"}, path
        folder = self.state.folders.get(entry["folderUid"], {})
        meta = {"version": entry["dashboard"]["version"], "folderUid": entry["folderUid"],
                "folderTitle": folder.get("title", "General"), "slug": _slug(str(entry["dashboard"].get("title", ""))),
                "url": f"/d/{uid}", "provisioned": uid in self.state.provisioned, "canSave": True, "canEdit": True,
                **({"provisionedExternalId": self.state.provisioned[uid][0]} if uid in self.state.provisioned else {}),
                "created": "2026-11-29T00:00:00Z", "updated": "2026-11-29T00:00:00Z",
                "createdBy": entry.get("createdBy", "gpudash-sa"),
                "updatedBy": entry["versions"][-1]["createdBy"]}
        return 200, {"dashboard": entry["dashboard"], "meta": meta}, path

    def _versions(self, uid: str, query: dict[str, list[str]]):
        path = "/dashboards/uid/{uid}/versions"
        entry = self.state.dashboards.get(uid)
        if entry is None:
            return 404, {"message": "Dashboard not found"}, path
        limit = int(query.get("limit", ["0"])[0]) or len(entry["versions"])
        newest_first = [_listed(v) for v in reversed(entry["versions"])]
        if self.versions_wrapped and self.versions_page:  # Grafana 12's pages (its continue token opaque)
            token = "" if self.versions_token_fault == "dropped" else query.get("continueToken", [""])[0]
            try:
                start = int(base64.urlsafe_b64decode(token.encode()).decode().removeprefix("after:")) if token else 0
            except ValueError:
                return 400, {"message": "invalid continue token"}, None
            end = start + min(limit, self.versions_page)
            after = base64.urlsafe_b64encode(f"after:{end}".encode()).decode() if end < len(newest_first) else ""
            return 200, {"continueToken": 7 if self.versions_token_fault == "number" and after else after,
                         "versions": newest_first[start:end]}, None
        listed = newest_first[:limit]
        if self.versions_wrapped:  # (not the form of the spec's copy: not checked against it)
            return 200, {"continueToken": "", "versions": listed}, None
        return 200, listed, path

    def _version(self, uid: str, number: str):
        """GET /api/dashboards/uid/<uid>/versions/<version>: the version alone, its message as saved (Grafana's
        GetDashboardVersion); 500 where the dashboard has no such version (Grafana's own answer: deleted by
        versions_to_keep, or never made)."""
        path = "/dashboards/uid/{uid}/versions/{DashboardVersionID}"
        entry = self.state.dashboards.get(uid)
        if entry is None:
            return 404, {"message": "Dashboard not found"}, path
        found = next((v for v in entry["versions"] if str(v["version"]) == number), None)
        if found is None:
            return 500, {"message": f"Dashboard version {number} not found for dashboardId {entry['id']}"}, path
        return 200, found, path

    def _annotations(self, query: dict[str, list[str]], permissions: dict[str, list[str]] | None):
        """GET /api/annotations: a dashboard's (by dashboardUID, resolved to its id as Grafana does, or dashboardId),
        of a type, newest first, up to `limit` (Grafana's default 100). Refused (403) to an account without
        annotations:read; otherwise only the annotations of dashboards its scopes cover (`dashboards:uid:<uid>`,
        `folders:uid:<uid>`, or a wildcard of them) are answered: the rest are left out, not refused."""
        scopes = (permissions or {}).get("annotations:read")
        if permissions is not None and not scopes:
            return 403, {"message": "user does not have permission to read annotations"}, None

        def readable(annotation: dict[str, Any]) -> bool:
            if permissions is None:
                return True
            entry = self.state.dashboards.get(annotation["dashboardUID"]) or {}
            targets = [f"dashboards:uid:{annotation['dashboardUID']}", f"folders:uid:{entry.get('folderUid')}"]
            return any(_covers(scopes, target) for target in targets)

        found = [a for a in reversed(self.state.annotations) if readable(a)]
        uid, dashboard_id = query.get("dashboardUID", [""])[0], query.get("dashboardId", [""])[0]
        if uid:
            entry = self.state.dashboards.get(uid)
            found = [a for a in found if entry is not None and a["dashboardId"] == entry["id"]]
        elif dashboard_id:
            found = [a for a in found if str(a["dashboardId"]) == dashboard_id]
        if query.get("type", [""])[0] == "annotation":
            found = [a for a in found if a["type"] == "annotation"]
        limit = int(query.get("limit", ["100"])[0])
        return 200, [{k: v for k, v in a.items() if k != "type"} for a in found[:limit]], "/annotations"

    def _dashboard_permissions(self, uid: str, token: str):
        """GET /api/dashboards/uid/<uid>/permissions: the dashboard's own permissions and those it inherits from its
        folder (`inherited: true`), each with the dashboard's uid, title and url. Refused (403) to an account without
        dashboards.permissions:read on it: one that is not the dashboard's Admin nor holds that action's scope."""
        path = "/dashboards/uid/{uid}/permissions"
        entry = self.state.dashboards.get(uid)
        if entry is None:
            return 404, {"message": "Dashboard not found"}, path
        own = self.state.acl.get(uid, [])
        login = self.state.logins.get(token)
        scopes = (self.state.permissions.get(token) or {}).get("dashboards.permissions:read", [])
        targets = [f"dashboards:uid:{uid}", f"folders:uid:{entry['folderUid']}"]
        admin = any(e.get("userLogin") == login and e["permission"] == 4 for e in own)
        if not admin and not any(_covers(scopes, target) for target in targets):
            return 403, {"message": "You'll need additional permissions to perform this action."}, path
        title = str(entry["dashboard"].get("title", ""))
        about = {"dashboardId": entry["id"], "folderUid": entry["folderUid"], "uid": uid, "title": title,
                 "slug": _slug(title), "url": f"/d/{uid}/{_slug(title)}", "isFolder": False}
        answer = [{**e, **about, "inherited": True} for e in self.state.folder_acl.get(entry["folderUid"], [])]
        answer += [{**e, **about, "inherited": False} for e in own]
        # Grafana leaves out, without a word, the entries of a holder the caller may not read: a team without
        # teams:read on it (resourcepermissions store, always), a user without org.users:read on it (Grafana 9, and
        # later with access control enforced)
        held = self.state.permissions.get(token) or {}

        def readable(e: dict[str, Any]) -> bool:
            action, target = (("teams:read", f"teams:id:{e['teamId']}") if e.get("teamId") else
                              ("org.users:read", f"users:id:{e['userId']}") if e.get("userId") else (None, None))
            return action is None or _covers(held.get(action, []), target)
        return 200, [e for e in answer if readable(e)], path

    def _alert_rules(self, held: dict[str, list[str]]):
        """GET /api/v1/provisioning/alert-rules: every rule of the organization to an account with alerting's
        provisioning read; to one that reads alert rules by folder (alert.rules:read and folders:read, as Grafana 11
        and later let it), the rules of the folders both cover, leaving out the others instead of refusing; else
        refused."""
        path = "/v1/provisioning/alert-rules"
        if any(action in held for action in RULES_PROVISIONING_READS):
            return 200, self.state.alert_rules, path
        if "alert.rules:read" in held and "folders:read" in held:
            return 200, [rule for rule in self.state.alert_rules
                         if all(_covers(held[action], f"folders:uid:{rule['folderUID']}")
                                for action in ("alert.rules:read", "folders:read"))], path
        return 403, {"message": "You'll need additional permissions to perform this action."}, None

    def _home(self, uid: str) -> str:
        """The home dashboard a preference set to the dashboard `uid` is answered with: Grafana stores the dashboard's
        id and answers the uid of the dashboard it finds by that id (pkg/api/preferences.go, getPreferencesFor), none
        where it finds none: a preference naming a deleted dashboard is answered as naming none."""
        return uid if uid in self.state.dashboards else ""

    @staticmethod
    def _preferences(home: str) -> dict[str, Any]:
        """Preferences as Grafana 10 and later answer them: the home dashboard by uid, left out where none is set."""
        return {"theme": "", "timezone": "", "weekStart": "", **({"homeDashboardUID": home} if home else {})}

    def _teams(self, query: dict[str, list[str]]):
        """GET /api/teams/search: a page of the organization's teams (`perpage`, Grafana's default 1000) and their
        count."""
        per_page, page = int(query.get("perpage", ["1000"])[0]), int(query.get("page", ["1"])[0])
        teams = self.state.teams[(page - 1) * per_page: page * per_page]
        return 200, {"totalCount": len(self.state.teams), "teams": teams, "page": page, "perPage": per_page}, \
            "/teams/search"

    def _playlists(self, query: dict[str, list[str]]):
        """GET /api/playlists: the organization's playlists (no items), at most `limit` (Grafana's default 1000), or
        the first page only where the state says Grafana cuts the list (playlist_page)."""
        limit = self.state.playlist_page or int(query.get("limit", ["0"])[0]) or 1000
        return 200, [{k: p[k] for k in ("id", "uid", "name", "interval")} for p in self.state.playlists][:limit], \
            "/playlists"

    def _playlist(self, uid: str):
        """GET /api/playlists/<uid>: the playlist with its items."""
        path = "/playlists/{uid}"
        found = next((p for p in self.state.playlists if p["uid"] == uid), None)
        if found is None:
            return 404, {"message": "Playlist not found"}, path
        return 200, {k: found[k] for k in ("uid", "name", "interval", "items")}, path

    def _public_dashboard(self, uid: str):
        """GET /api/dashboards/uid/<uid>/public-dashboards: the dashboard's public dashboard, or Grafana's 404 saying
        there is none (messageId publicdashboards.notFound); 404 "Dashboard not found" when there is no dashboard."""
        path = "/dashboards/uid/{dashboardUid}/public-dashboards"
        if uid not in self.state.dashboards:
            return 404, {"message": "Dashboard not found", "messageId": "publicdashboards.dashboardNotFound",
                         "statusCode": 404}, path
        found = self.state.public.get(uid)
        if found is None:
            return 404, {"message": "Public dashboard not found", "messageId": "publicdashboards.notFound",
                         "statusCode": 404}, path
        return 200, found, path

    def _delete(self, uid: str):
        path = "/dashboards/uid/{uid}"
        if uid in self.state.provisioned and uid in self.state.dashboards:
            return 400, {"message": "provisioned dashboard cannot be deleted"}, path
        entry = self.state.dashboards.pop(uid, None)
        if entry is None:
            return 404, {"message": "Dashboard not found"}, path
        self.state.annotations = [a for a in self.state.annotations if a["dashboardId"] != entry["id"]]
        self.state.public.pop(uid, None)
        self.state.acl.pop(uid, None)
        for playlist in self.state.playlists:
            playlist["items"] = [i for i in playlist["items"]
                                 if (i["type"], i["value"]) != ("dashboard_by_id", str(entry["id"]))]
        return 200, {"title": str(entry["dashboard"].get("title", "")), "message": "Dashboard deleted",
                     "id": entry["id"]}, path
